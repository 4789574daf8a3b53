//! Cells that outlive their call: each cell is a record its kernel's worker fills while the
//! calls that wait for it (the one that sent it, then any `eval` with `cell: N`) take what has
//! come so far, up to their `wait_s`.

use std::time::Duration;

use agent_tools_support::{duration::human as human_duration, progress::CallScope};
use parking_lot::Mutex;
use tokio::{sync::watch, time::Instant};
use tokio_util::sync::CancellationToken;

use crate::{
    cell::Collector,
    types::{CellReport, CellStatus, InterruptReason, KernelNote, Language},
};

/// How often a waiting call reports progress.
const PROGRESS_EVERY: Duration = Duration::from_secs(1);

/// Where a cell is.
#[derive(Debug)]
enum Phase {
    /// Sent, waiting for the kernel (behind the cell named when it was sent, if any).
    Queued,
    /// Running since then.
    Running(Instant),
    /// Ended; the report holds what came since the last call took output.
    Ended(Box<CellReport>),
}

#[derive(Debug)]
struct Live {
    phase: Phase,
    /// The kernel it runs in, once it runs (the first result that shows it says "started").
    kernel: Option<KernelNote>,
    /// Calls that returned it still running.
    partial_returns: u32,
    /// Calls that returned its end.
    final_returns: u32,
    /// Why it was asked to stop, when it was.
    stop_reason: Option<InterruptReason>,
}

/// One cell of the run, from its sending to its last collection.
#[derive(Debug)]
pub(crate) struct CellRecord {
    pub(crate) id: u64,
    pub(crate) conversation: String,
    pub(crate) language: Language,
    sent: Instant,
    /// The cell it queued behind when it was sent (that one had not ended).
    pub(crate) behind: Option<u64>,
    /// Fired to stop it: an interrupt while it runs; while it waits, it never runs.
    pub(crate) stop: CancellationToken,
    /// Its outputs not yet taken by a call (shared with the cell loop).
    pub(crate) out: Mutex<Collector>,
    live: Mutex<Live>,
    ended: watch::Sender<bool>,
}

impl CellRecord {
    pub(crate) fn new(
        id: u64,
        conversation: &str,
        language: Language,
        behind: Option<u64>,
        out: Collector,
    ) -> Self {
        CellRecord {
            id,
            conversation: conversation.to_string(),
            language,
            sent: Instant::now(),
            behind,
            stop: CancellationToken::new(),
            out: Mutex::new(out),
            live: Mutex::new(Live {
                phase: Phase::Queued,
                kernel: None,
                partial_returns: 0,
                final_returns: 0,
                stop_reason: None,
            }),
            ended: watch::Sender::new(false),
        }
    }

    /// The kernel's worker takes it up: false when it was stopped while it waited (it never
    /// runs; its report says so already).
    pub(crate) fn begin(&self) -> bool {
        let mut live = self.live.lock();
        if !matches!(live.phase, Phase::Queued) {
            return false;
        }
        live.phase = Phase::Running(Instant::now());
        true
    }

    /// The kernel it runs in, once known.
    pub(crate) fn set_kernel(&self, kernel: KernelNote) {
        self.live.lock().kernel = Some(kernel);
    }

    /// How long it waited for the kernel before it began, when it waited behind another cell.
    pub(crate) fn waited_behind(&self) -> Option<(u64, Duration)> {
        let live = self.live.lock();
        match (&live.phase, self.behind) {
            (Phase::Running(at), Some(behind)) => Some((behind, at.duration_since(self.sent))),
            _ => None,
        }
    }

    pub(crate) fn ended(&self) -> bool {
        matches!(self.live.lock().phase, Phase::Ended(_))
    }

    /// Its end: `report` carries the outputs since the last call took some.
    pub(crate) fn end(&self, mut report: CellReport) {
        report.cell = self.id;
        let mut live = self.live.lock();
        if live.partial_returns > 0 {
            // An earlier result said so already.
            report.kernel.started = false;
            report.kernel.previous_lost = None;
            report.kernel.previous_cell = None;
        }
        live.phase = Phase::Ended(Box::new(report));
        drop(live);
        self.ended.send_replace(true);
    }

    /// Asks it to stop for `reason`. A cell still waiting for the kernel ends at once, never
    /// having run; a running one is interrupted by its worker.
    pub(crate) fn request_stop(&self, reason: InterruptReason) {
        let mut live = self.live.lock();
        live.stop_reason.get_or_insert(reason);
        if matches!(live.phase, Phase::Queued) {
            let mut report = CellReport::cancelled_before_start(self.language);
            report.cell = self.id;
            if reason == InterruptReason::Requested {
                report.notes = vec![
                    "interrupted before it started: it was waiting behind another cell; it never \
                     ran and the kernel's state is unchanged"
                        .into(),
                ];
            }
            live.phase = Phase::Ended(Box::new(report));
            drop(live);
            self.ended.send_replace(true);
        } else {
            drop(live);
        }
        self.stop.cancel();
    }

    /// Why it was asked to stop, when it was.
    pub(crate) fn stop_reason(&self) -> Option<InterruptReason> {
        self.live.lock().stop_reason
    }

    /// Waits up to `wait` for its end and returns it, or returns it still running with what
    /// came since the last call. The scope's cancellation (the client's `notifications/cancelled`)
    /// interrupts the cell and waits for that end; its cut (the client's connection went away,
    /// the run goes on) returns at once and leaves the cell running.
    pub(crate) async fn wait(&self, wait: Duration, scope: CallScope) -> CellReport {
        let mut ended = self.ended.subscribe();
        let deadline = Instant::now() + wait;
        let mut next_progress = Instant::now() + PROGRESS_EVERY;
        let never = CancellationToken::new();
        let cut = scope.cut().unwrap_or(&never);
        let mut stopping = false;
        loop {
            if *ended.borrow_and_update() {
                return self.take_end();
            }
            tokio::select! {
                biased;
                () = cut.cancelled() => return self.take_partial(),
                changed = ended.changed() => {
                    if changed.is_err() {
                        return self.take_partial();
                    }
                }
                () = scope.cancelled(), if !stopping => {
                    stopping = true;
                    if !cut.is_cancelled() {
                        self.request_stop(InterruptReason::Cancelled);
                    }
                }
                () = tokio::time::sleep_until(deadline), if !stopping => return self.take_partial(),
                () = tokio::time::sleep_until(next_progress) => {
                    let (elapsed, message) = self.progress();
                    scope.report(elapsed, &message);
                    next_progress = Instant::now() + PROGRESS_EVERY;
                }
            }
        }
    }

    /// "cell 3, 12 s, 40 lines of output; last: epoch 3", or where it waits.
    fn progress(&self) -> (f64, String) {
        let live = self.live.lock();
        match live.phase {
            Phase::Running(at) => {
                let elapsed = at.elapsed().as_secs_f64();
                (
                    elapsed,
                    format!("cell {}, {}", self.id, self.out.lock().progress_message(elapsed)),
                )
            }
            _ => {
                let elapsed = self.sent.elapsed().as_secs_f64();
                let behind = self.behind.map(|b| format!(" behind cell {b}")).unwrap_or_default();
                (elapsed, format!("cell {} waiting{behind} for the kernel", self.id))
            }
        }
    }

    /// Its end; a second collection says the result was returned before.
    fn take_end(&self) -> CellReport {
        let mut live = self.live.lock();
        live.final_returns += 1;
        let again = live.final_returns > 1;
        let Phase::Ended(report) = &live.phase else {
            drop(live);
            return self.take_partial();
        };
        let mut report = (**report).clone();
        if again {
            report.kernel.started = false;
            report.kernel.previous_lost = None;
            report.kernel.previous_cell = None;
            report.notes.push(format!(
                "cell {} ended earlier; this is its result again (as returned before)",
                self.id
            ));
        } else if let Phase::Ended(stored) = &mut live.phase {
            // Kept for a second collection (a result lost with a cut connection).
            stored.kernel.started = false;
        }
        report
    }

    /// What came since the last call, with the cell still running (or still waiting).
    fn take_partial(&self) -> CellReport {
        let mut live = self.live.lock();
        if let Phase::Ended(_) = live.phase {
            drop(live);
            return self.take_end();
        }
        live.partial_returns += 1;
        let first = live.partial_returns == 1;
        let (outputs, mut notes) = self.out.lock().take_segment().finish();
        let mut kernel = live.kernel.clone().unwrap_or_else(|| KernelNote {
            started: false,
            previous_lost: None,
            previous_cell: None,
            state_preserved: true,
            interpreter: String::new(),
            version: String::new(),
        });
        if !first {
            kernel.started = false;
            kernel.previous_lost = None;
            kernel.previous_cell = None;
        }
        let id = self.id;
        notes.push(match (&live.phase, self.behind) {
            (Phase::Running(at), _) => format!(
                "still running as cell {id} (for {}); eval with cell: {id} waits again and \
                 returns what comes next and its result; cell: {id} with interrupt: true stops it",
                human_duration(at.elapsed())
            ),
            (_, Some(behind)) => format!(
                "waiting as cell {id} behind cell {behind}, which is still running (sent {} \
                 ago); it starts when that one ends; eval with cell: {id} waits for it, \
                 cell: {behind} with interrupt: true stops the one in front",
                human_duration(self.sent.elapsed())
            ),
            _ => format!(
                "waiting as cell {id} for its kernel to start; eval with cell: {id} waits for it"
            ),
        });
        CellReport {
            language: self.language,
            cell: id,
            execution_count: 0,
            status: CellStatus::Running,
            outputs,
            result: None,
            error: None,
            interrupt: None,
            notes,
            kernel,
            cwd_changed: None,
        }
    }
}
