//! The tool list as MCP sees it: specs with their annotations and output schemas, results with
//! structured content only where a schema promises it (D8), and the list's token budget.

use std::sync::Arc;

use base64::Engine;
use rmcp::model::{CallToolResult, ContentBlock, Tool as McpTool, ToolAnnotations};

use crate::{Tier, ToolResult, ToolSpec};

fn object(value: &serde_json::Value) -> serde_json::Map<String, serde_json::Value> {
    match value {
        serde_json::Value::Object(map) => map.clone(),
        _ => Default::default(),
    }
}

/// `spec` as listed on a surface whose ceiling is `ceiling`.
pub(super) fn to_mcp_tool(spec: &ToolSpec, ceiling: Tier) -> McpTool {
    let hints = spec.annotations(ceiling);
    let annotations = ToolAnnotations::with_title(hints.title.clone())
        .read_only(hints.read_only)
        .destructive(hints.destructive)
        .idempotent(hints.idempotent)
        .open_world(hints.open_world);
    let mut tool = McpTool::new(
        spec.name.clone(),
        spec.description.clone(),
        Arc::new(object(&spec.input_schema)),
    )
    .with_title(hints.title)
    .with_annotations(annotations);
    if let Some(output) = &spec.output_schema {
        tool = tool.with_raw_output_schema(Arc::new(object(output)));
    }
    tool
}

/// A result for the client. The text block is always complete; `structuredContent` is the
/// same payload as data when the tool declares an output schema and the call succeeded, and
/// absent otherwise (an error or an unavailable resource is text only, since it would not match
/// the schema and clients that read only structured content must still see it).
pub(super) fn to_mcp_result(result: ToolResult, spec: Option<&ToolSpec>) -> CallToolResult {
    let declares = spec.is_some_and(|s| s.output_schema.is_some());
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
    if declares && !result.is_error {
        if result.structured.is_none()
            && let Some(spec) = spec
        {
            tracing::warn!(tool = %spec.name, "declares an output schema but returned no payload");
        }
        out.structured_content = result.structured;
    }
    out
}

/// What a tool costs in the model's context on every request: name, description and input
/// schema, in characters.
pub fn listed_chars(spec: &ToolSpec) -> usize {
    spec.name.chars().count()
        + spec.description.chars().count()
        + spec.input_schema.to_string().chars().count()
}

/// The usual estimate of tokens: characters / 4.
pub fn listed_tokens<'a>(specs: impl IntoIterator<Item = &'a ToolSpec>) -> usize {
    specs.into_iter().map(listed_chars).sum::<usize>() / 4
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use serde_json::json;

    use super::{listed_tokens, to_mcp_result, to_mcp_tool};
    use crate::{
        Config, SurfaceKind, Tier, ToolResult, ToolSpec,
        host::{Attach, assemble},
    };

    /// The build surface's budget: every tool's name, description and schema together.
    const BUILD_BUDGET_TOKENS: usize = 3_000;
    /// The debug tool's own budget.
    const DEBUG_BUDGET_TOKENS: usize = 700;

    fn registry(vibe: bool) -> crate::Registry {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        assemble(root, &Config::default(), &Attach::default().with_vibe(vibe))
    }

    #[test]
    fn the_build_surface_fits_its_token_budget_with_and_without_vibe_mode() {
        check_budget(false);
        check_budget(true);
    }

    fn check_budget(vibe: bool) {
        let registry = registry(vibe);
        let surface = registry.surface(SurfaceKind::Build);
        let specs = surface.specs();
        let per_tool: Vec<String> =
            specs.iter().map(|s| format!("{} {}", s.name, listed_tokens([*s]))).collect();
        let total = listed_tokens(specs.iter().copied());
        assert!(
            total <= BUILD_BUDGET_TOKENS,
            "the build surface (vibe mode {vibe}) lists {total} tokens (budget \
             {BUILD_BUDGET_TOKENS}): {}",
            per_tool.join(", ")
        );
        if let Some(debug) = surface.get("debug") {
            let debug = listed_tokens([debug.spec()]);
            assert!(debug <= DEBUG_BUDGET_TOKENS, "debug lists {debug} tokens");
        }
    }

    #[test]
    fn listed_schemas_use_standard_json_schema_only() {
        let registry = registry(true);
        for spec in registry.surface(SurfaceKind::Build).specs() {
            let schema = spec.input_schema.to_string();
            for banned in ["\"uint", "\"int32\"", "\"int64\"", "\"null\"", "Arguments of"] {
                assert!(!schema.contains(banned), "{}: {banned} in {schema}", spec.name);
            }
            assert!(
                spec.input_schema.get("description").is_none(),
                "{}: root description",
                spec.name
            );
        }
    }

    #[test]
    fn every_tool_has_a_title_and_all_four_hints() {
        let registry = registry(true);
        for kind in [SurfaceKind::Build, SurfaceKind::Plan] {
            for spec in registry.surface(kind).specs() {
                let tool = to_mcp_tool(spec, kind.ceiling());
                let hints = tool.annotations.expect("annotations");
                assert!(hints.title.is_some_and(|t| !t.is_empty()), "{}", spec.name);
                assert!(
                    hints.read_only_hint.is_some()
                        && hints.destructive_hint.is_some()
                        && hints.idempotent_hint.is_some()
                        && hints.open_world_hint.is_some(),
                    "{}",
                    spec.name
                );
            }
        }
    }

    #[test]
    fn workers_are_read_only_only_where_their_ceiling_is() {
        let registry = registry(true);
        let read_only = |kind: SurfaceKind, name: &str| {
            let surface = registry.surface(kind);
            let spec = surface.get(name).expect(name).spec().clone();
            to_mcp_tool(&spec, kind.ceiling()).annotations.unwrap().read_only_hint.unwrap()
        };
        for name in ["vibe_spawn", "vibe_send"] {
            assert!(!read_only(SurfaceKind::Build, name), "{name} on build");
            assert!(read_only(SurfaceKind::Plan, name), "{name} on plan");
        }
        assert!(read_only(SurfaceKind::Build, "read"));
        assert!(!read_only(SurfaceKind::Build, "write"));
    }

    #[test]
    fn structured_content_only_where_a_schema_promises_it() {
        let declared = ToolSpec::new::<serde_json::Value>("t", "d", Tier::Read)
            .with_output_schema::<serde_json::Value>();
        let plain = ToolSpec::new::<serde_json::Value>("t", "d", Tier::Read);
        let ok = ToolResult::text("the text").with_structured(json!({"x": 1}));
        assert_eq!(
            to_mcp_result(ok.clone(), Some(&declared)).structured_content,
            Some(json!({"x": 1}))
        );
        assert_eq!(to_mcp_result(ok, Some(&plain)).structured_content, None);
        let failed = ToolResult::error("no").with_structured(json!({"resource": "x"}));
        assert_eq!(to_mcp_result(failed, Some(&declared)).structured_content, None);
    }
}
