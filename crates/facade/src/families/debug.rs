//! Adapter for `agent-tools-debug`: the `debug` tool (tier exec) over a `DebugSupervisor`, whose
//! sessions (one per conversation) are a run resource ended when the run ends.

use std::{path::Path, sync::Arc};

use agent_tools_debug::{
    DebugArgs, DebugError, DebugOutcome, DebugSupervisor, adapter_reports, family, render,
};
use async_trait::async_trait;

use crate::{
    AttachFamily, Attachment, CallContext, FamilyDescriptor, RunResource, ToolResult, ToolSpec,
    TypedTool,
};

/// The debug family: `debug` over a supervisor, whose sessions end when the run ends.
pub struct DebugFamily {
    supervisor: Arc<DebugSupervisor>,
}

impl DebugFamily {
    pub fn new(supervisor: Arc<DebugSupervisor>) -> Self {
        DebugFamily { supervisor }
    }
}

impl AttachFamily for DebugFamily {
    fn descriptor(&self) -> &'static FamilyDescriptor {
        &family::FAMILY
    }

    fn attach(self: Box<Self>, to: &mut Attachment<'_>) {
        let tool = DebugTool {
            spec: ToolSpec::declared::<DebugArgs>(&family::DEBUG)
                .with_output_schema::<DebugOutcome>(),
            supervisor: self.supervisor.clone(),
        };
        to.tool(Arc::new(tool)).resource(self.supervisor);
    }
}

/// The table entry: in every run, its adapters started in the run's capsule.
pub(super) const ENTRY: super::BuiltFamily = super::BuiltFamily {
    descriptor: &family::FAMILY,
    for_run: |run| {
        let supervisor = DebugSupervisor::in_capsule(run.config.debug.clone(), run.capsule.clone());
        Some(Box::new(DebugFamily::new(supervisor)))
    },
    details: super::no_details,
};

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
        Some(family::FAMILY.name)
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
    use crate::{RunInfo, SurfaceKind, Tier};

    #[tokio::test]
    async fn debug_is_an_exec_tool_hidden_from_plan_surfaces() {
        let registry = crate::RegistryBuilder::new()
            .with_family(DebugFamily::new(DebugSupervisor::new(Default::default())))
            .build();
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
        let spec =
            ToolSpec::declared::<DebugArgs>(&family::DEBUG).with_output_schema::<DebugOutcome>();
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
