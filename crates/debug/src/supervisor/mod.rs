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
mod start;
mod trace;
mod watch;

use agent_tools_support::{capsule::Capsule, duration::human_seconds};
use parking_lot::Mutex;
use tokio::{task::JoinHandle, time::Instant};
use tokio_util::sync::CancellationToken;

use agent_tools_support::progress::CallScope;

use crate::{
    adapters::{self, AdapterCommand, AdapterKind, AdapterReport, Probes, SearchEnv},
    config::DebugConfig,
    error::DebugError,
    launch,
    request::{DebugArgs, Operation},
    response::*,
    session::{BreakpointRequest, Session},
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
        self.call_in(conversation, root, args, &CallScope::new(cancel.clone())).await
    }

    /// Like [`DebugSupervisor::call`], reporting long waits to `scope`'s progress port. A
    /// cancelled wait returns at once with the state the program is in; the session stays
    /// usable.
    pub async fn call_in(
        &self,
        conversation: &str,
        root: &Path,
        args: DebugArgs,
        cancel: &CallScope,
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
            Operation::Watch => self.watch(&mut inner, &root, &args, wait, cancel).await,
            Operation::Trace => self.trace(&slot, &mut inner, &root, &args, wait, cancel).await,
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
