//! The eval family in the registry: the `eval` tool over `agent_tools_eval::Kernels`, its
//! `tool()` bridge through [`CallContext::call_nested`], and the kernels as a run resource.

use std::{path::Path, sync::Arc};

use agent_tools_eval::{CellPayload, EvalError, EvalRequest, Kernels, ToolBridge, family};
use async_trait::async_trait;
use serde_json::{Value, json};

use crate::{
    AttachFamily, Attachment, CallContext, FamilyDescriptor, Image, RunResource, Tier, ToolResult,
    ToolSpec, TypedTool,
};

/// The eval family: `eval` over the run's kernels, which end when the run ends.
pub struct EvalFamily {
    kernels: Arc<Kernels>,
}

impl EvalFamily {
    pub fn new(kernels: Arc<Kernels>) -> Self {
        EvalFamily { kernels }
    }
}

impl AttachFamily for EvalFamily {
    fn descriptor(&self) -> &'static FamilyDescriptor {
        &family::FAMILY
    }

    fn attach(self: Box<Self>, to: &mut Attachment<'_>) {
        let tool = EvalTool {
            spec: ToolSpec::declared::<EvalRequest>(&family::EVAL)
                .with_output_schema::<CellPayload>(),
            kernels: self.kernels.clone(),
        };
        to.tool(Arc::new(tool)).resource(self.kernels);
    }
}

/// The table entry: in every run, its kernels started in the run's capsule.
pub(super) const ENTRY: super::BuiltFamily = super::BuiltFamily {
    descriptor: &family::FAMILY,
    for_run: |run| {
        let kernels = Kernels::new(run.config.eval.clone()).with_capsule(run.capsule.clone());
        Some(Box::new(EvalFamily::new(Arc::new(kernels))))
    },
    details: super::no_details,
};

struct EvalTool {
    spec: ToolSpec,
    kernels: Arc<Kernels>,
}

#[async_trait]
impl TypedTool for EvalTool {
    type Args = EvalRequest;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn run(&self, ctx: &CallContext, request: EvalRequest) -> ToolResult {
        // The kernel keeps the ceiling of the call that started it (the eval crate's slot). A
        // cell may outlive this call, so its `tool()` calls do not hang on the call's
        // cancellation or progress: stopping the cell aborts them.
        let mut cell_ctx = ctx.clone();
        cell_ctx.cancel = tokio_util::sync::CancellationToken::new();
        cell_ctx.progress = None;
        let bridge = Arc::new(RegistryBridge { ctx: cell_ctx });
        let report = match self
            .kernels
            .eval(&ctx.conversation_id, ctx.root(), request, bridge, ctx.scope())
            .await
        {
            Ok(report) => report,
            Err(e @ EvalError::Argument(_)) | Err(e @ EvalError::Closed) => {
                return ToolResult::error(e.to_string());
            }
        };
        let text = agent_tools_eval::render(&report);
        let images = agent_tools_eval::images(&report);
        // The same payload as the text, as data (D8): a client that shows only structured
        // content gives the model the value, tables, traceback and image references too.
        let structured = serde_json::to_value(agent_tools_eval::payload(&report))
            .unwrap_or_else(|e| json!({"status": "error", "error": e.to_string()}));
        // Anything but a cell that ran to its end (or runs on past the wait) is an error for the
        // model: it did not finish.
        let mut result =
            if !report.is_error() { ToolResult::text(text) } else { ToolResult::error(text) };
        result = result.with_structured(structured);
        for image in images {
            result = result.with_image(Image { mime_type: image.mime_type, data: image.data });
        }
        result
    }
}

/// Dispatches a cell's `tool()` through the registry, as a nested call of the `eval` call.
struct RegistryBridge {
    ctx: CallContext,
}

#[async_trait]
impl ToolBridge for RegistryBridge {
    fn ceiling(&self) -> Tier {
        self.ctx.surface.ceiling
    }

    async fn call(&self, name: &str, args: Value, ceiling: Tier) -> Result<Value, String> {
        if name == "eval" {
            return Err("tool(\"eval\") is refused: a cell cannot run another cell; write the \
                        code in this cell instead"
                .into());
        }
        let result = self.ctx.call_nested(name, args, ceiling).await;
        if result.is_error {
            return Err(result.text);
        }
        // The structured result when there is one; an object also gets the model-facing text
        // under `text` (unless it has that key), so `tool("read", ...)["text"]` has the lines.
        Ok(match result.structured {
            Some(Value::Object(mut map)) => {
                map.entry("text").or_insert(Value::String(result.text));
                Value::Object(map)
            }
            Some(other) => other,
            None => Value::String(result.text),
        })
    }
}

#[async_trait]
impl RunResource for Kernels {
    async fn shutdown(&self) {
        Kernels::shutdown(self).await;
    }

    fn family(&self) -> Option<&str> {
        Some(family::FAMILY.name)
    }

    /// The interpreter that resolves, its version, and where the run's kernels start.
    fn status(&self, root: &Path) -> Vec<String> {
        self.status_details(root)
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods, reason = "tests write their fixtures by path")]
mod tests {
    use agent_tools_eval::EvalConfig;
    use serde_json::json;

    use super::*;
    use crate::{RegistryBuilder, RunInfo, Surface};

    /// A registry with the file tools and kernels over a temp root; returns the run too.
    fn check(config: EvalConfig) -> (crate::Registry, RunInfo, tempfile::TempDir) {
        let dir = tempfile::tempdir().expect("temp");
        std::fs::write(dir.path().join("notes.txt"), "one\ntwo\n").expect("write");
        let registry = RegistryBuilder::new()
            .with_reference_file_tools()
            .with_family(EvalFamily::new(Arc::new(Kernels::new(config))))
            .build();
        let run = RunInfo::new(dir.path());
        (registry, run, dir)
    }

    async fn eval(surface: &Surface, run: &RunInfo, language: &str, code: &str) -> ToolResult {
        let ctx = surface.context(run, None);
        surface
            .call(&ctx, "eval", json!({"code": code, "description": "test", "language": language}))
            .await
    }

    #[test]
    fn the_eval_schema_is_stable() {
        let kernels = Arc::new(Kernels::new(EvalConfig::default()));
        let registry = RegistryBuilder::new().with_family(EvalFamily::new(kernels)).build();
        let surface = Surface::build(&registry);
        let spec = surface.get("eval").expect("eval").spec();
        insta::assert_json_snapshot!(spec.input_schema);
        insta::assert_json_snapshot!("eval_output_schema", spec.output_schema);
    }

    #[test]
    fn the_eval_tool_costs_at_most_350_tokens_of_the_tool_list() {
        let kernels = Arc::new(Kernels::new(EvalConfig::default()));
        let registry = RegistryBuilder::new().with_family(EvalFamily::new(kernels)).build();
        let surface = Surface::build(&registry);
        let spec = surface.get("eval").expect("eval").spec();
        let chars = spec.name.len() + spec.description.len() + spec.input_schema.to_string().len();
        assert!(chars / 4 <= 350, "eval costs {} tokens (chars/4)", chars / 4);
    }

    #[tokio::test]
    async fn structured_content_carries_the_value_the_outputs_and_the_traceback() {
        let (registry, run, _dir) = check(EvalConfig::default());
        let build = Surface::build(&registry);
        let ok = eval(&build, &run, "python", "print('hi')\n{'a': 1}").await;
        let data = ok.structured.clone().expect("structured content");
        assert_eq!(data["status"], "ok", "{data}");
        assert_eq!(data["value"]["text"], "{'a': 1}", "{data}");
        assert_eq!(data["outputs"][0], json!({"type": "stream", "name": "stdout", "text": "hi\n"}));
        assert!(data["kernel"]["state_preserved"].as_bool().unwrap_or(false), "{data}");
        let failed = eval(&build, &run, "python", "1/0").await;
        assert!(failed.is_error);
        let data = failed.structured.expect("structured content on an error too");
        assert_eq!(data["error"]["ename"], "ZeroDivisionError", "{data}");
        assert!(
            data["error"]["traceback"].as_str().is_some_and(|t| t.contains("ZeroDivisionError")),
            "{data}"
        );
        registry.shutdown().await;
    }

    #[tokio::test]
    async fn eval_is_an_exec_tool_that_needs_a_description() {
        let (registry, run, _dir) = check(EvalConfig::default());
        let build = Surface::build(&registry);
        assert_eq!(build.get("eval").map(|t| t.spec().tier), Some(Tier::Exec));
        assert!(Surface::plan(&registry).get("eval").is_none());
        let ctx = build.context(&run, None);
        let missing = build.call(&ctx, "eval", json!({"code": "1"})).await;
        assert!(missing.is_error);
        assert!(missing.text.contains("description"), "{}", missing.text);
        let empty = build.call(&ctx, "eval", json!({"code": "1", "description": " "})).await;
        assert!(empty.text.contains("`description` is required"), "{}", empty.text);
        registry.shutdown().await;
    }

    #[tokio::test]
    async fn tool_reads_through_the_registry_in_both_languages() {
        let (registry, run, _dir) = check(EvalConfig::default());
        let build = Surface::build(&registry);
        let py = eval(
            &build,
            &run,
            "python",
            "r = tool('read', {'path': 'notes.txt'})\n(r['total_lines'], r['text'])",
        )
        .await;
        assert!(!py.is_error, "{}", py.text);
        assert!(py.text.ends_with("Out[1]: (2, '1\\tone\\n2\\ttwo\\n')"), "{}", py.text);
        let js = eval(&build, &run, "javascript", "(await tool('read', {path: 'notes.txt'})).text")
            .await;
        assert!(
            js.text.ends_with("Out[1]: '1\\tone\\n2\\ttwo\\n'")
                || js.text.ends_with("Out[1]: \"1\\tone\\n2\\ttwo\\n\""),
            "Node or QuickJS: {}",
            js.text
        );
        let nested =
            eval(&build, &run, "python", "tool('eval', {'code': '1', 'description': 'x'})").await;
        assert!(nested.is_error);
        assert!(nested.text.contains("tool(\"eval\") is refused"), "{}", nested.text);
        registry.shutdown().await;
    }

    #[tokio::test]
    async fn tool_read_gives_a_cell_the_files_exact_bytes_crlf_included() {
        let (registry, run, dir) = check(EvalConfig::default());
        std::fs::write(dir.path().join("dos.txt"), "one\r\ntwo\r\nno newline").expect("write");
        let build = Surface::build(&registry);
        let py = eval(
            &build,
            &run,
            "python",
            "r = tool('read', {'path': 'dos.txt'})\nr['content'] == open('dos.txt', newline='').read()",
        )
        .await;
        assert!(py.text.ends_with("Out[1]: True"), "{}", py.text);
        let js = eval(
            &build,
            &run,
            "javascript",
            "(await tool('read', {path: 'dos.txt'})).content === 'one\\r\\ntwo\\r\\nno newline'",
        )
        .await;
        assert!(js.text.ends_with("Out[1]: true"), "{}", js.text);
        registry.shutdown().await;
    }

    #[tokio::test]
    async fn a_kernel_from_a_read_only_surface_cannot_reach_a_write_tool() {
        let (registry, run, dir) = check(EvalConfig::default());
        // A harness that lets a plan surface run cells (calling the tool directly) still
        // gets no write tool through the bridge: the kernel's ceiling is the surface's.
        let plan = Surface::plan(&registry);
        let ctx = plan.context(&run, None);
        let tool = Surface::build(&registry).get("eval").cloned().expect("eval");
        for (language, code) in [
            ("python", "tool('write', {'path': 'notes.txt', 'content': 'x'})"),
            ("javascript", "await tool('write', {path: 'notes.txt', content: 'x'})"),
        ] {
            let result = tool
                .call(&ctx, json!({"code": code, "description": "d", "language": language}))
                .await;
            assert!(result.is_error);
            assert!(
                result.text.contains("`write` is a write-tier tool; this surface (plan"),
                "{}",
                result.text
            );
        }
        assert_eq!(std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(), "one\ntwo\n");
        registry.shutdown().await;
    }

    #[tokio::test]
    async fn a_kernel_keeps_the_ceiling_it_started_under_until_it_is_reset() {
        let (registry, run, dir) = check(EvalConfig::default());
        let plan = Surface::plan(&registry);
        let build = Surface::build(&registry);
        let tool = build.get("eval").cloned().expect("eval");
        let cell = |code: &str| json!({"code": code, "description": "d", "language": "python"});
        let write = "tool('write', {'path': 'notes.txt', 'content': 'x'})";
        // Started from a plan surface: the kernel's ceiling is read...
        let first = tool.call(&plan.context(&run, None), cell("started = True")).await;
        assert!(!first.is_error, "{}", first.text);
        // ...and a later call from the build surface, on the same kernel, does not raise it.
        let later = tool.call(&build.context(&run, None), cell(write)).await;
        assert!(later.text.contains("ToolError: `write` is a write-tier tool"), "{}", later.text);
        assert_eq!(std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(), "one\ntwo\n");
        // A reset from the build surface starts a kernel with the build surface's ceiling.
        let mut reset = cell(write);
        reset["reset"] = json!(true);
        let fresh = tool.call(&build.context(&run, None), reset).await;
        assert!(!fresh.is_error, "{}", fresh.text);
        assert_eq!(std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(), "x");
        registry.shutdown().await;
    }

    #[tokio::test]
    async fn the_configured_bridge_tier_lowers_the_ceiling() {
        let config = EvalConfig { bridge_tier: Tier::Read, ..EvalConfig::default() };
        let (registry, run, _dir) = check(config);
        let build = Surface::build(&registry);
        let code = "import concurrent.futures as cf\n\
                    with cf.ThreadPoolExecutor(4) as pool:\n    \
                    texts = list(pool.map(lambda p: tool.read(path=p), ['notes.txt'] * 4))\n\
                    print(len(texts))\n\
                    tool('write', {'path': 'out.txt', 'content': 'x'})";
        let result = eval(&build, &run, "python", code).await;
        assert!(result.text.contains("4\n"), "fan-out of reads works: {}", result.text);
        assert!(result.text.contains("ToolError: `write` is a write-tier tool"), "{}", result.text);
        registry.shutdown().await;
    }

    #[tokio::test]
    async fn a_cell_outlives_its_call_and_its_tool_calls_outlive_that_calls_cancellation() {
        let (registry, run, _dir) = check(EvalConfig::default());
        let build = Surface::build(&registry);
        let ctx = build.context(&run, None);
        let code = "import time\ntime.sleep(2)\nprint(tool('read', {'path': 'notes.txt'})['total_lines'])\n'done'";
        let args = json!({"code": code, "description": "d", "wait_s": 0});
        let first = build.call(&ctx, "eval", args).await;
        assert!(!first.is_error, "a running cell is no failed call: {}", first.text);
        assert!(first.text.contains("still running as cell 1 (for "), "{}", first.text);
        let data = first.structured.expect("structured content");
        assert_eq!((data["status"].clone(), data["cell"].clone()), (json!("running"), json!(1)));
        // The call that sent it is over, and even cancelled: the cell and its tool() run on.
        ctx.cancel.cancel();
        let later =
            build.call(&build.context(&run, None), "eval", json!({"cell": 1, "wait_s": 60})).await;
        assert!(!later.is_error, "{}", later.text);
        assert!(later.text.ends_with("2\nOut[1]: 'done'"), "{}", later.text);
        // A cut call (its client went away; the host may cancel it too) leaves its cell running.
        let cut = build.context(&run, None);
        let (call_cut, call_cancel) = (cut.cut.clone(), cut.cancel.clone());
        let args = json!({"code": "time.sleep(5)\n'after the cut'", "description": "d"});
        let (cut_result, ()) = tokio::join!(build.call(&cut, "eval", args), async {
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            call_cut.cancel();
            call_cancel.cancel();
        });
        assert!(cut_result.text.contains("still running as cell 2"), "{}", cut_result.text);
        let collected =
            build.call(&build.context(&run, None), "eval", json!({"cell": 2, "wait_s": 60})).await;
        assert!(collected.text.ends_with("Out[2]: 'after the cut'"), "{}", collected.text);
        registry.shutdown().await;
    }

    #[tokio::test]
    async fn the_run_end_leaves_no_kernel_process() {
        let (registry, run, _dir) = check(EvalConfig::default());
        let build = Surface::build(&registry);
        let result = eval(&build, &run, "python", "import os; os.getpid()").await;
        let pid: i32 =
            result.text.rsplit("Out[1]: ").next().unwrap_or("").trim().parse().expect("pid");
        assert!(std::path::Path::new(&format!("/proc/{pid}")).exists());
        registry.shutdown().await;
        let gone = (0..100).any(|_| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let alive =
                !stat.is_empty() && !stat.split(") ").nth(1).is_some_and(|r| r.starts_with('Z'));
            if alive {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            !alive
        });
        assert!(gone, "kernel {pid} survived the run");
    }
}
