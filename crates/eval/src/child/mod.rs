//! A kernel in a child process (Python or Node.js) running a runner shipped in this crate.
//!
//! Protocol frames (4-byte big-endian length + JSON) travel over a private pipe pair mapped to
//! the child's fds 3 (commands in) and 4 (events out). stdin is /dev/null; stdout and stderr are
//! pipes read here as cell output. The child leads its own process group, so the whole group
//! (including shell commands a cell started) is killed at the end.

use std::{
    collections::VecDeque,
    ffi::OsString,
    os::fd::{AsRawFd, OwnedFd},
    path::{Path, PathBuf},
    process::Stdio,
    time::Duration,
};

use serde_json::{Value, json};
use tokio::{net::unix::pipe, process::Child, sync::mpsc, time::Instant};

use agent_tools_support::capsule::{ExitStatuses, ProcessEnd};
use agent_tools_support::process::{
    CgroupJoin, ProcessGroup, SpawnOptions, Spawned, WeakProcessGroup,
};

mod io;

use self::io::{
    Raw, cloexec_pipe, encode_frame, map_protocol_fds, read_frames, read_stream, set_nonblocking,
    stderr_reader, stdout_reader, write_frames,
};
use crate::{
    cell::{Done, Event, KernelIo, Utf8Stream},
    types::{CellError, StreamName},
};

/// How long a fresh kernel may take to say hello.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// What waits for the markers on stdout and stderr before it takes its place in the output.
enum SyncPoint {
    Clear {
        wait: bool,
    },
    /// `None` for a bundle that did not parse: the runner is still answered.
    Display(Option<Event>),
}

/// How long to wait, after a cell's `done`, for the end marker on stdout and stderr.
const SYNC_TIMEOUT: Duration = Duration::from_secs(2);
/// How much of stderr to keep for crash reports.
const STDERR_TAIL: usize = 2048;

/// What to start: the interpreter, its arguments (a bootstrap that reads the runner from the
/// command pipe), the runner itself and the environment.
#[derive(Debug, Clone)]
pub(crate) struct KernelProgram {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    pub runner: &'static str,
    pub env: Vec<(String, String)>,
    /// How a cell is interrupted.
    pub interrupt: InterruptBy,
}

/// How the host interrupts a running cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum InterruptBy {
    /// SIGINT to the interpreter when signals reach it, else an `interrupt` frame (Python: its
    /// reader thread then signals the interpreter itself).
    SignalElseFrame,
    /// SIGINT when signals reach the interpreter (it stops the synchronous part of a cell that
    /// runs before the kernel's reader thread is up), and the `interrupt` frame always (Node).
    SignalAndFrame,
}

/// Facts about a started interpreter.
#[derive(Debug, Clone)]
pub(crate) struct KernelInfo {
    pub executable: String,
    pub version: String,
    pub cwd: String,
    /// The runner can run TypeScript cells (Node with type stripping).
    pub typescript: bool,
}

pub(crate) struct ChildKernel {
    child: Child,
    /// The kernel's process tree; dropping it kills the tree.
    group: ProcessGroup,
    pgid: i32,
    /// Frames for the runner, written in order by one task (a large tool result neither blocks
    /// a thread nor is cut); closed once a write failed (the kernel is gone).
    cmd: mpsc::UnboundedSender<Vec<u8>>,
    rx: mpsc::UnboundedReceiver<Raw>,
    /// Events taken off `rx` between cells (to see whether the kernel is gone), read first.
    backlog: VecDeque<Raw>,
    pub(crate) info: KernelInfo,
    /// How the kernel's exit status reads (a capsule's wrapper reports a signal as 128+N).
    statuses: ExitStatuses,
    ready: VecDeque<Event>,
    cell: u64,
    token: String,
    pending_done: Option<(Done, Instant)>,
    /// A `clear_output()` or a display waiting for its markers on stdout and stderr, so that
    /// it falls where it was made among the cell's printed text (and its deadline).
    pending_sync: Option<(SyncPoint, Instant)>,
    token_seen: [bool; 2],
    streams_open: [bool; 2],
    decoders: [Utf8Stream; 2],
    carry: [String; 2],
    stderr_tail: String,
    dead: bool,
    /// When the kernel was first seen gone (the deadlines of `wait_dead` count from it).
    dying: Option<Instant>,
    death: Option<String>,
    /// SIGINT interrupts: the child is the interpreter itself (no capsule prefix).
    signal_directly: bool,
    /// An `interrupt` frame is sent too (or instead, when signals do not reach the interpreter).
    frame_too: bool,
}

/// Whether the main thread of process `pid` has exited (its state in `/proc` is zombie or dead):
/// the process called `exit` and is only waiting for its other threads, which node's worker and
/// inspector threads can make last a while on a loaded machine.
fn main_thread_exited(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z') || rest.starts_with('X'))
    })
}

fn stream_index(name: StreamName) -> usize {
    match name {
        StreamName::Stdout => 0,
        StreamName::Stderr => 1,
    }
}

fn new_token() -> String {
    let mut bytes = [0u8; 16];
    // SAFETY: getrandom fills the buffer it is given; a short read only weakens the token.
    let _ = unsafe { libc::getrandom(bytes.as_mut_ptr().cast(), bytes.len(), 0) };
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("\u{1}agent-tools-end-{hex}\u{1}")
}

/// Spawns the interpreter of `program` in `capsule` with the protocol's two pipes as fds 3
/// and 4; returns the child and the host's ends (commands to write, events to read).
async fn spawn_interpreter(
    capsule: &dyn agent_tools_support::capsule::Capsule,
    program: &KernelProgram,
    cwd: &Path,
) -> Result<(Spawned, OwnedFd, OwnedFd), String> {
    let (cmd_read, cmd_write) =
        cloexec_pipe().map_err(|e| format!("cannot create the kernel's pipes: {e}"))?;
    let (evt_read, evt_write) =
        cloexec_pipe().map_err(|e| format!("cannot create the kernel's pipes: {e}"))?;
    let python = &program.program;
    let signal_directly = capsule.signals_reach_the_program();
    let mut std_cmd = capsule.command(python.as_os_str(), &program.args);
    std_cmd
        .current_dir(cwd)
        .env("AGENT_TOOLS_KERNEL_CMD_FD", "3")
        .env("AGENT_TOOLS_KERNEL_EVT_FD", "4")
        .envs(program.env.iter().map(|(k, v)| (k, v)))
        // The runner knows whether a SIGINT can come (the Node runner needs its reader thread
        // before the first cell only when none can).
        .env("AGENT_TOOLS_INTERRUPT_SIGNAL", if signal_directly { "1" } else { "0" })
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    map_protocol_fds(&mut std_cmd, [cmd_read.as_raw_fd(), evt_write.as_raw_fd()]);
    // The support crate's spawn: an own process group, death with the host (even by
    // SIGKILL), and a teardown that also finds what a cell started and detached.
    // A runner started directly starts nothing before its first command, so it may join
    // its cgroup while it boots (the join waits for the kernel); a wrapper forks at once.
    let join = if signal_directly { CgroupJoin::AfterStart } else { CgroupJoin::BeforeExec };
    let spawned = SpawnOptions::new()
        .cgroup_join(join)
        .spawn(tokio::process::Command::from(std_cmd))
        .await
        .map_err(|e| {
            // Under a wrapper, say which capsule: one that could not be made says why here.
            let place = if signal_directly {
                String::new()
            } else {
                format!(" in the run's capsule ({})", capsule.describe())
            };
            format!("cannot start {}{place}: {e}", python.display())
        })?;
    Ok((spawned, cmd_write, evt_read))
}

impl ChildKernel {
    /// Starts `program` in `capsule` in `cwd` and waits for the runner's hello.
    pub(crate) async fn start(
        capsule: &dyn agent_tools_support::capsule::Capsule,
        program: &KernelProgram,
        cwd: &Path,
    ) -> Result<ChildKernel, String> {
        let python = &program.program;
        let signal_directly = capsule.signals_reach_the_program();
        let (Spawned { mut child, group }, cmd_write, evt_read) =
            spawn_interpreter(capsule, program, cwd).await?;
        let pgid = child.id().map_or(0, |p| p as i32);
        set_nonblocking(&cmd_write).map_err(|e| format!("kernel pipe: {e}"))?;
        set_nonblocking(&evt_read).map_err(|e| format!("kernel pipe: {e}"))?;
        let pipe =
            pipe::Sender::from_owned_fd(cmd_write).map_err(|e| format!("kernel pipe: {e}"))?;
        let cmd = write_frames(pipe);
        let events =
            pipe::Receiver::from_owned_fd(evt_read).map_err(|e| format!("kernel pipe: {e}"))?;
        let (tx, rx) = mpsc::unbounded_channel();
        if let Some(stdout) = child.stdout.take() {
            tokio::spawn(read_stream(stdout_reader(stdout), StreamName::Stdout, tx.clone()));
        }
        if let Some(stderr) = child.stderr.take() {
            tokio::spawn(read_stream(stderr_reader(stderr), StreamName::Stderr, tx.clone()));
        }
        tokio::spawn(read_frames(events, tx));
        let mut kernel = ChildKernel {
            statuses: capsule.exit_statuses(),
            child,
            group,
            pgid,
            cmd,
            rx,
            backlog: VecDeque::new(),
            info: KernelInfo {
                executable: String::new(),
                version: String::new(),
                cwd: String::new(),
                typescript: false,
            },
            ready: VecDeque::new(),
            cell: 0,
            token: String::new(),
            pending_done: None,
            pending_sync: None,
            token_seen: [false; 2],
            streams_open: [true; 2],
            decoders: Default::default(),
            carry: Default::default(),
            stderr_tail: String::new(),
            dead: false,
            dying: None,
            death: None,
            signal_directly,
            frame_too: program.interrupt == InterruptBy::SignalAndFrame || !signal_directly,
        };
        let mut runner = Vec::with_capacity(program.runner.len() + 4);
        runner.extend_from_slice(&(program.runner.len() as u32).to_be_bytes());
        runner.extend_from_slice(program.runner.as_bytes());
        // An interpreter that does not take it dies or never says hello: both are seen below.
        if kernel.cmd.send(runner).is_err() {
            let how = kernel.wait_dead().await;
            return Err(format!("the interpreter did not take the runner; {how}"));
        }
        kernel.await_hello(python).await?;
        Ok(kernel)
    }

    /// Waits for the runner's hello (what it says of the interpreter), keeping what the
    /// interpreter writes to stderr meanwhile for the report of a failed start.
    async fn await_hello(&mut self, python: &Path) -> Result<(), String> {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            let raw = tokio::select! {
                raw = self.rx.recv() => raw,
                () = tokio::time::sleep_until(deadline) => {
                    self.kill_group();
                    return Err(format!("{} did not start within {} s", python.display(), START_TIMEOUT.as_secs()));
                }
            };
            match raw {
                Some(Raw::Frame(frame)) if frame["t"] == "hello" => {
                    self.info = KernelInfo {
                        executable: frame["executable"].as_str().unwrap_or_default().to_string(),
                        version: frame["version"].as_str().unwrap_or_default().to_string(),
                        cwd: frame["cwd"].as_str().unwrap_or_default().to_string(),
                        typescript: frame["typescript"].as_bool().unwrap_or(false),
                    };
                    return Ok(());
                }
                Some(Raw::Bytes(StreamName::Stderr, bytes)) => {
                    self.remember_stderr(&String::from_utf8_lossy(&bytes));
                }
                Some(Raw::EventsClosed(_)) | None => {
                    let how = self.wait_dead().await;
                    return Err(format!("{} failed to start the kernel: {how}", python.display()));
                }
                Some(_) => {}
            }
        }
    }

    /// The kernel's tree, for a shutdown that must kill it from outside; empty once it is gone.
    pub(crate) fn group(&self) -> WeakProcessGroup {
        if self.pgid > 0 { self.group.downgrade() } else { WeakProcessGroup::default() }
    }

    fn remember_stderr(&mut self, text: &str) {
        self.stderr_tail.push_str(text);
        if self.stderr_tail.len() > STDERR_TAIL * 2 {
            let mut cut = self.stderr_tail.len() - STDERR_TAIL;
            while !self.stderr_tail.is_char_boundary(cut) {
                cut += 1;
            }
            self.stderr_tail.drain(..cut);
        }
    }

    /// How the kernel ended, if it ended on its own between cells (a timer that called
    /// `process.exit`, a thread that called `os._exit`); None while it lives.
    pub(crate) async fn ended_on_its_own(&mut self) -> Option<String> {
        while let Ok(raw) = self.rx.try_recv() {
            self.backlog.push_back(raw);
        }
        // Its event pipe closed, its exit status is in, or its main thread has exited (the
        // process is exiting while its other threads wind down): each says it is gone.
        let closed = self.dead
            || self.backlog.iter().any(|raw| matches!(raw, Raw::EventsClosed(_)))
            || self.child.id().is_some_and(main_thread_exited);
        if !closed && !matches!(self.child.try_wait(), Ok(Some(_))) {
            return None;
        }
        let status = tokio::time::timeout(Duration::from_secs(2), self.child.wait()).await;
        self.kill_group();
        self.pgid = 0;
        Some(match status {
            Ok(Ok(status)) => describe_end(self.statuses.read(status)),
            _ => "it stopped answering".to_string(),
        })
    }

    /// Sends a cell to the kernel.
    pub(crate) async fn exec(&mut self, cell: u64, code: &str) -> Result<(), String> {
        self.cell = cell;
        self.token = new_token();
        self.pending_done = None;
        self.pending_sync = None;
        self.token_seen = [false; 2];
        self.ready.clear();
        let frame = json!({"t": "exec", "cell": cell, "code": code, "token": self.token});
        if self.cmd.send(encode_frame(&frame)).is_err() {
            let how = self.wait_dead().await;
            return Err(format!("the kernel is gone (its command pipe is closed): {how}"));
        }
        Ok(())
    }

    /// Queues `frame` for the runner; a kernel that is gone is seen by the event loop.
    fn send_now(&mut self, frame: &Value) {
        let _ = self.cmd.send(encode_frame(frame));
    }

    /// Handles one raw event, queueing what the cell loop should see.
    fn absorb(&mut self, raw: Raw) {
        match raw {
            Raw::Frame(frame) => self.absorb_frame(frame),
            Raw::Bytes(name, bytes) => {
                let i = stream_index(name);
                let text = self.decoders[i].push(&bytes);
                let mut text = std::mem::take(&mut self.carry[i]) + &text;
                if strip_markers(&mut text, &self.token) {
                    self.token_seen[i] = true;
                }
                // Hold back a possible partial marker at the end.
                let keep = partial_marker(&text);
                if keep > 0 {
                    self.carry[i] = text.split_off(text.len() - keep);
                }
                if name == StreamName::Stderr {
                    self.remember_stderr(&text);
                }
                if !text.is_empty() {
                    self.ready.push_back(Event::Stream(name, text));
                }
            }
            Raw::StreamClosed(name) => {
                let i = stream_index(name);
                self.streams_open[i] = false;
                let rest = std::mem::take(&mut self.carry[i]);
                if !rest.is_empty() {
                    self.ready.push_back(Event::Stream(name, rest));
                }
            }
            Raw::EventsClosed(garbage) => {
                self.dead = true;
                if let Some(garbage) = garbage {
                    // A kernel that breaks the protocol cannot be trusted with another frame.
                    self.remember_stderr(&format!("\n[protocol error: {garbage}]\n"));
                    self.kill_group();
                }
            }
        }
        self.release_done();
    }

    fn absorb_frame(&mut self, frame: Value) {
        let kind = frame["t"].as_str().unwrap_or_default();
        if matches!(kind, "display" | "tool_call" | "done" | "clear")
            && frame["cell"].as_u64() != Some(self.cell)
        {
            // A frame of an earlier cell (one whose call was abandoned): never this cell's.
            if kind == "tool_call" {
                let id = frame["id"].as_u64().unwrap_or_default();
                self.send_now(&json!({"t": "tool_result", "id": id, "ok": false,
                    "error": "the cell that made this call was abandoned"}));
            }
            if kind == "clear" || frame["sync"].as_bool() == Some(true) {
                // Nothing of that cell is shown any more: let it go on at once.
                let ack = if kind == "clear" { "cleared" } else { "shown" };
                self.send_now(&json!({"t": ack, "cell": frame["cell"]}));
            }
            return;
        }
        match kind {
            "display" => {
                let display = serde_json::from_value(frame["bundle"].clone()).ok().map(|bundle| {
                    Event::Display {
                        bundle,
                        display_id: frame["display_id"].as_str().map(str::to_string),
                        update: frame["update"].as_bool().unwrap_or(false),
                    }
                });
                if frame["sync"].as_bool() == Some(true) {
                    // The runner wrote its markers first and waits for our "shown".
                    self.pending_sync =
                        Some((SyncPoint::Display(display), Instant::now() + SYNC_TIMEOUT));
                } else {
                    self.ready.extend(display);
                }
            }
            "tool_call" => {
                self.ready.push_back(Event::ToolCall {
                    id: frame["id"].as_u64().unwrap_or_default(),
                    name: frame["name"].as_str().unwrap_or_default().to_string(),
                    args: frame["args"].clone(),
                });
            }
            "clear" => {
                let wait = frame["wait"].as_bool().unwrap_or(false);
                self.pending_sync =
                    Some((SyncPoint::Clear { wait }, Instant::now() + SYNC_TIMEOUT));
            }
            "done" => {
                let done = Done {
                    cell: self.cell,
                    status: frame["status"].as_str().unwrap_or("error").to_string(),
                    error: serde_json::from_value::<Option<CellError>>(frame["error"].clone())
                        .ok()
                        .flatten(),
                    result: serde_json::from_value(frame["result"].clone()).ok().flatten(),
                    count: frame["count"].as_u64().unwrap_or_default(),
                    cwd: frame["cwd"].as_str().map(str::to_string),
                };
                self.pending_done = Some((done, Instant::now() + SYNC_TIMEOUT));
            }
            _ => {}
        }
    }

    /// Releases a clear or a display, then `done`, once the markers arrived on both streams
    /// (all output before them is in).
    fn release_done(&mut self) {
        let synced = (0..2).all(|i| self.token_seen[i] || !self.streams_open[i]);
        if synced && let Some((point, _)) = self.pending_sync.take() {
            self.apply_sync(point);
            return;
        }
        if synced && let Some((done, _)) = self.pending_done.take() {
            self.ready.push_back(Event::Done(done));
        }
    }

    /// Applies a clear or a display where it falls in the streams and lets the cell go on; the
    /// markers seen so far were its own, the end's are still to come.
    fn apply_sync(&mut self, point: SyncPoint) {
        let ack = match point {
            SyncPoint::Clear { wait } => {
                self.ready.push_back(Event::Clear { wait });
                "cleared"
            }
            SyncPoint::Display(display) => {
                self.ready.extend(display);
                "shown"
            }
        };
        self.token_seen = [false; 2];
        self.send_now(&json!({"t": ack, "cell": self.cell}));
    }

    async fn wait_dead(&mut self) -> String {
        // The deadlines count from when the death was first seen: the cell loop races this
        // against its timers (a progress report every second), and a wait cut short goes on
        // where it was instead of starting over.
        let since = *self.dying.get_or_insert_with(Instant::now);
        // Collect the last output for the report, briefly.
        let deadline = since + Duration::from_millis(500);
        while self.streams_open.iter().any(|o| *o) {
            let raw = tokio::select! {
                raw = self.rx.recv() => raw,
                () = tokio::time::sleep_until(deadline) => break,
            };
            match raw {
                Some(raw) => self.absorb(raw),
                None => break,
            }
        }
        let status =
            tokio::time::timeout_at(since + Duration::from_millis(2500), self.child.wait()).await;
        self.kill_group();
        self.pgid = 0;
        let status = match status {
            Ok(Ok(status)) => describe_end(self.statuses.read(status)),
            Ok(Err(e)) => format!("its exit status is unknown ({e})"),
            Err(_) => {
                let _ = self.child.kill().await;
                "it stopped answering and was killed".to_string()
            }
        };
        let tail = last_lines(&self.stderr_tail, 12);
        if tail.is_empty() { status } else { format!("{status}; last stderr lines:\n{tail}") }
    }

    fn kill_group(&mut self) {
        if self.pgid > 0 {
            let _ = self.group.signal(libc::SIGKILL);
        }
    }

    /// Ends the kernel: asks it to exit, then ends its whole tree (what its cells started too).
    pub(crate) async fn shutdown(mut self) {
        self.send_now(&json!({"t": "exit"}));
        let _ = tokio::time::timeout(Duration::from_millis(500), self.child.wait()).await;
        let _ = self.group.terminate(Duration::from_millis(500)).await;
        let _ = tokio::time::timeout(Duration::from_secs(2), self.child.wait()).await;
        self.pgid = 0;
    }
}

impl KernelIo for ChildKernel {
    async fn next_event(&mut self) -> Event {
        loop {
            if let Some(event) = self.ready.pop_front() {
                return event;
            }
            if self.dead {
                if let Some(raw) = self.backlog.pop_front() {
                    self.absorb(raw);
                    continue;
                }
                if self.pending_done.is_some() || self.pending_sync.is_some() {
                    // It ended just after it finished the cell (a timer calling `process.exit`):
                    // the rest of its output is still in the pipes. Read them to their ends, and
                    // the cell's result stands.
                    match tokio::time::timeout(SYNC_TIMEOUT, self.rx.recv()).await {
                        Ok(Some(raw)) => self.absorb(raw),
                        _ => {
                            self.streams_open = [false; 2];
                            self.release_done();
                        }
                    }
                    continue;
                }
                if self.death.is_none() {
                    let how = self.wait_dead().await;
                    self.death = Some(how);
                    continue;
                }
                return Event::Died(self.death.clone().unwrap_or_default());
            }
            if let Some(raw) = self.backlog.pop_front() {
                self.absorb(raw);
                continue;
            }
            let sync_deadline = self
                .pending_sync
                .as_ref()
                .map(|(_, at)| *at)
                .or(self.pending_done.as_ref().map(|(_, at)| *at));
            let raw = tokio::select! {
                raw = self.rx.recv() => raw,
                () = tokio::time::sleep_until(sync_deadline.unwrap_or_else(Instant::now)), if sync_deadline.is_some() => {
                    // The markers did not come (fd 1 or 2 redirected by the cell): go on without.
                    if let Some((point, _)) = self.pending_sync.take() {
                        self.apply_sync(point);
                        continue;
                    }
                    if let Some((done, _)) = self.pending_done.take() {
                        return Event::Done(done);
                    }
                    continue;
                }
            };
            match raw {
                Some(raw) => self.absorb(raw),
                None => self.dead = true,
            }
        }
    }

    fn tool_result(&mut self, id: u64, result: Result<Value, String>) {
        let frame = match result {
            Ok(value) => json!({"t": "tool_result", "id": id, "ok": true, "value": value}),
            Err(error) => json!({"t": "tool_result", "id": id, "ok": false, "error": error}),
        };
        self.send_now(&frame);
    }

    fn interrupt(&mut self) {
        if self.signal_directly && self.pgid > 0 {
            // SIGINT straight to the interpreter: Python's C-level handler runs even while a C
            // extension holds the GIL; Node's stops the synchronous part of a cell that runs
            // before its reader thread is up. The runners ignore SIGINT outside user code, so a
            // signal that lands after the cell ended is harmless.
            let _ = self.group.signal_leader(libc::SIGINT);
        }
        if self.frame_too {
            // Under a capsule the pid is the prefix's: the runner's reader thread takes it.
            let frame = json!({"t": "interrupt", "cell": self.cell});
            self.send_now(&frame);
        }
    }

    async fn kill(&mut self) -> String {
        self.kill_group();
        let status = tokio::time::timeout(Duration::from_secs(5), self.child.wait()).await;
        self.pgid = 0;
        self.dead = true;
        self.death = Some("it was killed".to_string());
        match status {
            Ok(Ok(status)) => describe_end(self.statuses.read(status)),
            _ => "killed".to_string(),
        }
    }
}

const MARKER_PREFIX: &str = "\u{1}agent-tools-end-";
/// The prefix, 32 hex digits and the closing `\u{1}`.
const MARKER_LEN: usize = MARKER_PREFIX.len() + 33;

/// Removes every end marker from `text` (an earlier cell's late one as well as this cell's);
/// true when this cell's `token` was among them.
fn strip_markers(text: &mut String, token: &str) -> bool {
    let mut seen = false;
    let mut from = 0;
    while let Some(found) = text[from..].find(MARKER_PREFIX) {
        let at = from + found;
        let candidate = text.get(at..at + MARKER_LEN);
        let is_marker = candidate.is_some_and(|m| {
            let hex = &m[MARKER_PREFIX.len()..MARKER_LEN - 1];
            hex.bytes().all(|b| b.is_ascii_hexdigit()) && m.ends_with('\u{1}')
        });
        if is_marker {
            if candidate == Some(token) {
                seen = true;
            }
            text.replace_range(at..at + MARKER_LEN, "");
            from = at;
        } else {
            from = at + 1;
        }
    }
    seen
}

/// How many bytes at the end of `text` could be the start of a marker.
fn partial_marker(text: &str) -> usize {
    let Some(at) = text.rfind('\u{1}') else { return 0 };
    let tail = &text[at..];
    if tail.len() >= MARKER_LEN {
        return 0;
    }
    let prefix_part = tail.len().min(MARKER_PREFIX.len());
    let hex_ok = tail[prefix_part..].bytes().all(|b| b.is_ascii_hexdigit());
    if MARKER_PREFIX.starts_with(&tail[..prefix_part]) && hex_ok { tail.len() } else { 0 }
}

fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.trim_end().lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// "exited with status 3" or "was killed by signal 11 (SIGSEGV)".
pub(crate) fn describe_end(end: ProcessEnd) -> String {
    let sig = match end {
        ProcessEnd::Code(code) => return format!("it exited with status {code}"),
        ProcessEnd::Signal(sig) => sig,
    };
    let name = match sig {
        libc::SIGSEGV => "SIGSEGV, a segmentation fault",
        libc::SIGKILL => "SIGKILL; out of memory, or killed from outside",
        libc::SIGABRT => "SIGABRT, an abort",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGILL => "SIGILL",
        libc::SIGTERM => "SIGTERM",
        libc::SIGINT => "SIGINT",
        _ => "",
    };
    if name.is_empty() {
        format!("it was killed by signal {sig}")
    } else {
        format!("it was killed by signal {sig} ({name})")
    }
}
