//! One debug session: the adapter process (or a direct connection), the handshake in the order
//! every adapter accepts, the operations with their limits, stop snapshots, and teardown.

mod handles;
pub(crate) mod state;
mod teardown;

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    sync::Arc,
    time::Duration,
};

use serde_json::{Value, json};
use tokio::{
    io::{AsyncBufReadExt, BufReader},
    task::JoinHandle,
    time::Instant,
};
use tokio_util::sync::CancellationToken;

use self::{
    handles::{HandleKind, Handles},
    state::{Shared, forward_lines, pump},
};
use crate::{
    adapters::{self, AdapterCommand, AdapterKind, LaunchSpec},
    config::DebugConfig,
    error::DebugError,
    process::descendants,
    protocol::{BoxRead, BoxWrite, DapClient, PendingResponse},
    request::ExceptionMode,
    response::*,
};

/// How often to nudge an adapter that answered `launch` but has not sent `initialized` yet.
const POKE_EVERY: Duration = Duration::from_millis(200);

/// What the user asked breakpoints to be in one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BreakpointRequest {
    pub lines: Vec<u32>,
    pub condition: Option<String>,
    pub log_message: Option<String>,
}

/// Launch a program, or attach to one already running under a debug server.
#[derive(Debug, Clone)]
pub(crate) enum Target {
    Launch(LaunchSpec),
    Attach { port: u16, program: Option<PathBuf>, cwd: PathBuf },
}

/// Everything `Session::start` needs.
pub(crate) struct StartOptions<'a> {
    pub id: u64,
    pub root: &'a Path,
    pub config: &'a DebugConfig,
    pub command: AdapterCommand,
    pub target: Target,
    pub breakpoints: &'a BTreeMap<PathBuf, BreakpointRequest>,
    pub exceptions: ExceptionMode,
    pub rust: bool,
    pub wait: Duration,
    pub cancel: &'a CancellationToken,
}

/// The adapter process we started, in its own process group.
pub(crate) struct AdapterProcess {
    child: tokio::process::Child,
    pid: i32,
    done: bool,
}

impl Drop for AdapterProcess {
    fn drop(&mut self) {
        if !self.done {
            // Last resort (a panic, a dropped supervisor): nothing of ours may outlive us.
            crate::process::signal_group(self.pid, libc::SIGKILL);
        }
    }
}

enum Wait {
    Stopped,
    Exited,
    Gone(String),
    StillRunning,
    Cancelled,
}

/// A running debug session.
pub(crate) struct Session {
    pub(crate) id: u64,
    pub(crate) kind: AdapterKind,
    pub(crate) request: &'static str,
    pub(crate) program: String,
    command: Vec<String>,
    version: Option<String>,
    notes: Vec<String>,
    client: Arc<DapClient>,
    pub(crate) shared: Arc<Shared>,
    process: Option<AdapterProcess>,
    capabilities: Value,
    temp: Option<tempfile::TempDir>,
    pub(crate) deadline: Instant,
    owns_debuggee: bool,
    handles: Handles,
    pub(crate) cancel: CancellationToken,
    tasks: Vec<JoinHandle<()>>,
    root: PathBuf,
    config: DebugConfig,
    exceptions: ExceptionMode,
    /// The top user frame of the latest snapshot: the default frame of `evaluate`.
    default_frame: Option<u64>,
    /// Where the latest stop was, for `status`.
    last_place: Option<String>,
    torn_down: bool,
}

impl Session {
    /// Starts the adapter, runs the handshake and waits for the first stop.
    pub(crate) async fn start(
        opts: StartOptions<'_>,
    ) -> Result<(Session, StartedView), DebugError> {
        let mut session = Session::connect(&opts).await?;
        match session.handshake(&opts).await {
            Ok(view) => Ok((session, view)),
            Err(e) => {
                let context = session.failure_context();
                session.teardown("start failed").await;
                Err(match e {
                    DebugError::Adapter(message) => {
                        DebugError::Adapter(format!("{message}{context}"))
                    }
                    other => other,
                })
            }
        }
    }

    /// Spawns the adapter (or connects to a debug server) and starts the client and event pump.
    async fn connect(opts: &StartOptions<'_>) -> Result<Session, DebugError> {
        let kind = opts.command.kind;
        let shared = Shared::new();
        let mut tasks = Vec::new();
        let mut notes = opts.command.notes.clone();
        let temp = tempfile::Builder::new()
            .prefix("agent-tools-debug-")
            .tempdir()
            .map_err(|e| DebugError::adapter(format!("cannot create a temp folder: {e}")))?;
        let (request, program, cwd) = match &opts.target {
            Target::Launch(spec) => {
                ("launch", spec.program.display().to_string(), spec.cwd.clone())
            }
            Target::Attach { port, program, cwd } => (
                "attach",
                program
                    .as_ref()
                    .map_or_else(|| format!("port {port}"), |p| p.display().to_string()),
                cwd.clone(),
            ),
        };
        let (read, write, process, command): (
            BoxRead,
            BoxWrite,
            Option<AdapterProcess>,
            Vec<String>,
        ) = match (&opts.target, kind) {
            (Target::Attach { port, .. }, k) if adapters::attach_is_direct(k) => {
                let stream = connect_tcp(*port, Duration::from_secs(5)).await.map_err(|e| {
                    DebugError::Adapter(format!(
                        "nothing accepts a debug connection on 127.0.0.1:{port} ({e}). {}",
                        attach_recipe(k, *port)
                    ))
                })?;
                let (r, w) = stream.into_split();
                (Box::new(r), Box::new(w), None, vec![format!("tcp 127.0.0.1:{port}")])
            }
            (Target::Launch(_), AdapterKind::Delve) => {
                let module_dir = match &opts.target {
                    Target::Launch(spec) => adapters::go_module_dir(&spec.program, opts.root)
                        .unwrap_or_else(|| spec.cwd.clone()),
                    Target::Attach { cwd, .. } => cwd.clone(),
                };
                let mut argv = opts.command.argv.clone();
                argv.extend(["dap", "-l", "127.0.0.1:0"].map(String::from));
                let (stream, process) =
                    spawn_delve(&argv, &module_dir, &shared, &mut tasks, opts).await?;
                let (r, w) = stream.into_split();
                notes.push(format!("dlv runs in {}", module_dir.display()));
                (Box::new(r), Box::new(w), Some(process), argv)
            }
            _ => {
                let argv = opts.command.argv.clone();
                let (r, w, process) = spawn_stdio(&argv, &cwd, &shared, &mut tasks)?;
                (r, w, Some(process), argv)
            }
        };
        let (client, incoming) = DapClient::start(read, write);
        tasks.push(tokio::spawn(pump(incoming, shared.clone(), client.clone(), kind)));
        Ok(Session {
            id: opts.id,
            kind,
            request,
            program,
            command,
            version: opts.command.version.clone(),
            notes,
            client,
            shared,
            process,
            capabilities: Value::Null,
            temp: Some(temp),
            deadline: Instant::now() + opts.config.ttl(),
            owns_debuggee: matches!(opts.target, Target::Launch(_)),
            handles: Handles::default(),
            cancel: CancellationToken::new(),
            tasks,
            root: opts.root.to_path_buf(),
            config: opts.config.clone(),
            exceptions: opts.exceptions,
            default_frame: None,
            last_place: None,
            torn_down: false,
        })
    }

    /// initialize → launch/attach (not awaited) → initialized → breakpoints → exception
    /// breakpoints → configurationDone → the launch response → the first stop.
    async fn handshake(&mut self, opts: &StartOptions<'_>) -> Result<StartedView, DebugError> {
        let deadline = Instant::now() + opts.config.launch_timeout();
        let init = json!({
            "clientID": "agent-tools",
            "clientName": "agent-tools",
            "adapterID": self.kind.adapter_id(),
            "locale": "en",
            "pathFormat": "path",
            "linesStartAt1": true,
            "columnsStartAt1": true,
            "supportsVariableType": true,
            "supportsVariablePaging": true,
            "supportsRunInTerminalRequest": true,
            "supportsStartDebuggingRequest": false,
            "supportsProgressReporting": false,
            "supportsMemoryReferences": false,
            "supportsInvalidatedEvent": false,
        });
        let pending = self.client.send("initialize", init).await?;
        self.capabilities = self.await_response(pending, deadline, opts.cancel).await?;
        if self.capabilities.is_null() {
            self.capabilities = json!({});
        }
        if self.version.is_none()
            && let Some(version) = self.capabilities["__lldb"]["version"].as_str()
        {
            self.version = Some(version.to_string());
        }

        let (command, arguments) = match &opts.target {
            Target::Launch(spec) => {
                let mut spec = spec.clone();
                if self.kind == AdapterKind::Delve {
                    spec.build_output = self.temp.as_ref().map(|t| t.path().join("__debug_bin"));
                }
                if !spec.init_commands.is_empty() {
                    self.notes.push("loaded rustc's LLDB formatters for Rust values".into());
                }
                ("launch", adapters::launch_arguments(self.kind, &spec))
            }
            Target::Attach { port, program, cwd } => {
                ("attach", adapters::attach_arguments(self.kind, *port, program.as_deref(), cwd))
            }
        };
        // Never await the launch response here: debugpy answers it only after configurationDone.
        let mut launch = self.client.send(command, arguments).await?;
        let mut rx = self.shared.subscribe();
        let mut last_poke: Option<Instant> = None;
        loop {
            if self.shared.read(|s| s.initialized) {
                break;
            }
            if let Some(gone) = self.shared.read(|s| s.gone.clone()) {
                return Err(DebugError::adapter(format!(
                    "the adapter exited during `{command}` ({gone})"
                )));
            }
            if let Some(Ok(response)) = launch.try_result()
                && !response.success
            {
                return Err(DebugError::adapter(format!(
                    "`{command}` failed: {}",
                    response.error_text()
                )));
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(DebugError::adapter(format!(
                    "the adapter never sent `initialized` within {} s of `{command}`",
                    opts.config.launch_timeout().as_secs()
                )));
            }
            let answered = launch.try_result().is_some();
            if answered && last_poke.is_none_or(|t| now.duration_since(t) >= POKE_EVERY) {
                // lldb-dap can leave `process`/`initialized` unflushed behind its launch response
                // until its next reply: any request pushes them out.
                last_poke = Some(now);
                let _ = self.client.send("threads", json!({})).await;
            }
            tokio::select! {
                _ = launch.wait_raw(deadline - now), if !answered => {}
                _ = tokio::time::sleep(POKE_EVERY), if answered => {}
                changed = rx.changed() => if changed.is_err() { break },
                _ = opts.cancel.cancelled() => {
                    return Err(DebugError::adapter(format!("`{command}` was cancelled")));
                }
            }
        }

        // The configuration requests go out together and are awaited together: debugpy answers
        // each only after a round trip to the program, so one at a time costs ~40 ms apiece.
        let timeout = self.config.request_timeout();
        let mut sent = Vec::new();
        for (file, request) in opts.breakpoints {
            let pending = self.client.send("setBreakpoints", breakpoint_args(file, request)).await;
            sent.push((file, request, pending));
        }
        let panic_breakpoint = if self.kind == AdapterKind::Lldb
            && opts.rust
            && opts.exceptions != ExceptionMode::None
            && self.capabilities["supportsFunctionBreakpoints"].as_bool().unwrap_or(false)
        {
            // A Rust panic is not a signal: break where the panic machinery starts unwinding.
            let args = json!({"breakpoints": [{"name": "rust_panic"}]});
            Some(self.client.send("setFunctionBreakpoints", args).await)
        } else {
            None
        };
        let filters = adapters::exception_filters(self.kind, opts.exceptions, &self.capabilities);
        let offers_filters = self.capabilities["exceptionBreakpointFilters"]
            .as_array()
            .is_some_and(|f| !f.is_empty());
        let exception_breakpoints = if offers_filters || !filters.is_empty() {
            Some(self.client.send("setExceptionBreakpoints", json!({"filters": filters})).await)
        } else {
            None
        };
        let mut breakpoints = Vec::new();
        for (file, request, pending) in sent {
            let result = match pending {
                Ok(p) => p.wait(timeout).await,
                Err(e) => Err(e),
            };
            breakpoints.extend(self.breakpoint_views(file, request, result));
        }
        if let Some(Ok(p)) = panic_breakpoint {
            let _ = p.wait(timeout).await;
        }
        match exception_breakpoints {
            Some(Ok(p)) => {
                if let Err(e) = p.wait(timeout).await {
                    self.notes.push(format!("exception breakpoints not set: {e}"));
                }
            }
            Some(Err(e)) => self.notes.push(format!("exception breakpoints not set: {e}")),
            None => {}
        }
        if self.kind == AdapterKind::Delve && opts.exceptions == ExceptionMode::None {
            self.notes
                .push("delve always stops on panics; `exceptions: none` has no effect".into());
        }
        if self.capabilities["supportsConfigurationDoneRequest"].as_bool().unwrap_or(true) {
            let pending = self.client.send("configurationDone", json!({})).await?;
            self.await_response(pending, deadline, opts.cancel).await?;
        }
        let now = Instant::now();
        let response = match launch.wait_raw(deadline.saturating_duration_since(now)).await {
            Ok(r) => r,
            Err(e) => return Err(DebugError::adapter(format!("no answer to `{command}`: {e}"))),
        };
        if !response.success {
            return Err(DebugError::adapter(format!(
                "`{command}` failed: {}",
                response.error_text()
            )));
        }
        self.remember_descendants();
        let wait = if matches!(opts.target, Target::Attach { .. }) && opts.breakpoints.is_empty() {
            Duration::ZERO
        } else {
            opts.wait
        };
        let state = self.wait_state(0, wait, opts.cancel).await;
        Ok(StartedView { session: self.view(), breakpoints, exception_filters: filters, state })
    }

    async fn await_response(
        &self,
        mut pending: PendingResponse,
        deadline: Instant,
        cancel: &CancellationToken,
    ) -> Result<Value, DebugError> {
        let command = pending.command().to_string();
        let limit = deadline.saturating_duration_since(Instant::now()).min(
            self.config.request_timeout().max(if command == "initialize" {
                Duration::from_secs(20)
            } else {
                Duration::ZERO
            }),
        );
        tokio::select! {
            response = pending.wait_raw(limit) => {
                let response = response?;
                if response.success {
                    Ok(response.body)
                } else {
                    Err(DebugError::adapter(format!("`{command}` failed: {}", response.error_text())))
                }
            }
            _ = cancel.cancelled() => Err(DebugError::adapter(format!("`{command}` was cancelled"))),
        }
    }

    /// Recent adapter messages and stderr, for an error message.
    fn failure_context(&self) -> String {
        let (log, stderr) = self.shared.read(|s| {
            let log: Vec<String> = s.log.iter().rev().take(12).rev().cloned().collect();
            (log, s.output.tail("stderr", 1500))
        });
        let mut out = String::new();
        if !stderr.trim().is_empty() {
            out.push_str(&format!("\nprogram/adapter stderr:\n{}", stderr.trim_end()));
        }
        if !log.is_empty() {
            out.push_str(&format!("\nadapter messages:\n{}", log.join("\n")));
        }
        out
    }

    /// Sends the breakpoints of one file and reports where each landed.
    pub(crate) async fn set_breakpoints(
        &self,
        file: &Path,
        request: &BreakpointRequest,
    ) -> Vec<BreakpointView> {
        let result = self
            .client
            .request(
                "setBreakpoints",
                breakpoint_args(file, request),
                self.config.request_timeout(),
            )
            .await;
        self.breakpoint_views(file, request, result)
    }

    fn breakpoint_views(
        &self,
        file: &Path,
        request: &BreakpointRequest,
        result: Result<Value, crate::protocol::DapError>,
    ) -> Vec<BreakpointView> {
        let shown = display_path(&file.display().to_string(), &self.root);
        let placed = match &result {
            Ok(body) => body["breakpoints"].as_array().cloned().unwrap_or_default(),
            Err(_) => Vec::new(),
        };
        request
            .lines
            .iter()
            .enumerate()
            .map(|(i, line)| {
                let bp = placed.get(i).cloned().unwrap_or(Value::Null);
                BreakpointView {
                    file: shown.clone(),
                    requested: *line,
                    line: bp["line"].as_u64().and_then(|l| u32::try_from(l).ok()),
                    verified: bp["verified"].as_bool().unwrap_or(false),
                    message: match &result {
                        Ok(_) => bp["message"].as_str().map(str::to_string),
                        Err(e) => Some(e.to_string()),
                    },
                }
            })
            .collect()
    }

    /// Remembers the adapter's descendants (debuggees, helpers) so teardown can kill them even
    /// after they are re-parented.
    fn remember_descendants(&self) {
        if !self.owns_debuggee {
            return;
        }
        if let Some(process) = &self.process {
            let found = descendants(process.pid);
            if !found.is_empty() {
                self.shared.update(|s| found.into_iter().for_each(|p| s.remember(p)));
            }
        }
    }

    async fn wait_for(&self, after: u64, deadline: Instant, cancel: &CancellationToken) -> Wait {
        let mut rx = self.shared.subscribe();
        loop {
            let outcome = self.shared.read(|s| {
                if s.ended() {
                    Some(Wait::Exited)
                } else if s.epoch > after && !s.running {
                    Some(Wait::Stopped)
                } else {
                    s.gone.as_ref().map(|gone| {
                        if s.disconnecting { Wait::Exited } else { Wait::Gone(gone.clone()) }
                    })
                }
            });
            if let Some(outcome) = outcome {
                return outcome;
            }
            tokio::select! {
                changed = rx.changed() => if changed.is_err() {
                    return Wait::Gone("the session state was dropped".into());
                },
                _ = tokio::time::sleep_until(deadline) => return Wait::StillRunning,
                _ = cancel.cancelled() => return Wait::Cancelled,
                _ = self.cancel.cancelled() => return Wait::Cancelled,
            }
        }
    }

    /// Waits (bounded) for the program to stop after stop number `after`, and describes where
    /// it is then.
    async fn wait_state(
        &mut self,
        after: u64,
        wait: Duration,
        cancel: &CancellationToken,
    ) -> RunState {
        let started = Instant::now();
        let deadline = started + wait;
        let mut after = after;
        let mut notes = Vec::new();
        loop {
            match self.wait_for(after, deadline, cancel).await {
                Wait::Stopped => {
                    if let Some(skipped) = self.skippable_stop() {
                        // debugpy reports `sys.exit(n)` as an uncaught SystemExit; it is an exit.
                        after = self.shared.read(|s| s.epoch);
                        notes.push(skipped);
                        self.shared.update(|s| s.running = true);
                        let thread =
                            self.shared.read(|s| s.stop.as_ref().and_then(|x| x.thread_id));
                        if let Err(e) = self
                            .client
                            .request(
                                "continue",
                                json!({"threadId": thread.unwrap_or(0)}),
                                self.config.request_timeout(),
                            )
                            .await
                        {
                            self.shared.update(|s| s.running = false);
                            notes.push(format!("could not continue past it: {e}"));
                            return self.stopped(notes).await;
                        }
                        continue;
                    }
                    return self.stopped(notes).await;
                }
                Wait::Exited => {
                    self.settle_after_exit().await;
                    let (exit_code, output) =
                        self.shared.update(|s| (s.exit_code, s.output.read(None, OUTPUT_CHARS)));
                    return RunState::Exited { exit_code, output };
                }
                Wait::Gone(reason) => {
                    let context = self.failure_context();
                    let output = self.shared.update(|s| s.output.read(None, OUTPUT_CHARS));
                    let status = self.adapter_status().await;
                    return RunState::AdapterGone {
                        reason: format!(
                            "the adapter ended unexpectedly: {reason}{status}{context}"
                        ),
                        output,
                    };
                }
                Wait::StillRunning | Wait::Cancelled => {
                    self.remember_descendants();
                    let output = self.shared.update(|s| s.output.read(None, OUTPUT_CHARS));
                    return RunState::Running {
                        waited_seconds: started.elapsed().as_secs(),
                        output,
                    };
                }
            }
        }
    }

    /// How the adapter process ended, if it did (waiting briefly: its pipe closes first).
    async fn adapter_status(&mut self) -> String {
        let Some(process) = self.process.as_mut() else { return String::new() };
        match tokio::time::timeout(Duration::from_millis(500), process.child.wait()).await {
            Ok(Ok(status)) => format!(" (adapter {})", crate::process::describe_status(&status)),
            _ => String::new(),
        }
    }

    /// A stop that is not one for the user: debugpy's uncaught `SystemExit` (a `sys.exit(n)`).
    fn skippable_stop(&self) -> Option<String> {
        if self.kind != AdapterKind::Debugpy || self.exceptions == ExceptionMode::All {
            return None;
        }
        let stop = self.shared.read(|s| s.stop.clone())?;
        (stop.reason == "exception" && stop.text.as_deref() == Some("SystemExit")).then(|| {
            format!(
                "the program called sys.exit({}); reported as the exit it is, not as an exception stop",
                stop.description.unwrap_or_default()
            )
        })
    }

    /// Lets the last output and the exit code arrive after the program ended.
    async fn settle_after_exit(&mut self) {
        if self.kind == AdapterKind::Delve
            && self.shared.read(|s| s.exit_code.is_none() && s.gone.is_none())
        {
            // delve sends no `exited` event; it prints the exit status when we disconnect.
            self.shared.update(|s| s.disconnecting = true);
            let _ = self
                .client
                .request(
                    "disconnect",
                    json!({"terminateDebuggee": true}),
                    self.config.disconnect_timeout(),
                )
                .await;
            let mut rx = self.shared.subscribe();
            let deadline = Instant::now() + Duration::from_secs(2);
            while !self.shared.read(|s| s.gone.is_some() || s.exit_code.is_some()) {
                tokio::select! {
                    changed = rx.changed() => if changed.is_err() { break },
                    _ = tokio::time::sleep_until(deadline) => break,
                }
            }
        } else {
            let mut rx = self.shared.subscribe();
            let deadline = Instant::now() + Duration::from_millis(500);
            while !self.shared.read(|s| s.terminated || s.gone.is_some()) {
                tokio::select! {
                    changed = rx.changed() => if changed.is_err() { break },
                    _ = tokio::time::sleep_until(deadline) => break,
                }
            }
        }
        state::wait_for_pipes(&self.shared, Duration::from_secs(2)).await;
    }

    async fn stopped(&mut self, notes: Vec<String>) -> RunState {
        self.remember_descendants();
        let mut snapshot = self.snapshot().await;
        snapshot.notes.splice(0..0, notes);
        RunState::Stopped(Box::new(snapshot))
    }

    /// The stop snapshot of the current stop.
    async fn snapshot(&mut self) -> StopSnapshot {
        let (epoch, stop) = self.shared.read(|s| (s.epoch, s.stop.clone().unwrap_or_default()));
        self.handles.begin_stop(epoch);
        let timeout = self.config.request_timeout();
        let mut notes = Vec::new();
        let client = self.client.clone();
        let stack_args =
            |thread: i64| json!({"threadId": thread, "startFrame": 0, "levels": MAX_FRAMES});
        let (threads, stack) = match stop.thread_id {
            // debugpy answers one request at a time (~40 ms each): thread names are not worth one.
            Some(thread) if self.kind == AdapterKind::Debugpy => (
                None,
                Some((thread, client.request("stackTrace", stack_args(thread), timeout).await)),
            ),
            Some(thread) => {
                let (threads, stack) = tokio::join!(
                    client.request("threads", json!({}), timeout),
                    client.request("stackTrace", stack_args(thread), timeout),
                );
                (threads.ok(), Some((thread, stack)))
            }
            None => {
                let threads = client.request("threads", json!({}), timeout).await.ok();
                let first =
                    threads.as_ref().and_then(|t| t["threads"].as_array()?.first()?["id"].as_i64());
                let stack = match first {
                    Some(thread) => Some((
                        thread,
                        client.request("stackTrace", stack_args(thread), timeout).await,
                    )),
                    None => None,
                };
                (threads, stack)
            }
        };
        let thread = stack.as_ref().map(|(id, _)| {
            let name = threads
                .as_ref()
                .and_then(|t| {
                    t["threads"].as_array()?.iter().find(|x| x["id"].as_i64() == Some(*id))?["name"]
                        .as_str()
                        .map(str::to_string)
                })
                .unwrap_or_else(|| format!("thread {id}"));
            ThreadView { id: *id, name }
        });
        let mut frames = Vec::new();
        match &stack {
            Some((_, Ok(body))) => {
                for frame in body["stackFrames"].as_array().into_iter().flatten().take(MAX_FRAMES) {
                    frames.push((self.frame_view(frame), frame.clone()));
                }
                if frames.is_empty() {
                    notes.push("the stopped thread has no frames".into());
                }
            }
            Some((_, Err(e))) => notes.push(format!("no stack for the stopped thread: {e}")),
            None => notes.push("the adapter reported no thread".into()),
        }
        let user_index = frames.iter().position(|(f, _)| !f.library);
        let frames_skipped = user_index.unwrap_or(0);
        if user_index.is_none() && !frames.is_empty() {
            notes.push("no frame is in the project's code; showing the top frame".into());
        }
        let chosen = frames.get(user_index.unwrap_or(0)).cloned();
        self.default_frame = chosen.as_ref().map(|(f, _)| f.frame_id);

        let wants_info = stop.reason == "exception"
            && self.capabilities["supportsExceptionInfoRequest"].as_bool().unwrap_or(false);
        let info_request = async {
            match (&thread, wants_info) {
                (Some(thread), true) => client
                    .request("exceptionInfo", json!({"threadId": thread.id}), timeout)
                    .await
                    .ok(),
                _ => None,
            }
        };
        let frame_id = chosen.as_ref().and_then(|(_, raw)| raw["id"].as_i64());
        let locals_request = async {
            match frame_id {
                Some(id) => Some(self.locals(id).await),
                None => None,
            }
        };
        let (info, locals_result) = tokio::join!(info_request, locals_request);
        let exception = (stop.reason == "exception").then(|| {
            let mut view = ExceptionView {
                id: stop.text.clone(),
                description: stop.description.clone(),
                break_mode: None,
                details: None,
            };
            if let Some(info) = info {
                view.id = info["exceptionId"].as_str().map(str::to_string).or(view.id);
                view.description =
                    info["description"].as_str().map(str::to_string).or(view.description);
                view.break_mode = info["breakMode"].as_str().map(str::to_string);
                view.details = info["details"]["stackTrace"].as_str().map(|t| cut(t, 1500).0);
            }
            view
        });
        let (mut locals, mut locals_more, mut locals_reference) = (Vec::new(), 0, None);
        match locals_result {
            Some(Ok((vars, more, reference))) => {
                locals = vars;
                locals_more = more;
                locals_reference = reference;
            }
            Some(Err(e)) => notes.push(format!(
                "no locals for {}: {e}",
                chosen.as_ref().map_or("the frame", |(f, _)| f.name.as_str())
            )),
            None => {}
        }
        let source = chosen
            .as_ref()
            .and_then(|(_, raw)| {
                let path = raw["source"]["path"].as_str()?;
                let line = u32::try_from(raw["line"].as_u64()?).ok()?;
                Some(source_lines(Path::new(path), line))
            })
            .unwrap_or_default();
        let frame = chosen.map(|(f, _)| f);
        self.last_place = frame.as_ref().map(place_of);
        // The user frame and its callers: the library frames above it are counted, not shown.
        let stack: Vec<FrameView> =
            frames.iter().skip(frames_skipped).take(5).map(|(f, _)| f.clone()).collect();
        let output = self.shared.update(|s| s.output.read(None, OUTPUT_CHARS));
        let mut reason = stop.reason;
        let mut exception = exception;
        // A Rust panic stops lldb at our `rust_panic` function breakpoint: report it as the
        // exception it is, with the panic message the program printed.
        if self.kind == AdapterKind::Lldb
            && exception.is_none()
            && frames.first().is_some_and(|(f, _)| f.name.ends_with("rust_panic"))
        {
            reason = "exception".into();
            exception = Some(ExceptionView {
                id: Some("panic".into()),
                description: panic_message(&output.text()),
                break_mode: Some("unhandled".into()),
                details: None,
            });
        }
        StopSnapshot {
            stop: epoch,
            reason,
            description: stop.description,
            exception,
            thread,
            all_threads_stopped: stop.all_threads_stopped,
            frame,
            frames_skipped,
            source,
            locals,
            locals_more,
            locals_reference,
            stack,
            output,
            notes,
        }
    }

    /// The locals of adapter frame `frame_id`: (shown, how many more, the scope's reference).
    async fn locals(
        &mut self,
        frame_id: i64,
    ) -> Result<(Vec<VariableView>, usize, Option<u64>), DebugError> {
        let timeout = self.config.request_timeout();
        let scopes = self.client.request("scopes", json!({"frameId": frame_id}), timeout).await?;
        let scopes = scopes["scopes"].as_array().cloned().unwrap_or_default();
        let scope = scopes
            .iter()
            .find(|s| s["presentationHint"] == "locals")
            .or_else(|| {
                scopes.iter().find(|s| {
                    s["name"].as_str().is_some_and(|n| n.to_ascii_lowercase().starts_with("local"))
                })
            })
            .or_else(|| scopes.iter().find(|s| !s["expensive"].as_bool().unwrap_or(false)));
        let Some(scope) = scope else { return Ok((Vec::new(), 0, None)) };
        let Some(reference) = scope["variablesReference"].as_i64().filter(|r| *r > 0) else {
            return Ok((Vec::new(), 0, None));
        };
        let count = scope["namedVariables"].as_u64();
        let body = self
            .client
            .request("variables", json!({"variablesReference": reference}), timeout)
            .await?;
        let all: Vec<Value> = body["variables"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .filter(|v| {
                !matches!(
                    v["name"].as_str(),
                    Some("special variables" | "function variables" | "class variables")
                )
            })
            .collect();
        let handle =
            self.handles.add(HandleKind::Reference, reference, count.or(Some(all.len() as u64)));
        let shown: Vec<VariableView> =
            all.iter().take(SNAPSHOT_LOCALS).map(|v| self.variable_view(v, None)).collect();
        Ok((shown, all.len().saturating_sub(SNAPSHOT_LOCALS), Some(handle)))
    }

    fn frame_view(&mut self, frame: &Value) -> FrameView {
        let adapter_id = frame["id"].as_i64().unwrap_or(0);
        let frame_id = self.handles.add(HandleKind::Frame, adapter_id, None);
        let path = frame["source"]["path"].as_str().filter(|p| !p.is_empty());
        let hint = frame["presentationHint"].as_str().unwrap_or_default();
        let source_hint = frame["source"]["presentationHint"].as_str().unwrap_or_default();
        let inside =
            path.is_some_and(|p| Path::new(p).starts_with(&self.root) && !is_library_path(p));
        FrameView {
            frame_id,
            name: tidy_frame_name(frame["name"].as_str().unwrap_or("?")),
            path: path.map(|p| display_path(p, &self.root)),
            line: frame["line"].as_u64().and_then(|l| u32::try_from(l).ok()).filter(|l| *l > 0),
            column: frame["column"].as_u64().and_then(|c| u32::try_from(c).ok()).filter(|c| *c > 0),
            library: !inside || hint == "subtle" || hint == "label" || source_hint == "deemphasize",
        }
    }

    fn variable_view(&mut self, var: &Value, name: Option<&str>) -> VariableView {
        let raw = var["value"].as_str().or_else(|| var["result"].as_str()).unwrap_or_default();
        let (value, cut_chars) = cut(raw, MAX_VALUE_CHARS);
        let children = match (var["namedVariables"].as_u64(), var["indexedVariables"].as_u64()) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
        };
        let reference = var["variablesReference"]
            .as_i64()
            .filter(|r| *r > 0)
            .map(|r| self.handles.add(HandleKind::Reference, r, children));
        VariableView {
            name: name
                .map_or_else(|| var["name"].as_str().unwrap_or("?").to_string(), str::to_string),
            value,
            type_name: var["type"].as_str().filter(|t| !t.is_empty()).map(str::to_string),
            cut_chars,
            reference,
            children,
        }
    }

    // ---- operations ----

    /// The session as `status` and `launch` show it.
    pub(crate) fn view(&self) -> SessionView {
        let adapter_pid = self.process.as_ref().map(|p| p.pid);
        let debuggee_pid = self
            .shared
            .read(|s| s.process_pid)
            .or_else(|| self.shared.read(|s| s.debuggees.first().map(|p| p.pid)));
        SessionView {
            adapter: self.kind,
            request: self.request.to_string(),
            program: display_path(&self.program, &self.root),
            command: self.command.clone(),
            adapter_version: self.version.clone(),
            adapter_pid,
            debuggee_pid,
            ttl_seconds_left: self.deadline.saturating_duration_since(Instant::now()).as_secs(),
            notes: self.notes.clone(),
        }
    }

    pub(crate) fn status(&self) -> (String, Option<StopSummary>, Option<i64>, u64) {
        self.shared.read(|s| {
            let unread = s.output.end().saturating_sub(s.output.delivered());
            if s.ended() {
                ("exited".into(), None, s.exit_code, unread)
            } else if s.gone.is_some() {
                ("adapter_gone".into(), None, None, unread)
            } else if s.running || s.epoch == 0 {
                ("running".into(), None, None, unread)
            } else {
                let stop = s.stop.clone().unwrap_or_default();
                (
                    "stopped".into(),
                    Some(StopSummary {
                        stop: s.epoch,
                        reason: stop.reason,
                        thread_id: stop.thread_id,
                        place: self.last_place.clone(),
                    }),
                    None,
                    unread,
                )
            }
        })
    }

    /// Whether the program ended or the adapter went away: a new launch may replace it.
    pub(crate) fn finished(&self) -> bool {
        self.shared.read(|s| s.ended() || s.gone.is_some())
    }

    fn require_stopped(&self, what: &str) -> Result<(), DebugError> {
        self.shared.read(|s| {
            if s.ended() {
                Err(DebugError::usage(format!(
                    "cannot {what}: the program has exited{}; `launch` it again (breakpoints are kept)",
                    s.exit_code.map(|c| format!(" with code {c}")).unwrap_or_default()
                )))
            } else if let Some(gone) = &s.gone {
                Err(DebugError::usage(format!(
                    "cannot {what}: the adapter is gone ({gone}); `terminate`, then `launch` again"
                )))
            } else if s.running || s.epoch == 0 {
                Err(DebugError::usage(format!(
                    "cannot {what}: the program is running{}; `pause` it, or wait for a breakpoint \
                     with `continue`",
                    if s.epoch > 0 { format!(" (since stop {})", s.epoch) } else { String::new() }
                )))
            } else {
                Ok(())
            }
        })
    }

    fn thread_or_default(&self, thread_id: Option<i64>) -> i64 {
        thread_id
            .or_else(|| self.shared.read(|s| s.stop.as_ref().and_then(|x| x.thread_id)))
            .unwrap_or(1)
    }

    /// `continue`, `next`, `stepIn`, `stepOut`: resume, then wait for the next stop.
    pub(crate) async fn resume(
        &mut self,
        command: &str,
        thread_id: Option<i64>,
        wait: Duration,
        cancel: &CancellationToken,
    ) -> Result<RunState, DebugError> {
        let what = match command {
            "continue" => "continue",
            "next" => "step over",
            "stepIn" => "step in",
            _ => "step out",
        };
        self.require_stopped(what)?;
        let thread = self.thread_or_default(thread_id);
        // Register the stop waiter first: a fast adapter may stop before it answers.
        let after = self.shared.update(|s| {
            s.running = true;
            s.epoch
        });
        let result = self
            .client
            .request(command, json!({"threadId": thread}), self.config.request_timeout())
            .await;
        match result {
            Ok(_) => {}
            // The adapter went away mid-request: report it as the state it leaves us in.
            Err(crate::protocol::DapError::Closed(_)) => {}
            Err(e) => {
                self.shared.update(|s| {
                    if s.epoch == after {
                        s.running = false;
                    }
                });
                return Err(DebugError::adapter(format!("{what} on thread {thread}: {e}")));
            }
        }
        Ok(self.wait_state(after, wait, cancel).await)
    }

    pub(crate) async fn pause(
        &mut self,
        thread_id: Option<i64>,
        wait: Duration,
        cancel: &CancellationToken,
    ) -> Result<RunState, DebugError> {
        let (running, epoch) = self.shared.read(|s| (s.running || s.epoch == 0, s.epoch));
        if self.finished() {
            self.require_stopped("pause")?;
        }
        if !running {
            let mut state = self
                .stopped(vec![format!("already stopped (stop {epoch}); nothing to pause")])
                .await;
            if let RunState::Stopped(s) = &mut state {
                s.notes.dedup();
            }
            return Ok(state);
        }
        let thread = match thread_id {
            Some(t) => t,
            None => self.first_thread().await.unwrap_or(1),
        };
        self.client
            .request("pause", json!({"threadId": thread}), self.config.request_timeout())
            .await
            .map_err(|e| DebugError::adapter(format!("pause: {e}")))?;
        Ok(self.wait_state(epoch, wait, cancel).await)
    }

    async fn first_thread(&self) -> Option<i64> {
        if let Some(t) = self.shared.read(|s| s.stop.as_ref().and_then(|x| x.thread_id)) {
            return Some(t);
        }
        let body =
            self.client.request("threads", json!({}), self.config.request_timeout()).await.ok()?;
        body["threads"].as_array()?.first()?["id"].as_i64()
    }

    pub(crate) async fn threads(&mut self) -> Result<(Vec<ThreadView>, usize), DebugError> {
        if self.finished() {
            self.require_stopped("list threads")?;
        }
        let body = self.client.request("threads", json!({}), self.config.request_timeout()).await?;
        let all: Vec<ThreadView> = body["threads"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|t| ThreadView {
                id: t["id"].as_i64().unwrap_or(0),
                name: t["name"].as_str().unwrap_or_default().to_string(),
            })
            .collect();
        let more = all.len().saturating_sub(MAX_THREADS);
        Ok((all.into_iter().take(MAX_THREADS).collect(), more))
    }

    pub(crate) async fn stack(&mut self, thread_id: Option<i64>) -> Result<StackView, DebugError> {
        self.require_stopped("read the stack")?;
        let thread = self.thread_or_default(thread_id);
        let epoch = self.shared.read(|s| s.epoch);
        self.handles.begin_stop(epoch);
        let body = self
            .client
            .request(
                "stackTrace",
                json!({"threadId": thread, "startFrame": 0, "levels": MAX_FRAMES}),
                self.config.request_timeout(),
            )
            .await?;
        let frames: Vec<FrameView> = body["stackFrames"]
            .as_array()
            .into_iter()
            .flatten()
            .take(MAX_FRAMES)
            .map(|f| self.frame_view(f))
            .collect();
        Ok(StackView {
            stop: epoch,
            thread_id: thread,
            frames,
            total: body["totalFrames"].as_u64(),
        })
    }

    fn running(&self) -> bool {
        self.shared.read(|s| s.running || s.ended() || s.gone.is_some())
    }

    pub(crate) async fn scopes(&mut self, frame_id: u64) -> Result<Vec<ScopeView>, DebugError> {
        let handle = self.handles.resolve(frame_id, HandleKind::Frame, self.running())?;
        let body = self
            .client
            .request("scopes", json!({"frameId": handle.adapter_id}), self.config.request_timeout())
            .await?;
        let scopes = body["scopes"].as_array().cloned().unwrap_or_default();
        Ok(scopes
            .iter()
            .filter_map(|s| {
                let reference = s["variablesReference"].as_i64().filter(|r| *r > 0)?;
                let count = match (s["namedVariables"].as_u64(), s["indexedVariables"].as_u64()) {
                    (None, None) => None,
                    (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
                };
                Some(ScopeView {
                    name: s["name"].as_str().unwrap_or("?").to_string(),
                    reference: self.handles.add(HandleKind::Reference, reference, count),
                    expensive: s["expensive"].as_bool().unwrap_or(false),
                    count,
                })
            })
            .collect())
    }

    pub(crate) async fn variables(
        &mut self,
        reference: u64,
        start: u64,
    ) -> Result<VariablesView, DebugError> {
        let handle = self.handles.resolve(reference, HandleKind::Reference, self.running())?;
        let paged = start > 0 || handle.children.is_some_and(|c| c > MAX_CHILDREN as u64);
        let mut args = json!({"variablesReference": handle.adapter_id});
        if paged {
            args["start"] = json!(start);
            args["count"] = json!(MAX_CHILDREN + 1);
        }
        let body = self.client.request("variables", args, self.config.request_timeout()).await?;
        let mut vars: Vec<Value> = body["variables"].as_array().cloned().unwrap_or_default();
        if paged && vars.len() > MAX_CHILDREN + 1 {
            // The adapter ignored start/count: page here.
            vars = vars.into_iter().skip(usize::try_from(start).unwrap_or(usize::MAX)).collect();
        }
        let has_more = vars.len() > MAX_CHILDREN
            || handle.children.is_some_and(|c| c > start + MAX_CHILDREN as u64);
        let variables: Vec<VariableView> =
            vars.iter().take(MAX_CHILDREN).map(|v| self.variable_view(v, None)).collect();
        Ok(VariablesView { reference, start, variables, has_more, total: handle.children })
    }

    pub(crate) async fn evaluate(
        &mut self,
        expression: &str,
        frame_id: Option<u64>,
    ) -> Result<EvaluateView, DebugError> {
        if self.finished() {
            self.require_stopped("evaluate")?;
        }
        let frame_id = match frame_id {
            Some(id) => Some(id),
            None if !self.running() => self.default_frame,
            None => None,
        };
        let mut args = json!({"expression": expression, "context": self.kind.evaluate_context()});
        if let Some(id) = frame_id {
            let handle = self.handles.resolve(id, HandleKind::Frame, self.running())?;
            args["frameId"] = json!(handle.adapter_id);
        }
        let body =
            self.client.request("evaluate", args, self.config.request_timeout()).await.map_err(
                |e| match e {
                    crate::protocol::DapError::Failed { message, .. } => {
                        DebugError::adapter(format!("evaluating `{expression}` failed: {message}"))
                    }
                    other => other.into(),
                },
            )?;
        let result = self.variable_view(&body, Some(expression));
        Ok(EvaluateView { expression: expression.to_string(), frame_id, result })
    }

    pub(crate) fn output(&self, since: Option<u64>) -> OutputView {
        let (output, exit_code) =
            self.shared.update(|s| (s.output.read(since, OUTPUT_CHARS), s.exit_code));
        OutputView { output, exit_code }
    }
}

/// The `setBreakpoints` arguments for `request` in `file`.
fn breakpoint_args(file: &Path, request: &BreakpointRequest) -> Value {
    let breakpoints: Vec<Value> = request
        .lines
        .iter()
        .map(|line| {
            let mut bp = json!({"line": line});
            if let Some(c) = &request.condition {
                bp["condition"] = json!(c);
            }
            if let Some(m) = &request.log_message {
                bp["logMessage"] = json!(m);
            }
            bp
        })
        .collect();
    let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    json!({
        "source": {"path": file.display().to_string(), "name": name},
        "breakpoints": breakpoints,
        "lines": request.lines,
        "sourceModified": false,
    })
}

/// The message line after Rust's `panicked at FILE:LINE:COL:`.
fn panic_message(output: &str) -> Option<String> {
    let mut lines = output.lines();
    while let Some(line) = lines.next() {
        if line.contains("panicked at ") {
            let at = line.split("panicked at ").nth(1).unwrap_or_default().trim_end_matches(':');
            let message = lines.next().unwrap_or_default().trim();
            return Some(if message.is_empty() {
                at.to_string()
            } else {
                format!("{message} (at {at})")
            });
        }
    }
    None
}

/// `buggy::average::hbbee2e627357c3f3` → `buggy::average` (the Rust symbol hash is noise).
fn tidy_frame_name(name: &str) -> String {
    if let Some((head, hash)) = name.rsplit_once("::h")
        && hash.len() == 16
        && hash.chars().all(|c| c.is_ascii_hexdigit())
    {
        return head.to_string();
    }
    name.to_string()
}

fn place_of(frame: &FrameView) -> String {
    match (&frame.path, frame.line) {
        (Some(path), Some(line)) => format!("{} at {path}:{line}", frame.name),
        (Some(path), None) => format!("{} in {path}", frame.name),
        _ => frame.name.clone(),
    }
}

/// Library or runtime code, whatever the adapter's hints say.
fn is_library_path(path: &str) -> bool {
    [
        "/site-packages/",
        "/dist-packages/",
        "/lib/python3",
        "/usr/lib/go",
        "/usr/local/go/",
        "/rustc/",
        "/rustlib/",
        "/.cargo/registry/",
        "/pkg/mod/",
    ]
    .iter()
    .any(|p| path.contains(p))
}

/// `path` relative to `root` when inside it.
pub(crate) fn display_path(path: &str, root: &Path) -> String {
    match Path::new(path).strip_prefix(root) {
        Ok(p) if p.as_os_str().is_empty() => ".".into(),
        Ok(p) => p.display().to_string(),
        Err(_) => path.to_string(),
    }
}

/// At most `max` characters of `text`, and how many were cut.
pub(crate) fn cut(text: &str, max: usize) -> (String, usize) {
    let total = text.chars().count();
    if total <= max {
        return (text.to_string(), 0);
    }
    (text.chars().take(max).collect(), total - max)
}

fn source_lines(path: &Path, line: u32) -> Vec<SourceLine> {
    let Ok(meta) = std::fs::metadata(path) else { return Vec::new() };
    if meta.len() > 8 * 1024 * 1024 {
        return Vec::new();
    }
    let Ok(text) = std::fs::read_to_string(path) else { return Vec::new() };
    let first = line.saturating_sub(SOURCE_CONTEXT).max(1);
    let last = line + SOURCE_CONTEXT;
    text.lines()
        .enumerate()
        .map(|(i, l)| (u32::try_from(i + 1).unwrap_or(u32::MAX), l))
        .filter(|(n, _)| *n >= first && *n <= last)
        .map(|(n, l)| SourceLine { line: n, text: cut(l, 200).0, current: n == line })
        .collect()
}

/// Starts the adapter `argv` in `cwd`, in its own process group, with stdout and stderr piped.
fn start_adapter(
    argv: &[String],
    cwd: &Path,
    stdin: std::process::Stdio,
    configure: impl FnOnce(&mut tokio::process::Command),
) -> Result<AdapterProcess, DebugError> {
    if argv.first().is_none_or(String::is_empty) {
        return Err(DebugError::adapter("the adapter command is empty"));
    }
    let mut command = tokio::process::Command::new(&argv[0]);
    command
        .args(&argv[1..])
        .current_dir(cwd)
        .stdin(stdin)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0);
    configure(&mut command);
    let child = command
        .spawn()
        .map_err(|e| DebugError::adapter(format!("cannot start `{}`: {e}", argv.join(" "))))?;
    let pid = child.id().and_then(|p| i32::try_from(p).ok()).unwrap_or(0);
    Ok(AdapterProcess { child, pid, done: false })
}

fn spawn_stdio(
    argv: &[String],
    cwd: &Path,
    shared: &Arc<Shared>,
    tasks: &mut Vec<JoinHandle<()>>,
) -> Result<(BoxRead, BoxWrite, AdapterProcess), DebugError> {
    let mut process = start_adapter(argv, cwd, std::process::Stdio::piped(), |command| {
        command.env("PYDEVD_DISABLE_FILE_VALIDATION", "1");
    })?;
    let (Some(stdin), Some(stdout)) = (process.child.stdin.take(), process.child.stdout.take())
    else {
        return Err(DebugError::adapter("the adapter has no stdio pipes"));
    };
    if let Some(stderr) = process.child.stderr.take() {
        tasks.push(forward_lines(shared.clone(), stderr, "stderr", true));
    }
    Ok((Box::new(stdout), Box::new(stdin), process))
}

/// Starts `dlv dap -l 127.0.0.1:0`, reads the port it prints, and connects.
async fn spawn_delve(
    argv: &[String],
    cwd: &Path,
    shared: &Arc<Shared>,
    tasks: &mut Vec<JoinHandle<()>>,
    opts: &StartOptions<'_>,
) -> Result<(tokio::net::TcpStream, AdapterProcess), DebugError> {
    let mut process = start_adapter(argv, cwd, std::process::Stdio::null(), |_| {})?;
    let (Some(stdout), Some(stderr)) = (process.child.stdout.take(), process.child.stderr.take())
    else {
        return Err(DebugError::adapter("dlv has no stdio pipes"));
    };
    // The program's stderr goes to dlv's stderr.
    tasks.push(forward_lines(shared.clone(), stderr, "stderr", false));
    let mut reader = BufReader::new(stdout);
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    let address = loop {
        let mut line = String::new();
        let read = tokio::select! {
            r = reader.read_line(&mut line) => r,
            _ = tokio::time::sleep_until(deadline) => {
                return Err(DebugError::adapter(format!(
                    "dlv did not say where it listens within 20 s; it printed: {}", seen.join(" | ")
                )));
            }
            _ = opts.cancel.cancelled() => return Err(DebugError::adapter("starting dlv was cancelled")),
        };
        match read {
            Ok(0) | Err(_) => {
                let status = process.child.try_wait().ok().flatten();
                return Err(DebugError::adapter(format!(
                    "dlv exited before listening ({}); it printed: {}",
                    status.map_or_else(
                        || "still running".into(),
                        |s| crate::process::describe_status(&s)
                    ),
                    seen.join(" | ")
                )));
            }
            Ok(_) => {
                if let Some(addr) = line.trim().strip_prefix("DAP server listening at:") {
                    break addr.trim().to_string();
                }
                seen.push(line.trim().to_string());
            }
        }
    };
    // After the address, dlv's stdout carries the program's stdout.
    tasks.push(forward_lines(shared.clone(), reader, "stdout", false));
    let port: u16 = address.rsplit(':').next().and_then(|p| p.parse().ok()).ok_or_else(|| {
        DebugError::adapter(format!("cannot read a port in dlv's address `{address}`"))
    })?;
    let stream = connect_tcp(port, Duration::from_secs(5))
        .await
        .map_err(|e| DebugError::adapter(format!("cannot connect to dlv at {address}: {e}")))?;
    Ok((stream, process))
}

async fn connect_tcp(port: u16, within: Duration) -> std::io::Result<tokio::net::TcpStream> {
    let deadline = Instant::now() + within;
    loop {
        match tokio::net::TcpStream::connect(("127.0.0.1", port)).await {
            Ok(stream) => {
                let _ = stream.set_nodelay(true);
                return Ok(stream);
            }
            Err(e) if Instant::now() >= deadline => return Err(e),
            Err(e)
                if e.kind() == std::io::ErrorKind::ConnectionRefused
                    && within > Duration::from_secs(1) =>
            {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => return Err(e),
        }
    }
}

/// How to start a program so that `attach` with `port` can reach it.
pub(crate) fn attach_recipe(kind: AdapterKind, port: u16) -> String {
    match kind {
        AdapterKind::Debugpy => format!(
            "Start the program with `python -m debugpy --listen 127.0.0.1:{port} --wait-for-client \
             your_script.py` (the project's Python, with debugpy installed), then attach"
        ),
        AdapterKind::Delve => format!(
            "Start the program with `dlv debug --headless --listen 127.0.0.1:{port} --api-version 2 \
             --accept-multiclient` in its module folder, then attach"
        ),
        AdapterKind::Lldb => format!(
            "Start the program with `lldb-server gdbserver 127.0.0.1:{port} ./program`, then attach \
             (pass `program` for symbols)"
        ),
        AdapterKind::Dart => format!(
            "Start the program with `dart run --enable-vm-service={port} \
             --disable-service-auth-codes bin/main.dart`, then attach"
        ),
    }
}
