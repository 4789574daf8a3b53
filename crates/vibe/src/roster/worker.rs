//! One worker's record in the roster (its briefing history, attempt, slot, timers and output
//! buffers) and the roster's state: the workers, the queue and whether the run is closing.

use std::{collections::VecDeque, time::Duration};

use tokio::{
    sync::{mpsc, oneshot},
    time::Instant,
};

use super::{WorkerResult, WorkerState, WorkerView};
use crate::{
    backend::{StopReport, Tier, WorkerTier},
    buffer::TailBuffer,
    error::RosterError,
};

/// Why an attempt is asked to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum StopWhy {
    Kill,
    Restart,
    Shutdown,
}

/// A stop request to an attempt's supervisor task, answered with its report and output.
pub(super) struct Control {
    pub(super) why: StopWhy,
    pub(super) reply: oneshot::Sender<(StopReport, String)>,
}

/// One worker: its briefing history, current attempt, slot, timers and output.
pub(super) struct Worker {
    pub(super) id: String,
    pub(super) label: String,
    pub(super) tier: WorkerTier,
    pub(super) ceiling: Tier,
    pub(super) briefing: Vec<String>,
    pub(super) state: WorkerState,
    pub(super) attempt: u32,
    pub(super) holds_slot: bool,
    pub(super) queued_at: Option<Instant>,
    pub(super) started_at: Option<Instant>,
    pub(super) settled_at: Option<Instant>,
    pub(super) last_activity: Option<Instant>,
    pub(super) stdout: TailBuffer,
    pub(super) stderr: TailBuffer,
    pub(super) recent: TailBuffer,
    pub(super) result: Option<WorkerResult>,
    pub(super) control: Option<mpsc::Sender<Control>>,
}

impl Worker {
    pub(super) fn briefing_text(&self) -> String {
        let mut text = self.briefing[0].clone();
        for (i, message) in self.briefing.iter().enumerate().skip(1) {
            text.push_str(&format!("\n\n--- message {} (briefing revision {}) ---\n", i, i + 1));
            text.push_str(message);
        }
        text
    }

    pub(super) fn ran_seconds(&self, now: Instant) -> f64 {
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
    pub(super) fn kill_unstarted(&mut self, now: Instant, detail: &str) {
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

    pub(super) fn view(&self, now: Instant) -> WorkerView {
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

pub(super) fn round(d: Duration) -> f64 {
    (d.as_secs_f64() * 10.0).round() / 10.0
}

/// Every worker of the run, the queue for slots, and whether the run is ending.
pub(super) struct State {
    pub(super) workers: Vec<Worker>,
    pub(super) queue: VecDeque<usize>,
    pub(super) closed: bool,
    /// Wall clock of the attempts that ended (settled or restarted), for the run's budget.
    pub(super) spent: Duration,
}

impl State {
    /// Wall clock every attempt of the run has used by `now`, the running ones included.
    pub(super) fn spent_at(&self, now: Instant) -> Duration {
        let running: Duration = self
            .workers
            .iter()
            .filter(|w| matches!(w.state, WorkerState::Running | WorkerState::Stalled))
            .filter_map(|w| w.started_at.map(|s| now.saturating_duration_since(s)))
            .sum();
        self.spent + running
    }

    /// Workers running now.
    pub(super) fn running(&self) -> usize {
        self.workers
            .iter()
            .filter(|w| matches!(w.state, WorkerState::Running | WorkerState::Stalled))
            .count()
    }

    pub(super) fn slots_used(&self) -> usize {
        self.workers.iter().filter(|w| w.holds_slot).count()
    }

    pub(super) fn find(&self, id: &str) -> Result<usize, RosterError> {
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
