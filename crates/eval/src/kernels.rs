//! The kernel manager: one Python and one JavaScript kernel per conversation, started on first
//! use, reset on request, restarted after a crash, and all ended at shutdown.

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::Duration,
};

use agent_tools_support::{
    Tier,
    capsule::{Capsule, OnHost},
    duration::human as human_duration,
    process::WeakProcessGroup,
    progress::{CallScope, NoProgress, Progress},
};
use tokio_util::sync::CancellationToken;

use crate::{
    bridge::{KernelBridge, ToolBridge},
    cell::{Budget, Collector, Fate, drive},
    child::ChildKernel,
    js::{ENGINE, JsKernel},
    launcher, node, python,
    types::{
        CellReport, CellStatus, EvalConfig, EvalRequest, InterruptReason, JsEngine, KernelNote,
        Language, Output,
    },
};

/// An argument the kernel cannot run with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EvalError {
    #[error("eval: {0}")]
    Argument(String),
    #[error("eval: the kernels of this run were shut down; start a new run")]
    Closed,
}

enum Kernel {
    Child(Box<ChildKernel>),
    Js(JsKernel),
}

impl Kernel {
    async fn shutdown(self) {
        match self {
            Kernel::Child(k) => k.shutdown().await,
            Kernel::Js(k) => k.shutdown().await,
        }
    }
}

#[derive(Default)]
struct Slot {
    kernel: Option<Kernel>,
    /// Why the previous kernel's state is gone, reported when the next one starts.
    lost: Option<String>,
    interpreter: String,
    version: String,
    cwd: Option<String>,
    /// A cell was sent and its call ended before the cell did (the call's future was dropped):
    /// the next call first winds that cell down, so its late end is never read as an answer.
    in_flight: bool,
    /// What the next result should say about how the previous cell ended (a cancelled cell
    /// that was interrupted: the client never saw that result).
    carry: Option<String>,
    /// The tier the kernel's `tool()` calls may reach, fixed when the kernel started: the lower
    /// of the configured `bridge_tier` and the starting caller's ceiling.
    ceiling: Tier,
}

/// What can be reached without the slot's lock: to kill a busy kernel at shutdown.
#[derive(Default)]
struct SlotHandle {
    slot: tokio::sync::Mutex<Slot>,
    /// The kernel's tree while one runs (weak: the kernel owns it).
    group: parking_lot::Mutex<WeakProcessGroup>,
    js_interrupt: parking_lot::Mutex<Option<Arc<AtomicBool>>>,
}

/// Every kernel of one run, keyed by conversation and language.
pub struct Kernels {
    config: EvalConfig,
    capsule: Arc<dyn Capsule>,
    slots: parking_lot::Mutex<HashMap<(String, Language), Arc<SlotHandle>>>,
    cells: AtomicU64,
    closed: AtomicBool,
}

impl std::fmt::Debug for Kernels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kernels").field("capsule", &self.capsule.describe()).finish()
    }
}

impl Kernels {
    /// Kernels with `config`, on the host until [`Kernels::with_capsule`] gives the run's capsule.
    pub fn new(config: EvalConfig) -> Self {
        Kernels {
            config,
            capsule: Arc::new(OnHost),
            slots: parking_lot::Mutex::new(HashMap::new()),
            cells: AtomicU64::new(0),
            closed: AtomicBool::new(false),
        }
    }

    /// Starts every kernel in `capsule`, the run's (a kernel never boots one itself).
    pub fn with_capsule(mut self, capsule: Arc<dyn Capsule>) -> Self {
        self.capsule = capsule;
        self
    }

    pub fn config(&self) -> &EvalConfig {
        &self.config
    }

    /// Where this run's kernels start.
    pub fn capsule(&self) -> &dyn Capsule {
        self.capsule.as_ref()
    }

    /// Whether `conversation` has a live kernel for `language`.
    pub fn is_running(&self, conversation: &str, language: Language) -> bool {
        let handle = self.slots.lock().get(&(conversation.to_string(), language)).cloned();
        handle.is_some_and(|h| h.slot.try_lock().map_or(true, |s| s.kernel.is_some()))
    }

    /// Runs one cell in the conversation's kernel for the request's language.
    ///
    /// `root` is where a new kernel starts (its working directory); `bridge` serves the cell's
    /// `tool()` calls; the scope's cancellation interrupts the cell (then kills it after the
    /// grace period) and its progress port hears how the cell is going, about every second.
    pub async fn eval(
        &self,
        conversation: &str,
        root: &Path,
        request: EvalRequest,
        bridge: Arc<dyn ToolBridge>,
        scope: CallScope<'_>,
    ) -> Result<CellReport, EvalError> {
        let (cancel, progress) = (scope.cancel, scope.progress);
        if request.description.trim().is_empty() {
            return Err(EvalError::Argument(
                "`description` is required: 5-10 words saying what the cell does".into(),
            ));
        }
        if self.closed.load(Ordering::SeqCst) {
            return Err(EvalError::Closed);
        }
        let language = request.language.unwrap_or_default();
        let handle = {
            let mut slots = self.slots.lock();
            slots.entry((conversation.to_string(), language)).or_default().clone()
        };
        // Calls wait for the kernel in arrival order (the lock is fair); one cancelled while it
        // waits leaves the queue and never runs.
        let mut slot = tokio::select! {
            biased;
            () = cancel.cancelled() => return Ok(CellReport::cancelled_before_start(language)),
            slot = handle.slot.lock() => slot,
        };
        if self.closed.load(Ordering::SeqCst) {
            return Err(EvalError::Closed);
        }
        if cancel.is_cancelled() {
            return Ok(CellReport::cancelled_before_start(language));
        }
        if request.reset.unwrap_or(false)
            && let Some(kernel) = slot.kernel.take()
        {
            kernel.shutdown().await;
            *handle.group.lock() = WeakProcessGroup::default();
            slot.lost = Some("reset was requested".into());
            slot.in_flight = false;
            slot.carry = None;
        }
        let budget = Budget { inactivity: self.config.inactivity(), grace: self.config.grace() };
        if slot.in_flight {
            self.wind_down_abandoned(&mut slot, &handle, budget).await;
        }
        if let Some(Kernel::Child(kernel)) = slot.kernel.as_mut()
            && let Some(how) = kernel.ended_on_its_own().await
        {
            let why = format!("the previous kernel ended between cells ({how})");
            end_kernel(&mut slot, &handle, why).await;
            slot.carry = None;
        }
        let mut started = false;
        let mut previous_lost = None;
        if slot.kernel.is_none() {
            match self.start(language, root, &handle).await {
                Ok((kernel, interpreter, version, cwd)) => {
                    slot.kernel = Some(kernel);
                    slot.ceiling = self.config.bridge_tier.min(bridge.ceiling());
                    slot.interpreter = interpreter;
                    slot.version = version;
                    slot.cwd = cwd;
                    started = true;
                    previous_lost = slot.lost.take();
                }
                Err(message) => return Ok(CellReport::unavailable(language, message)),
            }
        }
        let carried = slot.carry.take();
        let cell = self.cells.fetch_add(1, Ordering::SeqCst) + 1;
        let mut out = Collector::new(self.config.max_output_chars, self.config.max_images);
        slot.in_flight = true;
        let bridge = Arc::new(KernelBridge { bridge, ceiling: slot.ceiling });
        let fate =
            run_on(&mut slot, cell, &request.code, bridge, budget, cancel, progress, &mut out)
                .await;
        slot.in_flight = false;
        let (outputs, mut notes) = out.finish();
        notes.insert(0, format!("budget: {}", human_duration(budget.inactivity)));
        let mut report = CellReport {
            language,
            execution_count: 0,
            status: CellStatus::Ok,
            outputs,
            result: None,
            error: None,
            interrupt: None,
            notes,
            kernel: KernelNote {
                started,
                previous_lost,
                previous_cell: carried,
                state_preserved: true,
                interpreter: slot.interpreter.clone(),
                version: slot.version.clone(),
            },
            cwd_changed: None,
        };
        match fate {
            Fate::Finished { done, interrupt } => {
                report.execution_count = done.count;
                report.result = done.result;
                report.error = done.error;
                report.status = match done.status.as_str() {
                    "ok" => CellStatus::Ok,
                    "interrupted" => CellStatus::Interrupted,
                    _ => CellStatus::Error,
                };
                if report.status == CellStatus::Interrupted {
                    report.interrupt = interrupt;
                }
                if interrupt == Some(InterruptReason::Cancelled) {
                    slot.carry = Some(format!(
                        "the previous cell (In[{}]) was cancelled by the client and interrupted; \
                         the kernel's state (variables, imports) was kept",
                        done.count
                    ));
                }
                if let Some(cwd) = done.cwd
                    && slot.cwd.as_deref() != Some(cwd.as_str())
                {
                    slot.cwd = Some(cwd.clone());
                    report.cwd_changed = Some(cwd);
                }
            }
            Fate::Killed { reason, how } => {
                report.status = CellStatus::Killed;
                report.interrupt = Some(reason);
                report.kernel.state_preserved = false;
                report.notes.push(format!("kernel killed: {how}"));
                end_kernel(&mut slot, &handle, killed_reason(reason, budget)).await;
            }
            Fate::Died(how) => {
                report.status = CellStatus::Crashed;
                report.kernel.state_preserved = false;
                report.notes.push(format!("kernel died: {how}"));
                let first_line = how.lines().next().unwrap_or("it died").to_string();
                end_kernel(&mut slot, &handle, format!("the previous kernel died ({first_line})"))
                    .await;
            }
        }
        if let Some(why) = self.capsule.explain(&printed(&report)) {
            report.notes.push(why);
        }
        Ok(report)
    }

    /// Ends a cell whose call was abandoned mid-cell: interrupt, wait the grace period for its
    /// end (its output is dropped), else kill the kernel. Afterwards the kernel is idle or gone.
    async fn wind_down_abandoned(&self, slot: &mut Slot, handle: &SlotHandle, budget: Budget) {
        let stop = CancellationToken::new();
        stop.cancel();
        let mut discard = Collector::new(0, 0);
        let fate =
            run_on(slot, 0, "", KernelBridge::refusing(), budget, &stop, &NoProgress, &mut discard)
                .await;
        slot.in_flight = false;
        match fate {
            Fate::Finished { done, .. } => {
                slot.carry = Some(format!(
                    "the previous cell (In[{}]) was abandoned by its call and interrupted; the \
                     kernel's state (variables, imports) was kept",
                    done.count
                ));
            }
            Fate::Killed { .. } => {
                let why = killed_reason(InterruptReason::Cancelled, budget);
                end_kernel(slot, handle, why).await;
            }
            Fate::Died(how) => {
                let first_line = how.lines().next().unwrap_or("it died").to_string();
                end_kernel(slot, handle, format!("the previous kernel died ({first_line})")).await;
            }
        }
    }

    async fn start(
        &self,
        language: Language,
        root: &Path,
        handle: &SlotHandle,
    ) -> Result<(Kernel, String, String, Option<String>), String> {
        match language {
            Language::Python => {
                let python =
                    python::resolve(self.capsule.as_ref(), root, self.config.python.as_deref())?;
                let program = python::program(&python, self.config.ipython);
                let kernel = ChildKernel::start(self.capsule.as_ref(), &program, root).await?;
                self.started(kernel, &python, handle)
            }
            Language::Javascript | Language::Typescript => {
                let typescript = language == Language::Typescript;
                let node = match self.config.javascript {
                    Some(JsEngine::Quickjs) => None,
                    Some(JsEngine::Node) => Some(node::resolve(self.config.node.as_deref())?),
                    None => node::resolve(self.config.node.as_deref()).ok(),
                };
                match node {
                    Some(node) => {
                        let program = node::program(&node, typescript);
                        let kernel =
                            ChildKernel::start(self.capsule.as_ref(), &program, root).await?;
                        if typescript && !kernel.info.typescript {
                            let version = kernel.info.version.clone();
                            kernel.shutdown().await;
                            return Err(node::typescript_missing(&node, &version));
                        }
                        self.started(kernel, &node, handle)
                    }
                    None if typescript => {
                        Err("TypeScript cells need Node.js 23.2 or newer (it strips types); no \
                         `node` resolves here (or [eval] javascript = \"quickjs\"); install \
                         Node.js, or write the cell as JavaScript"
                            .into())
                    }
                    None => {
                        let kernel =
                            JsKernel::start(self.config.js_memory_limit_mb.max(16) * 1024 * 1024)?;
                        *handle.js_interrupt.lock() = Some(kernel_interrupt(&kernel));
                        Ok((Kernel::Js(kernel), ENGINE.to_string(), String::new(), None))
                    }
                }
            }
        }
    }

    fn started(
        &self,
        kernel: ChildKernel,
        program: &Path,
        handle: &SlotHandle,
    ) -> Result<(Kernel, String, String, Option<String>), String> {
        *handle.group.lock() = kernel.group();
        let info = kernel.info.clone();
        let interpreter = if info.executable.is_empty() {
            program.display().to_string()
        } else {
            info.executable.clone()
        };
        Ok((Kernel::Child(Box::new(kernel)), interpreter, info.version, Some(info.cwd)))
    }

    /// Ends every kernel of the run; afterwards no kernel process remains.
    pub async fn shutdown(&self) {
        self.closed.store(true, Ordering::SeqCst);
        let handles: Vec<Arc<SlotHandle>> = self.slots.lock().drain().map(|(_, h)| h).collect();
        for handle in handles {
            // A busy kernel is stopped from outside first, so its cell returns promptly.
            let wait = self.config.grace() + Duration::from_secs(1);
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
        }
    }

    /// Facts for `status`: which interpreter resolves for `root`, its version, the engine.
    pub fn status_details(&self, root: &Path) -> Vec<String> {
        let mut details = Vec::new();
        match python::resolve(self.capsule.as_ref(), root, self.config.python.as_deref()) {
            Ok(python) => match python::probe_version(self.capsule.as_ref(), &python) {
                Ok(version) => {
                    details.push(format!("python: {} (Python {version})", python.display()))
                }
                Err(e) => details
                    .push(format!("python: {} resolves but does not run: {e}", python.display())),
            },
            Err(e) => details.push(format!("python: unavailable: {e}")),
        }
        let quickjs = format!("{ENGINE}, memory limit {} MiB", self.config.js_memory_limit_mb);
        let node = match self.config.javascript {
            Some(JsEngine::Quickjs) => None,
            _ => Some(node::resolve(self.config.node.as_deref())),
        };
        details.push(match node {
            None => format!("javascript: {quickjs} ([eval] javascript = \"quickjs\")"),
            Some(Ok(path)) => match node::probe_version(self.capsule.as_ref(), &path) {
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
            Some(Err(e)) if self.config.javascript == Some(JsEngine::Node) => {
                format!("javascript: unavailable: {e}")
            }
            Some(Err(_)) => format!("javascript: {quickjs} (no `node` on PATH)"),
        });
        details.push(format!(
            "inactivity budget {}, grace {} before a kill",
            human_duration(self.config.inactivity()),
            human_duration(self.config.grace())
        ));
        details
    }
}

/// Runs cell `cell` (or, with `cell` 0, only drives the cell already running) on the slot's kernel.
#[allow(clippy::too_many_arguments)]
async fn run_on(
    slot: &mut Slot,
    cell: u64,
    code: &str,
    bridge: Arc<KernelBridge>,
    budget: Budget,
    cancel: &CancellationToken,
    progress: &dyn Progress,
    out: &mut Collector,
) -> Fate {
    match slot.kernel.as_mut() {
        Some(Kernel::Child(k)) => {
            if cell > 0
                && let Err(how) = k.exec(cell, code).await
            {
                return Fate::Died(how);
            }
            drive(k.as_mut(), bridge, budget, cancel, progress, out).await
        }
        Some(Kernel::Js(k)) => {
            if cell > 0
                && let Err(how) = k.exec(cell, code)
            {
                return Fate::Died(how);
            }
            drive(k, bridge, budget, cancel, progress, out).await
        }
        None => Fate::Died("no kernel".into()),
    }
}

/// Why the state is gone after a kill, for the next kernel's first result.
fn killed_reason(reason: InterruptReason, budget: Budget) -> String {
    let after = match reason {
        InterruptReason::Cancelled => "a cancelled cell",
        InterruptReason::Inactivity => "a cell without output for the inactivity budget",
    };
    format!(
        "the previous kernel was killed after {after} did not stop within {} of an interrupt",
        human_duration(budget.grace)
    )
}

/// Shuts the slot's kernel down; the next call starts a fresh one and says `why`.
async fn end_kernel(slot: &mut Slot, handle: &SlotHandle, why: String) {
    if let Some(kernel) = slot.kernel.take() {
        kernel.shutdown().await;
    }
    *handle.group.lock() = WeakProcessGroup::default();
    slot.lost = Some(why);
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

fn kernel_interrupt(kernel: &JsKernel) -> Arc<AtomicBool> {
    kernel.interrupt_flag()
}

/// What a cell printed and raised, for the capsule to recognise its walls in.
fn printed(report: &CellReport) -> String {
    let mut text = String::new();
    for output in &report.outputs {
        if let Output::Stream { text: printed, .. } = output {
            text.push_str(printed);
        }
    }
    if let Some(error) = &report.error {
        text.push_str(&error.evalue);
        text.push('\n');
        text.push_str(&error.traceback);
    }
    text
}

/// The Python a kernel for `root` would use under `config`, for status and tests.
pub fn resolve_python(config: &EvalConfig, root: &Path) -> Result<PathBuf, String> {
    launcher::resolve_python(&OnHost, root, config.python.as_deref())
}
