//! The roster: ids, states, slots, the queue, timers (stall, wall-clock budget) and the briefing
//! history of every worker of one run.
//!
//! Each running attempt has one supervisor task that owns its handle and timers; the roster talks
//! to it through a control channel, and every state change it makes is checked against the
//! attempt number, so a late report from a superseded attempt changes nothing.

use std::{collections::VecDeque, sync::Arc, time::Duration};

use parking_lot::Mutex;
use serde::Serialize;
use tokio::{
    sync::{mpsc, oneshot, watch},
    time::Instant,
};
use tokio_util::sync::CancellationToken;

use crate::{
    backend::{
        Ceiling, ExitReport, StartRequest, StopReport, Stream, WorkerBackend, WorkerEvent,
        WorkerEvents, WorkerTier,
    },
    buffer::TailBuffer,
};

/// Extra time beyond the kill grace that a stop may take before the roster frees the slot anyway.
const STOP_MARGIN: Duration = Duration::from_secs(5);
/// Characters of recent output shown for a worker that is still running.
const RECENT_CHARS: usize = 600;
/// Characters of stderr kept for a failed worker's result.
const STDERR_CHARS: usize = 4000;
/// How long to collect the last output after a stop before settling.
const DRAIN: Duration = Duration::from_secs(2);

/// How the roster runs workers.
#[derive(Debug, Clone, PartialEq)]
pub struct RosterSettings {
    /// Workers that may run at once (default 4).
    pub slots: usize,
    /// No output for this long makes a running worker `stalled` (default 120 s).
    pub stall_after: Duration,
    /// Wall clock one attempt may run before it is stopped as `timed_out` (default 30 min).
    pub budget: Duration,
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
            budget: Duration::from_secs(30 * 60),
            kill_grace: Duration::from_secs(5),
            result_max_chars: 20_000,
        }
    }
}

/// Where a worker is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WorkerState {
    /// Waiting for a free slot.
    Queued,
    Running,
    /// Running, but no output for the stall time.
    Stalled,
    /// Exited with success.
    Completed,
    /// Exited with failure, or could not start.
    Failed,
    /// Stopped by `vibe_kill` or by the end of the run.
    Killed,
    /// Stopped when its wall-clock budget ran out.
    TimedOut,
}

impl WorkerState {
    pub fn is_settled(self) -> bool {
        matches!(
            self,
            WorkerState::Completed
                | WorkerState::Failed
                | WorkerState::Killed
                | WorkerState::TimedOut
        )
    }

    pub fn as_str(self) -> &'static str {
        match self {
            WorkerState::Queued => "queued",
            WorkerState::Running => "running",
            WorkerState::Stalled => "stalled",
            WorkerState::Completed => "completed",
            WorkerState::Failed => "failed",
            WorkerState::Killed => "killed",
            WorkerState::TimedOut => "timed out",
        }
    }
}

/// How an attempt ended: its final output (capped) and what ended it.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct WorkerResult {
    pub state: WorkerState,
    /// The captured stdout (its tail, when capped).
    pub output: String,
    /// Set when the output was capped: how much was cut.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_note: Option<String>,
    /// The tail of stderr, when the attempt did not complete.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stderr: Option<String>,
    /// What ended it, for example `exit code 0` or `stopped by SIGTERM`.
    pub detail: String,
    pub revision: usize,
    pub attempt: u32,
    pub ran_seconds: f64,
}

/// A worker as the tools show it.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct WorkerView {
    pub id: String,
    pub label: String,
    pub tier: WorkerTier,
    pub state: WorkerState,
    pub ceiling: Ceiling,
    /// How many pieces the briefing has: 1 for the brief, +1 per `vibe_send`.
    pub revision: usize,
    /// Attempts started so far (0 while first queued).
    pub attempt: u32,
    /// Seconds the current (or last) attempt has run.
    pub elapsed_seconds: f64,
    /// Seconds since the last output of the current attempt, if it has run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_activity_seconds_ago: Option<f64>,
    /// Seconds spent waiting for a slot, while queued.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queued_seconds: Option<f64>,
    /// The last output of an attempt still running.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recent_output: Option<String>,
    /// How the last settled attempt ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<WorkerResult>,
}

/// Every worker of the run and the slots.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct RosterView {
    pub workers: Vec<WorkerView>,
    pub slots_used: usize,
    pub slots_max: usize,
}

/// What `spawn` did.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct SpawnReport {
    pub worker: WorkerView,
    /// 1-based place in the queue, when queued.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_position: Option<usize>,
    pub slots_used: usize,
    pub slots_max: usize,
}

/// What `send` did.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct SendReport {
    pub worker: WorkerView,
    /// The state before the message.
    pub previous_state: WorkerState,
    /// Set when a running attempt was stopped to restart with the new briefing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<Interrupted>,
    /// Set when the restart runs under a lower ceiling than before (the caller's surface is lower).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ceiling_lowered_from: Option<Ceiling>,
}

/// The attempt a `send` interrupted.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Interrupted {
    pub attempt: u32,
    pub ran_seconds: f64,
    pub stop: StopReport,
    /// The tail of its output when it was stopped.
    pub output_so_far: String,
}

/// What `wait` saw.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct WaitReport {
    pub worker: WorkerView,
    pub waited_seconds: f64,
    /// True when the wait ended by its timeout; the worker keeps running. Not an error.
    pub timed_out: bool,
    /// True when the wait ended early because the worker stalled.
    pub stalled: bool,
}

/// What `kill` did.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct KillReport {
    pub worker: WorkerView,
    pub previous_state: WorkerState,
    /// How the stop went; `None` when nothing was running.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop: Option<StopReport>,
    pub slots_used: usize,
    pub slots_max: usize,
}

/// Why a roster call did nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RosterError {
    UnknownWorker {
        id: String,
        known: Vec<String>,
    },
    /// The request is not usable; the text says what to change.
    Invalid(String),
    /// The worker may not run under the caller's ceiling, or nothing is configured to run it.
    Refused(String),
    /// The run is ending; no worker starts any more.
    Closed,
    /// The call was abandoned.
    Cancelled,
}

impl std::fmt::Display for RosterError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RosterError::UnknownWorker { id, known } if known.is_empty() => {
                write!(f, "no worker `{id}`: no worker has been spawned in this run")
            }
            RosterError::UnknownWorker { id, known } => {
                write!(f, "no worker `{id}`; the workers of this run are {}", known.join(", "))
            }
            RosterError::Invalid(message) | RosterError::Refused(message) => f.write_str(message),
            RosterError::Closed => f.write_str("the run is ending; no worker starts any more"),
            RosterError::Cancelled => f.write_str("cancelled"),
        }
    }
}

impl std::error::Error for RosterError {}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StopWhy {
    Kill,
    Restart,
    Shutdown,
}

struct Control {
    why: StopWhy,
    reply: oneshot::Sender<(StopReport, String)>,
}

struct Worker {
    id: String,
    label: String,
    tier: WorkerTier,
    ceiling: Ceiling,
    briefing: Vec<String>,
    state: WorkerState,
    attempt: u32,
    holds_slot: bool,
    queued_at: Option<Instant>,
    started_at: Option<Instant>,
    settled_at: Option<Instant>,
    last_activity: Option<Instant>,
    stdout: TailBuffer,
    stderr: TailBuffer,
    recent: TailBuffer,
    result: Option<WorkerResult>,
    control: Option<mpsc::Sender<Control>>,
}

impl Worker {
    fn briefing_text(&self) -> String {
        let mut text = self.briefing[0].clone();
        for (i, message) in self.briefing.iter().enumerate().skip(1) {
            text.push_str(&format!("\n\n--- message {} (briefing revision {}) ---\n", i, i + 1));
            text.push_str(message);
        }
        text
    }

    fn ran_seconds(&self, now: Instant) -> f64 {
        match self.started_at {
            Some(start) => {
                let end =
                    if self.state.is_settled() { self.settled_at.unwrap_or(now) } else { now };
                round(end.saturating_duration_since(start))
            }
            None => 0.0,
        }
    }

    /// Settles as killed a worker with no attempt running (queued, or about to start again).
    fn kill_unstarted(&mut self, now: Instant, detail: &str) {
        self.state = WorkerState::Killed;
        self.settled_at = Some(now);
        self.result = Some(WorkerResult {
            state: WorkerState::Killed,
            output: String::new(),
            output_note: None,
            stderr: None,
            detail: detail.into(),
            revision: self.briefing.len(),
            attempt: self.attempt,
            ran_seconds: 0.0,
        });
    }

    fn view(&self, now: Instant) -> WorkerView {
        let running = matches!(self.state, WorkerState::Running | WorkerState::Stalled);
        WorkerView {
            id: self.id.clone(),
            label: self.label.clone(),
            tier: self.tier,
            state: self.state,
            ceiling: self.ceiling,
            revision: self.briefing.len(),
            attempt: self.attempt,
            elapsed_seconds: self.ran_seconds(now),
            last_activity_seconds_ago: if running {
                self.last_activity.map(|t| round(now.saturating_duration_since(t)))
            } else {
                None
            },
            queued_seconds: if self.state == WorkerState::Queued {
                self.queued_at.map(|t| round(now.saturating_duration_since(t)))
            } else {
                None
            },
            recent_output: if running && !self.recent.is_empty() {
                Some(self.recent.snapshot().0)
            } else {
                None
            },
            result: self.result.clone(),
        }
    }
}

fn round(d: Duration) -> f64 {
    (d.as_secs_f64() * 10.0).round() / 10.0
}

struct State {
    workers: Vec<Worker>,
    queue: VecDeque<usize>,
    closed: bool,
}

impl State {
    fn slots_used(&self) -> usize {
        self.workers.iter().filter(|w| w.holds_slot).count()
    }

    fn find(&self, id: &str) -> Result<usize, RosterError> {
        let wanted = id.trim().to_ascii_lowercase();
        let wanted = if wanted.chars().all(|c| c.is_ascii_digit()) && !wanted.is_empty() {
            format!("w{wanted}")
        } else {
            wanted
        };
        self.workers.iter().position(|w| w.id == wanted).ok_or_else(|| RosterError::UnknownWorker {
            id: id.trim().to_string(),
            known: self.workers.iter().map(|w| w.id.clone()).collect(),
        })
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
        caller: Ceiling,
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
        let ceiling = self.inner.backend.plan(tier, caller).map_err(RosterError::Refused)?;
        let mut state = self.inner.state.lock();
        if state.closed {
            return Err(RosterError::Closed);
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
        caller: Ceiling,
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

impl Inner {
    fn notify(&self) {
        self.changed.send_modify(|v| *v = v.wrapping_add(1));
    }

    /// Starts the worker now if a slot is free and nobody is queued before it; queues it otherwise.
    fn start_or_queue(this: &Arc<Inner>, state: &mut State, idx: usize) {
        if state.closed {
            return;
        }
        if state.slots_used() < this.settings.slots && state.queue.is_empty() {
            Inner::start_attempt(this, state, idx);
        } else {
            let w = &mut state.workers[idx];
            w.state = WorkerState::Queued;
            w.queued_at = Some(Instant::now());
            if !state.queue.contains(&idx) {
                state.queue.push_back(idx);
            }
        }
    }

    /// Starts queued workers while slots are free.
    fn pump(this: &Arc<Inner>, state: &mut State) {
        while !state.closed && state.slots_used() < this.settings.slots {
            let Some(idx) = state.queue.pop_front() else { break };
            Inner::start_attempt(this, state, idx);
        }
    }

    /// Starts a new attempt of worker `idx` in a slot (taking one if it holds none). Once the
    /// run is ending, nothing starts: the worker is settled as killed instead.
    fn start_attempt(this: &Arc<Inner>, state: &mut State, idx: usize) {
        let now = Instant::now();
        let closed = state.closed;
        let w = &mut state.workers[idx];
        if closed {
            w.holds_slot = false;
            w.control = None;
            w.kill_unstarted(now, "the run ended before it could start again");
            return;
        }
        w.attempt += 1;
        w.state = WorkerState::Running;
        w.holds_slot = true;
        w.queued_at = None;
        w.started_at = Some(now);
        w.settled_at = None;
        w.last_activity = Some(now);
        w.stdout.clear();
        w.stderr.clear();
        w.recent.clear();
        let (control_tx, control_rx) = mpsc::channel(4);
        w.control = Some(control_tx);
        let request = StartRequest {
            worker_id: w.id.clone(),
            label: w.label.clone(),
            tier: w.tier,
            ceiling: w.ceiling,
            briefing: w.briefing_text(),
            revision: w.briefing.len(),
            attempt: w.attempt,
        };
        tokio::spawn(supervise(this.clone(), idx, request, control_rx));
    }

    /// Settles attempt `attempt` of worker `idx` as `outcome`, frees its slot and starts queued
    /// workers. Does nothing if that attempt is no longer the current one or already settled.
    fn settle(
        this: &Arc<Inner>,
        state: &mut State,
        idx: usize,
        attempt: u32,
        outcome: WorkerState,
        detail: String,
    ) {
        let now = Instant::now();
        let w = &mut state.workers[idx];
        if w.attempt != attempt || w.state.is_settled() || w.state == WorkerState::Queued {
            return;
        }
        let (output, output_note) = w.stdout.snapshot();
        let stderr = (outcome != WorkerState::Completed && !w.stderr.is_empty())
            .then(|| w.stderr.snapshot().0);
        w.state = outcome;
        w.settled_at = Some(now);
        w.holds_slot = false;
        w.control = None;
        w.result = Some(WorkerResult {
            state: outcome,
            output,
            output_note,
            stderr,
            detail,
            revision: w.briefing.len(),
            attempt,
            ran_seconds: w.ran_seconds(now),
        });
        Inner::pump(this, state);
    }

    fn record(&self, idx: usize, attempt: u32, stream: Stream, text: &str) {
        let mut state = self.state.lock();
        let w = &mut state.workers[idx];
        if w.attempt != attempt || w.state.is_settled() {
            return;
        }
        match stream {
            Stream::Stdout => w.stdout.push(text),
            Stream::Stderr => w.stderr.push(text),
        }
        w.recent.push(text);
        w.last_activity = Some(Instant::now());
        let resumed = w.state == WorkerState::Stalled;
        if resumed {
            w.state = WorkerState::Running;
        }
        drop(state);
        if resumed {
            self.notify();
        }
    }

    /// The stall deadline of the current attempt, or `None` if it is no longer current.
    fn stall_deadline(&self, idx: usize, attempt: u32) -> Option<(Instant, bool)> {
        let state = self.state.lock();
        let w = &state.workers[idx];
        if w.attempt != attempt || w.state.is_settled() {
            return None;
        }
        let last = w.last_activity.unwrap_or_else(Instant::now);
        Some((last + self.settings.stall_after, w.state == WorkerState::Stalled))
    }

    fn mark_stalled(&self, idx: usize, attempt: u32) {
        let mut state = self.state.lock();
        let w = &mut state.workers[idx];
        if w.attempt == attempt && w.state == WorkerState::Running {
            w.state = WorkerState::Stalled;
            drop(state);
            self.notify();
        }
    }

    fn settle_now(
        this: &Arc<Inner>,
        idx: usize,
        attempt: u32,
        outcome: WorkerState,
        detail: String,
    ) {
        let mut state = this.state.lock();
        Inner::settle(this, &mut state, idx, attempt, outcome, detail);
        drop(state);
        this.notify();
    }

    fn recent_output(&self, idx: usize) -> String {
        self.state.lock().workers[idx].recent.snapshot().0
    }
}

/// Collects what is left of an attempt's output after a stop, until its exit is reported.
async fn drain(
    inner: &Inner,
    idx: usize,
    attempt: u32,
    events: &mut mpsc::UnboundedReceiver<WorkerEvent>,
) -> Option<ExitReport> {
    let deadline = Instant::now() + DRAIN;
    loop {
        match tokio::time::timeout_at(deadline, events.recv()).await {
            Ok(Some(WorkerEvent::Output(stream, text))) => {
                inner.record(idx, attempt, stream, &text)
            }
            Ok(Some(WorkerEvent::Exited(report))) => return Some(report),
            Ok(None) | Err(_) => return None,
        }
    }
}

/// Runs one attempt: starts it, records its output, watches the stall and budget timers, and
/// answers stop requests. Every change it makes is for this attempt only.
async fn supervise(
    inner: Arc<Inner>,
    idx: usize,
    request: StartRequest,
    mut control: mpsc::Receiver<Control>,
) {
    let attempt = request.attempt;
    let (events, mut rx) = WorkerEvents::channel();
    let handle = match inner.backend.start(request, events).await {
        Ok(handle) => handle,
        Err(reason) => {
            Inner::settle_now(
                &inner,
                idx,
                attempt,
                WorkerState::Failed,
                format!("could not start: {reason}"),
            );
            // A stop request that raced the failed start still gets its answer.
            while let Ok(Control { reply, .. }) = control.try_recv() {
                let _ = reply.send((
                    StopReport { forced: false, detail: "it had never started".into() },
                    String::new(),
                ));
            }
            return;
        }
    };
    let budget_deadline = Instant::now() + inner.settings.budget;
    let grace = inner.settings.kill_grace;
    loop {
        let Some((stall_at, stalled)) = inner.stall_deadline(idx, attempt) else {
            // Superseded (for example killed after the stop bound): make sure it is gone.
            handle.stop(grace).await;
            return;
        };
        tokio::select! {
            event = rx.recv() => match event {
                Some(WorkerEvent::Output(stream, text)) => inner.record(idx, attempt, stream, &text),
                Some(WorkerEvent::Exited(report)) => {
                    let outcome = if report.success { WorkerState::Completed } else { WorkerState::Failed };
                    Inner::settle_now(&inner, idx, attempt, outcome, report.detail);
                    return;
                }
                None => {
                    handle.stop(grace).await;
                    Inner::settle_now(
                        &inner, idx, attempt, WorkerState::Failed,
                        "the worker backend stopped reporting on it; it was stopped".into(),
                    );
                    return;
                }
            },
            () = tokio::time::sleep_until(stall_at), if !stalled => inner.mark_stalled(idx, attempt),
            () = tokio::time::sleep_until(budget_deadline) => {
                let stop = handle.stop(grace).await;
                drain(&inner, idx, attempt, &mut rx).await;
                let detail = format!(
                    "its wall-clock budget of {} ran out, so it was stopped ({})",
                    crate::render::seconds(inner.settings.budget),
                    stop.detail
                );
                Inner::settle_now(&inner, idx, attempt, WorkerState::TimedOut, detail);
                return;
            }
            Some(Control { why, reply }) = control.recv() => {
                let stop = handle.stop(grace).await;
                drain(&inner, idx, attempt, &mut rx).await;
                let output = inner.recent_output(idx);
                match why {
                    StopWhy::Kill => Inner::settle_now(
                        &inner, idx, attempt, WorkerState::Killed,
                        format!("killed by vibe_kill: {}", stop.detail),
                    ),
                    StopWhy::Shutdown => Inner::settle_now(
                        &inner, idx, attempt, WorkerState::Killed,
                        format!("the run ended: {}", stop.detail),
                    ),
                    StopWhy::Restart => {}
                }
                let _ = reply.send((stop, output));
                return;
            }
        }
    }
}
