//! The MCP server: one stdio connection is one run, served through one surface.

use std::sync::Arc;

use base64::Engine;
use rmcp::{
    ErrorData as McpError, RoleServer, ServerHandler, ServiceExt,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
        ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool as McpTool,
        ToolAnnotations,
    },
    service::RequestContext,
};

use super::HostRun;
use crate::{RunInfo, Surface, Tier, ToolResult};

#[derive(Clone)]
struct McpHost {
    surface: Surface,
    run: RunInfo,
}

fn to_mcp_tool(spec: &crate::ToolSpec) -> McpTool {
    let schema = match &spec.input_schema {
        serde_json::Value::Object(map) => map.clone(),
        _ => Default::default(),
    };
    let annotations = ToolAnnotations::new().read_only(spec.tier == Tier::Read);
    McpTool::new(spec.name.clone(), spec.description.clone(), Arc::new(schema))
        .with_annotations(annotations)
}

fn to_mcp_result(result: ToolResult) -> CallToolResult {
    let mut content = vec![ContentBlock::text(result.text)];
    for image in result.images {
        let data = base64::engine::general_purpose::STANDARD.encode(&image.data);
        content.push(ContentBlock::image(data, image.mime_type));
    }
    let mut out = if result.is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    };
    out.structured_content = result.structured;
    out
}

impl ServerHandler for McpHost {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("agent-tools", env!("CARGO_PKG_VERSION")))
            .with_instructions(format!(
                "Built-in agent tools for the workspace {} (surface: {}, up to {}-tier tools).",
                self.run.root.display(),
                self.surface.info().kind,
                self.surface.info().ceiling
            ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(
            self.surface.specs().into_iter().map(to_mcp_tool).collect(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let args = serde_json::Value::Object(request.arguments.unwrap_or_default());
        let ctx = self.surface.context(&self.run, None);
        let cancel = ctx.cancel.clone();
        let call = self.surface.call(&ctx, &request.name, args);
        let result = tokio::select! {
            result = call => result,
            () = context.ct.cancelled() => {
                cancel.cancel();
                ToolResult::error(format!("{}: cancelled by the client", request.name))
            }
        };
        Ok(to_mcp_result(result).into())
    }
}

/// Serves `run` over stdin/stdout until the client disconnects, then ends the run:
/// every resource is shut down and no child process is left behind.
pub async fn serve_stdio(run: HostRun) -> anyhow::Result<()> {
    let host = McpHost { surface: run.surface(), run: run.info.clone() };
    let served = host.serve(rmcp::transport::stdio()).await;
    let outcome = match served {
        Ok(service) => service.waiting().await.map(|_| ()).map_err(anyhow::Error::from),
        Err(e) => Err(anyhow::anyhow!("MCP initialisation failed: {e}")),
    };
    run.info.cancel.cancel();
    run.registry.shutdown().await;
    tracing::info!(run = %run.info.run_id, "run ended");
    outcome
}
