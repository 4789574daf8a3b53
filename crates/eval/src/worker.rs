//! A kernel's worker: one task per conversation and language that takes the cells sent to it in
//! arrival order and runs each to its end, whether or not a call still waits for it.

use std::sync::{Arc, Weak, atomic::Ordering};

use agent_tools_support::{
    capsule::Capsule, duration::human as human_duration, process::WeakProcessGroup,
};
use tokio::sync::mpsc;

use crate::{
    bridge::KernelBridge,
    cell::{Budget, Fate, drive},
    js::{ENGINE, JsKernel},
    node, python,
    running::CellRecord,
    slot::{Job, Kernel, Slot, SlotHandle},
    types::{
        CellReport, CellStatus, EvalConfig, InterruptReason, JsEngine, KernelNote, Language, Output,
    },
};

/// What every worker of a run shares: settings, the run's capsule, whether the run ended.
pub(crate) struct Core {
    pub(crate) config: EvalConfig,
    pub(crate) capsule: Arc<dyn Capsule>,
    pub(crate) closed: std::sync::atomic::AtomicBool,
}

/// Runs the cells sent to one kernel, one at a time, until the run's kernels shut down or are
/// dropped (the sender goes with the slot, which the worker holds only while a cell runs, so a
/// dropped `Kernels` drops its kernels too). A cell stopped while it waited is skipped: its
/// record says so already.
pub(crate) async fn serve(
    core: Arc<Core>,
    handle: Weak<SlotHandle>,
    mut jobs: mpsc::UnboundedReceiver<Job>,
) {
    while let Some(job) = jobs.recv().await {
        if !job.record.begin() {
            continue;
        }
        let report = match handle.upgrade() {
            Some(handle) if !core.closed.load(Ordering::SeqCst) => {
                let mut slot = handle.slot.lock().await;
                core.run(&mut slot, &handle, &job).await
            }
            _ => CellReport::unavailable(
                job.record.language,
                "the kernels of this run were shut down before this cell started; start a new run"
                    .into(),
            ),
        };
        job.record.end(report);
    }
}

impl Core {
    /// Runs `job`'s cell on the slot's kernel (starting one first when there is none) and
    /// reports how it ended.
    async fn run(&self, slot: &mut Slot, handle: &SlotHandle, job: &Job) -> CellReport {
        let language = job.record.language;
        if job.reset
            && let Some(kernel) = slot.kernel.take()
        {
            kernel.shutdown().await;
            *handle.group.lock() = WeakProcessGroup::default();
            slot.lost = Some("reset was requested".into());
            slot.carry = None;
        }
        let budget = Budget { inactivity: self.config.inactivity(), grace: self.config.grace() };
        if let Some(Kernel::Child(kernel)) = slot.kernel.as_mut()
            && let Some(how) = kernel.ended_on_its_own().await
        {
            let why = format!("the previous kernel ended between cells ({how})");
            end_kernel(slot, handle, why).await;
            slot.carry = None;
        }
        let mut started = false;
        let mut previous_lost = None;
        if slot.kernel.is_none() {
            match self.start(language, &job.root, handle).await {
                Ok((kernel, interpreter, version, cwd)) => {
                    slot.kernel = Some(kernel);
                    slot.ceiling = self.config.bridge_tier.min(job.bridge.ceiling());
                    slot.interpreter = interpreter;
                    slot.version = version;
                    slot.cwd = cwd;
                    started = true;
                    previous_lost = slot.lost.take();
                }
                Err(message) => return CellReport::unavailable(language, message),
            }
        }
        let kernel_note = KernelNote {
            started,
            previous_lost,
            previous_cell: slot.carry.take(),
            state_preserved: true,
            interpreter: slot.interpreter.clone(),
            version: slot.version.clone(),
        };
        job.record.set_kernel(kernel_note.clone());
        let bridge = Arc::new(KernelBridge { bridge: job.bridge.clone(), ceiling: slot.ceiling });
        let record = &job.record;
        let fate = run_on(slot, record, &job.code, bridge, budget).await;
        let (outputs, mut notes) = record.out.lock().take_segment().finish();
        notes.insert(0, format!("budget: {}", human_duration(budget.inactivity)));
        // A wait the model would notice (not the instant a cancelled cell takes to wind down).
        if let Some((behind, waited)) = record.waited_behind()
            && waited >= std::time::Duration::from_secs(1)
        {
            notes.push(format!(
                "this cell waited {} behind cell {behind} before it started",
                human_duration(waited)
            ));
        }
        let mut report = CellReport {
            language,
            cell: record.id,
            execution_count: 0,
            status: CellStatus::Ok,
            outputs,
            result: None,
            error: None,
            interrupt: None,
            notes,
            kernel: kernel_note,
            cwd_changed: None,
        };
        self.settle(slot, handle, &mut report, fate, record.stop_reason(), budget).await;
        if let Some(why) = self.capsule.explain(&printed(&report)) {
            report.notes.push(why);
        }
        report
    }

    /// Fills `report` from how the cell ended; a killed or dead kernel is ended here.
    async fn settle(
        &self,
        slot: &mut Slot,
        handle: &SlotHandle,
        report: &mut CellReport,
        fate: Fate,
        stop_reason: Option<InterruptReason>,
        budget: Budget,
    ) {
        // The cell loop knows only that it was stopped; the record knows who asked.
        let why = |reason: InterruptReason| match reason {
            InterruptReason::Cancelled => stop_reason.unwrap_or(reason),
            other => other,
        };
        match fate {
            Fate::Finished { done, interrupt } => {
                let interrupt = interrupt.map(why);
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
                let reason = why(reason);
                report.status = CellStatus::Killed;
                report.interrupt = Some(reason);
                report.kernel.state_preserved = false;
                report.notes.push(format!("kernel killed: {how}"));
                end_kernel(slot, handle, killed_reason(reason, budget)).await;
            }
            Fate::Died(how) => {
                report.status = CellStatus::Crashed;
                report.kernel.state_preserved = false;
                report.notes.push(format!("kernel died: {how}"));
                let first_line = how.lines().next().unwrap_or("it died").to_string();
                end_kernel(slot, handle, format!("the previous kernel died ({first_line})")).await;
            }
        }
    }

    async fn start(
        &self,
        language: Language,
        root: &std::path::Path,
        handle: &SlotHandle,
    ) -> Result<(Kernel, String, String, Option<String>), String> {
        match language {
            Language::Python => {
                let python =
                    python::resolve(self.capsule.as_ref(), root, self.config.python.as_deref())?;
                let program = python::program(&python, self.config.ipython);
                let kernel =
                    crate::child::ChildKernel::start(self.capsule.as_ref(), &program, root).await?;
                Ok(started(kernel, &python, handle))
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
                            crate::child::ChildKernel::start(self.capsule.as_ref(), &program, root)
                                .await?;
                        if typescript && !kernel.info.typescript {
                            let version = kernel.info.version.clone();
                            kernel.shutdown().await;
                            return Err(node::typescript_missing(&node, &version));
                        }
                        Ok(started(kernel, &node, handle))
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
                        *handle.js_interrupt.lock() = Some(kernel.interrupt_flag());
                        Ok((Kernel::Js(kernel), ENGINE.to_string(), String::new(), None))
                    }
                }
            }
        }
    }
}

fn started(
    kernel: crate::child::ChildKernel,
    program: &std::path::Path,
    handle: &SlotHandle,
) -> (Kernel, String, String, Option<String>) {
    *handle.group.lock() = kernel.group();
    let info = kernel.info.clone();
    let interpreter =
        if info.executable.is_empty() { program.display().to_string() } else { info.executable };
    (Kernel::Child(Box::new(kernel)), interpreter, info.version, Some(info.cwd))
}

/// Sends the record's cell to the slot's kernel and drives it to its end.
async fn run_on(
    slot: &mut Slot,
    record: &CellRecord,
    code: &str,
    bridge: Arc<KernelBridge>,
    budget: Budget,
) -> Fate {
    let (cell, stop, out) = (record.id, &record.stop, &record.out);
    match slot.kernel.as_mut() {
        Some(Kernel::Child(k)) => {
            if let Err(how) = k.exec(cell, code).await {
                return Fate::Died(how);
            }
            drive(k.as_mut(), bridge, budget, stop, out).await
        }
        Some(Kernel::Js(k)) => {
            if let Err(how) = k.exec(cell, code) {
                return Fate::Died(how);
            }
            drive(k, bridge, budget, stop, out).await
        }
        None => Fate::Died("no kernel".into()),
    }
}

/// Why the state is gone after a kill, for the next kernel's first result.
fn killed_reason(reason: InterruptReason, budget: Budget) -> String {
    let after = match reason {
        InterruptReason::Cancelled => "a cancelled cell",
        InterruptReason::Requested => "an interrupted cell",
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
