//! The narrow port to whatever runs workers: `WorkerBackend` starts one attempt, reports its
//! output and its end through `WorkerEvents`, and stops it through a `WorkerHandle`.
//!
//! The roster owns ids, states, slots, timers and the briefing history; a backend only runs things.

use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

/// Which kind of worker: `fast` for mechanical work with a clear brief, `good` for design, judgement, or reviewing what a fast worker produced.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum WorkerTier {
    #[default]
    Fast,
    Good,
}

impl WorkerTier {
    pub fn as_str(self) -> &'static str {
        match self {
            WorkerTier::Fast => "fast",
            WorkerTier::Good => "good",
        }
    }
}

/// What a worker may do at most: the permission tier, never above its caller's surface.
pub use agent_tools_support::Tier;

/// One attempt to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartRequest {
    /// `w1`, `w2` …
    pub worker_id: String,
    pub label: String,
    pub tier: WorkerTier,
    /// The most the worker may do; never above its caller's surface.
    pub ceiling: Tier,
    /// The whole briefing: the brief and every message sent since.
    pub briefing: String,
    /// How many pieces the briefing has (1 for the brief alone).
    pub revision: usize,
    /// 1 for the first attempt; each restart adds one.
    pub attempt: u32,
    /// The worker's depth among nested workers and the limit, for its environment.
    pub nesting: crate::Nesting,
}

/// Which stream a piece of output came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// How an attempt ended by itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExitReport {
    pub success: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    /// For example `exit code 3` or `killed by signal 9`.
    pub detail: String,
}

/// What a backend reports about a running attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkerEvent {
    Output(Stream, String),
    /// The attempt ended. Sent once, after all of its output.
    Exited(ExitReport),
}

/// Where a backend reports output and the end of one attempt.
#[derive(Debug, Clone)]
pub struct WorkerEvents {
    tx: mpsc::UnboundedSender<WorkerEvent>,
}

impl WorkerEvents {
    /// A sender and the receiver the roster reads.
    pub fn channel() -> (WorkerEvents, mpsc::UnboundedReceiver<WorkerEvent>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (WorkerEvents { tx }, rx)
    }

    pub fn output(&self, stream: Stream, text: impl Into<String>) {
        let _ = self.tx.send(WorkerEvent::Output(stream, text.into()));
    }

    pub fn exited(&self, report: ExitReport) {
        let _ = self.tx.send(WorkerEvent::Exited(report));
    }
}

/// How a stop went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct StopReport {
    /// True when the graceful stop was not enough and the attempt was killed.
    pub forced: bool,
    /// What happened, in words.
    pub detail: String,
}

/// Controls one running attempt.
#[async_trait]
pub trait WorkerHandle: Send + Sync {
    /// Stops the attempt: gracefully first, forced after `grace`. Bounded: returns within about
    /// `grace` plus a few seconds, whatever the worker does.
    async fn stop(&self, grace: Duration) -> StopReport;
}

/// Runs workers.
#[async_trait]
pub trait WorkerBackend: Send + Sync {
    /// The ceiling a worker of `tier` gets when its caller's surface allows `caller`: never
    /// above `caller`. An error says why it cannot run (nothing configured for the tier, or
    /// nothing that can run under this ceiling). Called before anything starts.
    fn plan(&self, tier: WorkerTier, caller: Tier) -> Result<Tier, String>;

    /// Starts one attempt and returns promptly; output and the end go to `events`.
    /// An error carries the root cause (for example why the program could not be spawned).
    async fn start(
        &self,
        request: StartRequest,
        events: WorkerEvents,
    ) -> Result<Box<dyn WorkerHandle>, String>;

    /// One line per tier for `status`: what runs, or what is missing.
    fn describe(&self) -> Vec<String> {
        Vec::new()
    }
}
