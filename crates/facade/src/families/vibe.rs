//! The vibe family in the registry: the five `vibe_*` tools over an `agent_tools_vibe::Roster`,
//! registered only while vibe mode is on, with the roster as a run resource (every worker is
//! stopped when the run ends).

use std::{path::Path, sync::Arc, time::Duration};

use agent_tools_vibe::{
    Ceiling, CommandBackend, DEFAULT_WAIT_SECONDS, KillArgs, ListArgs, MAX_WAIT_SECONDS, Roster,
    SendArgs, SpawnArgs, WaitArgs, WorkerBackend, tools,
};
use async_trait::async_trait;
use serde_json::Value;

use crate::{
    CallContext, Config, Effects, RegistryBuilder, RunResource, Tier, Tool, ToolResult, ToolSpec,
    parse_args,
};

impl RegistryBuilder {
    /// Registers `vibe_spawn`, `vibe_send`, `vibe_wait`, `vibe_kill` and `vibe_list` over
    /// `roster` (all tier read: the gate belongs on the workers' own tools), and stops every
    /// worker when the run ends.
    pub fn with_vibe(self, roster: Roster) -> Self {
        // What a worker does is what its ceiling allows: read-only exactly on a read-only
        // surface (whose workers get the read-only command or are refused).
        let workers = Effects::of(Tier::Exec).delegating();
        let specs = [
            (
                Op::Spawn,
                ToolSpec::new::<SpawnArgs>(tools::SPAWN, tools::SPAWN_DESCRIPTION, Tier::Read)
                    .with_title("Start a background worker")
                    .with_output_schema::<agent_tools_vibe::SpawnReport>()
                    .with_effects(workers.idempotent(false)),
            ),
            (
                Op::Send,
                ToolSpec::new::<SendArgs>(tools::SEND, tools::SEND_DESCRIPTION, Tier::Read)
                    .with_title("Brief a worker again")
                    .with_output_schema::<agent_tools_vibe::SendReport>()
                    .with_effects(workers.idempotent(false)),
            ),
            (
                Op::Wait,
                ToolSpec::new::<WaitArgs>(tools::WAIT, tools::WAIT_DESCRIPTION, Tier::Read)
                    .with_title("Wait for workers")
                    .with_output_schema::<agent_tools_vibe::WaitReport>(),
            ),
            (
                Op::Kill,
                ToolSpec::new::<KillArgs>(tools::KILL, tools::KILL_DESCRIPTION, Tier::Read)
                    .with_title("Stop a worker")
                    .with_output_schema::<agent_tools_vibe::KillReport>()
                    .with_effects(workers.destructive(true)),
            ),
            (
                Op::List,
                ToolSpec::new::<ListArgs>(tools::LIST, tools::LIST_DESCRIPTION, Tier::Read)
                    .with_title("List workers")
                    .with_output_schema::<agent_tools_vibe::RosterView>(),
            ),
        ];
        let builder = specs.into_iter().fold(self, |builder, (op, spec)| {
            builder.with_tool("vibe", Arc::new(VibeTool { op, spec, roster: roster.clone() }))
        });
        builder.with_resource(Arc::new(RosterResource(roster)))
    }
}

/// Whether vibe mode is on for a run: `--vibe`, or `[vibe] enabled = true`.
pub(crate) fn vibe_mode(config: &Config, flag: bool) -> bool {
    flag || config.vibe.enabled
}

/// The host's attach step: the vibe tools with the command backend, while vibe mode is on.
pub(crate) fn attach(
    builder: RegistryBuilder,
    root: &Path,
    config: &Config,
    flag: bool,
    capsule: &std::sync::Arc<dyn agent_tools_support::capsule::Capsule>,
) -> RegistryBuilder {
    if !vibe_mode(config, flag) {
        return builder;
    }
    let backend = CommandBackend::new(root, config.vibe.clone()).in_capsule(capsule.clone());
    builder.with_vibe(Roster::new(Arc::new(backend), config.vibe.roster_settings()))
}

#[derive(Debug, Clone, Copy)]
enum Op {
    Spawn,
    Send,
    Wait,
    Kill,
    List,
}

struct VibeTool {
    op: Op,
    spec: ToolSpec,
    roster: Roster,
}

fn reply<T: serde::Serialize>(text: String, report: &T) -> ToolResult {
    ToolResult::text(text).with_structured(serde_json::to_value(report).unwrap_or(Value::Null))
}

#[async_trait]
impl Tool for VibeTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, ctx: &CallContext, args: Value) -> ToolResult {
        let name = self.spec.name.as_str();
        // A worker's ceiling is the same tier type as the surface's.
        let caller: Ceiling = ctx.surface.ceiling;
        let outcome = match self.op {
            Op::Spawn => match parse_args::<SpawnArgs>(name, args) {
                Ok(a) => self
                    .roster
                    .spawn(&a.brief, &a.label, a.tier.unwrap_or_default(), caller)
                    .map(|r| reply(agent_tools_vibe::render_spawn(&r), &r)),
                Err(e) => return e,
            },
            Op::Send => match parse_args::<SendArgs>(name, args) {
                Ok(a) => self
                    .roster
                    .send(&a.worker_id, &a.message, caller)
                    .await
                    .map(|r| reply(agent_tools_vibe::render_send(&r), &r)),
                Err(e) => return e,
            },
            Op::Wait => match parse_args::<WaitArgs>(name, args) {
                Ok(a) => {
                    let seconds = a
                        .timeout_seconds
                        .unwrap_or(DEFAULT_WAIT_SECONDS)
                        .clamp(1, MAX_WAIT_SECONDS);
                    self.roster
                        .wait(&a.worker_id, Duration::from_secs(seconds), &ctx.cancel)
                        .await
                        .map(|r| reply(agent_tools_vibe::render_wait(&r), &r))
                }
                Err(e) => return e,
            },
            Op::Kill => match parse_args::<KillArgs>(name, args) {
                Ok(a) => self
                    .roster
                    .kill(&a.worker_id)
                    .await
                    .map(|r| reply(agent_tools_vibe::render_kill(&r), &r)),
                Err(e) => return e,
            },
            Op::List => {
                let view = self.roster.list();
                Ok(reply(agent_tools_vibe::render_list(&view), &view))
            }
        };
        outcome.unwrap_or_else(|e| ToolResult::error(format!("{name}: {e}")))
    }
}

struct RosterResource(Roster);

#[async_trait]
impl RunResource for RosterResource {
    async fn shutdown(&self) {
        self.0.shutdown().await;
    }
}

/// What `agent-tools status` says about vibe here: the mode, the commands, the limits.
pub(crate) fn status_details(root: &Path, config: &Config) -> Vec<String> {
    let vibe = &config.vibe;
    let mut details = vec![if vibe.enabled {
        "vibe mode is on ([vibe] enabled = true)".to_string()
    } else {
        "vibe mode is off: the vibe_* tools appear with `--vibe` (agent-tools mcp/call) or \
         [vibe] enabled = true"
            .to_string()
    }];
    details.extend(CommandBackend::new(root, vibe.clone()).describe());
    details.push(format!(
        "{} slots; stalled after {} s without output; wall-clock budget {} s per attempt; kill \
         grace {} s; results capped at {} characters",
        vibe.slots,
        vibe.stall_seconds,
        vibe.budget_seconds,
        vibe.kill_grace_seconds,
        vibe.result_max_chars
    ));
    details
}
