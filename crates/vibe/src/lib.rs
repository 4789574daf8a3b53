//! Background workers: the vibe_* tools over a worker roster.
#![doc = include_str!("../README.md")]

mod args;
mod backend;
mod buffer;
mod command;
mod config;
mod error;
pub mod family;
mod nesting;
mod render;
mod roster;

pub use crate::{
    args::{
        DEFAULT_WAIT_SECONDS, KillArgs, ListArgs, MAX_WAIT_SECONDS, SendArgs, SpawnArgs, WaitArgs,
    },
    backend::{
        ExitReport, StartRequest, StopReport, Stream, Tier, WorkerBackend, WorkerEvent,
        WorkerEvents, WorkerHandle, WorkerTier,
    },
    command::{
        CommandBackend, ENV_ATTEMPT, ENV_CEILING, ENV_LABEL, ENV_REVISION, ENV_TIER, ENV_WORKER_ID,
    },
    config::{CommandLine, TierCommands, VibeConfig},
    error::RosterError,
    nesting::{ENV_WORKER_DEPTH, ENV_WORKER_MAX_DEPTH, Nesting},
    render::{
        render_kill, render_list, render_result, render_send, render_spawn, render_wait, seconds,
    },
    roster::{
        Interrupted, KillReport, Roster, RosterSettings, RosterView, SendReport, SpawnReport,
        WaitReport, WorkerResult, WorkerState, WorkerView,
    },
};

/// Tool names and descriptions, as the model reads them.
pub mod tools {
    pub const SPAWN: &str = "vibe_spawn";
    pub const SEND: &str = "vibe_send";
    pub const WAIT: &str = "vibe_wait";
    pub const KILL: &str = "vibe_kill";
    pub const LIST: &str = "vibe_list";

    pub const SPAWN_DESCRIPTION: &str = "Start a background worker on a task; returns its id at \
once while it runs. Delegate self-contained work with a complete brief; keep the critical path \
and give parallel workers disjoint files. Over the slot limit it queues. Collect with vibe_wait; \
do not redo delegated work.";
    pub const SEND_DESCRIPTION: &str = "Send a worker more instructions. A running attempt is \
interrupted (the result says so); a finished worker starts a new attempt.";
    pub const WAIT_DESCRIPTION: &str = "Wait for a worker to finish and return its result (early if \
it stalls). At the timeout: its current state, not an error; it keeps running.";
    pub const KILL_DESCRIPTION: &str = "Stop a worker (gracefully, then forced) and free its slot; \
a finished worker is left as it is.";
    pub const LIST_DESCRIPTION: &str = "List the run's workers: id, label, tier, state, revision, \
elapsed, last activity and result, slots used.";
}
