//! The vibe family in the registry: the five `vibe_*` tools over an `agent_tools_vibe::Roster`,
//! registered only while vibe mode is on, with the roster as a run resource (every worker is
//! stopped when the run ends).

use std::{marker::PhantomData, path::Path, sync::Arc, time::Duration};

use agent_tools_support::capsule::WorkerLogin;
use agent_tools_vibe::{
    CommandBackend, CommandLine, DEFAULT_WAIT_SECONDS, KillArgs, ListArgs, MAX_WAIT_SECONDS,
    Nesting, Roster, RosterError, RosterSettings, SendArgs, SpawnArgs, WaitArgs, WorkerBackend,
    family,
};
use async_trait::async_trait;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{BuiltFamily, RunParts};
use crate::{
    AttachFamily, Attachment, CallContext, Config, Effects, FamilyDescriptor, RunResource, Tier,
    ToolResult, ToolSpec, TypedTool,
};

/// The vibe family over one roster: `vibe_spawn`, `vibe_send`, `vibe_wait`, `vibe_kill` and
/// `vibe_list` (all tier read: the gate belongs on the workers' own tools), with every worker
/// stopped when the run ends.
pub struct VibeFamily {
    roster: Roster,
}

impl VibeFamily {
    pub fn new(roster: Roster) -> Self {
        VibeFamily { roster }
    }
}

impl AttachFamily for VibeFamily {
    fn descriptor(&self) -> &'static FamilyDescriptor {
        &family::FAMILY
    }

    fn attach(self: Box<Self>, to: &mut Attachment<'_>) {
        // What a worker does is what its ceiling allows: read-only exactly on a read-only
        // surface (whose workers get the read-only command or are refused).
        let workers = Effects::of(Tier::Exec).delegating();
        let r = &self.roster;
        to.tool(VibeTool::<SpawnArgs>::new(
            ToolSpec::declared::<SpawnArgs>(&family::VIBE_SPAWN)
                .with_title("Start a background worker")
                .with_output_schema::<agent_tools_vibe::SpawnReport>()
                .with_effects(workers.idempotent(false)),
            r,
        ))
        .tool(VibeTool::<SendArgs>::new(
            ToolSpec::declared::<SendArgs>(&family::VIBE_SEND)
                .with_title("Brief a worker again")
                .with_output_schema::<agent_tools_vibe::SendReport>()
                .with_effects(workers.idempotent(false)),
            r,
        ))
        .tool(VibeTool::<WaitArgs>::new(
            ToolSpec::declared::<WaitArgs>(&family::VIBE_WAIT)
                .with_title("Wait for workers")
                .with_output_schema::<agent_tools_vibe::WaitReport>(),
            r,
        ))
        .tool(VibeTool::<KillArgs>::new(
            ToolSpec::declared::<KillArgs>(&family::VIBE_KILL)
                .with_title("Stop a worker")
                .with_output_schema::<agent_tools_vibe::KillReport>()
                .with_effects(workers.destructive(true)),
            r,
        ))
        .tool(VibeTool::<ListArgs>::new(
            ToolSpec::declared::<ListArgs>(&family::VIBE_LIST)
                .with_title("List workers")
                .with_output_schema::<agent_tools_vibe::RosterView>(),
            r,
        ))
        .resource(Arc::new(self.roster));
    }
}

/// Whether vibe mode is on for a run: `--vibe`, or `[vibe] enabled = true`.
fn vibe_mode(config: &Config, flag: bool) -> bool {
    flag || config.vibe.enabled
}

/// The table entry: attached while vibe mode is on, with the command backend in the run's
/// capsule.
pub(super) const ENTRY: BuiltFamily =
    BuiltFamily { descriptor: &family::FAMILY, for_run, details: status_details };

fn for_run(run: &RunParts<'_>) -> Option<Box<dyn AttachFamily>> {
    if !vibe_mode(run.config, run.attach.vibe) {
        return None;
    }
    let config = &run.config.vibe;
    let backend = CommandBackend::new(run.root, config.clone()).in_capsule(workers_in(
        run.root,
        run.config,
        run.capsule,
    ));
    // A worker's own agent-tools learns its depth among nested workers from its environment.
    let settings =
        RosterSettings { nesting: Nesting::from_env(config.max_depth), ..config.roster_settings() };
    Some(Box::new(VibeFamily::new(Roster::new(Arc::new(backend), settings))))
}

/// The capsule workers start in, beside the run's `capsule` (see [`crate::capsule::for_workers`]).
fn workers_in(
    root: &Path,
    config: &Config,
    capsule: &std::sync::Arc<dyn agent_tools_support::capsule::Capsule>,
) -> std::sync::Arc<dyn agent_tools_support::capsule::Capsule> {
    let programs = crate::capsule::configured_programs(root, config);
    let clis = worker_clis(&config.vibe);
    crate::capsule::for_workers(root, &config.capsule, &programs, &clis, capsule)
}

/// The workers' capsule of a run that has not made its own (for `status`).
fn workers(
    root: &Path,
    config: &Config,
) -> std::sync::Arc<dyn agent_tools_support::capsule::Capsule> {
    let programs = crate::capsule::configured_programs(root, config);
    workers_in(root, config, &crate::capsule::make_or_refuse(root, &config.capsule, &programs))
}

/// The agent CLIs the configured worker commands name (their logins are shown to workers).
fn worker_clis(vibe: &agent_tools_vibe::VibeConfig) -> Vec<&'static WorkerLogin> {
    let commands = [&vibe.fast, &vibe.good]
        .into_iter()
        .flat_map(|tier| [&tier.command, &tier.read_only_command])
        .flatten();
    let words: Vec<String> = commands
        .flat_map(|command| match command {
            CommandLine::Shell(line) => line.split_whitespace().map(str::to_string).collect(),
            CommandLine::Argv(argv) => argv.clone(),
        })
        .collect();
    WorkerLogin::in_command(words.iter().map(String::as_str))
}

/// One vibe tool: its arguments' type says what it does to the roster.
struct VibeTool<A> {
    spec: ToolSpec,
    roster: Roster,
    args: PhantomData<fn() -> A>,
}

impl<A: RosterCall> VibeTool<A> {
    fn new(spec: ToolSpec, roster: &Roster) -> Arc<Self> {
        Arc::new(VibeTool { spec, roster: roster.clone(), args: PhantomData })
    }
}

/// What a vibe tool's arguments do to the roster; the caller's tier is a worker's ceiling.
#[async_trait]
trait RosterCall: DeserializeOwned + Send + 'static {
    async fn apply(self, roster: &Roster, ctx: &CallContext) -> Result<ToolResult, RosterError>;
}

fn reply<T: serde::Serialize>(text: String, report: &T) -> ToolResult {
    ToolResult::text(text).with_structured(serde_json::to_value(report).unwrap_or(Value::Null))
}

#[async_trait]
impl RosterCall for SpawnArgs {
    async fn apply(self, roster: &Roster, ctx: &CallContext) -> Result<ToolResult, RosterError> {
        let caller: Tier = ctx.surface.ceiling;
        let report =
            roster.spawn(&self.brief, &self.label, self.tier.unwrap_or_default(), caller)?;
        Ok(reply(agent_tools_vibe::render_spawn(&report), &report))
    }
}

#[async_trait]
impl RosterCall for SendArgs {
    async fn apply(self, roster: &Roster, ctx: &CallContext) -> Result<ToolResult, RosterError> {
        let caller: Tier = ctx.surface.ceiling;
        let report = roster.send(&self.worker_id, &self.message, caller).await?;
        Ok(reply(agent_tools_vibe::render_send(&report), &report))
    }
}

#[async_trait]
impl RosterCall for WaitArgs {
    async fn apply(self, roster: &Roster, ctx: &CallContext) -> Result<ToolResult, RosterError> {
        let seconds =
            self.timeout_seconds.unwrap_or(DEFAULT_WAIT_SECONDS).clamp(1, MAX_WAIT_SECONDS);
        let report =
            roster.wait(&self.worker_id, Duration::from_secs(seconds), &ctx.cancel).await?;
        Ok(reply(agent_tools_vibe::render_wait(&report), &report))
    }
}

#[async_trait]
impl RosterCall for KillArgs {
    async fn apply(self, roster: &Roster, _ctx: &CallContext) -> Result<ToolResult, RosterError> {
        let report = roster.kill(&self.worker_id).await?;
        Ok(reply(agent_tools_vibe::render_kill(&report), &report))
    }
}

#[async_trait]
impl RosterCall for ListArgs {
    async fn apply(self, roster: &Roster, _ctx: &CallContext) -> Result<ToolResult, RosterError> {
        let view = roster.list();
        Ok(reply(agent_tools_vibe::render_list(&view), &view))
    }
}

#[async_trait]
impl<A: RosterCall> TypedTool for VibeTool<A> {
    type Args = A;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn run(&self, ctx: &CallContext, args: A) -> ToolResult {
        args.apply(&self.roster, ctx)
            .await
            .unwrap_or_else(|e| ToolResult::error(format!("{}: {e}", self.spec.name)))
    }
}

#[async_trait]
impl RunResource for Roster {
    async fn shutdown(&self) {
        Roster::shutdown(self).await;
    }

    fn family(&self) -> Option<&str> {
        Some(family::FAMILY.name)
    }

    /// The run's own backend (what it runs per tier) and limits: the roster is attached only
    /// in vibe mode.
    fn status(&self, _root: &Path) -> Vec<String> {
        let mut details = vec!["vibe mode is on for this run".to_string()];
        details.extend(self.describe_backend());
        details.push(limits_line(self.settings()));
        details
    }
}

/// One line of the roster's limits.
fn limits_line(s: &RosterSettings) -> String {
    let stall_limit = s.stall_limit.map_or_else(
        || "never stopped for silence".to_string(),
        |l| format!("stopped after {} s without output", l.as_secs()),
    );
    let depth = match s.nesting.refusal() {
        Some(_) => format!(
            "this agent is at worker depth {} of at most {}: it cannot start workers",
            s.nesting.depth, s.nesting.max_depth
        ),
        None => format!(
            "worker depth {} of at most {} ([vibe] max_depth)",
            s.nesting.depth, s.nesting.max_depth
        ),
    };
    format!(
        "{} slots; stalled after {} s without output, {stall_limit}; wall-clock budget {} s \
         per attempt and {} s for all the run's workers; kill grace {} s; results capped at {} \
         characters; {depth}",
        s.slots,
        s.stall_after.as_secs(),
        s.budget.as_secs(),
        s.run_budget.as_secs(),
        s.kill_grace.as_secs(),
        s.result_max_chars
    )
}

/// What `agent-tools status` says about vibe when the run has no roster: vibe mode is off.
fn status_details(root: &Path, config: &Config) -> Vec<String> {
    let vibe = &config.vibe;
    let mut details = vec![
        "vibe mode is off: the vibe_* tools appear with `--vibe` (agent-tools mcp/call) or \
         [vibe] enabled = true"
            .to_string(),
    ];
    details.extend(
        CommandBackend::new(root, vibe.clone()).in_capsule(workers(root, config)).describe(),
    );
    details.push(limits_line(&vibe.roster_settings()));
    details
}
