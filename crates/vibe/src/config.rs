//! The `[vibe]` section of `agent-tools.toml`: vibe mode, slots, timers and the worker commands.
//!
//! ```toml
//! [vibe]
//! enabled = true            # or `--vibe` on the command line
//! slots = 4
//! stall_seconds = 120       # no output for this long: `stalled` (reported, not stopped)
//! stall_limit_seconds = 3600  # optional: no output for this long stops it (`timed out`)
//! budget_seconds = 1800     # wall clock per attempt: then `timed out`
//! run_budget_seconds = 14400  # wall clock of all the run's workers together
//! max_depth = 1             # 1: workers cannot start workers of their own
//! kill_grace_seconds = 5    # SIGTERM, then SIGKILL after this long
//! result_max_chars = 20000
//!
//! [vibe.fast]
//! command = ["my-agent", "exec", "--model", "small", "-"]     # briefing on stdin
//! read_only_command = ["my-agent", "exec", "--read-only", "-"]
//!
//! [vibe.good]
//! command = "my-agent exec --model large -"                    # a string runs through `sh -c`
//! ```

use std::time::Duration;

use serde::{Deserialize, Deserializer};

use crate::backend::WorkerTier;

/// `[vibe]`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct VibeConfig {
    /// Vibe mode: the five `vibe_*` tools are registered only while it is on.
    pub enabled: bool,
    /// Workers that may run at once; more are queued (default 4).
    #[serde(deserialize_with = "at_least_one")]
    pub slots: usize,
    /// Seconds without output after which a running worker counts as stalled (default 120).
    #[serde(deserialize_with = "positive_seconds")]
    pub stall_seconds: f64,
    /// Seconds without output after which a stalled worker is stopped as timed out; unset
    /// (the default): a stalled worker is only reported, and the attempt budget is the limit.
    #[serde(deserialize_with = "optional_positive_seconds")]
    pub stall_limit_seconds: Option<f64>,
    /// Wall-clock seconds one attempt may run before it is stopped as timed out (default 1800).
    #[serde(deserialize_with = "positive_seconds")]
    pub budget_seconds: f64,
    /// Wall-clock seconds all the run's workers may run together (default 14400, 4 h): then
    /// running workers are stopped as timed out and no worker starts any more.
    #[serde(deserialize_with = "positive_seconds")]
    pub run_budget_seconds: f64,
    /// How deep workers may nest across hosts (default 1: the top agent's workers cannot start
    /// workers of their own; 0: no workers). A worker's own `agent-tools` learns its depth
    /// from `AGENT_TOOLS_WORKER_DEPTH`, and the lower of its own limit and this one holds.
    pub max_depth: u32,
    /// Seconds between the graceful stop (SIGTERM) and the forced one (SIGKILL) (default 5).
    #[serde(deserialize_with = "positive_seconds")]
    pub kill_grace_seconds: f64,
    /// Characters of a worker's final output kept as its result (default 20000).
    #[serde(deserialize_with = "at_least_one")]
    pub result_max_chars: usize,
    /// `[vibe.fast]`: the command for fast workers.
    pub fast: TierCommands,
    /// `[vibe.good]`: the command for good workers.
    pub good: TierCommands,
}

impl Default for VibeConfig {
    fn default() -> Self {
        VibeConfig {
            enabled: false,
            slots: 4,
            stall_seconds: 120.0,
            stall_limit_seconds: None,
            budget_seconds: 1800.0,
            run_budget_seconds: 4.0 * 3600.0,
            max_depth: 1,
            kill_grace_seconds: 5.0,
            result_max_chars: 20_000,
            fast: TierCommands::default(),
            good: TierCommands::default(),
        }
    }
}

impl VibeConfig {
    pub fn tier(&self, tier: WorkerTier) -> &TierCommands {
        match tier {
            WorkerTier::Fast => &self.fast,
            WorkerTier::Good => &self.good,
        }
    }

    /// The roster's settings from this section, for an agent no worker started.
    pub fn roster_settings(&self) -> crate::RosterSettings {
        crate::RosterSettings {
            slots: self.slots,
            stall_after: Duration::from_secs_f64(self.stall_seconds),
            stall_limit: self.stall_limit_seconds.map(Duration::from_secs_f64),
            budget: Duration::from_secs_f64(self.budget_seconds),
            run_budget: Duration::from_secs_f64(self.run_budget_seconds),
            nesting: crate::Nesting::top(self.max_depth),
            kill_grace: Duration::from_secs_f64(self.kill_grace_seconds),
            result_max_chars: self.result_max_chars,
        }
    }
}

/// The commands of one tier.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TierCommands {
    /// The worker command: gets the briefing on stdin, runs in the run's root.
    pub command: Option<CommandLine>,
    /// The command used when the caller's surface is read-only (plan mode): it must not be able
    /// to change files or run commands. Without it, spawning from a read-only surface is refused.
    pub read_only_command: Option<CommandLine>,
}

/// A command: a string runs through `sh -c`; a list is the program and its arguments.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum CommandLine {
    Shell(String),
    Argv(Vec<String>),
}

impl CommandLine {
    /// The program and its arguments, or why there is none.
    pub fn argv(&self) -> Result<(String, Vec<String>), String> {
        match self {
            CommandLine::Shell(line) if line.trim().is_empty() => {
                Err("the command is empty".into())
            }
            CommandLine::Shell(line) => Ok(("sh".into(), vec!["-c".into(), line.clone()])),
            CommandLine::Argv(argv) => match argv.split_first() {
                Some((program, args)) if !program.trim().is_empty() => {
                    Ok((program.clone(), args.to_vec()))
                }
                _ => Err("the command list is empty".into()),
            },
        }
    }

    /// How the command is shown in messages.
    pub fn display(&self) -> String {
        match self {
            CommandLine::Shell(line) => line.clone(),
            CommandLine::Argv(argv) => argv.join(" "),
        }
    }
}

fn positive_seconds<'de, D: Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
    let value = f64::deserialize(deserializer)?;
    if !(value.is_finite() && value > 0.0 && value < 1.0e9) {
        return Err(serde::de::Error::custom(format!(
            "{value} is not a usable number of seconds; give a positive number"
        )));
    }
    Ok(value)
}

fn optional_positive_seconds<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<f64>, D::Error> {
    positive_seconds(deserializer).map(Some)
}

fn at_least_one<'de, D: Deserializer<'de>>(deserializer: D) -> Result<usize, D::Error> {
    let value = usize::deserialize(deserializer)?;
    if value == 0 {
        return Err(serde::de::Error::custom("must be at least 1"));
    }
    Ok(value)
}
