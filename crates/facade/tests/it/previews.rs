//! Previews of a change: `dry_run` of `edit`, `write` and `apply_patch`, and an `ast_edit`
//! proposal, report the same files and errors as the real write of the same change, and leave
//! the disk and the language server's view of it as they were.

use std::path::PathBuf;

use agent_tools::{
    Registry, RegistryBuilder, RunInfo, Surface, SurfaceKind, ToolResult,
    families::{AstgrepFamily, LspFamily},
};
use agent_tools_lsp::testing::{require_program, setup_paths};
use serde_json::{Value, json};

const LIB: &str = "def area(side: int) -> int:\n    return side * side\n";
const BROKEN: &str = "def area(side: int, scale: int) -> int:\n    return side * side * scale\n";

/// A Python project whose `lib.area` is used by three modules never opened.
struct Run {
    _dir: tempfile::TempDir,
    root: PathBuf,
    registry: Registry,
    surface: Surface,
    info: RunInfo,
}

impl Run {
    /// Three modules use `lib.area`.
    fn new() -> Option<Run> {
        Run::with(3, json!({}))
    }

    /// `users` modules use `lib.area`; `on_write` is the `[lsp.on_write]` section.
    fn with(users: usize, on_write: Value) -> Option<Run> {
        let extra = setup_paths();
        if !require_program(&["basedpyright-langserver"], &extra, "cargo xtask setup") {
            return None;
        }
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path().canonicalize().expect("canonical");
        let mut files =
            vec![("pyproject.toml".to_string(), String::new()), ("lib.py".into(), LIB.into())];
        for i in 1..=users {
            files.push((
                format!("use{i}.py"),
                format!("from lib import area\n\nprint(area({i}))\n"),
            ));
        }
        for (path, text) in &files {
            std::fs::write(root.join(path), text).expect("write");
        }
        let config: agent_tools_lsp::LspConfig =
            serde_json::from_value(json!({"extra_paths": extra, "on_write": on_write}))
                .expect("config");
        let registry = RegistryBuilder::new()
            .with_reference_file_tools()
            .with_family(AstgrepFamily::new(Default::default()))
            .with_family(LspFamily::new(&root, config))
            .build();
        let surface = registry.surface(SurfaceKind::Build);
        let info = RunInfo::new(&root);
        Some(Run { _dir: dir, root, registry, surface, info })
    }

    async fn call(&self, tool: &str, args: Value) -> ToolResult {
        let ctx = self.surface.context(&self.info, None);
        let result = self.surface.call(&ctx, tool, args).await;
        assert!(!result.is_error, "{tool} failed: {}", result.text);
        result
    }

    fn read(&self, path: &str) -> String {
        std::fs::read_to_string(self.root.join(path)).expect("read")
    }
}

/// `(path, line, message)` of every new diagnostic in a result's structured content.
fn new_errors(result: &ToolResult) -> Vec<(String, u64, String)> {
    let data = &result.structured.as_ref().expect("structured content")["diagnostics"];
    let mut out: Vec<(String, u64, String)> = data["new"]
        .as_array()
        .expect("new diagnostics")
        .iter()
        .map(|d| {
            let field = |k: &str| d[k].as_str().unwrap_or_default().to_string();
            (field("path"), d["line"].as_u64().unwrap_or(0), field("message"))
        })
        .collect();
    out.sort();
    out
}

fn broken_files(errors: &[(String, u64, String)]) -> Vec<String> {
    let mut files: Vec<String> = errors.iter().map(|e| e.0.clone()).collect();
    files.dedup();
    files
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dry_run_edit_reports_what_the_real_edit_then_reports_and_changes_nothing() {
    let Some(run) = Run::new() else { return };
    let edit = json!({"path": "lib.py", "old_string": LIB, "new_string": BROKEN});
    let mut dry = edit.clone();
    dry["dry_run"] = json!(true);
    let preview = run.call("edit", dry).await;
    assert!(preview.text.starts_with("dry run: would edit lib.py"), "{}", preview.text);
    assert!(preview.text.contains("Nothing was written. Diagnostics the change would bring"));
    let previewed = new_errors(&preview);
    assert_eq!(broken_files(&previewed), ["use1.py", "use2.py", "use3.py"], "{}", preview.text);
    // Nothing on disk changed, and the server sees the disk again: no caller is broken.
    assert_eq!(run.read("lib.py"), LIB);
    let now = run.call("lsp", json!({"action": "diagnostics", "file": "use1.py"})).await;
    assert!(!now.text.contains("scale"), "the server's view is back on the disk: {}", now.text);
    // The real edit reports the same files and errors, and says nothing changed since.
    let real = run.call("edit", edit).await;
    assert_eq!(new_errors(&real), previewed, "{}", real.text);
    assert!(real.text.contains("(the same as its preview showed"), "{}", real.text);
    assert_eq!(run.read("lib.py"), BROKEN);
    run.registry.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dry_run_patch_and_write_report_what_their_real_writes_report() {
    let Some(run) = Run::new() else { return };
    let patch = "--- a/lib.py\n+++ b/lib.py\n@@ -1,2 +1,2 @@\n-def area(side: int) -> int:\n-    return side * side\n+def area(side: int, scale: int) -> int:\n+    return side * side * scale\n--- /dev/null\n+++ b/extra.py\n@@ -0,0 +1 @@\n+x: str = 1\n";
    let preview = run.call("apply_patch", json!({"patch": patch, "dry_run": true})).await;
    let previewed = new_errors(&preview);
    assert_eq!(
        broken_files(&previewed),
        ["extra.py", "use1.py", "use2.py", "use3.py"],
        "{}",
        preview.text
    );
    assert!(!run.root.join("extra.py").exists(), "a dry run creates nothing");
    assert_eq!(run.read("lib.py"), LIB);
    let write =
        run.call("write", json!({"path": "lib.py", "content": BROKEN, "dry_run": true})).await;
    assert_eq!(
        broken_files(&new_errors(&write)),
        ["use1.py", "use2.py", "use3.py"],
        "{}",
        write.text
    );
    assert_eq!(run.read("lib.py"), LIB);
    let real = run.call("apply_patch", json!({"patch": patch})).await;
    assert_eq!(new_errors(&real), previewed, "{}", real.text);
    run.registry.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ast_edit_proposal_carries_its_new_errors_and_accept_reports_only_what_changed() {
    let Some(run) = Run::new() else { return };
    let staged = run
        .call(
            "ast_edit",
            json!({
                "rule": {"kind": "identifier", "regex": "^side$", "inside": {"kind": "parameters", "stopBy": "end"}},
                "rewrite": "side: int, scale",
                "language": "python",
            }),
        )
        .await;
    assert!(staged.text.contains("edit_1"), "{}", staged.text);
    let proposed = new_errors(&staged);
    assert_eq!(broken_files(&proposed), ["use1.py", "use2.py", "use3.py"], "{}", staged.text);
    assert_eq!(run.read("lib.py"), LIB, "a proposal writes nothing");
    let accepted = run.call("resolve", json!({"edit_id": "edit_1", "action": "accept"})).await;
    assert_eq!(new_errors(&accepted), proposed, "{}", accepted.text);
    assert!(accepted.text.contains("(the same as its preview showed"), "{}", accepted.text);
    run.registry.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_over_the_bound_are_reported_at_the_head_of_the_next_result() {
    let Some(run) = Run::with(6, json!({"max_files": 2})) else { return };
    let ctx = run.surface.context(&run.info, None);
    let edit = json!({"path": "lib.py", "old_string": LIB, "new_string": BROKEN});
    let result = run.surface.call(&ctx, "edit", edit).await;
    assert!(
        result.text.contains("4 more file(s) that use it, over the bound of 2"),
        "{}",
        result.text
    );
    // The next call of any tool, here `lsp` (which has structured content), starts with what
    // the check of the other four found, in its text and its structured content.
    let mut next = ToolResult::default();
    for _ in 0..300 {
        next = run.surface.call(&ctx, "lsp", json!({"action": "status"})).await;
        if next.text.starts_with("Since your edit of lib.py") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    assert!(next.text.starts_with("Since your edit of lib.py"), "{}", next.text);
    let settled = &next.structured.as_ref().expect("structured")["notices"][0]["settled"];
    let mut files: Vec<&str> =
        settled["new"].as_array().expect("new").iter().filter_map(|d| d["path"].as_str()).collect();
    files.sort();
    files.dedup();
    assert_eq!(files.len(), 4, "{}", next.text);
    run.registry.shutdown().await;
}
