//! Adapter for `agent-tools-lsp`: the `lsp` tool (tier read) and `lsp_rename` (tier write) over
//! one `Supervisor` per run, which is a run resource (its servers end with the run, or, from a
//! host's shared pool, when the last run using them ends), plus diagnostics on write around
//! the file tools (see `diagnostics.rs`).

use std::{path::Path, sync::Arc};

use agent_tools_lsp::{
    CodeActionArgs, CodeActionReport, LspArgs, LspConfig, LspError, LspOutput, LspResult,
    RenameArgs, RenameReport, Supervisor, family,
};
use async_trait::async_trait;
use serde_json::Value;

use crate::{
    AttachFamily, Attachment, CallContext, FamilyDescriptor, RunResource, ToolResult, ToolSpec,
    TypedTool,
};

/// The lsp family over one supervisor: `lsp`, `lsp_rename` and `lsp_code_action`, the
/// supervisor as a run resource, and (unless `[lsp.on_write] enabled = false`) diagnostics on
/// write around every file tool of the run, whenever it was registered.
pub struct LspFamily {
    supervisor: Supervisor,
}

impl LspFamily {
    /// Language servers of the run rooted at `root`, its own, started on the host.
    pub fn new(root: &Path, config: LspConfig) -> Self {
        LspFamily::over(Supervisor::new(root, config))
    }

    /// Over `supervisor` (servers from a host's pool, project checks in the run's capsule:
    /// [`Supervisor::in_capsule`]); its servers end, or go back to the pool, with the run.
    pub fn over(supervisor: Supervisor) -> Self {
        LspFamily { supervisor }
    }
}

impl AttachFamily for LspFamily {
    fn descriptor(&self) -> &'static FamilyDescriptor {
        &family::FAMILY
    }

    fn attach(self: Box<Self>, to: &mut Attachment<'_>) {
        let supervisor = self.supervisor;
        let lsp = LspTool {
            spec: ToolSpec::declared::<LspArgs>(&family::LSP).with_output_schema::<LspResult>(),
            supervisor: supervisor.clone(),
        };
        let rename = RenameTool {
            spec: ToolSpec::declared::<RenameArgs>(&family::LSP_RENAME)
                .with_output_schema::<RenameReport>(),
            supervisor: supervisor.clone(),
        };
        let code_action = CodeActionTool {
            spec: ToolSpec::declared::<CodeActionArgs>(&family::LSP_CODE_ACTION)
                .with_output_schema::<CodeActionReport>(),
            supervisor: supervisor.clone(),
        };
        to.tool(Arc::new(lsp))
            .tool(Arc::new(rename))
            .tool(Arc::new(code_action))
            .resource(Arc::new(supervisor.clone()));
        if supervisor.config().on_write.enabled {
            let previews = Arc::new(super::diagnostics::Previews::default());
            to.wrap_file_tools(move |inner| {
                Arc::new(super::diagnostics::DiagnosticsOnWrite::new(
                    inner,
                    supervisor.clone(),
                    previews.clone(),
                ))
            });
        }
    }
}

/// The table entry: in every run, with servers from the host's pool when it shares one (the
/// run's ledger, documents and results stay its own), project checks in the run's capsule.
pub(super) const ENTRY: super::BuiltFamily = super::BuiltFamily {
    descriptor: &family::FAMILY,
    for_run: |run| {
        let pool = run.attach.lsp_pool.clone().unwrap_or_default();
        let supervisor =
            Supervisor::in_capsule(run.root, run.config.lsp.clone(), pool, run.capsule.clone());
        Some(Box::new(LspFamily::over(supervisor)))
    },
    details: super::no_details,
};

/// The tool result of an output; an `lsp` answer over `max_chars` shows as many of its items
/// as fit, the text and the structured content cut alike (the surface's backstop is left only
/// what cannot be cut by items).
fn into_result(tool: &str, outcome: Result<LspOutput, LspError>, max_chars: usize) -> ToolResult {
    let rendered = |text: String, structured: Value| {
        let result = ToolResult::text(text);
        if structured.is_null() { result } else { result.with_structured(structured) }
    };
    match outcome {
        Ok(out) => {
            let mut result = rendered(out.text, out.structured);
            if let Some(answer) = out.answer.filter(|_| !result.fits(max_chars)) {
                let answer = answer.0;
                (_, result) = crate::tool::fit_prefix(answer.shown(), max_chars, |n| {
                    let cut = LspOutput::from_result(answer.first(n));
                    rendered(cut.text, cut.structured)
                });
            }
            for path in out.changed_files {
                result = result.with_changed_file(path);
            }
            result
        }
        Err(LspError::Unavailable(unavailable)) => unavailable.into(),
        Err(e) => ToolResult::error(format!("{tool}: {e}")),
    }
}

struct LspTool {
    spec: ToolSpec,
    supervisor: Supervisor,
}

#[async_trait]
impl TypedTool for LspTool {
    type Args = LspArgs;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn run(&self, ctx: &CallContext, args: LspArgs) -> ToolResult {
        let action = args.action.as_str().to_string();
        let outcome = self.supervisor.call(args, &ctx.scope()).await;
        into_result(&format!("lsp {action}"), outcome, ctx.max_output_chars)
    }
}

struct RenameTool {
    spec: ToolSpec,
    supervisor: Supervisor,
}

#[async_trait]
impl TypedTool for RenameTool {
    type Args = RenameArgs;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn run(&self, ctx: &CallContext, args: RenameArgs) -> ToolResult {
        let outcome = self.supervisor.rename(args, &ctx.scope()).await;
        into_result("lsp_rename", outcome, ctx.max_output_chars)
    }
}

struct CodeActionTool {
    spec: ToolSpec,
    supervisor: Supervisor,
}

#[async_trait]
impl TypedTool for CodeActionTool {
    type Args = CodeActionArgs;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn run(&self, ctx: &CallContext, args: CodeActionArgs) -> ToolResult {
        let outcome = self.supervisor.apply_code_action(args, &ctx.scope()).await;
        into_result("lsp_code_action", outcome, ctx.max_output_chars)
    }
}

#[async_trait]
impl RunResource for Supervisor {
    async fn shutdown(&self) {
        Supervisor::shutdown(self).await;
    }

    fn family(&self) -> Option<&str> {
        Some(family::FAMILY.name)
    }

    /// The servers this run's supervisor would start (or has started), per language present.
    fn status(&self, _root: &Path) -> Vec<String> {
        status_lines(self)
    }

    /// The checks of the files over a write's bound that finished since the last call.
    fn take_notices(&self) -> Vec<crate::Notice> {
        self.take_settled()
            .into_iter()
            .map(|report| crate::Notice {
                text: report.render(),
                data: serde_json::json!({"settled": report}),
            })
            .collect()
    }
}

/// `agent-tools status` lines: per language present in the root, marker, binary and version,
/// state, or what is missing and how to get it.
fn status_lines(supervisor: &Supervisor) -> Vec<String> {
    let on_write = &supervisor.config().on_write;
    let mut lines = vec![format!(
        "servers start on first use, one per (language, project root); diagnostics on write {}",
        if on_write.enabled {
            format!(
                "on: the written files and up to {} files that use what they changed, each given at least {} ms once its server has the change",
                on_write.max_files, on_write.deadline_ms
            )
        } else {
            "off".to_string()
        }
    )];
    match supervisor.status_blocking() {
        Ok(rows) if rows.is_empty() => lines.push(
            "no source files of a language with a configured server found under the root".into(),
        ),
        Ok(rows) => lines.extend(rows.iter().map(|r| r.render().replace("\n    ", "; "))),
        Err(e) => lines.push(format!("[lsp] configuration problem: {e}")),
    }
    lines
}

#[cfg(test)]
#[allow(clippy::disallowed_methods, reason = "tests write their fixtures by path")]
mod tests {
    use super::*;
    use crate::{RegistryBuilder, SurfaceKind, Tier};

    #[test]
    fn a_long_outline_is_cut_to_whole_rows_alike_in_text_and_structured_content() {
        use agent_tools_lsp::{
            LspResult,
            results::{Outline, OutlineRow, SymbolsAnswer},
        };
        let rows: Vec<OutlineRow> = (1..=300)
            .map(|i| OutlineRow {
                depth: 0,
                line: i,
                column: 5,
                kind: "function".into(),
                name: format!("function_number_{i:03}"),
                detail: "(a: int, b: str) -> None".into(),
            })
            .collect();
        let outline =
            Outline { path: "app.py".into(), total: rows.len(), offset: 0, symbols: rows };
        let whole = LspOutput::from_result(LspResult::Symbols(SymbolsAnswer::Outline(outline)));
        assert!(whole.text.chars().count() > 10_000);
        let result = into_result("lsp symbols", Ok(whole), 4_000);
        assert!(result.fits(4_000), "{} characters", result.text.chars().count());
        let structured = result.structured.expect("the cut payload, not dropped");
        let shown = structured["symbols"].as_array().expect("symbols").len();
        assert!(shown > 10 && shown < 300, "{shown} rows");
        assert_eq!(structured["total"], 300);
        let rows_in_text = result.text.lines().filter(|l| l.contains("function_number_")).count();
        assert_eq!(rows_in_text, shown, "the text shows the same rows");
        let last = structured["symbols"][shown - 1]["name"].as_str().unwrap();
        assert!(result.text.contains(last), "the text ends at the same row");
        assert!(
            result
                .text
                .contains(&format!("showing 1–{shown} of 300; call again with offset={shown}")),
            "{}",
            result.text
        );
    }

    #[test]
    fn lsp_is_read_and_lsp_rename_is_write_so_plan_surfaces_see_only_lsp() {
        let dir = tempfile::tempdir().unwrap();
        let registry = RegistryBuilder::new()
            .with_reference_file_tools()
            .with_family(LspFamily::new(dir.path(), LspConfig::default()))
            .build();
        let build = registry.surface(SurfaceKind::Build);
        assert_eq!(build.get("lsp").map(|t| t.spec().tier), Some(Tier::Read));
        assert_eq!(build.get("lsp_rename").map(|t| t.spec().tier), Some(Tier::Write));
        let plan = registry.surface(SurfaceKind::Plan);
        assert!(plan.get("lsp").is_some() && plan.get("lsp_rename").is_none());
        let schema = &build.get("lsp_rename").unwrap().spec().input_schema;
        assert_eq!(schema["required"], serde_json::json!(["file", "line", "symbol", "new_name"]));
    }

    #[test]
    fn the_lsp_tool_specs_are_stable_and_within_their_share_of_the_budget() {
        let dir = tempfile::tempdir().unwrap();
        let registry = RegistryBuilder::new()
            .with_family(LspFamily::new(dir.path(), LspConfig::default()))
            .build();
        let build = registry.surface(SurfaceKind::Build);
        let specs: Vec<&ToolSpec> = ["lsp", "lsp_rename", "lsp_code_action"]
            .iter()
            .map(|n| build.get(n).unwrap().spec())
            .collect();
        // name + description + inputSchema, chars / 4, as the build surface's budget counts.
        let tokens: usize = specs
            .iter()
            .map(|s| s.name.len() + s.description.len() + s.input_schema.to_string().len())
            .sum::<usize>()
            / 4;
        assert!(tokens <= 520, "lsp + lsp_rename + lsp_code_action cost {tokens} tokens");
        assert!(specs.iter().all(|s| s.output_schema.is_some()));
        insta::assert_json_snapshot!("lsp_tool_specs", specs);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_call_waiting_for_a_starting_server_reports_progress() {
        let fake = concat!(env!("CARGO_MANIFEST_DIR"), "/../lsp-tool/tests/fake/fake_lsp.py");
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join("fake.toml"), "").unwrap();
        std::fs::write(root.join("a.fk"), "greet\n").unwrap();
        std::fs::write(root.join("script.json"), "{\"delay_ms\": {\"initialize\": 2500}}").unwrap();
        let config: LspConfig = serde_json::from_value(serde_json::json!({
            "servers": {"fake": {"languages": {"fakelang": ["fk"]}, "root_markers": ["fake.toml"],
                "commands": [["python3", fake, "--script", root.join("script.json").display().to_string()]]}}
        }))
        .unwrap();
        let registry = RegistryBuilder::new().with_family(LspFamily::new(&root, config)).build();
        let surface = registry.surface(SurfaceKind::Build);
        let info = crate::RunInfo::new(&root);
        let mut ctx = surface.context(&info, None);
        let seen = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
        let sink = seen.clone();
        ctx.progress =
            Some(crate::ProgressSink::new(move |p| sink.lock().unwrap().push(p.message)));
        let args =
            serde_json::json!({"action": "hover", "file": "a.fk", "line": 1, "symbol": "greet"});
        let _ = surface.call(&ctx, "lsp", args).await;
        let seen = seen.lock().unwrap().clone();
        assert!(
            seen.iter().any(|m| m.starts_with("lsp hover: ") && m.contains("fake (.): starting")),
            "{seen:?}"
        );
        registry.shutdown().await;
    }

    #[test]
    fn status_says_why_each_language_present_has_no_server() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("main.rs"), "fn main() {}\n").unwrap();
        let config: LspConfig = serde_json::from_value(serde_json::json!({"servers": {"rust": {
            "commands": [["agent-tools-no-such-rust-analyzer"]]
        }}}))
        .unwrap();
        let lines = status_lines(&Supervisor::new(dir.path(), config));
        let rust = lines.iter().find(|l| l.starts_with("rust")).unwrap();
        assert!(
            rust.contains("nothing starts: no root marker (Cargo.toml)")
                && rust.contains("none of agent-tools-no-such-rust-analyzer resolves")
                && rust.contains("rustup component add rust-analyzer"),
            "{rust}"
        );
    }
}
