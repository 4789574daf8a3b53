//! The supervisor: one debug session per conversation, calls on it serialised, a hard time
//! limit that ends it through the same teardown as `terminate`, and `shutdown` for the run's end.

use std::{
    collections::{BTreeMap, HashMap},
    path::{Path, PathBuf},
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::Duration,
};

mod breakpoints;
mod operations;

use agent_tools_support::capsule::Capsule;
use parking_lot::Mutex;
use tokio::{task::JoinHandle, time::Instant};
use tokio_util::sync::CancellationToken;

use crate::progress::CallScope;

use crate::{
    adapters::{
        self, AdapterCommand, AdapterKind, AdapterReport, LaunchSpec, Probes, SearchEnv,
        StdinSource,
    },
    config::{DebugConfig, human_seconds},
    error::DebugError,
    launch::{self, resolve_in_root},
    request::{DebugArgs, Operation},
    response::*,
    session::{AttachTo, BreakpointRequest, Session, StartOptions, Target},
};

use self::operations::{session_op_after_unseen, status_view};

/// Most a call may wait for a stop.
const MAX_WAIT: Duration = Duration::from_secs(600);

#[derive(Default)]
struct SlotInner {
    session: Option<Session>,
    breakpoints: BTreeMap<PathBuf, BreakpointRequest>,
    last_end: Option<String>,
}

/// One conversation's place: its session (if any) and its breakpoints.
#[derive(Default)]
struct Slot {
    inner: tokio::sync::Mutex<SlotInner>,
    /// The running session's cancel token, reachable without the lock (the time limit and
    /// shutdown use it to interrupt a call that is waiting for a stop).
    cancel: Mutex<Option<CancellationToken>>,
}

/// Debug sessions of one run, one per conversation.
pub struct DebugSupervisor {
    config: DebugConfig,
    capsule: Arc<dyn Capsule>,
    env: SearchEnv,
    probes: Arc<Probes>,
    slots: Mutex<HashMap<String, Arc<Slot>>>,
    next_id: AtomicU64,
    closing: AtomicBool,
    timers: Mutex<Vec<JoinHandle<()>>>,
    /// Per root: the library folders of the program's environments (probed once).
    libraries: Mutex<HashMap<PathBuf, Vec<PathBuf>>>,
}

impl DebugSupervisor {
    /// A supervisor looking up adapters on this process's PATH.
    pub fn new(config: DebugConfig) -> Arc<Self> {
        Self::with_env(config, SearchEnv::from_process())
    }

    /// A supervisor looking up adapters in `env` (tests use a PATH of their own).
    pub fn with_env(config: DebugConfig, env: SearchEnv) -> Arc<Self> {
        Self::build(config, env, Arc::new(agent_tools_support::capsule::OnHost))
    }

    /// A supervisor whose adapters, debuggees and test builds start in `capsule`, the run's.
    pub fn in_capsule(config: DebugConfig, capsule: Arc<dyn Capsule>) -> Arc<Self> {
        Self::build(config, SearchEnv::from_process(), capsule)
    }

    fn build(config: DebugConfig, env: SearchEnv, capsule: Arc<dyn Capsule>) -> Arc<Self> {
        Arc::new(DebugSupervisor {
            config,
            capsule,
            env,
            probes: Arc::new(Probes::default()),
            slots: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            closing: AtomicBool::new(false),
            timers: Mutex::new(Vec::new()),
            libraries: Mutex::new(HashMap::new()),
        })
    }

    pub fn config(&self) -> &DebugConfig {
        &self.config
    }

    fn slot(&self, conversation: &str) -> Arc<Slot> {
        self.slots.lock().entry(conversation.to_string()).or_default().clone()
    }

    /// What `adapters` reports for `root`: all four, usable or not and why.
    pub async fn adapters(&self, root: &Path) -> Vec<AdapterReport> {
        let root = canonical_root(root);
        let (config, env, probes) = (self.config.clone(), self.env.clone(), self.probes.clone());
        tokio::task::spawn_blocking(move || adapter_reports_with(&root, &config, &env, &probes))
            .await
            .unwrap_or_default()
    }

    /// The folders outside `root` that the programs of this project run code from (the
    /// interpreter's stdlib and site-packages, GOROOT and the module cache, the Rust sources).
    async fn library_roots(&self, root: &Path) -> Vec<PathBuf> {
        if let Some(known) = self.libraries.lock().get(root) {
            return known.clone();
        }
        let (root_owned, env, probes) = (root.to_path_buf(), self.env.clone(), self.probes.clone());
        let found = tokio::task::spawn_blocking(move || {
            let python = adapters::python_candidates(&root_owned, &env).into_iter().next();
            AdapterKind::ALL
                .into_iter()
                .flat_map(|kind| launch::library_roots(kind, python.as_deref(), &probes, &env))
                .collect::<Vec<_>>()
        })
        .await
        .unwrap_or_default();
        self.libraries.lock().insert(root.to_path_buf(), found.clone());
        found
    }

    /// Resolves how to start `kind`, on the blocking pool (it runs version probes).
    async fn resolve(&self, kind: AdapterKind, root: &Path) -> Result<AdapterCommand, DebugError> {
        let (root, config, env, probes) =
            (root.to_path_buf(), self.config.clone(), self.env.clone(), self.probes.clone());
        tokio::task::spawn_blocking(move || {
            adapters::resolve_with(kind, &root, &config, &env, &probes, false)
        })
        .await
        .map_err(|e| {
            DebugError::adapter(format!("resolving the {} adapter failed: {e}", kind.id()))
        })?
    }

    /// Runs one `debug` operation for `conversation`, confined to `root`.
    ///
    /// Calls of one conversation run one at a time; `cancel` interrupts a wait for a stop.
    pub async fn call(
        &self,
        conversation: &str,
        root: &Path,
        args: DebugArgs,
        cancel: &CancellationToken,
    ) -> Result<DebugOutcome, DebugError> {
        self.call_in(conversation, root, args, &CallScope::new(cancel)).await
    }

    /// Like [`DebugSupervisor::call`], reporting long waits to `scope`'s progress port. A
    /// cancelled wait returns at once with the state the program is in; the session stays
    /// usable.
    pub async fn call_in(
        &self,
        conversation: &str,
        root: &Path,
        args: DebugArgs,
        cancel: &CallScope<'_>,
    ) -> Result<DebugOutcome, DebugError> {
        let root = canonical_root(root);
        if args.operation == Operation::Adapters {
            return Ok(DebugOutcome::Adapters { adapters: self.adapters(&root).await });
        }
        let slot = self.slot(conversation);
        let mut inner = tokio::select! {
            inner = slot.inner.lock() => inner,
            _ = cancel.cancelled() => {
                return Err(DebugError::usage(format!(
                    "{} was cancelled while the previous debug call of this conversation was \
                     still running",
                    args.operation.as_str()
                )));
            }
        };
        // The timer may lag behind; the limit holds anyway.
        if inner.session.as_ref().is_some_and(|s| s.deadline <= Instant::now()) {
            self.expire(&mut inner).await;
        }
        let wait =
            args.wait_seconds.map_or(self.config.stop_wait(), Duration::from_secs).min(MAX_WAIT);
        let op = args.operation;
        let outcome = match op {
            Operation::Adapters => unreachable_adapters(),
            Operation::Status => Ok(DebugOutcome::Status(status_view(&mut inner).await)),
            Operation::Breakpoints => self.breakpoints(&mut inner, &root, &args).await,
            Operation::Launch | Operation::Attach => {
                self.start(&slot, &mut inner, &root, &args, wait, cancel).await
            }
            Operation::Terminate => Ok(DebugOutcome::Terminated(match inner.session.take() {
                Some(mut session) => {
                    let report = session.teardown("terminate").await;
                    inner.last_end =
                        Some(format!("the session of {} was ended by `terminate`", report.program));
                    *slot.cancel.lock() = None;
                    report
                }
                None => TeardownReport {
                    reason: "terminate".into(),
                    steps: vec![format!(
                        "no debug session was running{}",
                        inner.last_end.as_ref().map(|e| format!(" ({e})")).unwrap_or_default()
                    )],
                    ..Default::default()
                },
            })),
            _ => {
                let last_end = inner.last_end.clone();
                let Some(session) = inner.session.as_mut() else {
                    return Err(no_session(last_end.as_deref()));
                };
                session_op_after_unseen(session, &args, wait, cancel).await
            }
        };
        if inner.session.as_ref().is_some_and(|s| s.deadline <= Instant::now()) {
            let report = self.expire(&mut inner).await;
            if let Ok(outcome) = &outcome
                && matches!(outcome, DebugOutcome::Run(RunState::Running { .. }))
            {
                return Ok(DebugOutcome::Terminated(report));
            }
        }
        outcome
    }

    /// Ends the session of `inner` because its time limit passed.
    async fn expire(&self, inner: &mut SlotInner) -> TeardownReport {
        let Some(mut session) = inner.session.take() else { return TeardownReport::default() };
        let limit = human_seconds(self.config.ttl_seconds);
        let report = session.teardown(&format!("time limit ({limit})")).await;
        inner.last_end = Some(format!(
            "the session of {} ended when its time limit ({limit}) passed",
            report.program
        ));
        report
    }

    /// Ends every session; after this no adapter or program started here remains.
    pub async fn shutdown(&self) -> Vec<TeardownReport> {
        self.closing.store(true, Ordering::SeqCst);
        for timer in self.timers.lock().drain(..) {
            timer.abort();
        }
        let slots: Vec<Arc<Slot>> = self.slots.lock().values().cloned().collect();
        let mut reports = Vec::new();
        for slot in slots {
            if let Some(token) = slot.cancel.lock().take() {
                token.cancel();
            }
            let mut inner = slot.inner.lock().await;
            if let Some(mut session) = inner.session.take() {
                let report = session.teardown("the run ended").await;
                inner.last_end =
                    Some(format!("the session of {} ended with the run", report.program));
                reports.push(report);
            }
        }
        reports
    }

    async fn start(
        &self,
        slot: &Arc<Slot>,
        inner: &mut SlotInner,
        root: &Path,
        args: &DebugArgs,
        wait: Duration,
        cancel: &CallScope<'_>,
    ) -> Result<DebugOutcome, DebugError> {
        if self.closing.load(Ordering::SeqCst) {
            return Err(DebugError::usage("the run is ending; no new session starts"));
        }
        if let Some(session) = &inner.session {
            if !session.finished() {
                let view = session.view();
                let (state, stop, _, _) = session.status();
                let at = match stop {
                    Some(s) => format!(
                        "stopped at stop {} ({}{})",
                        s.stop,
                        s.reason,
                        s.place.map(|p| format!(" in {p}")).unwrap_or_default()
                    ),
                    None => state,
                };
                return Err(DebugError::usage(format!(
                    "refused: a debug session is already running in this conversation: {} \
                     ({}{}), {at}. End it with {{\"operation\": \"terminate\"}} first, or keep \
                     working with it",
                    view.program,
                    view.adapter.id(),
                    view.debuggee_pid.map(|p| format!(", pid {p}")).unwrap_or_default(),
                )));
            }
            if let Some(mut old) = inner.session.take() {
                old.teardown("replaced by a new session after the program ended").await;
            }
        }

        let program = match &args.program {
            Some(p) if args.operation == Operation::Launch => {
                Some(launch::resolve_program(root, p, &self.env)?)
            }
            Some(p) => Some(resolve_in_root(root, p, "program")?),
            None => None,
        };
        let cwd = match &args.cwd {
            Some(c) => {
                let cwd = resolve_in_root(root, c, "cwd")?;
                if !cwd.is_dir() {
                    return Err(DebugError::usage(format!("cwd `{c}` is not a folder")));
                }
                cwd
            }
            None => root.to_path_buf(),
        };
        let kind = match args.adapter {
            Some(kind) => kind,
            None if args.module.is_some() => AdapterKind::Debugpy,
            None => match (
                program.as_deref().and_then(|p| adapters::adapter_for_program(p, root)),
                args.test.as_deref().and_then(|t| launch::adapter_for_test(t, root)),
            ) {
                (_, Some(kind)) | (Some(kind), None) => kind,
                (None, None) => self.adapter_from_markers(root, program.as_deref())?,
            },
        };
        let exceptions = args.exceptions.unwrap_or_default();
        let (target, command, rust) = if args.operation == Operation::Launch {
            if args.module.is_some() && kind != AdapterKind::Debugpy {
                return Err(DebugError::usage(format!(
                    "`module` runs a Python module (`python -m`); the {} adapter has none: pass                      `program`",
                    kind.id()
                )));
            }
            let user_args = args.args.clone().unwrap_or_default();
            let (program, module, run_args, go_test) = match (&args.test, &args.module) {
                (Some(test), _) => {
                    let (env, root_owned, test, program) =
                        (self.env.clone(), root.to_path_buf(), test.clone(), program.clone());
                    let capsule = self.capsule.clone();
                    let plan = tokio::task::spawn_blocking(move || {
                        launch::plan_test(
                            kind,
                            &test,
                            program.as_deref(),
                            &root_owned,
                            &user_args,
                            &env,
                            &*capsule,
                        )
                    })
                    .await
                    .map_err(|e| DebugError::adapter(format!("planning the test failed: {e}")))??;
                    (
                        plan.program.unwrap_or_else(|| cwd.clone()),
                        plan.module,
                        plan.args,
                        plan.go_test,
                    )
                }
                (None, Some(module)) => (cwd.clone(), Some(module.clone()), user_args, false),
                (None, None) => {
                    let program = program.ok_or_else(|| {
                        DebugError::usage(
                            "launch needs `program` (a .py script, a Go package folder or .go \
                             file, a .dart file, an executable built with debug info, or a \
                             console script of the project's environment), `module` (Python) \
                             or `test`",
                        )
                    })?;
                    (program, None, user_args, false)
                }
            };
            let command = self.resolve(kind, root).await?;
            let rust = kind == AdapterKind::Lldb && adapters::looks_like_rust(&program, root);
            let init_commands = if rust {
                let (probes, env) = (self.probes.clone(), self.env.clone());
                tokio::task::spawn_blocking(move || {
                    adapters::rust_formatter_commands(&probes, &env)
                })
                .await
                .unwrap_or_default()
            } else {
                Vec::new()
            };
            let library_breakpoint = inner.breakpoints.values().any(|b| b.library);
            let just_my_code = args.just_my_code.unwrap_or(!library_breakpoint);
            let stdin = match (&args.stdin, kind) {
                (None, _) => StdinSource::Closed,
                (Some(_), AdapterKind::Debugpy) => StdinSource::Terminal,
                // The FIFO's path is chosen in the session's temp folder.
                (Some(_), AdapterKind::Lldb) => StdinSource::Fifo(PathBuf::new()),
                (Some(_), AdapterKind::Delve) => StdinSource::Inherited,
                (Some(_), AdapterKind::Dart) => {
                    return Err(DebugError::usage(
                        "`stdin` is not supported with the dart adapter",
                    ));
                }
            };
            let spec = LaunchSpec {
                program,
                module,
                args: run_args,
                cwd,
                env: args.env.clone().unwrap_or_default(),
                stop_on_entry: args.stop_on_entry.unwrap_or(false),
                debuggee_python: command.debuggee_python.clone(),
                build_output: None,
                init_commands,
                just_my_code,
                go_test,
                stdin,
            };
            (Target::Launch(spec), command, rust)
        } else {
            let how = match (args.port, args.pid) {
                (Some(port), None) => AttachTo::Port(port),
                (None, Some(pid)) => AttachTo::Pid(pid),
                (Some(_), Some(_)) => {
                    return Err(DebugError::usage("attach takes `port` or `pid`, not both"));
                }
                (None, None) => {
                    return Err(DebugError::usage(format!(
                        "attach needs `port` (the local port of a debug server: {}) or `pid` (a \
                         running process, with lldb or delve)",
                        crate::session::attach_recipe(kind, 5678)
                    )));
                }
            };
            let direct = matches!(how, AttachTo::Port(_)) && adapters::attach_is_direct(kind);
            let command = if direct {
                AdapterCommand {
                    kind,
                    argv: Vec::new(),
                    version: None,
                    debuggee_python: None,
                    notes: Vec::new(),
                }
            } else {
                self.resolve(kind, root).await?
            };
            (Target::Attach { how, program, cwd }, command, false)
        };
        let name = launch_name(args, root, &target);
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (mut session, mut view) = Session::start(StartOptions {
            id,
            root,
            config: &self.config,
            command,
            target,
            name,
            breakpoints: &inner.breakpoints,
            exceptions,
            rust,
            python_test: kind == AdapterKind::Debugpy && args.test.is_some(),
            stdin: args.stdin.clone(),
            wait,
            cancel: *cancel,
            capsule: &self.capsule,
        })
        .await?;
        // The limit counts from when the session is usable: a cold build does not eat into it.
        session.deadline = Instant::now() + self.config.ttl();
        view.session.ttl_seconds_left = self.config.ttl().as_secs();
        *slot.cancel.lock() = Some(session.cancel.clone());
        self.schedule_ttl(slot.clone(), id, session.deadline);
        inner.session = Some(session);
        inner.last_end = None;
        Ok(DebugOutcome::Started(view))
    }

    fn adapter_from_markers(
        &self,
        root: &Path,
        program: Option<&Path>,
    ) -> Result<AdapterKind, DebugError> {
        let found: Vec<AdapterKind> = AdapterKind::ALL
            .into_iter()
            .filter(|k| adapters::find_marker(*k, root, root).is_some())
            .collect();
        match found.as_slice() {
            [one] => Ok(*one),
            _ => Err(DebugError::usage(format!(
                "cannot tell which adapter to use{}{}; pass `adapter`: dart, debugpy, lldb \
                 or delve",
                program.map(|p| format!(" for {}", p.display())).unwrap_or_default(),
                if found.is_empty() {
                    " (no project marker in the root)".to_string()
                } else {
                    format!(
                        " (markers of {} in the root)",
                        found.iter().map(|k| k.id()).collect::<Vec<_>>().join(" and ")
                    )
                }
            ))),
        }
    }

    fn schedule_ttl(&self, slot: Arc<Slot>, id: u64, deadline: Instant) {
        let limit = human_seconds(self.config.ttl_seconds);
        let timer = tokio::spawn(async move {
            tokio::time::sleep_until(deadline).await;
            // Interrupt a call that waits for a stop, then take the lock and end the session.
            if let Some(token) = slot.cancel.lock().clone() {
                token.cancel();
            }
            let mut inner = slot.inner.lock().await;
            if inner.session.as_ref().is_some_and(|s| s.id == id)
                && let Some(mut session) = inner.session.take()
            {
                let report = session.teardown(&format!("time limit ({limit})")).await;
                inner.last_end = Some(format!(
                    "the session of {} ended when its time limit ({limit}) passed",
                    report.program
                ));
                *slot.cancel.lock() = None;
            }
        });
        let mut timers = self.timers.lock();
        timers.retain(|t| !t.is_finished());
        timers.push(timer);
    }
}

impl Drop for DebugSupervisor {
    fn drop(&mut self) {
        for timer in self.timers.lock().drain(..) {
            timer.abort();
        }
    }
}

/// The `adapters` report for `root` with this process's PATH (blocking; for `status`).
pub fn adapter_reports(root: &Path, config: &DebugConfig) -> Vec<AdapterReport> {
    adapter_reports_with(
        &canonical_root(root),
        config,
        &SearchEnv::from_process(),
        &Probes::default(),
    )
}

fn adapter_reports_with(
    root: &Path,
    config: &DebugConfig,
    env: &SearchEnv,
    probes: &Probes,
) -> Vec<AdapterReport> {
    AdapterKind::ALL
        .into_iter()
        .map(|kind| adapters::report(kind, root, config, env, probes))
        .collect()
}

/// What a launch is named by when the program's path does not say it: "python -m http.server",
/// "test tests/test_calc.py::test_mean", "the package in the root (calc)".
fn launch_name(args: &DebugArgs, root: &Path, target: &Target) -> Option<String> {
    let Target::Launch(spec) = target else { return None };
    match (&args.test, &args.module) {
        (Some(test), _) => Some(format!("test {test}")),
        (None, Some(module)) => Some(format!("python -m {module}")),
        (None, None) if spec.program == root => Some(format!(
            "the package in the root ({})",
            root.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
        )),
        _ => None,
    }
}

fn unreachable_adapters() -> Result<DebugOutcome, DebugError> {
    Err(DebugError::usage("adapters is answered before a session is looked up"))
}

fn no_session(last_end: Option<&str>) -> DebugError {
    DebugError::usage(format!(
        "no debug session in this conversation{}. Start one with `launch` (program) or \
         `attach` (port)",
        last_end.map(|e| format!(" ({e})")).unwrap_or_default()
    ))
}

fn need<T>(value: Option<T>, op: &str, field: &str, hint: &str) -> Result<T, DebugError> {
    value.ok_or_else(|| DebugError::usage(format!("{op} needs `{field}` ({hint})")))
}

fn canonical_root(root: &Path) -> PathBuf {
    std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf())
}
