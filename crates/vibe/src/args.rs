//! Arguments of the five `vibe_*` tools, with their JSON Schemas.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::backend::WorkerTier;

/// Default and maximum wait of `vibe_wait`, in seconds.
pub const DEFAULT_WAIT_SECONDS: u64 = 60;
pub const MAX_WAIT_SECONDS: u64 = 600;

/// Arguments of `vibe_spawn`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SpawnArgs {
    /// The worker's whole briefing: task, files or area, constraints, what done looks like. It knows nothing else.
    pub brief: String,
    /// A short label for lists and the transcript (a few words).
    pub label: String,
    /// `fast` (default): mechanical work with a clear brief; `good`: design, judgement, review.
    #[serde(default)]
    #[schemars(extend("default" = "fast"))]
    pub tier: Option<WorkerTier>,
}

/// Arguments of `vibe_send`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SendArgs {
    /// The worker's id, for example `w1`.
    pub worker_id: String,
    /// Appended to the briefing; the worker restarts with all of it.
    pub message: String,
}

/// Arguments of `vibe_wait`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WaitArgs {
    /// The worker's id, for example `w1`.
    pub worker_id: String,
    /// Seconds to wait at most (default 60, 1 to 600). Prefer long waits to polling.
    #[serde(default)]
    #[schemars(range(min = 1, max = 600), extend("default" = 60))]
    pub timeout_seconds: Option<u64>,
}

/// Arguments of `vibe_kill`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KillArgs {
    /// The worker's id, for example `w1`.
    pub worker_id: String,
}

/// Arguments of `vibe_list` (none).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListArgs {}
