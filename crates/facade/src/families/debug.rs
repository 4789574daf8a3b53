//! Adapter for `agent-tools-debug`: the `debug` tool (tier exec) over a `DebugSupervisor`, whose
//! sessions (one per conversation) are a run resource ended when the run ends.

use std::{path::Path, sync::Arc};

use agent_tools_debug::{
    DebugArgs, DebugError, DebugOutcome, DebugSupervisor, TOOL_DESCRIPTION, TOOL_NAME,
    adapter_reports, render,
};
use async_trait::async_trait;

use crate::{CallContext, RegistryBuilder, RunResource, Tier, ToolResult, ToolSpec, TypedTool};

impl RegistryBuilder {
    /// Registers `debug` over `supervisor`; its sessions end when the run ends.
    pub fn with_debug(self, supervisor: Arc<DebugSupervisor>) -> Self {
        let tool = DebugTool {
            spec: ToolSpec::new::<DebugArgs>(TOOL_NAME, TOOL_DESCRIPTION, Tier::Exec)
                .with_output_schema::<DebugOutcome>(),
            supervisor: supervisor.clone(),
        };
        self.with_tool("debug", Arc::new(tool)).with_resource(supervisor)
    }
}

struct DebugTool {
    spec: ToolSpec,
    supervisor: Arc<DebugSupervisor>,
}

#[async_trait]
impl TypedTool for DebugTool {
    type Args = DebugArgs;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn run(&self, ctx: &CallContext, args: DebugArgs) -> ToolResult {
        let op = args.operation.as_str();
        match self.supervisor.call_in(&ctx.conversation_id, &ctx.root, args, &ctx.scope()).await {
            // The text and the structured content are the same outcome (D8).
            Ok(outcome) => match serde_json::to_value(&outcome) {
                Ok(structured) => ToolResult::text(render(&outcome)).with_structured(structured),
                Err(_) => ToolResult::text(render(&outcome)),
            },
            Err(DebugError::Unavailable(unavailable)) => unavailable.into(),
            Err(e) => ToolResult::error(format!("debug {op}: {e}")),
        }
    }
}

#[async_trait]
impl RunResource for DebugSupervisor {
    async fn shutdown(&self) {
        DebugSupervisor::shutdown(self).await;
    }

    fn family(&self) -> Option<&str> {
        Some("debug")
    }

    /// Each adapter, usable or not and why.
    fn status(&self, root: &Path) -> Vec<String> {
        status_lines(root, self.config())
    }
}

/// `agent-tools status` lines of a debug setup: each adapter, usable or not and why.
fn status_lines(root: &Path, c: &agent_tools_debug::DebugConfig) -> Vec<String> {
    let mut lines = vec![format!(
        "one session per conversation; time limit {}, waits for a stop up to {} s",
        agent_tools_debug::human_seconds(c.ttl_seconds),
        c.stop_wait_seconds
    )];
    for report in adapter_reports(root, c) {
        let mut line = format!(
            "{}: {}",
            report.adapter.id(),
            if report.usable { "usable" } else { "not usable" }
        );
        if let Some(command) = &report.command {
            line.push_str(&format!(" ({}", command.join(" ")));
            if let Some(version) = &report.version {
                line.push_str(&format!(", {version}"));
            }
            line.push(')');
        }
        if let Some(marker) = &report.marker {
            line.push_str(&format!("; marker {marker}"));
        }
        if !report.problems.is_empty() {
            line.push_str(&format!("; {}", report.problems.join("; ")));
        }
        if report.command.is_none() {
            line.push_str(&format!("; {}", report.install));
        }
        lines.push(line);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{RunInfo, SurfaceKind};

    #[tokio::test]
    async fn debug_is_an_exec_tool_hidden_from_plan_surfaces() {
        let registry =
            RegistryBuilder::new().with_debug(DebugSupervisor::new(Default::default())).build();
        let build = registry.surface(SurfaceKind::Build);
        assert_eq!(build.get("debug").map(|t| t.spec().tier), Some(Tier::Exec));
        assert!(registry.surface(SurfaceKind::Plan).get("debug").is_none());
        let schema = &build.get("debug").unwrap().spec().input_schema;
        assert_eq!(schema["required"], serde_json::json!(["operation"]));
        let run = RunInfo::new(std::env::temp_dir());
        let ctx = build.context(&run, None);
        let status = build.call(&ctx, "debug", serde_json::json!({"operation": "status"})).await;
        assert!(!status.is_error, "{}", status.text);
        assert!(status.text.contains("No debug session"), "{}", status.text);
        let bad = build.call(&ctx, "debug", serde_json::json!({"operation": "stack"})).await;
        assert!(bad.is_error);
        assert!(bad.text.starts_with("debug stack: no debug session"), "{}", bad.text);
        registry.shutdown().await;
    }

    #[test]
    fn the_debug_schema_fits_its_token_budget_and_declares_its_output() {
        let spec = ToolSpec::new::<DebugArgs>(TOOL_NAME, TOOL_DESCRIPTION, Tier::Exec)
            .with_output_schema::<DebugOutcome>();
        let listed = serde_json::json!({
            "name": spec.name,
            "description": spec.description,
            "inputSchema": spec.input_schema,
        });
        let tokens = listed.to_string().chars().count() / 4;
        assert!(tokens <= 700, "debug costs {tokens} tokens (chars/4); the budget is 700");
        let text = listed.to_string();
        assert!(!text.contains("null") && !text.contains("format"), "{text}");
        assert_eq!(spec.output_schema.unwrap()["type"], "object");
        insta::assert_json_snapshot!("debug_tool_listing", listed);
    }
}
