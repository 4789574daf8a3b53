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
use crate::backend::{ExitReport, StartRequest, StopReport, Stream, WorkerEvent, WorkerEvents};

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
                    seconds(inner.settings.budget),
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
