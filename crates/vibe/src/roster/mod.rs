//! The roster: ids, states, slots, the queue, timers (stall, wall-clock budget) and the briefing
//! history of every worker of one run.
//!
//! Each running attempt has one supervisor task that owns its handle and timers; the roster talks
//! to it through a control channel, and every state change it makes is checked against the
//! attempt number, so a late report from a superseded attempt changes nothing.

mod attempt;
mod reports;
mod worker;

use std::{collections::VecDeque, sync::Arc, time::Duration};

use parking_lot::Mutex;
use tokio::{
    sync::{mpsc, oneshot, watch},
    time::Instant,
};
use tokio_util::sync::CancellationToken;

pub use self::reports::{
    Interrupted, KillReport, RosterView, SendReport, SpawnReport, WaitReport, WorkerResult,
    WorkerState, WorkerView,
};
use self::worker::{Control, State, StopWhy, Worker, round};
use crate::{
    backend::{StopReport, Tier, WorkerBackend, WorkerTier},
    buffer::TailBuffer,
    error::RosterError,
};

/// Extra time beyond the kill grace that a stop may take before the roster frees the slot anyway.
const STOP_MARGIN: Duration = Duration::from_secs(5);
/// Characters of recent output shown for a worker that is still running.
const RECENT_CHARS: usize = 600;
/// Characters of stderr kept for a failed worker's result.
const STDERR_CHARS: usize = 4000;

/// How the roster runs workers.
#[derive(Debug, Clone, PartialEq)]
pub struct RosterSettings {
    /// Workers that may run at once (default 4).
    pub slots: usize,
    /// No output for this long makes a running worker `stalled` (default 120 s): reported, not
    /// stopped.
    pub stall_after: Duration,
    /// No output for this long stops a worker as `timed_out` (default: none; the attempt
    /// budget is the hard limit).
    pub stall_limit: Option<Duration>,
    /// Wall clock one attempt may run before it is stopped as `timed_out` (default 30 min).
    pub budget: Duration,
    /// Wall clock all the run's attempts may use together (default 4 h): then running workers
    /// are stopped as `timed_out` and nothing starts any more.
    pub run_budget: Duration,
    /// How deep this roster's agent is among nested workers, and the limit.
    pub nesting: crate::Nesting,
    /// Time between the graceful and the forced stop (default 5 s).
    pub kill_grace: Duration,
    /// Characters of final output kept as a result (default 20000).
    pub result_max_chars: usize,
}

impl Default for RosterSettings {
    fn default() -> Self {
        RosterSettings {
            slots: 4,
            stall_after: Duration::from_secs(120),
            stall_limit: None,
            budget: Duration::from_secs(30 * 60),
            run_budget: Duration::from_secs(4 * 3600),
            nesting: crate::Nesting::default(),
            kill_grace: Duration::from_secs(5),
            result_max_chars: 20_000,
        }
    }
}

struct Inner {
    backend: Arc<dyn WorkerBackend>,
    settings: RosterSettings,
    state: Mutex<State>,
    changed: watch::Sender<u64>,
}

/// The workers of one run.
#[derive(Clone)]
pub struct Roster {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Roster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Roster").field("settings", &self.inner.settings).finish_non_exhaustive()
    }
}

impl Roster {
    pub fn new(backend: Arc<dyn WorkerBackend>, settings: RosterSettings) -> Self {
        let settings = RosterSettings { slots: settings.slots.max(1), ..settings };
        Roster {
            inner: Arc::new(Inner {
                backend,
                settings,
                state: Mutex::new(State {
                    workers: Vec::new(),
                    queue: VecDeque::new(),
                    closed: false,
                    spent: Duration::ZERO,
                }),
                changed: watch::Sender::new(0),
            }),
        }
    }

    pub fn settings(&self) -> &RosterSettings {
        &self.inner.settings
    }

    /// What the backend runs for each tier, for `status`.
    pub fn describe_backend(&self) -> Vec<String> {
        self.inner.backend.describe()
    }

    /// Starts a worker at once, or queues it when every slot is in use. `caller` is the ceiling
    /// of the caller's surface; the worker never runs above it. Call it inside a Tokio runtime.
    pub fn spawn(
        &self,
        brief: &str,
        label: &str,
        tier: WorkerTier,
        caller: Tier,
    ) -> Result<SpawnReport, RosterError> {
        if brief.trim().is_empty() {
            return Err(RosterError::Invalid(
                "`brief` is empty; say what the worker should do and what done looks like".into(),
            ));
        }
        let label = label.split_whitespace().collect::<Vec<_>>().join(" ");
        if label.is_empty() {
            return Err(RosterError::Invalid(
                "`label` is empty; give the worker a short label (a few words)".into(),
            ));
        }
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(RosterError::Invalid(
                "workers are supervised by tasks: call spawn inside a Tokio runtime".into(),
            ));
        }
        if let Some(why) = self.inner.settings.nesting.refusal() {
            return Err(RosterError::Refused(why));
        }
        let ceiling = self.inner.backend.plan(tier, caller).map_err(RosterError::Refused)?;
        let mut state = self.inner.state.lock();
        if state.closed {
            return Err(RosterError::Closed);
        }
        if let Some(why) = self.inner.run_budget_spent(&state, Instant::now()) {
            return Err(RosterError::Refused(why));
        }
        let idx = state.workers.len();
        state.workers.push(Worker {
            id: format!("w{}", idx + 1),
            label,
            tier,
            ceiling,
            briefing: vec![brief.to_string()],
            state: WorkerState::Queued,
            attempt: 0,
            holds_slot: false,
            queued_at: None,
            started_at: None,
            settled_at: None,
            last_activity: None,
            stdout: TailBuffer::new(self.inner.settings.result_max_chars),
            stderr: TailBuffer::new(STDERR_CHARS),
            recent: TailBuffer::new(RECENT_CHARS),
            result: None,
            control: None,
        });
        Inner::start_or_queue(&self.inner, &mut state, idx);
        let now = Instant::now();
        let report = SpawnReport {
            worker: state.workers[idx].view(now),
            queue_position: state.queue.iter().position(|&i| i == idx).map(|p| p + 1),
            slots_used: state.slots_used(),
            slots_max: self.inner.settings.slots,
        };
        drop(state);
        self.inner.notify();
        Ok(report)
    }

    /// Appends `message` to the briefing and restarts the worker with the whole briefing.
    pub async fn send(
        &self,
        id: &str,
        message: &str,
        caller: Tier,
    ) -> Result<SendReport, RosterError> {
        if message.trim().is_empty() {
            return Err(RosterError::Invalid("`message` is empty; say what should change".into()));
        }
        let (idx, tier, old_ceiling) = {
            let state = self.inner.state.lock();
            let idx = state.find(id)?;
            let w = &state.workers[idx];
            (idx, w.tier, w.ceiling)
        };
        let ceiling =
            self.inner.backend.plan(tier, caller.min(old_ceiling)).map_err(RosterError::Refused)?;
        let ceiling_lowered_from = (ceiling < old_ceiling).then_some(old_ceiling);

        let (previous_state, running) = {
            let mut state = self.inner.state.lock();
            if state.closed {
                return Err(RosterError::Closed);
            }
            let w = &mut state.workers[idx];
            let previous_state = w.state;
            w.briefing.push(message.to_string());
            w.ceiling = ceiling;
            match previous_state {
                WorkerState::Queued => (previous_state, None),
                WorkerState::Running | WorkerState::Stalled => {
                    let started = w.started_at;
                    (previous_state, Some((w.attempt, w.control.clone(), started)))
                }
                _ => {
                    Inner::start_or_queue(&self.inner, &mut state, idx);
                    (previous_state, None)
                }
            }
        };

        let mut interrupted = None;
        if let Some((attempt, control, started)) = running {
            let (stop, output_so_far) = self.stop_attempt(control, StopWhy::Restart).await;
            let mut state = self.inner.state.lock();
            let now = Instant::now();
            let w = &mut state.workers[idx];
            if w.attempt == attempt && !w.state.is_settled() {
                interrupted = Some(Interrupted {
                    attempt,
                    ran_seconds: started.map_or(0.0, |s| round(now.saturating_duration_since(s))),
                    stop: stop.unwrap_or_else(|| StopReport {
                        forced: true,
                        detail: "it did not confirm its stop in time; restarted anyway".into(),
                    }),
                    output_so_far,
                });
                // The slot stays with this worker: the new attempt takes it over.
                Inner::start_attempt(&self.inner, &mut state, idx);
            } else if w.attempt == attempt && w.state != WorkerState::Killed && !state.closed {
                // It ended by itself just before the stop reached it: start a new attempt.
                Inner::start_or_queue(&self.inner, &mut state, idx);
            }
        }
        self.inner.notify();
        let state = self.inner.state.lock();
        Ok(SendReport {
            worker: state.workers[idx].view(Instant::now()),
            previous_state,
            interrupted,
            ceiling_lowered_from,
        })
    }

    /// Waits until the worker settles, stalls, or `timeout` passes (then `timed_out` is set and
    /// the worker keeps running). A worker already stalled when the wait begins is waited for.
    pub async fn wait(
        &self,
        id: &str,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<WaitReport, RosterError> {
        let mut changes = self.inner.changed.subscribe();
        let begin = Instant::now();
        let deadline = begin + timeout;
        let idx = self.inner.state.lock().find(id)?;
        let mut was_stalled = self.inner.state.lock().workers[idx].state == WorkerState::Stalled;
        loop {
            let view = self.inner.state.lock().workers[idx].view(Instant::now());
            let waited = round(Instant::now().saturating_duration_since(begin));
            if view.state.is_settled() {
                return Ok(WaitReport {
                    worker: view,
                    waited_seconds: waited,
                    timed_out: false,
                    stalled: false,
                });
            }
            if view.state == WorkerState::Stalled && !was_stalled {
                return Ok(WaitReport {
                    worker: view,
                    waited_seconds: waited,
                    timed_out: false,
                    stalled: true,
                });
            }
            if view.state != WorkerState::Stalled {
                was_stalled = false;
            }
            tokio::select! {
                changed = changes.changed() => {
                    if changed.is_err() {
                        return Err(RosterError::Closed);
                    }
                }
                () = tokio::time::sleep_until(deadline) => {
                    let view = self.inner.state.lock().workers[idx].view(Instant::now());
                    let waited = round(Instant::now().saturating_duration_since(begin));
                    return Ok(WaitReport { worker: view, waited_seconds: waited, timed_out: true, stalled: false });
                }
                () = cancel.cancelled() => return Err(RosterError::Cancelled),
            }
        }
    }

    /// Stops a worker: gracefully, then forced after the grace time. Bounded; always frees the
    /// slot; on a settled worker it does nothing and says so.
    pub async fn kill(&self, id: &str) -> Result<KillReport, RosterError> {
        let (idx, previous_state, running) = {
            let mut state = self.inner.state.lock();
            let idx = state.find(id)?;
            let w = &state.workers[idx];
            let previous_state = w.state;
            let running = match previous_state {
                WorkerState::Queued => {
                    state.queue.retain(|&i| i != idx);
                    state.workers[idx]
                        .kill_unstarted(Instant::now(), "killed while queued; it never started");
                    None
                }
                WorkerState::Running | WorkerState::Stalled => Some((w.attempt, w.control.clone())),
                _ => None,
            };
            (idx, previous_state, running)
        };
        let mut stop = None;
        if let Some((attempt, control)) = running {
            let (report, _) = self.stop_attempt(control, StopWhy::Kill).await;
            let mut state = self.inner.state.lock();
            let w = &state.workers[idx];
            if w.attempt == attempt && !w.state.is_settled() {
                // The supervisor did not confirm in time: settle it here and free the slot anyway.
                let detail =
                    "it did not confirm its stop in time; the slot was freed anyway".to_string();
                Inner::settle(
                    &self.inner,
                    &mut state,
                    idx,
                    attempt,
                    WorkerState::Killed,
                    detail.clone(),
                );
                stop = Some(StopReport { forced: true, detail });
            } else {
                stop = report;
            }
        }
        self.inner.notify();
        let state = self.inner.state.lock();
        Ok(KillReport {
            worker: state.workers[idx].view(Instant::now()),
            previous_state,
            stop,
            slots_used: state.slots_used(),
            slots_max: self.inner.settings.slots,
        })
    }

    /// Every worker of the run, with the slots in use.
    pub fn list(&self) -> RosterView {
        let state = self.inner.state.lock();
        let now = Instant::now();
        RosterView {
            workers: state.workers.iter().map(|w| w.view(now)).collect(),
            slots_used: state.slots_used(),
            slots_max: self.inner.settings.slots,
            worker_time_used_seconds: round(state.spent_at(now)),
            run_budget_seconds: round(self.inner.settings.run_budget),
        }
    }

    /// Ends the run's workers: the queue is dropped, every running attempt is stopped (bounded),
    /// and nothing starts any more.
    pub async fn shutdown(&self) {
        let running: Vec<(usize, u32, Option<mpsc::Sender<Control>>)> = {
            let mut state = self.inner.state.lock();
            state.closed = true;
            let queued: Vec<usize> = state.queue.drain(..).collect();
            let now = Instant::now();
            for idx in queued {
                state.workers[idx].kill_unstarted(now, "the run ended while it was queued");
            }
            state
                .workers
                .iter()
                .enumerate()
                .filter(|(_, w)| matches!(w.state, WorkerState::Running | WorkerState::Stalled))
                .map(|(i, w)| (i, w.attempt, w.control.clone()))
                .collect()
        };
        let mut stops = tokio::task::JoinSet::new();
        for (idx, attempt, control) in running {
            let roster = self.clone();
            stops.spawn(async move {
                roster.stop_attempt(control, StopWhy::Shutdown).await;
                let mut state = roster.inner.state.lock();
                let w = &state.workers[idx];
                if w.attempt == attempt && !w.state.is_settled() {
                    Inner::settle(
                        &roster.inner,
                        &mut state,
                        idx,
                        attempt,
                        WorkerState::Killed,
                        "the run ended; it did not confirm its stop in time".into(),
                    );
                }
            });
        }
        while stops.join_next().await.is_some() {}
        self.inner.notify();
    }

    /// Asks the attempt's supervisor to stop it; bounded by the grace time plus a margin.
    async fn stop_attempt(
        &self,
        control: Option<mpsc::Sender<Control>>,
        why: StopWhy,
    ) -> (Option<StopReport>, String) {
        let Some(control) = control else { return (None, String::new()) };
        let (reply, answer) = oneshot::channel();
        if control.send(Control { why, reply }).await.is_err() {
            return (None, String::new());
        }
        match tokio::time::timeout(self.inner.settings.kill_grace + STOP_MARGIN, answer).await {
            Ok(Ok((report, output))) => (Some(report), output),
            _ => (None, String::new()),
        }
    }
}
