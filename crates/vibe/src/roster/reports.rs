//! What the roster reports: worker states, a settled attempt's result, the view of a worker
//! and of the roster, and the report of each call (spawn, send, wait, kill).

use serde::Serialize;

use crate::backend::{StopReport, Tier, WorkerTier};

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
    pub ceiling: Tier,
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
    /// Wall-clock seconds all the run's attempts have used so far.
    pub worker_time_used_seconds: f64,
    /// The run's worker budget, in wall-clock seconds.
    pub run_budget_seconds: f64,
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
    pub ceiling_lowered_from: Option<Tier>,
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
