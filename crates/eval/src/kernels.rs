//! The kernel manager: one Python and one JavaScript kernel per conversation, started on first
//! use, reset on request, restarted after a crash, and all ended at shutdown. Each kernel has a
//! worker task that runs the cells sent to it; calls wait for a cell for at most `wait_s`.

use std::{
    collections::{BTreeMap, HashMap},
    path::{Path, PathBuf},
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::Duration,
};

use agent_tools_support::{
    capsule::{Capsule, OnHost},
    duration::human as human_duration,
    process::WeakProcessGroup,
    progress::CallScope,
};
use tokio::sync::mpsc;

use crate::{
    bridge::ToolBridge,
    cell::Collector,
    js::ENGINE,
    launcher, node, python,
    running::CellRecord,
    slot::{Job, Slot, SlotHandle},
    types::{
        CellReport, EvalConfig, EvalRequest, InterruptReason, JsEngine, Language, MAX_WAIT_SECONDS,
    },
    worker::{Core, serve},
};

/// Ended cells kept for a later `cell: N` (a result lost with a cut connection), per run.
const ENDED_CELLS_KEPT: usize = 32;

/// An argument the kernel cannot run with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EvalError {
    #[error("eval: {0}")]
    Argument(String),
    #[error("eval: the kernels of this run were shut down; start a new run")]
    Closed,
}

/// Every kernel of one run, keyed by conversation and language.
pub struct Kernels {
    core: Arc<Core>,
    slots: parking_lot::Mutex<HashMap<(String, Language), Arc<SlotHandle>>>,
    cells: AtomicU64,
    /// Every cell not yet forgotten, by number.
    records: parking_lot::Mutex<BTreeMap<u64, Arc<CellRecord>>>,
}

impl std::fmt::Debug for Kernels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kernels").field("capsule", &self.core.capsule.describe()).finish()
    }
}

impl Kernels {
    /// Kernels with `config`, on the host until [`Kernels::with_capsule`] gives the run's capsule.
    pub fn new(config: EvalConfig) -> Self {
        Kernels {
            core: Arc::new(Core {
                config,
                capsule: Arc::new(OnHost),
                closed: AtomicBool::new(false),
            }),
            slots: parking_lot::Mutex::new(HashMap::new()),
            cells: AtomicU64::new(0),
            records: parking_lot::Mutex::new(BTreeMap::new()),
        }
    }

    /// Starts every kernel in `capsule`, the run's (a kernel never boots one itself).
    pub fn with_capsule(mut self, capsule: Arc<dyn Capsule>) -> Self {
        self.core = Arc::new(Core {
            config: self.core.config.clone(),
            capsule,
            closed: AtomicBool::new(self.core.closed.load(Ordering::SeqCst)),
        });
        self
    }

    pub fn config(&self) -> &EvalConfig {
        &self.core.config
    }

    /// Where this run's kernels start.
    pub fn capsule(&self) -> &dyn Capsule {
        self.core.capsule.as_ref()
    }

    /// Whether `conversation` has a live kernel for `language`.
    pub fn is_running(&self, conversation: &str, language: Language) -> bool {
        let handle = self.slots.lock().get(&(conversation.to_string(), language)).cloned();
        handle.is_some_and(|h| h.slot.try_lock().map_or(true, |s| s.kernel.is_some()))
    }

    /// Runs one cell in the conversation's kernel for the request's language, or, with
    /// `request.cell`, waits again for a cell sent earlier (and with `interrupt`, stops it).
    ///
    /// The call returns when the cell ends or after `wait_s` (default `[eval] wait_seconds`),
    /// whichever comes first; a cell still running then keeps running, and its result says so
    /// (status `running`, its number in `cell`). `root` is where a new kernel starts (its
    /// working directory); `bridge` serves the cell's `tool()` calls. The scope's cancellation
    /// interrupts the cell (then kills it after the grace period) and waits for its end; its
    /// cut returns at once and leaves the cell running; its progress port hears, about every
    /// second, how long the cell has run and its last line of output.
    pub async fn eval(
        &self,
        conversation: &str,
        root: &Path,
        request: EvalRequest,
        bridge: Arc<dyn ToolBridge>,
        scope: CallScope,
    ) -> Result<CellReport, EvalError> {
        let wait = self.wait_of(&request)?;
        if let Some(cell) = request.cell {
            return self.collect(conversation, cell, &request, wait, scope).await;
        }
        if request.interrupt == Some(true) {
            return Err(EvalError::Argument(
                "`interrupt` needs `cell`: the number of the running cell to stop (its result \
                 says \"still running as cell N\")"
                    .into(),
            ));
        }
        if request.code.trim().is_empty() {
            return Err(EvalError::Argument(
                "`code` is required: the cell's source (or `cell: N` without `code` to wait \
                 again for a running cell)"
                    .into(),
            ));
        }
        if request.description.trim().is_empty() {
            return Err(EvalError::Argument(
                "`description` is required: 5-10 words saying what the cell does".into(),
            ));
        }
        if self.core.closed.load(Ordering::SeqCst) {
            return Err(EvalError::Closed);
        }
        let language = request.language.unwrap_or_default();
        let record = self.send(conversation, language, root, request, bridge)?;
        Ok(record.wait(wait, scope).await)
    }

    /// `wait_s` checked, or the configured default.
    fn wait_of(&self, request: &EvalRequest) -> Result<Duration, EvalError> {
        match request.wait_s {
            None => Ok(self.core.config.wait()),
            Some(s) if s.is_finite() && (0.0..=MAX_WAIT_SECONDS).contains(&s) => {
                Ok(Duration::from_secs_f64(s))
            }
            Some(s) => Err(EvalError::Argument(format!(
                "`wait_s` must be a number of seconds from 0 to {MAX_WAIT_SECONDS} (default {}); \
                 got {s}. A cell still running then keeps running: eval with `cell` waits again",
                self.core.config.wait().as_secs_f64()
            ))),
        }
    }

    /// Queues the request's cell on its kernel's worker (starting the worker at first use).
    fn send(
        &self,
        conversation: &str,
        language: Language,
        root: &Path,
        request: EvalRequest,
        bridge: Arc<dyn ToolBridge>,
    ) -> Result<Arc<CellRecord>, EvalError> {
        let handle = self.handle(conversation, language);
        let id = self.cells.fetch_add(1, Ordering::SeqCst) + 1;
        let mut last_sent = handle.last_sent.lock();
        let behind = last_sent.as_ref().filter(|r| !r.ended()).map(|r| r.id);
        let out = Collector::new(self.core.config.max_output_chars, self.core.config.max_images);
        let record = Arc::new(CellRecord::new(id, conversation, language, behind, out));
        let job = Job {
            record: record.clone(),
            code: request.code,
            reset: request.reset.unwrap_or(false),
            root: root.to_path_buf(),
            bridge,
        };
        let sent = handle.jobs.lock().as_ref().is_some_and(|jobs| jobs.send(job).is_ok());
        if !sent {
            return Err(EvalError::Closed);
        }
        *last_sent = Some(record.clone());
        drop(last_sent);
        self.remember(record.clone());
        Ok(record)
    }

    /// The slot of `conversation`'s `language` kernel, its worker started at first use.
    fn handle(&self, conversation: &str, language: Language) -> Arc<SlotHandle> {
        let mut slots = self.slots.lock();
        slots
            .entry((conversation.to_string(), language))
            .or_insert_with(|| {
                let (jobs, queue) = mpsc::unbounded_channel();
                let handle = Arc::new(SlotHandle {
                    slot: tokio::sync::Mutex::new(Slot::default()),
                    group: parking_lot::Mutex::new(WeakProcessGroup::default()),
                    js_interrupt: parking_lot::Mutex::new(None),
                    jobs: parking_lot::Mutex::new(Some(jobs)),
                    last_sent: parking_lot::Mutex::new(None),
                    worker: parking_lot::Mutex::new(None),
                });
                let worker = tokio::spawn(serve(self.core.clone(), Arc::downgrade(&handle), queue));
                *handle.worker.lock() = Some(worker);
                handle
            })
            .clone()
    }

    /// Keeps `record` for `cell: N`; forgets the oldest ended cells beyond a few.
    fn remember(&self, record: Arc<CellRecord>) {
        let mut records = self.records.lock();
        records.insert(record.id, record);
        let ended: Vec<u64> = records.values().filter(|r| r.ended()).map(|r| r.id).collect();
        for id in ended.iter().take(ended.len().saturating_sub(ENDED_CELLS_KEPT)) {
            records.remove(id);
        }
    }

    /// `eval` with `cell`: waits again for that cell (after stopping it, with `interrupt`).
    async fn collect(
        &self,
        conversation: &str,
        cell: u64,
        request: &EvalRequest,
        wait: Duration,
        scope: CallScope,
    ) -> Result<CellReport, EvalError> {
        if !request.code.is_empty() || request.reset.is_some() {
            return Err(EvalError::Argument(
                "`cell` collects a cell sent earlier: give it without `code` and `reset` (or \
                 `code` without `cell` for a new cell)"
                    .into(),
            ));
        }
        let record = self.records.lock().get(&cell).cloned();
        let Some(record) = record.filter(|r| r.conversation == conversation) else {
            let known = self.records.lock().keys().copied().collect::<Vec<_>>();
            let known = match (known.first(), known.last()) {
                (Some(first), Some(last)) => {
                    format!("this run's cells that can be collected are {first} to {last}")
                }
                _ => "this run has sent no cell yet".to_string(),
            };
            return Err(EvalError::Argument(format!(
                "`cell` {cell} is not a cell of this conversation ({known}); eval with `code` \
                 starts a new one"
            )));
        };
        if request.interrupt == Some(true) {
            record.request_stop(InterruptReason::Requested);
            // The interrupt ends the cell within the grace period (or kills the kernel).
            let bound = self.core.config.grace() * 2 + Duration::from_secs(5);
            return Ok(record.wait(wait.max(bound), scope).await);
        }
        Ok(record.wait(wait, scope).await)
    }

    /// Ends every kernel of the run; afterwards no kernel process remains. Cells still
    /// waiting never start; a call still waiting for a cell gets its end.
    pub async fn shutdown(&self) {
        self.core.closed.store(true, Ordering::SeqCst);
        let handles: Vec<Arc<SlotHandle>> = self.slots.lock().drain().map(|(_, h)| h).collect();
        let wait = self.core.config.grace() + Duration::from_secs(1);
        for handle in handles {
            handle.jobs.lock().take();
            // A busy kernel is stopped from outside first, so its cell returns promptly.
            let slot =
                match tokio::time::timeout(Duration::from_millis(50), handle.slot.lock()).await {
                    Ok(slot) => Some(slot),
                    Err(_) => {
                        kill_from_outside(&handle);
                        tokio::time::timeout(wait, handle.slot.lock()).await.ok()
                    }
                };
            match slot {
                Some(mut slot) => {
                    if let Some(kernel) = slot.kernel.take() {
                        kernel.shutdown().await;
                    }
                }
                None => kill_from_outside(&handle),
            }
            let worker = handle.worker.lock().take();
            if let Some(mut worker) = worker
                && tokio::time::timeout(wait, &mut worker).await.is_err()
            {
                worker.abort();
            }
        }
        let records: Vec<Arc<CellRecord>> = self.records.lock().values().cloned().collect();
        for record in records.iter().filter(|r| !r.ended()) {
            record.end(CellReport::unavailable(
                record.language,
                "the run ended before this cell did; its kernel was shut down".into(),
            ));
        }
    }

    /// Facts for `status`: which interpreter resolves for `root`, its version, the engine.
    pub fn status_details(&self, root: &Path) -> Vec<String> {
        let mut details = Vec::new();
        match python::resolve(self.core.capsule.as_ref(), root, self.core.config.python.as_deref())
        {
            Ok(python) => match python::probe_version(self.core.capsule.as_ref(), &python) {
                Ok(version) => {
                    details.push(format!("python: {} (Python {version})", python.display()))
                }
                Err(e) => details
                    .push(format!("python: {} resolves but does not run: {e}", python.display())),
            },
            Err(e) => details.push(format!("python: unavailable: {e}")),
        }
        let quickjs = format!("{ENGINE}, memory limit {} MiB", self.core.config.js_memory_limit_mb);
        let node = match self.core.config.javascript {
            Some(JsEngine::Quickjs) => None,
            _ => Some(node::resolve(self.core.config.node.as_deref())),
        };
        details.push(match node {
            None => format!("javascript: {quickjs} ([eval] javascript = \"quickjs\")"),
            Some(Ok(path)) => match node::probe_version(self.core.capsule.as_ref(), &path) {
                Ok(version) => format!(
                    "javascript: Node.js {version} ({}){}",
                    path.display(),
                    if node::strips_types(&version) {
                        "; typescript: yes (type stripping)"
                    } else {
                        "; typescript: no (needs Node.js 23.2+)"
                    }
                ),
                Err(e) => format!("javascript: {} resolves but does not run: {e}", path.display()),
            },
            Some(Err(e)) if self.core.config.javascript == Some(JsEngine::Node) => {
                format!("javascript: unavailable: {e}")
            }
            Some(Err(_)) => format!("javascript: {quickjs} (no `node` on PATH)"),
        });
        details.push(format!(
            "calls wait {} for a cell (wait_s), inactivity budget {}, grace {} before a kill",
            human_duration(self.core.config.wait()),
            human_duration(self.core.config.inactivity()),
            human_duration(self.core.config.grace())
        ));
        details
    }
}

fn kill_from_outside(handle: &SlotHandle) {
    let group = std::mem::take(&mut *handle.group.lock());
    if let Some(group) = group.upgrade() {
        let _ = group.signal(libc::SIGKILL);
    }
    if let Some(flag) = handle.js_interrupt.lock().as_ref() {
        flag.store(true, Ordering::SeqCst);
    }
}

/// The Python a kernel for `root` would use under `config`, for status and tests.
pub fn resolve_python(config: &EvalConfig, root: &Path) -> Result<PathBuf, String> {
    launcher::resolve_python(&OnHost, root, config.python.as_deref())
}
