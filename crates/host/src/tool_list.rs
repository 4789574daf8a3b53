//! The tool list as MCP sees it: specs with their annotations and output schemas, results with
//! structured content only where a schema promises it (D8), and the list's token budget.

use std::sync::Arc;

use base64::Engine;
use rmcp::model::{CallToolResult, ContentBlock, Tool as McpTool, ToolAnnotations};

use agent_tools::{Tier, ToolResult, ToolSpec};

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

/// What a client passes to its model of a result, where that changes what the host sends.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct ClientView {
    /// The client gives the model only `structuredContent` when a result has it, images
    /// included (Codex: a result with structured content reaches the model without its image
    /// blocks). Claude Code passes the structured content and the images, and the SDKs
    /// require structured content where a tool declares an output schema.
    drops_images_beside_structured: bool,
}

impl ClientView {
    /// The view of the client that names itself `name` in its `clientInfo`.
    pub(super) fn of(name: &str) -> ClientView {
        ClientView { drops_images_beside_structured: name.to_ascii_lowercase().contains("codex") }
    }
}

/// A result for the client. The text block is always complete; `structuredContent` is the
/// same payload as data when the tool declares an output schema and the call succeeded, and
/// absent otherwise (an error or an unavailable resource is text only, since it would not match
/// the schema and clients that read only structured content must still see it). A result with
/// images goes to a client that would drop them beside structured content (`view`) as text and
/// images only, so its model sees the figure.
pub(super) fn to_mcp_result(
    result: ToolResult,
    spec: Option<&ToolSpec>,
    view: ClientView,
) -> CallToolResult {
    let declares = spec.is_some_and(|s| s.output_schema.is_some());
    let images_would_be_lost = view.drops_images_beside_structured && !result.images.is_empty();
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
    if declares && !result.is_error && !images_would_be_lost {
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

    use super::{ClientView, listed_tokens, to_mcp_result, to_mcp_tool};
    use agent_tools::{
        Config, SurfaceKind, Tier, ToolResult, ToolSpec,
        run::{Attach, assemble},
    };

    /// The budget of a tool list: every tool's name, description and schema together, on the
    /// largest list a client gets by default (build surface, elicitation declared, so with
    /// `ask_user`).
    const BUILD_BUDGET_TOKENS: usize = 3_000;
    /// The budget in vibe mode (`--vibe`, opted into), which adds the five `vibe_*` tools.
    const VIBE_BUDGET_TOKENS: usize = 3_400;
    /// The debug tool's own budget.
    const DEBUG_BUDGET_TOKENS: usize = 700;

    fn registry(vibe: bool) -> agent_tools::Registry {
        registry_for(vibe, false)
    }

    /// The registry a client gets: `elicitation` when it declared form elicitation (Claude
    /// Code, the SDKs with an elicitation callback), which attaches a question port and so
    /// `ask_user`.
    fn registry_for(vibe: bool, elicitation: bool) -> agent_tools::Registry {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let attach = Attach::default().with_vibe(vibe);
        #[cfg(feature = "ask")]
        let attach = if elicitation {
            attach.with_questions(
                std::sync::Arc::new(agent_tools_ask::NoOperatorPort::new("a test")),
                agent_tools_ask::Target::new("the operator of a test client"),
            )
        } else {
            attach
        };
        let _ = elicitation;
        assemble(root, &Config::default(), &attach)
    }

    #[test]
    #[allow(clippy::print_stdout)] // the figures, for BENCHMARKS.md
    fn every_list_a_client_gets_fits_the_budget() {
        let mut figures = Vec::new();
        for elicitation in [false, true] {
            for vibe in [false, true] {
                let registry = registry_for(vibe, elicitation);
                for kind in [SurfaceKind::Build, SurfaceKind::Plan] {
                    let surface = registry.surface(kind);
                    let specs = surface.specs();
                    let total = listed_tokens(specs.iter().copied());
                    let per_tool: Vec<String> = specs
                        .iter()
                        .map(|s| format!("{} {}", s.name, listed_tokens([*s])))
                        .collect();
                    figures.push(format!(
                        "{} elicitation={elicitation} vibe={vibe}: {} tools, {total} tokens ({})",
                        kind.as_str(),
                        specs.len(),
                        per_tool.join(", ")
                    ));
                    let budget = if vibe { VIBE_BUDGET_TOKENS } else { BUILD_BUDGET_TOKENS };
                    assert!(
                        total <= budget,
                        "{} surface, elicitation {elicitation}, vibe mode {vibe}: {total} tokens \
                         (budget {budget}): {}",
                        kind.as_str(),
                        per_tool.join(", ")
                    );
                    if let Some(debug) = surface.get("debug") {
                        let debug = listed_tokens([debug.spec()]);
                        assert!(debug <= DEBUG_BUDGET_TOKENS, "debug lists {debug} tokens");
                    }
                }
            }
        }
        // `cargo test -p agent-tools-host every_list -- --nocapture` prints the figures for
        // BENCHMARKS.md.
        println!("{}", figures.join("\n"));
        #[cfg(feature = "ask")]
        {
            let asks = registry_for(false, true);
            assert!(
                asks.surface(SurfaceKind::Build).get("ask_user").is_some(),
                "the budget is measured with ask_user, as a client with elicitation gets it"
            );
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

    /// Where `schema` has `true` as a subschema, by path.
    fn bare_true_subschemas(schema: &serde_json::Value, at: &str, found: &mut Vec<String>) {
        let serde_json::Value::Object(map) = schema else { return };
        fn child(key: String, value: &serde_json::Value, found: &mut Vec<String>) {
            if *value == serde_json::Value::Bool(true) {
                found.push(key);
            } else {
                bare_true_subschemas(value, &key, found);
            }
        }
        for (key, value) in map {
            let here = format!("{at}/{key}");
            match (key.as_str(), value) {
                ("enum" | "const" | "default" | "examples" | "required", _) => {}
                (
                    "properties" | "patternProperties" | "$defs" | "definitions",
                    serde_json::Value::Object(children),
                ) => {
                    for (name, value) in children {
                        child(format!("{here}/{name}"), value, found);
                    }
                }
                (
                    "anyOf" | "oneOf" | "allOf" | "prefixItems",
                    serde_json::Value::Array(children),
                ) => {
                    for (i, value) in children.iter().enumerate() {
                        child(format!("{here}/{i}"), value, found);
                    }
                }
                ("items" | "contains" | "not" | "if" | "then" | "else", value) => {
                    child(here, value, found)
                }
                (_, value) => bare_true_subschemas(value, &here, found),
            }
        }
    }

    #[test]
    fn no_listed_schema_has_a_bare_true_subschema() {
        let registry = registry(true);
        let mut found = Vec::new();
        for spec in registry.surface(SurfaceKind::Build).specs() {
            let tool = to_mcp_tool(spec, Tier::Exec);
            let listed = serde_json::to_value(&tool).expect("a listed tool is JSON");
            bare_true_subschemas(
                &listed["inputSchema"],
                &format!("{} input", spec.name),
                &mut found,
            );
            bare_true_subschemas(
                &listed["outputSchema"],
                &format!("{} output", spec.name),
                &mut found,
            );
        }
        assert!(found.is_empty(), "strict validators refuse these: {found:?}");
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
        let idempotent = |kind: SurfaceKind, name: &str| {
            let surface = registry.surface(kind);
            let spec = surface.get(name).expect(name).spec().clone();
            to_mcp_tool(&spec, kind.ceiling()).annotations.unwrap().idempotent_hint.unwrap()
        };
        for name in ["vibe_spawn", "vibe_send"] {
            assert!(!read_only(SurfaceKind::Build, name), "{name} on build");
            assert!(read_only(SurfaceKind::Plan, name), "{name} on plan");
            for kind in [SurfaceKind::Build, SurfaceKind::Plan] {
                assert!(!idempotent(kind, name), "{name} twice makes two workers ({kind:?})");
            }
        }
        assert!(idempotent(SurfaceKind::Plan, "read"));
        assert!(read_only(SurfaceKind::Build, "read"));
        assert!(!read_only(SurfaceKind::Build, "write"));
    }

    #[test]
    fn structured_content_only_where_a_schema_promises_it() {
        let declared = ToolSpec::new::<serde_json::Value>("t", "d", Tier::Read)
            .with_output_schema::<serde_json::Value>();
        let plain = ToolSpec::new::<serde_json::Value>("t", "d", Tier::Read);
        let ok = ToolResult::text("the text").with_structured(json!({"x": 1}));
        let any = ClientView::default();
        assert_eq!(
            to_mcp_result(ok.clone(), Some(&declared), any).structured_content,
            Some(json!({"x": 1}))
        );
        assert_eq!(to_mcp_result(ok, Some(&plain), any).structured_content, None);
        let failed = ToolResult::error("no").with_structured(json!({"resource": "x"}));
        assert_eq!(to_mcp_result(failed, Some(&declared), any).structured_content, None);
    }

    #[test]
    fn a_figure_reaches_a_client_that_drops_images_beside_structured_content() {
        let declared = ToolSpec::new::<serde_json::Value>("eval", "d", Tier::Exec)
            .with_output_schema::<serde_json::Value>();
        let figure = ToolResult::text("[image 1]").with_structured(json!({"image": 1})).with_image(
            agent_tools::Image {
                mime_type: "image/png".into(),
                data: vec![0x89, b'P', b'N', b'G'],
            },
        );
        let codex =
            to_mcp_result(figure.clone(), Some(&declared), ClientView::of("codex-mcp-client"));
        assert_eq!(codex.structured_content, None, "Codex gets text and the image");
        assert_eq!(codex.content.len(), 2);
        for client in ["claude-code", "mcp", "inspector-client"] {
            let result = to_mcp_result(figure.clone(), Some(&declared), ClientView::of(client));
            assert_eq!(result.structured_content, Some(json!({"image": 1})), "{client}");
            assert_eq!(result.content.len(), 2, "{client}");
        }
        let plain = ToolResult::text("x = 1").with_structured(json!({"x": 1}));
        let codex = to_mcp_result(plain, Some(&declared), ClientView::of("codex-mcp-client"));
        assert_eq!(codex.structured_content, Some(json!({"x": 1})), "no image, no change");
    }
}
