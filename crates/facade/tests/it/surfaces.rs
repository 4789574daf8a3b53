//! Surfaces: tier filtering, sorted byte-stable schema lists, dispatch errors, argument validation.

use agent_tools::{RegistryBuilder, Surface, SurfaceKind, Tier};
use serde_json::json;

use crate::Project;

fn schema_list(surface: &Surface) -> String {
    let specs: Vec<_> = surface
        .specs()
        .into_iter()
        .map(|s| json!({"name": s.name, "tier": s.tier, "description": s.description, "input_schema": s.input_schema}))
        .collect();
    serde_json::to_string_pretty(&specs).expect("json")
}

#[test]
fn the_build_surface_lists_every_file_tool_sorted() {
    let registry = RegistryBuilder::new().with_reference_file_tools().build();
    let build = Surface::build(&registry);
    assert_eq!(build.names(), ["apply_patch", "edit", "read", "write"]);
    insta::assert_snapshot!("build_surface_schemas", schema_list(&build));
}

#[test]
fn the_plan_surface_has_no_write_or_exec_tool() {
    let registry = RegistryBuilder::new().with_reference_file_tools().build();
    let plan = Surface::plan(&registry);
    assert!(plan.specs().iter().all(|s| s.tier == Tier::Read));
    insta::assert_snapshot!("plan_surface_schemas", schema_list(&plan));
}

#[test]
fn schema_lists_are_byte_stable_across_builds() {
    let a =
        schema_list(&Surface::build(&RegistryBuilder::new().with_reference_file_tools().build()));
    let b =
        schema_list(&Surface::build(&RegistryBuilder::new().with_reference_file_tools().build()));
    assert_eq!(a, b);
}

#[test]
fn a_hidden_tool_is_refused_with_its_tier() {
    let project = Project::new(&[("a.txt", "x\n")]);
    let result = project.call(SurfaceKind::Plan, "write", json!({"path": "a.txt", "content": "y"}));
    assert!(result.is_error);
    insta::assert_snapshot!(result.text, @"`write` is a write-tier tool; this surface (plan) is limited to read-tier tools. Available here: read");
    assert_eq!(project.read("a.txt"), "x\n");
}

#[test]
fn an_unknown_tool_lists_what_the_surface_has() {
    let project = Project::new(&[]);
    let result = project.call(SurfaceKind::Build, "grep", json!({}));
    assert!(result.is_error);
    insta::assert_snapshot!(result.text, @"unknown tool `grep`; the tools on this surface (build) are: apply_patch, edit, read, write");
}

#[test]
fn a_missing_required_argument_is_named_and_the_tool_does_not_run() {
    let project = Project::new(&[]);
    let result = project.call(SurfaceKind::Build, "write", json!({"path": "new.txt"}));
    assert!(result.is_error);
    insta::assert_snapshot!(result.text, @"write: missing required argument `content` (The file's complete new content.)");
    assert!(!project.dir.path().join("new.txt").exists());
}

#[test]
fn a_wrong_type_is_named() {
    let project = Project::new(&[("a.txt", "x\n")]);
    let result = project.call(SurfaceKind::Build, "read", json!({"path": 5}));
    insta::assert_snapshot!(result.text, @"read: argument `path`: expected string, got number 5");
    let result =
        project.call(SurfaceKind::Build, "read", json!({"path": "a.txt", "start_line": "3"}));
    insta::assert_snapshot!(result.text, @r#"read: argument `start_line`: expected integer (or leave it out), got string "3""#);
}

#[test]
fn an_unknown_argument_is_refused_with_the_known_ones() {
    let project = Project::new(&[("a.txt", "x\n")]);
    let result = project.call(SurfaceKind::Build, "read", json!({"path": "a.txt", "offset": 3}));
    insta::assert_snapshot!(result.text, @"read: unknown argument `offset`; known arguments: end_line, outline, path, start_line, symbol");
}

#[test]
fn a_lowered_ceiling_never_raises_and_hides_what_it_cuts() {
    let registry = RegistryBuilder::new().with_reference_file_tools().build();
    let plan = Surface::plan(&registry);
    assert_eq!(plan.restricted(Tier::Exec).names(), ["read"]);
    let build = Surface::build(&registry);
    let limited = build.restricted(Tier::Read);
    assert_eq!(limited.names(), ["read"]);
    assert!(limited.refusal("edit").is_some_and(|r| r.contains("write-tier")));
}

#[test]
fn large_text_is_cut_with_a_note() {
    let big = "line\n".repeat(20_000);
    let project = Project::new(&[("big.txt", &big)]);
    let registry = RegistryBuilder::new().with_reference_file_tools().build();
    let surface = registry.surface(SurfaceKind::Build).with_max_output_chars(1_000);
    let run = agent_tools::RunInfo::new(project.dir.path());
    let ctx = surface.context(&run, None);
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
    let result = runtime.block_on(surface.call(&ctx, "read", json!({"path": "big.txt"})));
    assert!(!result.is_error);
    // `read` cuts its payload at a whole line, and says so in the text and the payload.
    assert!(result.text.chars().count() <= 1_000, "{}", result.text.chars().count());
    let structured = result.structured.as_ref().expect("the cut payload");
    let end = structured["end_line"].as_u64().unwrap();
    let next = format!(
        "showed lines 1-{end} of 20000 (the rest is over the 1000-character output cap); call \
         read with start_line={}",
        end + 1
    );
    assert!(result.text.contains(&next), "{}", &result.text[result.text.len() - 200..]);
    assert!(structured["note"].as_str().unwrap().contains(&next));
    assert!(serde_json::to_string(structured).unwrap().chars().count() <= 1_000);
}

#[test]
fn a_result_without_a_payload_to_cut_is_cut_as_text_and_loses_its_structured_content() {
    use agent_tools::{CallContext, Tier, Tool, ToolResult, ToolSpec};
    struct Loud(ToolSpec);
    #[async_trait::async_trait]
    impl Tool for Loud {
        fn spec(&self) -> &ToolSpec {
            &self.0
        }
        async fn call(&self, _ctx: &CallContext, _args: serde_json::Value) -> ToolResult {
            let text = "word ".repeat(1_000);
            ToolResult::text(text.clone()).with_structured(json!({"text": text}))
        }
    }
    let spec = ToolSpec::new::<serde_json::Value>("loud", "d", Tier::Read)
        .with_output_schema::<serde_json::Value>();
    let registry =
        RegistryBuilder::new().with_tool("test", std::sync::Arc::new(Loud(spec))).build();
    let surface = registry.surface(SurfaceKind::Build).with_max_output_chars(1_000);
    let run = agent_tools::RunInfo::new(std::env::temp_dir());
    let ctx = surface.context(&run, None);
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
    let result = runtime.block_on(surface.call(&ctx, "loud", json!({})));
    let note = "[output truncated: showed 1000 of 5000 characters";
    assert!(result.text.contains(note), "{}", result.text);
    // Structured content is the whole payload or absent (D8): a client reads the cut text.
    assert_eq!(result.structured, None);
}

/// A harness tool that calls another tool through the nested path, as an `eval` cell would.
struct Relay {
    spec: agent_tools::ToolSpec,
    ceiling: Tier,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
struct RelayArgs {
    tool: String,
    args: serde_json::Value,
}

#[async_trait::async_trait]
impl agent_tools::Tool for Relay {
    fn spec(&self) -> &agent_tools::ToolSpec {
        &self.spec
    }

    async fn call(
        &self,
        ctx: &agent_tools::CallContext,
        args: serde_json::Value,
    ) -> agent_tools::ToolResult {
        let name = args["tool"].as_str().unwrap_or_default().to_string();
        let mut result = ctx.call_nested(&name, args["args"].clone(), self.ceiling).await;
        result.text =
            format!("[nested depth {} under {}] {}", ctx.depth + 1, ctx.call_id.len(), result.text);
        result
    }
}

fn relay_run(
    ceiling: Tier,
    kind: SurfaceKind,
    tool: &str,
    args: serde_json::Value,
) -> agent_tools::ToolResult {
    let project = Project::new(&[("a.txt", "x\n")]);
    let relay = Relay {
        spec: agent_tools::ToolSpec::new::<RelayArgs>("relay", "calls another tool", Tier::Read),
        ceiling,
    };
    let registry = RegistryBuilder::new()
        .with_reference_file_tools()
        .with_tool("test", std::sync::Arc::new(relay))
        .build();
    let surface = registry.surface(kind);
    let run = agent_tools::RunInfo::new(project.dir.path());
    let ctx = surface.context(&run, None);
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
    runtime.block_on(surface.call(&ctx, "relay", json!({"tool": tool, "args": args})))
}

#[test]
fn a_nested_call_gets_the_lower_of_the_two_ceilings() {
    let result = relay_run(
        Tier::Read,
        SurfaceKind::Build,
        "write",
        json!({"path": "a.txt", "content": "y"}),
    );
    assert!(result.is_error);
    assert!(
        result.text.contains("`write` is a write-tier tool; this surface (build, limited to read)"),
        "{}",
        result.text
    );
    let result =
        relay_run(Tier::Exec, SurfaceKind::Plan, "write", json!({"path": "a.txt", "content": "y"}));
    assert!(result.is_error, "a read-only surface must not reach write through a nested call");
    let result = relay_run(Tier::Exec, SurfaceKind::Build, "read", json!({"path": "a.txt"}));
    assert!(!result.is_error, "{}", result.text);
    assert!(result.text.starts_with("[nested depth 1 under"), "{}", result.text);
}

#[test]
fn nested_calls_are_validated_like_model_calls() {
    let result = relay_run(Tier::Exec, SurfaceKind::Build, "read", json!({"path": 1}));
    assert!(
        result.text.ends_with("read: argument `path`: expected string, got number 1"),
        "{}",
        result.text
    );
}

/// A tower-style wrapper: implements `Tool` around any file tool and adds a line after it.
struct Noting(agent_tools::DynTool);

#[async_trait::async_trait]
impl agent_tools::Tool for Noting {
    fn spec(&self) -> &agent_tools::ToolSpec {
        self.0.spec()
    }

    async fn call(
        &self,
        ctx: &agent_tools::CallContext,
        args: serde_json::Value,
    ) -> agent_tools::ToolResult {
        let mut result = self.0.call(ctx, args).await;
        result.text.push_str(&format!("\nchanged: {}", result.changed_files.len()));
        result
    }
}

#[test]
fn wrappers_layer_over_file_tools_and_keep_their_schema() {
    let project = Project::new(&[("a.txt", "x\n")]);
    let registry = RegistryBuilder::new()
        .with_reference_file_tools()
        .wrap_file_tools(|tool| std::sync::Arc::new(Noting(tool)))
        .build();
    let surface = registry.surface(SurfaceKind::Build);
    assert_eq!(surface.names(), ["apply_patch", "edit", "read", "write"]);
    let run = agent_tools::RunInfo::new(project.dir.path());
    let ctx = surface.context(&run, None);
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
    let result =
        runtime.block_on(surface.call(&ctx, "write", json!({"path": "a.txt", "content": "y\n"})));
    assert_eq!(result.text, "replaced a.txt (1 line, 2 bytes)\nchanged: 1");
}

/// Registration order does not change what is wrapped: a wrapper given before the file tools
/// and the astgrep family wraps the same tools, to the same effect, as one given after them.
#[test]
fn wrappers_wrap_the_same_tools_whatever_order_they_were_registered_in() {
    let wrap = |tool| -> agent_tools::DynTool { std::sync::Arc::new(Noting(tool)) };
    let astgrep = || agent_tools::families::AstgrepFamily::new(Default::default());
    let wrapper_last = RegistryBuilder::new()
        .with_reference_file_tools()
        .with_family(astgrep())
        .wrap_file_tools(wrap)
        .build();
    let wrapper_first = RegistryBuilder::new()
        .wrap_file_tools(wrap)
        .with_family(astgrep())
        .with_reference_file_tools()
        .build();
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
    let mut outcomes = Vec::new();
    for registry in [&wrapper_last, &wrapper_first] {
        let project = Project::new(&[("a.txt", "x\n")]);
        let surface = registry.surface(SurfaceKind::Build);
        let run = agent_tools::RunInfo::new(project.dir.path());
        let ctx = surface.context(&run, None);
        let call = |tool: &str, args| runtime.block_on(surface.call(&ctx, tool, args)).text;
        outcomes.push([
            call("write", json!({"path": "a.txt", "content": "y\n"})),
            call("edit", json!({"path": "a.txt", "old_string": "y", "new_string": "z"})),
            call("resolve", json!({"edit_id": "e1", "action": "discard"})),
            call("read", json!({"path": "a.txt"})),
        ]);
    }
    assert_eq!(outcomes[0], outcomes[1]);
    let [write, edit, resolve, read] = &outcomes[0];
    assert!(write.ends_with("\nchanged: 1") && edit.ends_with("\nchanged: 1"), "{write}\n{edit}");
    assert!(resolve.ends_with("\nchanged: 0"), "resolve writes files, so it is wrapped: {resolve}");
    assert!(read.ends_with("\nchanged: 0"), "{read}");
}

/// A tool with a bug: it panics.
struct Panicking(agent_tools::ToolSpec);

#[async_trait::async_trait]
impl agent_tools::Tool for Panicking {
    fn spec(&self) -> &agent_tools::ToolSpec {
        &self.0
    }

    async fn call(
        &self,
        _ctx: &agent_tools::CallContext,
        _args: serde_json::Value,
    ) -> agent_tools::ToolResult {
        panic!("index out of bounds")
    }
}

#[test]
fn a_panicking_tool_becomes_an_error_result_and_the_run_goes_on() {
    let project = Project::new(&[("a.txt", "x\n")]);
    let buggy = Panicking(agent_tools::ToolSpec::new::<RelayArgs>("buggy", "panics", Tier::Read));
    let registry = RegistryBuilder::new()
        .with_reference_file_tools()
        .with_tool("test", std::sync::Arc::new(buggy))
        .build();
    let surface = registry.surface(SurfaceKind::Build);
    let run = agent_tools::RunInfo::new(project.dir.path());
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
    let ctx = surface.context(&run, None);
    let result = runtime.block_on(surface.call(&ctx, "buggy", json!({"tool": "x", "args": {}})));
    assert!(result.is_error);
    assert!(
        result.text.starts_with("buggy: the tool failed internally (index out of bounds)"),
        "{}",
        result.text
    );
    let after = runtime.block_on(surface.call(&ctx, "read", json!({"path": "a.txt"})));
    assert!(!after.is_error, "{}", after.text);
}
