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
    /// The worker's whole briefing: the task, the files or area it concerns, constraints, and what done looks like. It knows nothing else, so be complete.
    pub brief: String,
    /// A short label for lists and the transcript (a few words).
    pub label: String,
    /// `fast` (default): mechanical work with a clear brief. `good`: design, judgement, or reviewing what a fast worker produced.
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
    /// Appended to the briefing; the worker restarts with the whole briefing.
    pub message: String,
}

/// Arguments of `vibe_wait`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WaitArgs {
    /// The worker's id, for example `w1`.
    pub worker_id: String,
    /// Seconds to wait at most. Defaults to 60, min 1, max 600. Prefer longer waits to polling.
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
