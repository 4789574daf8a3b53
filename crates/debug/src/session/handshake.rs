//! The handshake in the order every adapter accepts (launch not awaited; configuration
//! requests sent together), and setting breakpoints.

use std::{
    path::{Path, PathBuf},
    time::Duration,
};

use agent_tools_support::progress::CallScope;
use serde_json::Value;
use tokio::time::Instant;

use super::*;
use crate::{
    adapters::ExceptionMode,
    adapters::{self, AdapterKind},
    dap_types::{
        Attach, Breakpoint, BreakpointsBody, ConfigurationDone, FunctionBreakpoint, Initialize,
        InitializeArguments, Launch, NoArguments, Request, SetBreakpoints, SetBreakpointsArguments,
        SetExceptionBreakpoints, SetExceptionBreakpointsArguments, SetFunctionBreakpoints,
        SetFunctionBreakpointsArguments, Source, SourceBreakpoint, Threads,
    },
    error::DebugError,
    protocol::{DapError, PendingResponse},
    response::*,
};

/// The request that starts the program, with its adapter's own arguments.
enum StartRequest {
    Launch(Value),
    Attach(Value),
}

/// How often to nudge an adapter that answered `launch` but has not sent `initialized` yet.
const POKE_EVERY: Duration = Duration::from_millis(200);

impl Session {
    /// initialize → launch/attach (not awaited) → initialized → breakpoints → exception
    /// breakpoints → configurationDone → the launch response → the first stop.
    pub(super) async fn handshake(
        &mut self,
        opts: &StartOptions<'_>,
    ) -> Result<StartedView, DebugError> {
        let deadline = Instant::now() + opts.config.launch_timeout();
        self.initialize(deadline, &opts.cancel).await?;
        // The adapter starts the program on `launch`: by then it is in its cgroup.
        if let Some(process) = &self.process {
            process.group.joined_cgroup().await;
            tracing::trace!("start: the adapter is in its cgroup");
        }
        let built = match self.go_build.take() {
            Some(build) => Some(build.finish(deadline, &opts.cancel).await?),
            None => None,
        };
        let (breakpoints, filters) = match self.start_request(opts, built)? {
            StartRequest::Launch(arguments) => {
                self.start_program::<Launch>(opts, arguments, deadline).await?
            }
            StartRequest::Attach(arguments) => {
                self.start_program::<Attach>(opts, arguments, deadline).await?
            }
        };
        let wait = if matches!(opts.target, Target::Attach { .. }) && opts.breakpoints.is_empty() {
            Duration::ZERO
        } else {
            opts.wait
        };
        let state = self.wait_state(0, wait, &opts.cancel).await;
        Ok(StartedView { session: self.view(), breakpoints, exception_filters: filters, state })
    }

    /// `launch` or `attach` (`R`), not awaited: debugpy answers it only after
    /// configurationDone. Then `initialized`, the configuration, and its response.
    async fn start_program<R: Request<Arguments = Value>>(
        &mut self,
        opts: &StartOptions<'_>,
        arguments: Value,
        deadline: Instant,
    ) -> Result<(Vec<BreakpointView>, Vec<String>), DebugError> {
        let mut launch = self.client.send::<R>(arguments).await?;
        self.await_initialized(opts, &mut launch, deadline).await?;
        let configured = self.configure(opts, deadline).await?;
        self.await_launch_response(launch, deadline).await?;
        Ok(configured)
    }

    /// `initialize`: the adapter's capabilities (and lldb-dap's version, which it says there).
    async fn initialize(
        &mut self,
        deadline: Instant,
        cancel: &CallScope,
    ) -> Result<(), DebugError> {
        let init = InitializeArguments {
            client_id: "agent-tools",
            client_name: "agent-tools",
            adapter_id: self.kind.adapter_id(),
            locale: "en",
            path_format: "path",
            lines_start_at1: true,
            columns_start_at1: true,
            supports_variable_type: true,
            supports_variable_paging: true,
            supports_run_in_terminal_request: true,
            supports_start_debugging_request: false,
            supports_progress_reporting: false,
            supports_memory_references: false,
            supports_invalidated_event: false,
        };
        let pending = self.client.send::<Initialize>(init).await?;
        self.capabilities = self.await_response(pending, deadline, cancel).await?;
        if self.version.is_none()
            && let Some(version) =
                self.capabilities.lldb.as_ref().and_then(|l| l.version.as_deref())
        {
            self.version = Some(version.to_string());
        }
        Ok(())
    }

    /// The `launch` or `attach` request and its arguments for this adapter.
    /// `built`: the Go program's binary, built beside the adapter (delve runs it as is).
    fn start_request(
        &mut self,
        opts: &StartOptions<'_>,
        built: Option<PathBuf>,
    ) -> Result<StartRequest, DebugError> {
        Ok(match &opts.target {
            Target::Launch(spec) => {
                let mut spec = spec.clone();
                if let Some(binary) = built {
                    spec.program = binary;
                }
                if !spec.init_commands.is_empty() {
                    self.notes.push("loaded rustc's LLDB formatters for Rust values".into());
                }
                if let adapters::StdinSource::Fifo(path) = &mut spec.stdin {
                    *path = self.stdin_fifo()?;
                }
                if self.kind == AdapterKind::Debugpy {
                    self.just_my_code = spec.just_my_code;
                    if let Some(temp) = self.temp.as_ref() {
                        crate::launch::failure_hooks::install(temp.path(), &mut spec.env, |k| {
                            std::env::var(k).ok()
                        })?;
                    }
                }
                if !spec.just_my_code && self.kind == AdapterKind::Debugpy {
                    self.notes
                        .push("justMyCode is off: breakpoints and steps reach library code".into());
                }
                StartRequest::Launch(adapters::launch_arguments(self.kind, &spec))
            }
            Target::Attach { how, program, cwd } => {
                let (port, pid) = match how {
                    AttachTo::Port(port) => (Some(*port), None),
                    AttachTo::Pid(pid) => (None, Some(*pid)),
                };
                let args =
                    adapters::attach_arguments(self.kind, port, pid, program.as_deref(), cwd);
                StartRequest::Attach(args)
            }
        })
    }

    /// Waits for `initialized` after `command`, nudging an adapter that answered but has not
    /// flushed it, and fails when the adapter exits, refuses `command` or takes too long.
    async fn await_initialized<R: Request>(
        &self,
        opts: &StartOptions<'_>,
        launch: &mut PendingResponse<R>,
        deadline: Instant,
    ) -> Result<(), DebugError> {
        let command = R::COMMAND;
        let mut rx = self.shared.subscribe();
        let mut last_poke: Option<Instant> = None;
        let started = Instant::now();
        let mut progress_tick = tokio::time::interval(Duration::from_secs(1));
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
                let _ = self.client.send::<Threads>(NoArguments {}).await;
            }
            tokio::select! {
                _ = launch.wait_raw(deadline - now), if !answered => {}
                _ = tokio::time::sleep(POKE_EVERY), if answered => {}
                changed = rx.changed() => if changed.is_err() { break },
                _ = progress_tick.tick() => opts.cancel.report(
                    started.elapsed().as_secs_f64(),
                    "waiting for the adapter to start the program",
                ),
                _ = opts.cancel.cancelled() => {
                    return Err(DebugError::adapter(format!("`{command}` was cancelled")));
                }
            }
        }
        Ok(())
    }

    /// The configuration requests (breakpoints, function breakpoints, exception breakpoints)
    /// and `configurationDone`: the breakpoints as placed and the exception filters sent.
    async fn configure(
        &mut self,
        opts: &StartOptions<'_>,
        deadline: Instant,
    ) -> Result<(Vec<BreakpointView>, Vec<String>), DebugError> {
        // The configuration requests go out together and are awaited together: debugpy answers
        // each only after a round trip to the program, so one at a time costs ~40 ms apiece.
        let timeout = self.config.request_timeout();
        let mut sent = Vec::new();
        for (file, request) in opts.breakpoints {
            let pending =
                self.client.send::<SetBreakpoints>(breakpoint_args(self.kind, file, request)).await;
            sent.push((file, request, pending));
        }
        self.function_breakpoints(opts).await;
        let panic_breakpoint = if self.kind == AdapterKind::Lldb
            && opts.rust
            && opts.exceptions != ExceptionMode::None
            && self.capabilities.supports_function_breakpoints.unwrap_or(false)
        {
            // A Rust panic is not a signal: break where the panic machinery starts unwinding.
            let args = SetFunctionBreakpointsArguments {
                breakpoints: vec![FunctionBreakpoint { name: "rust_panic".into() }],
            };
            Some(self.client.send::<SetFunctionBreakpoints>(args).await)
        } else {
            None
        };
        let filters = self.exception_filters_to_send(opts);
        let offers_filters =
            self.capabilities.exception_breakpoint_filters.as_ref().is_some_and(|f| !f.is_empty());
        let exception_breakpoints = if offers_filters || !filters.is_empty() {
            let args = SetExceptionBreakpointsArguments { filters: filters.clone() };
            Some(self.client.send::<SetExceptionBreakpoints>(args).await)
        } else {
            None
        };
        let mut breakpoints = Vec::new();
        for (file, request, pending) in sent {
            let result = match pending {
                Ok(p) => p.wait(timeout).await,
                Err(e) => Err(e),
            };
            let views = self.breakpoint_views(file, request, result);
            self.placed.insert(file.clone(), views.clone());
            breakpoints.extend(views);
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
        if self.capabilities.supports_configuration_done_request.unwrap_or(true) {
            let pending = self.client.send::<ConfigurationDone>(NoArguments {}).await?;
            self.await_response(pending, deadline, &opts.cancel).await?;
        }
        Ok((breakpoints, filters))
    }

    /// Function breakpoints that stand in for what delve lacks: `main.main` for a stop on
    /// entry, and the Go test failure marker.
    async fn function_breakpoints(&mut self, opts: &StartOptions<'_>) {
        let timeout = self.config.request_timeout();
        let delve_entry = matches!(&opts.target, Target::Launch(spec) if spec.stop_on_entry)
            && self.kind == AdapterKind::Delve;
        // A failing Go test is no panic: stop where `t.Errorf`/`t.Fatalf` mark it failed, so the
        // snapshot shows the test's line that failed, as pytest's failing assertion.
        let go_test_failures = matches!(&opts.target, Target::Launch(spec) if spec.go_test)
            && self.kind == AdapterKind::Delve
            && opts.exceptions != ExceptionMode::None;
        let mut function_breakpoints: Vec<FunctionBreakpoint> =
            opts.functions.iter().map(|name| FunctionBreakpoint { name: name.clone() }).collect();
        if delve_entry {
            // delve's own entry stop is on a thread without frames: stop at main.main instead.
            function_breakpoints.push(FunctionBreakpoint { name: "main.main".into() });
        }
        if go_test_failures {
            function_breakpoints
                .push(FunctionBreakpoint { name: super::snapshot::GO_TEST_FAIL.into() });
        }
        if !function_breakpoints.is_empty() {
            let args = SetFunctionBreakpointsArguments { breakpoints: function_breakpoints };
            if let Ok(p) = self.client.send::<SetFunctionBreakpoints>(args).await {
                let _ = p.wait(timeout).await;
                if delve_entry {
                    self.notes.push(
                        "stop_on_entry with delve stops at main.main (a function breakpoint): \
                         delve's own entry stop has no frames"
                            .into(),
                    );
                }
            }
        }
    }

    /// The exception filters to send: what `exceptions` means for this adapter (a failing
    /// Python test reaches `uncaught` through the failure hooks).
    fn exception_filters_to_send(&self, opts: &StartOptions<'_>) -> Vec<String> {
        adapters::exception_filters(self.kind, opts.exceptions, &self.capabilities)
    }

    /// The launch response (the program runs to its first stop meanwhile), then what the
    /// session watches: the program's descendants and the stdin it was given.
    async fn await_launch_response<R: Request>(
        &mut self,
        mut launch: PendingResponse<R>,
        deadline: Instant,
    ) -> Result<(), DebugError> {
        let command = R::COMMAND;
        // Answered while the program runs to its first stop, so that stop's snapshot needs no
        // extra round trip to name its thread. Only debugpy: delve lists a placeholder thread
        // while the program runs.
        if self.kind == AdapterKind::Debugpy {
            self.early_threads = self.client.send::<Threads>(NoArguments {}).await.ok();
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
        // A `/proc` walk takes CPU the program needs on its way to the first stop: only a
        // program fed on stdin is looked for now (a wait for input is told by its processes).
        // The tracker looks every 200 ms, the stop and teardown look too, and the adapter's
        // group, lineage mark and cgroup hold the program meanwhile.
        if self.shared.read(|s| s.stdin.is_some() || s.pending_stdin.is_some()) {
            self.remember_descendants();
        }
        if self.owns_debuggee {
            let adapter = self.process.as_ref().map(|p| p.pid);
            self.tasks.push(super::tracker::track(self.shared.clone(), adapter));
        }
        self.shared.update(|s| s.flush_stdin());
        Ok(())
    }

    pub(super) async fn await_response<R: Request>(
        &self,
        mut pending: PendingResponse<R>,
        deadline: Instant,
        cancel: &CallScope,
    ) -> Result<R::Body, DebugError> {
        let command = R::COMMAND;
        let limit = deadline.saturating_duration_since(Instant::now()).min(
            self.config.request_timeout().max(if command == Initialize::COMMAND {
                Duration::from_secs(20)
            } else {
                Duration::ZERO
            }),
        );
        tokio::select! {
            response = pending.wait_raw(limit) => match crate::protocol::body_of::<R>(response?) {
                Ok(body) => Ok(body),
                Err(DapError::Failed { message, .. }) => {
                    Err(DebugError::adapter(format!("`{command}` failed: {message}")))
                }
                Err(e) => Err(e.into()),
            },
            _ = cancel.cancelled() => Err(DebugError::adapter(format!("`{command}` was cancelled"))),
        }
    }

    /// Recent adapter messages and stderr, for an error message.
    pub(super) fn failure_context(&self) -> String {
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
        &mut self,
        file: &Path,
        request: &BreakpointRequest,
    ) -> Vec<BreakpointView> {
        let result = self
            .client
            .request::<SetBreakpoints>(
                breakpoint_args(self.kind, file, request),
                self.config.request_timeout(),
            )
            .await;
        let mut views = self.breakpoint_views(file, request, result);
        if request.library && self.just_my_code {
            // debugpy takes justMyCode at launch only.
            for view in views.iter_mut().filter(|v| !v.verified) {
                view.message = Some(format!(
                    "{}justMyCode is on in this session, so debugpy skips library code: `launch` \
                     again (it turns justMyCode off by itself for a library breakpoint)",
                    view.message.as_ref().map(|m| format!("{m}; ")).unwrap_or_default()
                ));
            }
        }
        if views.is_empty() {
            self.placed.remove(file);
        } else {
            self.placed.insert(file.to_path_buf(), views.clone());
        }
        views
    }

    /// The breakpoints of `file` as the adapter has them now (its `breakpoint` events applied).
    pub(crate) fn placed(&self, file: &Path) -> Option<Vec<BreakpointView>> {
        let mut views = self.placed.get(file)?.clone();
        self.shared.read(|s| {
            for view in &mut views {
                let Some(change) = view.adapter_id.and_then(|id| s.breakpoint_changes.get(&id))
                else {
                    continue;
                };
                if let Some(verified) = change.verified {
                    view.verified = verified;
                }
                if let Some(line) = change.line.and_then(|l| u32::try_from(l).ok()) {
                    view.line = Some(line);
                }
                if let Some(message) = &change.message {
                    view.message = Some(message.clone());
                }
            }
        });
        Some(views)
    }

    pub(super) fn breakpoint_views(
        &self,
        file: &Path,
        request: &BreakpointRequest,
        result: Result<BreakpointsBody, DapError>,
    ) -> Vec<BreakpointView> {
        let shown = display_path(&file.display().to_string(), &self.root);
        let placed: &[Breakpoint] = match &result {
            Ok(body) => &body.breakpoints,
            Err(_) => &[],
        };
        request
            .lines
            .iter()
            .enumerate()
            .map(|(i, asked)| {
                let bp = placed.get(i).cloned().unwrap_or_default();
                let mut view = pending_view(&shown, asked);
                view.line = bp.line.and_then(|l| u32::try_from(l).ok());
                view.verified = bp.verified.unwrap_or(false);
                view.adapter_id = bp.id;
                view.message = match &result {
                    Ok(_) => bp.message,
                    Err(e) => Some(e.to_string()),
                };
                if self.kind == AdapterKind::Lldb
                    && asked.hit_condition.as_deref().is_some_and(|h| {
                        !h.trim()
                            .trim_start_matches(">=")
                            .trim()
                            .chars()
                            .all(|c| c.is_ascii_digit())
                    })
                {
                    view.message = Some(
                        "lldb-dap takes only a hit count (\"3\": from the third hit on); this \
                         hit_condition is ignored"
                            .into(),
                    );
                }
                view
            })
            .collect()
    }
}

/// A breakpoint as asked for, before an adapter placed it.
pub(crate) fn pending_view(shown: &str, asked: &LineBreakpoint) -> BreakpointView {
    BreakpointView {
        file: shown.to_string(),
        requested: asked.line,
        line: None,
        verified: false,
        message: None,
        condition: asked.condition.clone(),
        hit_condition: asked.hit_condition.clone(),
        log_message: asked.log_message.clone(),
        adapter_id: None,
    }
}

/// The `setBreakpoints` arguments for `request` in `file`.
pub(super) fn breakpoint_args(
    kind: AdapterKind,
    file: &Path,
    request: &BreakpointRequest,
) -> SetBreakpointsArguments {
    let breakpoints = request
        .lines
        .iter()
        .map(|asked| SourceBreakpoint {
            line: asked.line,
            condition: asked.condition.clone(),
            hit_condition: asked.hit_condition.as_deref().map(|h| adapter_hit_condition(kind, h)),
            log_message: asked.log_message.clone(),
        })
        .collect();
    let lines: Vec<u32> = request.lines.iter().map(|b| b.line).collect();
    let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    SetBreakpointsArguments {
        source: Source {
            name: Some(name),
            path: Some(file.display().to_string()),
            presentation_hint: None,
        },
        breakpoints,
        lines,
        source_modified: false,
    }
}

/// A hit condition as `kind` reads it. A bare number means "from the Nth hit on" everywhere:
/// lldb-dap takes only a number (its ignore count is N − 1); debugpy and delve take an
/// operator, and a bare number there would mean "exactly the Nth".
fn adapter_hit_condition(kind: AdapterKind, hit: &str) -> String {
    let hit = hit.trim();
    let bare = hit.chars().all(|c| c.is_ascii_digit());
    match kind {
        AdapterKind::Lldb => hit.trim_start_matches(">=").trim().to_string(),
        _ if bare => format!(">= {hit}"),
        _ => hit.to_string(),
    }
}

/// Checks a hit condition the user gave: a number, or (not with lldb) an operator and a number.
pub(crate) fn check_hit_condition(hit: &str) -> Result<(), DebugError> {
    let hit = hit.trim();
    let number = ["==", ">=", "<=", ">", "<", "%"]
        .iter()
        .find_map(|op| hit.strip_prefix(op))
        .unwrap_or(hit)
        .trim();
    if number.is_empty() || !number.chars().all(|c| c.is_ascii_digit()) {
        return Err(DebugError::usage(format!(
            "hit_condition `{hit}` is not a hit count: use a number (\"3\": stop from the third \
             hit on) or, with debugpy and delve, an operator and a number (\"== 3\", \"% 2\")"
        )));
    }
    Ok(())
}

impl Session {
    /// A FIFO in the session's temp folder for lldb's `target.input-path`, held open for
    /// writing (opened read-write, so opening never blocks and the program sees no EOF until
    /// `input` closes it).
    fn stdin_fifo(&mut self) -> Result<PathBuf, DebugError> {
        let Some(temp) = self.temp.as_ref() else {
            return Err(DebugError::adapter("the session has no temp folder for stdin"));
        };
        let path = temp.path().join("stdin");
        let c_path = std::ffi::CString::new(path.as_os_str().as_encoded_bytes())
            .map_err(|e| DebugError::adapter(format!("stdin FIFO path: {e}")))?;
        // SAFETY: mkfifo(3) with a NUL-terminated path we own; no memory is shared.
        if unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) } != 0 {
            return Err(DebugError::adapter(format!(
                "cannot make a stdin FIFO at {}: {}",
                path.display(),
                std::io::Error::last_os_error()
            )));
        }
        // The session's own temp folder, outside the project.
        #[allow(clippy::disallowed_methods, reason = "a private folder outside the project")]
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .map_err(|e| DebugError::adapter(format!("cannot open the stdin FIFO: {e}")))?;
        self.shared.update(|s| s.set_stdin(file));
        Ok(path)
    }
}
