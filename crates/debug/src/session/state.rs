//! A session's shared state, fed by the event pump: stops (with a stop number), exit, output,
//! the processes we learned about, and the answers to the adapter's reverse requests.

use std::{collections::VecDeque, sync::Arc, time::Duration};

use agent_tools_support::{capsule::Capsule, process::KnownProcess};

use parking_lot::Mutex;
use tokio::{
    io::{AsyncBufReadExt, AsyncRead, BufReader},
    sync::{mpsc, watch},
};

use crate::{
    adapters::AdapterKind,
    dap_types::{
        Breakpoint, Event, IncomingRequest, OutputBody, ProcessBody, Reverse, RunInTerminal,
        RunInTerminalArguments, RunInTerminalBody, StartDebugging, StoppedBody,
    },
    output::OutputRing,
    protocol::{DapClient, Incoming},
};

/// The last `stopped` event.
#[derive(Debug, Clone, Default)]
pub(crate) struct StopEvent {
    pub reason: String,
    pub description: Option<String>,
    pub text: Option<String>,
    pub thread_id: Option<i64>,
    pub all_threads_stopped: bool,
}

/// Lines of the adapter's own messages kept for error reports.
const LOG_LINES: usize = 60;

#[derive(Debug, Default)]
pub(crate) struct State {
    /// Bumped on every `stopped` event: the stop number.
    pub epoch: u64,
    pub stop: Option<StopEvent>,
    pub running: bool,
    pub initialized: bool,
    pub exit_code: Option<i64>,
    pub exited: bool,
    pub terminated: bool,
    /// The connection ended; why.
    pub gone: Option<String>,
    /// We sent `disconnect`: the connection ending is expected.
    pub disconnecting: bool,
    /// The debuggee's pid from the `process` event.
    pub process_pid: Option<i32>,
    /// Processes to kill at teardown if still alive (debuggees, terminal children).
    pub debuggees: Vec<KnownProcess>,
    pub output: OutputRing,
    /// The adapter's console messages and stderr.
    pub log: VecDeque<String>,
    /// Pipes of the adapter's stdio still being read (delve prints program output there).
    pub open_pipes: usize,
    /// Children started for `runInTerminal`; reaped at teardown.
    pub terminal_children: Vec<tokio::process::Child>,
    /// Their process trees; dropping one kills it.
    pub terminal_groups: Vec<agent_tools_support::process::ProcessGroup>,
    /// Process groups of the program's (delve's debuggee leads one); swept at teardown.
    pub groups: Vec<i32>,
    /// The program's process disappeared without an `exited` event (its pid).
    pub unreported_exit: Option<i32>,
    /// We sent `pause` and its stop has not been reported yet.
    pub pausing: bool,
    /// The writing end of the program's stdin, while it is open.
    pub stdin: Option<std::fs::File>,
    /// Text for stdin not written yet (no writer yet, or the pipe was full).
    pub pending_stdin: Option<String>,
    /// The inode of the pipe or FIFO the program's stdin is, while it is open.
    pub stdin_inode: Option<u64>,
    /// The latest `breakpoint` event of each breakpoint id (verified later, moved).
    pub breakpoint_changes: std::collections::HashMap<i64, Breakpoint>,
    /// A `watch` for an output line: the pattern, the line that matched, the unfinished line.
    pub watch_pattern: Option<regex::Regex>,
    pub watch_matched: Option<String>,
    watch_partial: String,
}

impl State {
    pub(crate) fn log_line(&mut self, line: impl Into<String>) {
        let line = line.into();
        for part in line.lines() {
            let part = part.trim_end();
            if part.is_empty() {
                continue;
            }
            if self.log.len() >= LOG_LINES {
                self.log.pop_front();
            }
            self.log.push_back(part.to_string());
        }
    }

    pub(crate) fn remember(&mut self, proc: KnownProcess) {
        if !self.debuggees.contains(&proc) {
            self.debuggees.push(proc);
        }
    }

    /// Takes `file` as the program's stdin (non-blocking: a full pipe never stalls us) and
    /// writes what is pending.
    pub(crate) fn set_stdin(&mut self, file: std::fs::File) {
        use std::os::fd::AsRawFd;
        // SAFETY: fcntl(2) on a descriptor we own; only its status flags change.
        unsafe {
            let fd = file.as_raw_fd();
            let flags = libc::fcntl(fd, libc::F_GETFL);
            libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
        }
        self.stdin_inode = super::stdin_wait::inode_of(&file);
        self.stdin = Some(file);
        self.flush_stdin();
    }

    /// Writes pending stdin text as far as the pipe takes it; what does not fit stays pending.
    pub(crate) fn flush_stdin(&mut self) {
        use std::io::Write;
        let (Some(file), Some(text)) = (self.stdin.as_mut(), self.pending_stdin.take()) else {
            return;
        };
        let bytes = text.as_bytes();
        let mut written = 0;
        while written < bytes.len() {
            match file.write(&bytes[written..]) {
                Ok(0) => break,
                Ok(n) => written += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        if written < bytes.len() {
            self.pending_stdin = Some(String::from_utf8_lossy(&bytes[written..]).into_owned());
        }
    }

    /// The program's output into the ring, and checked against a watched pattern line by line.
    pub(crate) fn push_output(&mut self, stream: &str, text: &str) {
        self.output.push(stream, text);
        let Some(pattern) = &self.watch_pattern else { return };
        if self.watch_matched.is_some() {
            return;
        }
        self.watch_partial.push_str(text);
        while let Some(end) = self.watch_partial.find('\n') {
            let line: String = self.watch_partial.drain(..=end).collect();
            let line = line.trim_end();
            if pattern.is_match(line) {
                self.watch_matched = Some(line.to_string());
                self.watch_partial.clear();
                return;
            }
        }
    }

    /// Stops watching the output; the line that matched, if one did.
    pub(crate) fn end_output_watch(&mut self) -> Option<String> {
        self.watch_pattern = None;
        self.watch_partial.clear();
        self.watch_matched.take()
    }

    /// Whether the program ended (exit or terminate).
    pub(crate) fn ended(&self) -> bool {
        self.exited || self.terminated
    }
}

/// State plus a change signal that waiters subscribe to.
#[derive(Debug)]
pub(crate) struct Shared {
    pub state: Mutex<State>,
    changed: watch::Sender<u64>,
    /// Where the session's processes start: the adapter, and a debuggee it asks us to run.
    pub capsule: Arc<dyn Capsule>,
    /// The adapter's host pid (0 before it starts): pids it reports are found under it.
    pub adapter_pid: std::sync::atomic::AtomicU32,
}

impl Shared {
    #[cfg(test)]
    pub(crate) fn new() -> Arc<Self> {
        Self::in_capsule(Arc::new(agent_tools_support::capsule::OnHost))
    }

    pub(crate) fn in_capsule(capsule: Arc<dyn Capsule>) -> Arc<Self> {
        Arc::new(Shared {
            state: Mutex::new(State::default()),
            changed: watch::channel(0).0,
            capsule,
            adapter_pid: std::sync::atomic::AtomicU32::new(0),
        })
    }

    /// Runs `f` on the state and wakes every waiter.
    pub(crate) fn update<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        let out = f(&mut self.state.lock());
        self.changed.send_modify(|n| *n += 1);
        out
    }

    pub(crate) fn read<T>(&self, f: impl FnOnce(&State) -> T) -> T {
        f(&self.state.lock())
    }

    /// Subscribe before checking a condition, then await `changed()`: no change is missed.
    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }
}

/// Applies events and answers reverse requests, in the order the adapter sent them.
pub(crate) async fn pump(
    mut rx: mpsc::UnboundedReceiver<Incoming>,
    shared: Arc<Shared>,
    client: Arc<DapClient>,
    kind: AdapterKind,
) {
    while let Some(incoming) = rx.recv().await {
        tracing::trace!(?incoming, "pump");
        match incoming {
            Incoming::Event(event) => apply_event(&shared, kind, event),
            Incoming::Request(request) => reverse_request(&shared, &client, request).await,
            Incoming::Closed(reason) => {
                shared.update(|s| {
                    if s.gone.is_none() {
                        s.gone = Some(reason);
                    }
                    s.running = false;
                });
            }
        }
    }
}

pub(crate) fn apply_event(shared: &Shared, kind: AdapterKind, event: Event) {
    match event {
        Event::Initialized => shared.update(|s| s.initialized = true),
        Event::Stopped(body) => shared.update(|s| {
            s.epoch += 1;
            s.running = false;
            s.stop = Some(StopEvent::from(body));
        }),
        Event::Breakpoint(body) => {
            if let Some(id) = body.breakpoint.id {
                shared.update(|s| {
                    if body.reason.as_deref() == Some("removed") {
                        s.breakpoint_changes.remove(&id);
                    } else {
                        s.breakpoint_changes.insert(id, body.breakpoint);
                    }
                });
            }
        }
        Event::Continued(_) => shared.update(|s| {
            s.running = true;
            s.pausing = false;
        }),
        Event::Exited(body) => shared.update(|s| {
            s.exited = true;
            s.running = false;
            // The adapter did report it, only later than the tracker noticed.
            s.unreported_exit = None;
            if let Some(code) = body.exit_code {
                s.exit_code = Some(code);
            }
        }),
        Event::Terminated => shared.update(|s| {
            s.terminated = true;
            s.running = false;
        }),
        Event::Process(body) => apply_process(shared, &body),
        Event::Output(body) => apply_output(shared, kind, &body),
        Event::Thread(_) | Event::Module(_) | Event::Capabilities(_) | Event::Other { .. } => {}
    }
}

impl From<StoppedBody> for StopEvent {
    fn from(body: StoppedBody) -> Self {
        StopEvent {
            reason: body.reason.unwrap_or_else(|| "unknown".into()),
            description: body.description,
            text: body.text,
            thread_id: body.thread_id,
            all_threads_stopped: body.all_threads_stopped.unwrap_or(false),
        }
    }
}

/// The debuggee's pid, in our PID namespace.
fn apply_process(shared: &Shared, body: &ProcessBody) {
    // In a capsule the adapter reports its own PID namespace's number.
    let under = shared.adapter_pid.load(std::sync::atomic::Ordering::SeqCst);
    if let Some(pid) = body
        .system_process_id
        .and_then(|p| u32::try_from(p).ok())
        .and_then(|p| if under == 0 { Some(p) } else { shared.capsule.host_pid(p, under) })
        .and_then(|p| i32::try_from(p).ok())
    {
        let proc = KnownProcess::of(pid);
        shared.update(|s| {
            s.process_pid = Some(pid);
            if let Some(p) = proc {
                s.remember(p);
            }
        });
    }
}

/// The program's output into the ring; the adapter's own messages into the log.
fn apply_output(shared: &Shared, kind: AdapterKind, body: &OutputBody) {
    let text = body.output.as_str();
    let category = body.category.as_deref().unwrap_or("console");
    match category {
        // After `disconnect`, what an adapter prints is its own shutdown noise
        // (lldb-dap sends its stderr, crash trace included, as output events).
        "stdout" | "stderr" => shared.update(|s| {
            if s.disconnecting || is_lldb_noise(kind, text) {
                s.log_line(text);
            } else {
                s.push_output(category, text);
            }
        }),
        "telemetry" => {}
        _ => shared.update(|s| {
            // delve says how the program ended only on its console.
            if kind == AdapterKind::Delve
                && let Some(code) = parse_delve_exit(text)
            {
                s.exit_code = Some(code);
                s.exited = true;
                s.unreported_exit = None;
            }
            s.log_line(text);
        }),
    }
}

/// lldb's own complaints about the program's debug info (`error: prog 0x00001e44:
/// DW_TAG_member '_M_local_buf' refers to type …`), which it sends as the program's stderr.
fn is_lldb_noise(kind: AdapterKind, text: &str) -> bool {
    kind == AdapterKind::Lldb
        && text
            .lines()
            .all(|l| l.starts_with("error: ") && l.contains(" DW_") || l.trim().is_empty())
}

/// `Process 20276 has exited with status 3` → 3.
fn parse_delve_exit(text: &str) -> Option<i64> {
    let rest = text.split("has exited with status ").nth(1)?;
    rest.split(|c: char| !(c.is_ascii_digit() || c == '-')).next()?.parse().ok()
}

async fn reverse_request(shared: &Arc<Shared>, client: &DapClient, request: IncomingRequest) {
    let seq = request.seq;
    let command = request.command().to_string();
    let answer = match request.request {
        Reverse::RunInTerminal(arguments) => match run_in_terminal(shared, &arguments).await {
            Ok(pid) => {
                shared.update(|s| s.log_line(format!("runInTerminal: started pid {pid}")));
                let body =
                    RunInTerminalBody { process_id: Some(i64::from(pid)), ..Default::default() };
                client.respond::<RunInTerminal>(seq, Ok(body)).await
            }
            Err(e) => {
                let message = format!("runInTerminal failed: {e}");
                shared.update(|s| s.log_line(message.clone()));
                client.respond::<RunInTerminal>(seq, Err(message.as_str())).await
            }
        },
        Reverse::StartDebugging(arguments) => {
            let message = "startDebugging is not supported: agent-tools debugs one process per \
                           session and does not follow child processes; start the child on its \
                           own and `attach` to it";
            let shown = serde_json::to_string(&arguments).unwrap_or_default();
            shared.update(|s| s.log_line(format!("refused startDebugging: {shown}")));
            client.respond::<StartDebugging>(seq, Err(message)).await
        }
        Reverse::Unsupported { command, why } => client.refuse(seq, &command, &why).await,
    };
    if let Err(e) = answer {
        shared.update(|s| s.log_line(format!("could not answer `{command}`: {e}")));
    }
}

/// Runs the debuggee of a `runInTerminal` request as our child, output captured.
async fn run_in_terminal(
    shared: &Arc<Shared>,
    arguments: &RunInTerminalArguments,
) -> Result<i32, String> {
    let argv = &arguments.args;
    let Some(program) = argv.first() else {
        return Err("the request has no `args`".into());
    };
    let rest: Vec<std::ffi::OsString> = argv[1..].iter().map(Into::into).collect();
    let mut command =
        tokio::process::Command::from(shared.capsule.command(program.as_ref(), &rest));
    // With `stdin` asked for at launch, the program reads a pipe we keep writing to.
    let stdin_writer = if shared.read(|s| s.pending_stdin.is_some()) {
        let (reader, writer) =
            std::io::pipe().map_err(|e| format!("cannot make a stdin pipe: {e}"))?;
        command.stdin(std::process::Stdio::from(reader));
        Some(writer)
    } else {
        command.stdin(std::process::Stdio::null());
        None
    };
    command.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    if let Some(cwd) = arguments.cwd.as_deref().filter(|c| !c.is_empty()) {
        command.current_dir(cwd);
    }
    for (key, value) in arguments.env.iter().flatten() {
        match value {
            Some(v) => command.env(key, v),
            None => command.env_remove(key),
        };
    }
    let agent_tools_support::process::Spawned { mut child, group } =
        agent_tools_support::process::spawn(command)
            .await
            .map_err(|e| format!("cannot start {program}: {e}"))?;
    let pid = i32::try_from(group.pid()).map_err(|_| "the child has no pid")?;
    if let Some(stdout) = child.stdout.take() {
        forward_lines(shared.clone(), stdout, "stdout", false);
    }
    if let Some(stderr) = child.stderr.take() {
        forward_lines(shared.clone(), stderr, "stderr", false);
    }
    shared.update(|s| {
        if let Some(p) = KnownProcess::of(pid) {
            s.remember(p);
        }
        s.process_pid.get_or_insert(pid);
        s.terminal_children.push(child);
        s.terminal_groups.push(group);
        if let Some(writer) = stdin_writer {
            s.set_stdin(std::fs::File::from(std::os::fd::OwnedFd::from(writer)));
        }
    });
    Ok(pid)
}

/// Copies lines from `pipe` into the output ring (`stream`) or, for `to_log`, the adapter log.
pub(crate) fn forward_lines<R: AsyncRead + Unpin + Send + 'static>(
    shared: Arc<Shared>,
    pipe: R,
    stream: &'static str,
    to_log: bool,
) -> tokio::task::JoinHandle<()> {
    if !to_log {
        shared.update(|s| s.open_pipes += 1);
    }
    tokio::spawn(async move {
        let mut reader = BufReader::new(pipe);
        // Whatever arrives is passed on at once, a line's start included (a prompt such as
        // `fmt.Print("> ")` has no newline); only whole lines can be delve's own noise.
        let mut at_line_start = true;
        // A logged line can arrive in several writes (`eprintln!` writes its parts): it is
        // logged once whole.
        let mut partial = String::new();
        loop {
            let chunk = match reader.fill_buf().await {
                Ok([]) | Err(_) => break,
                Ok(bytes) => bytes.to_vec(),
            };
            reader.consume(chunk.len());
            let text = String::from_utf8_lossy(&chunk).into_owned();
            for piece in text.split_inclusive('\n') {
                let whole_line = at_line_start && piece.ends_with('\n');
                if to_log {
                    partial.push_str(piece);
                    if piece.ends_with('\n') {
                        let line = std::mem::take(&mut partial);
                        shared.update(|s| s.log_line(line));
                    }
                } else if whole_line && is_delve_noise(piece) {
                    shared.update(|s| s.log_line(piece));
                } else {
                    shared.update(|s| s.push_output(stream, piece));
                }
                at_line_start = piece.ends_with('\n');
            }
        }
        if !partial.is_empty() {
            shared.update(|s| s.log_line(partial));
        }
        if !to_log {
            shared.update(|s| s.open_pipes = s.open_pipes.saturating_sub(1));
        }
    })
}

/// Lines delve itself prints on the stdio it shares with the program.
fn is_delve_noise(line: &str) -> bool {
    let line = line.trim_start();
    line.starts_with("DAP server listening at")
        || line.starts_with("API server listening at")
        || line.contains(" layer=dap ")
        || line.contains(" layer=debugger ")
}

/// Waits up to `within` for the pipes to close (the program's last output to arrive).
pub(crate) async fn wait_for_pipes(shared: &Shared, within: Duration) {
    let mut rx = shared.subscribe();
    let deadline = tokio::time::Instant::now() + within;
    loop {
        if shared.read(|s| s.open_pipes == 0) {
            return;
        }
        tokio::select! {
            changed = rx.changed() => if changed.is_err() { return },
            _ = tokio::time::sleep_until(deadline) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn delve_exit_status_is_read_from_its_console() {
        assert_eq!(parse_delve_exit("Process 20276 has exited with status 3\n"), Some(3));
        assert_eq!(parse_delve_exit("Detaching\n"), None);
    }

    #[test]
    fn a_stop_bumps_the_stop_number_and_output_is_kept_by_stream() {
        let shared = Shared::new();
        apply_event(
            &shared,
            AdapterKind::Lldb,
            Event::parse("output", json!({"category": "stdout", "output": "hi\r\n"})),
        );
        apply_event(
            &shared,
            AdapterKind::Lldb,
            Event::parse("output", json!({"category": "telemetry", "output": "x"})),
        );
        apply_event(
            &shared,
            AdapterKind::Lldb,
            Event::parse("stopped", json!({"reason": "breakpoint", "threadId": 7})),
        );
        shared.read(|s| {
            assert_eq!(s.epoch, 1);
            assert_eq!(s.stop.as_ref().unwrap().thread_id, Some(7));
            assert_eq!(s.output.all_text(), "hi\n");
        });
    }
}
