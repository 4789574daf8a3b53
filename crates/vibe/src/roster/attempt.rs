//! One attempt's life: starting it in a slot or queueing it, its supervisor task (output,
//! the stall and budget timers, stop requests), and settling it, which frees the slot for the
//! queue. Every change is checked against the attempt number, so a late report from a
//! superseded attempt changes nothing.

use std::{sync::Arc, time::Duration};

use agent_tools_support::duration::human as seconds;
use tokio::{sync::mpsc, time::Instant};

use super::{
    Inner, WorkerResult, WorkerState,
    worker::{Control, State, StopWhy},
};
use crate::backend::{
    ExitReport, StartRequest, StopReport, Stream, WorkerEvent, WorkerEvents, WorkerHandle,
};

/// How long to collect the last output after a stop before settling.
const DRAIN: Duration = Duration::from_secs(2);

impl Inner {
    pub(super) fn notify(&self) {
        self.changed.send_modify(|v| *v = v.wrapping_add(1));
    }

    /// Starts the worker now if a slot is free and nobody is queued before it; queues it otherwise.
    pub(super) fn start_or_queue(this: &Arc<Inner>, state: &mut State, idx: usize) {
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
    pub(super) fn pump(this: &Arc<Inner>, state: &mut State) {
        while !state.closed && state.slots_used() < this.settings.slots {
            let Some(idx) = state.queue.pop_front() else { break };
            Inner::start_attempt(this, state, idx);
        }
    }

    /// Starts a new attempt of worker `idx` in a slot (taking one if it holds none). Once the
    /// run is ending, nothing starts: the worker is settled as killed instead.
    pub(super) fn start_attempt(this: &Arc<Inner>, state: &mut State, idx: usize) {
        let now = Instant::now();
        let closed = state.closed;
        // A restart: the attempt it replaces counts against the run's budget.
        let w = &state.workers[idx];
        if matches!(w.state, WorkerState::Running | WorkerState::Stalled)
            && let Some(started) = w.started_at
        {
            state.spent += now.saturating_duration_since(started);
        }
        let spent = this.run_budget_spent(state, now);
        let w = &mut state.workers[idx];
        if closed {
            w.holds_slot = false;
            w.control = None;
            w.kill_unstarted(now, "the run ended before it could start again");
            return;
        }
        if let Some(why) = spent {
            w.holds_slot = false;
            w.control = None;
            w.kill_unstarted(now, &why);
            w.state = WorkerState::TimedOut;
            if let Some(result) = w.result.as_mut() {
                result.state = WorkerState::TimedOut;
            }
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
            nesting: this.settings.nesting.clone(),
        };
        tokio::spawn(supervise(this.clone(), idx, request, control_rx));
    }

    /// Settles attempt `attempt` of worker `idx` as `outcome`, frees its slot and starts queued
    /// workers. Does nothing if that attempt is no longer the current one or already settled.
    pub(super) fn settle(
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
        let ran = w.started_at.map_or(Duration::ZERO, |s| now.saturating_duration_since(s));
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
        state.spent += ran;
        Inner::pump(this, state);
    }

    /// Why no worker may start any more, once the run's worker budget is spent.
    pub(super) fn run_budget_spent(&self, state: &State, now: Instant) -> Option<String> {
        let spent = state.spent_at(now);
        (spent >= self.settings.run_budget).then(|| {
            format!(
                "the run's worker budget of {} wall clock is spent ({} used by all its workers \
                 together); no worker starts any more in this run ([vibe] run_budget_seconds \
                 sets it)",
                seconds(self.settings.run_budget),
                seconds(spent)
            )
        })
    }

    /// When the run's worker budget runs out at the earliest (every running worker spends it),
    /// or `None` when it is spent.
    pub(super) fn run_budget_deadline(&self) -> Option<Instant> {
        let state = self.state.lock();
        let now = Instant::now();
        let left = self.settings.run_budget.checked_sub(state.spent_at(now))?;
        if left.is_zero() {
            return None;
        }
        let running = u32::try_from(state.running().max(1)).unwrap_or(u32::MAX);
        Some(now + left / running)
    }

    /// The time of the current attempt's last output, or `None` if it is no longer current.
    pub(super) fn last_activity(&self, idx: usize, attempt: u32) -> Option<Instant> {
        let state = self.state.lock();
        let w = &state.workers[idx];
        (w.attempt == attempt && !w.state.is_settled()).then_some(w.last_activity).flatten()
    }

    pub(super) fn record(&self, idx: usize, attempt: u32, stream: Stream, text: &str) {
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
    pub(super) fn stall_deadline(&self, idx: usize, attempt: u32) -> Option<(Instant, bool)> {
        let state = self.state.lock();
        let w = &state.workers[idx];
        if w.attempt != attempt || w.state.is_settled() {
            return None;
        }
        let last = w.last_activity.unwrap_or_else(Instant::now);
        Some((last + self.settings.stall_after, w.state == WorkerState::Stalled))
    }

    pub(super) fn mark_stalled(&self, idx: usize, attempt: u32) {
        let mut state = self.state.lock();
        let w = &mut state.workers[idx];
        if w.attempt == attempt && w.state == WorkerState::Running {
            w.state = WorkerState::Stalled;
            drop(state);
            self.notify();
        }
    }

    pub(super) fn settle_now(
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

    pub(super) fn recent_output(&self, idx: usize) -> String {
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

/// Stops the attempt for a hard limit (`why`) and settles it as timed out with its output.
async fn time_out(
    inner: &Arc<Inner>,
    idx: usize,
    attempt: u32,
    handle: &dyn WorkerHandle,
    rx: &mut mpsc::UnboundedReceiver<WorkerEvent>,
    why: &str,
) {
    let stop = handle.stop(inner.settings.kill_grace).await;
    drain(inner, idx, attempt, rx).await;
    let detail = format!("{why}, so it was stopped ({})", stop.detail);
    Inner::settle_now(inner, idx, attempt, WorkerState::TimedOut, detail);
}

/// What hard limit this attempt has passed, if any: the run's worker budget (no deadline
/// left) or the silence limit.
fn over_limit(
    inner: &Inner,
    run_deadline: Option<Instant>,
    silence_limit: Option<Instant>,
) -> Option<String> {
    if run_deadline.is_none() {
        return Some(format!(
            "the run's worker budget of {} wall clock (all its workers together) ran out",
            seconds(inner.settings.run_budget)
        ));
    }
    let limit = inner.settings.stall_limit?;
    silence_limit
        .filter(|at| *at <= Instant::now())
        .map(|_| format!("it printed nothing for {} (the stall limit)", seconds(limit)))
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
    // A worker starting elsewhere spends the run's budget faster: recompute then.
    let mut changes = inner.changed.subscribe();
    loop {
        let Some((stall_at, stalled)) = inner.stall_deadline(idx, attempt) else {
            // Superseded (for example killed after the stop bound): make sure it is gone.
            handle.stop(grace).await;
            return;
        };
        // Checked again at each wake: the earliest the run's budget can run out, and the
        // silence after which a stalled worker is stopped (when a hard limit is set).
        let run_deadline = inner.run_budget_deadline();
        let silence_limit = inner
            .settings
            .stall_limit
            .and_then(|limit| inner.last_activity(idx, attempt).map(|last| last + limit));
        if let Some(why) = over_limit(&inner, run_deadline, silence_limit) {
            return time_out(&inner, idx, attempt, handle.as_ref(), &mut rx, &why).await;
        }
        let wake = [run_deadline, silence_limit].into_iter().flatten().min();
        tokio::select! {
            () = tokio::time::sleep_until(wake.unwrap_or(budget_deadline)), if wake.is_some() => {}
            _ = changes.changed() => {}
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
                let why = format!("its wall-clock budget of {} ran out", seconds(inner.settings.budget));
                return time_out(&inner, idx, attempt, handle.as_ref(), &mut rx, &why).await;
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
