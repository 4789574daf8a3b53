//! Diagnostics on write: a tower-style wrapper around any file tool (`write`, `edit`,
//! `apply_patch`, or a harness's own) whose result then carries the diagnostics its change
//! introduced.
//!
//! The algorithm (sync, baseline, one bounded wait, the run's ledger, rendering) lives in
//! `agent-tools-lsp` ([`Supervisor::diagnostics_after_write`]); this wrapper only hands it the
//! files the inner tool reports as changed, with what each held before, and appends the
//! section. It never turns a successful write into a failure and never delays the write.

use std::{
    collections::HashMap,
    path::PathBuf,
    sync::{Arc, Mutex},
};

use agent_tools_lsp::{ProposedFile, Supervisor, WriteDiagnostics, WrittenFile};
use async_trait::async_trait;
use serde_json::{Value, json};

use crate::{CallContext, DynTool, Tool, ToolResult, ToolSpec};

/// The reports of the run's previews (dry runs, `ast_edit` proposals), by the files and
/// contents they proposed: the write that makes exactly that change then says what changed
/// since its preview.
#[derive(Default)]
pub(crate) struct Previews {
    by_change: Mutex<HashMap<[u8; 32], WriteDiagnostics>>,
}

/// How many previews are remembered; older ones are dropped.
const MAX_PREVIEWS: usize = 64;

impl Previews {
    /// A key for a set of files and what each holds (would hold), order-free.
    fn key<'a>(files: impl Iterator<Item = (&'a PathBuf, Option<&'a [u8]>)>) -> [u8; 32] {
        let mut parts: Vec<Vec<u8>> = files
            .map(|(path, contents)| {
                let mut part = path.as_os_str().as_encoded_bytes().to_vec();
                part.push(0);
                part.extend(agent_tools_support::journal::sha256(contents.unwrap_or(b"\0gone")));
                part
            })
            .collect();
        parts.sort();
        agent_tools_support::journal::sha256(&parts.concat())
    }

    fn remember(&self, key: [u8; 32], report: WriteDiagnostics) {
        let mut map = self.by_change.lock().unwrap_or_else(|e| e.into_inner());
        if map.len() >= MAX_PREVIEWS {
            map.clear();
        }
        map.insert(key, report);
    }

    fn take(&self, key: &[u8; 32]) -> Option<WriteDiagnostics> {
        self.by_change.lock().unwrap_or_else(|e| e.into_inner()).remove(key)
    }
}

/// A file tool with diagnostics on write.
pub(crate) struct DiagnosticsOnWrite {
    inner: DynTool,
    supervisor: Supervisor,
    previews: Arc<Previews>,
}

impl DiagnosticsOnWrite {
    pub(crate) fn new(inner: DynTool, supervisor: Supervisor, previews: Arc<Previews>) -> Self {
        DiagnosticsOnWrite { inner, supervisor, previews }
    }

    /// The check of a dry run or proposal, remembered for the write that makes it.
    async fn preview(&self, ctx: &CallContext, result: &ToolResult) -> Option<WriteDiagnostics> {
        let files: Vec<ProposedFile> = result
            .proposed_files
            .iter()
            .map(|p| ProposedFile {
                path: p.path.clone(),
                before: p.before.clone(),
                after: p.after.as_ref().map(|a| String::from_utf8_lossy(a).into_owned()),
            })
            .collect();
        ctx.report_progress(0.0, None, "checking the proposed change with the language server");
        let report = self.supervisor.diagnostics_of_proposal(&files, &ctx.scope()).await?;
        let key =
            Previews::key(result.proposed_files.iter().map(|p| (&p.path, p.after.as_deref())));
        self.previews.remember(key, report.clone());
        Some(report)
    }

    /// The check of a write; the text says what changed since its preview, if it had one.
    async fn after_write(
        &self,
        ctx: &CallContext,
        result: &ToolResult,
    ) -> Option<(WriteDiagnostics, Option<WriteDiagnostics>)> {
        let files: Vec<WrittenFile> = result
            .changed_files
            .iter()
            .map(|c| WrittenFile { path: c.path.clone(), before: c.before.clone() })
            .collect();
        ctx.report_progress(0.0, None, "waiting for the language server's diagnostics");
        let report = self.supervisor.diagnostics_after_write(&files, &ctx.scope()).await?;
        let now: Vec<(PathBuf, Option<Vec<u8>>)> = result
            .changed_files
            .iter()
            .map(|c| (c.path.clone(), agent_tools_support::fs::read_regular(&c.path, "file").ok()))
            .collect();
        let key = Previews::key(now.iter().map(|(p, c)| (p, c.as_deref())));
        let preview = self.previews.take(&key);
        Some((report, preview))
    }
}

#[async_trait]
impl Tool for DiagnosticsOnWrite {
    fn spec(&self) -> &ToolSpec {
        self.inner.spec()
    }

    async fn call(&self, ctx: &CallContext, args: Value) -> ToolResult {
        let mut result = self.inner.call(ctx, args).await;
        if result.is_error {
            return result;
        }
        let (report, preview) = if !result.proposed_files.is_empty() {
            match self.preview(ctx, &result).await {
                Some(report) => (report, None),
                None => return result,
            }
        } else if !result.changed_files.is_empty() {
            match self.after_write(ctx, &result).await {
                Some(checked) => checked,
                None => return result,
            }
        } else {
            return result;
        };
        if !result.text.ends_with('\n') {
            result.text.push('\n');
        }
        result.text.push('\n');
        result.text.push_str(&report.render());
        if let Some(preview) = &preview {
            result.text.push('\n');
            result.text.push_str(&report.since_preview(preview));
        }
        let data = serde_json::to_value(&report).unwrap_or(Value::Null);
        match &mut result.structured {
            Some(Value::Object(map)) => {
                map.insert("diagnostics".into(), data);
            }
            None => result.structured = Some(json!({"diagnostics": data})),
            Some(_) => {}
        }
        result
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods, reason = "tests write their fixtures by path")]
mod tests {
    use std::{
        path::PathBuf,
        time::{Duration, Instant},
    };

    use agent_tools_lsp::{
        SyncOutcome,
        testing::{require_program, setup_paths, tools_home},
    };

    use super::*;
    use crate::{RegistryBuilder, RunInfo, Surface, SurfaceKind, families::LspFamily};

    struct Run {
        _dir: tempfile::TempDir,
        root: PathBuf,
        registry: crate::Registry,
        surface: Surface,
        info: RunInfo,
    }

    impl Run {
        async fn call(&self, tool: &str, args: Value) -> ToolResult {
            let ctx = self.surface.context(&self.info, None);
            let result = self.surface.call(&ctx, tool, args).await;
            assert!(!result.is_error, "{tool} failed: {}", result.text);
            result
        }

        async fn write(&self, path: &str, content: &str) -> String {
            self.call("write", json!({"path": path, "content": content})).await.text
        }
    }

    /// A run over `files` with the reference file tools wrapped; `None` (after a loud skip)
    /// when `program` is not installed. `lsp` is merged into the `[lsp]` section.
    fn check(program: &str, how: &str, files: &[(&str, &str)], lsp: Value) -> Option<Run> {
        let extra = setup_paths();
        if !require_program(&[program], &extra, how) {
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for (path, text) in files {
            std::fs::create_dir_all(root.join(path).parent().unwrap()).unwrap();
            std::fs::write(root.join(path), text).unwrap();
        }
        let mut section = json!({"extra_paths": extra, "on_write": {"deadline_ms": 15000}});
        if let (Value::Object(base), Value::Object(more)) = (&mut section, lsp) {
            base.extend(more);
        }
        let config: agent_tools_lsp::LspConfig = serde_json::from_value(section).unwrap();
        let registry = RegistryBuilder::new()
            .with_reference_file_tools()
            .with_family(LspFamily::new(&root, config))
            .build();
        let surface = registry.surface(SurfaceKind::Build);
        let info = RunInfo::new(&root);
        Some(Run { _dir: dir, root, registry, surface, info })
    }

    /// The section without its last line when that line says which other files use what
    /// changed (asserted on its own where it matters).
    fn without_uses(out: &str) -> &str {
        match out.rsplit_once('\n') {
            Some((head, last)) if last.starts_with("No other file uses ") => head,
            _ => out,
        }
    }

    const PY_BASE: &str = "def f(x: int) -> int:\n    return x\n\n\nvalue: int = f(1)\n";
    const PY_ERROR: &str = "bad: str = f(2)\n";

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn python_writes_report_exactly_the_diagnostics_they_introduce() {
        let Some(run) = check(
            "basedpyright-langserver",
            "pip install basedpyright (cargo xtask setup)",
            &[
                ("pyproject.toml", ""),
                ("app.py", PY_BASE),
                ("old.py", "x: str = 1\n"),
                ("notes.txt", ""),
            ],
            json!({}),
        ) else {
            return;
        };
        // A clean write says so, without inventing errors.
        let out = run.write("app.py", &format!("{PY_BASE}other = 2\n")).await;
        assert!(
            out.ends_with("\nNo other file uses `other` (a name scan of the project found none)."),
            "{out}"
        );
        assert!(
            without_uses(&out).ends_with(
                "The write was applied. Diagnostics (basedpyright): no new errors or warnings"
            ),
            "{out}"
        );
        // A write that introduces a type error reports exactly that error.
        let out = run.write("app.py", &format!("{PY_BASE}{PY_ERROR}")).await;
        assert!(out.starts_with("replaced app.py"), "{out}");
        let tail = out.split_once("\n\n").unwrap().1;
        assert_eq!(
            tail.lines().next().unwrap(),
            "The write was applied. Diagnostics (basedpyright): 1 new error"
        );
        assert!(tail.contains("app.py:6:12 error [reportAssignmentType] Type \"int\" is not assignable to declared type \"str\""), "{tail}");
        assert!(tail.contains("\n    bad: str = f(2)"), "{tail}");
        // The same error written again elsewhere is new (count 2).
        let out = run.write("app.py", &format!("{PY_BASE}{PY_ERROR}bad2: str = f(3)\n")).await;
        assert!(
            out.contains("1 new error (1 already known, not repeated)")
                && out.contains("app.py:7:13 error"),
            "{out}"
        );
        // Shifted four lines down, unchanged: nothing new.
        let out = run
            .write("app.py", &format!("#\n#\n#\n#\n{PY_BASE}{PY_ERROR}bad2: str = f(3)\n"))
            .await;
        assert!(
            without_uses(&out)
                .ends_with("no new errors or warnings (2 already known, not repeated)"),
            "{out}"
        );
        // Fixed, then reintroduced: new again.
        let out = run.write("app.py", PY_BASE).await;
        assert!(
            without_uses(&out).ends_with(
                "no new errors or warnings\n2 diagnostic(s) that were there before are gone (app.py)"
            ),
            "{out}"
        );
        let out = run.write("app.py", &format!("{PY_BASE}{PY_ERROR}")).await;
        assert!(out.contains("1 new error\napp.py:6:12 error"), "{out}");
        // A pre-existing error is never blamed on a write that did not cause it.
        let out = run.write("old.py", "x: str = 1\ny = 2\n").await;
        assert!(
            without_uses(&out)
                .ends_with("no new errors or warnings (1 already known, not repeated)"),
            "{out}"
        );
        // A file of a language with no server gets no diagnostics note.
        let out = run.write("notes.txt", "hello\n").await;
        assert_eq!(out, "replaced notes.txt (1 line, 6 bytes)");
        // A multi-file patch reports diagnostics of both files, after one wait.
        let patch = "--- a/old.py\n+++ b/old.py\n@@ -1,2 +1,3 @@\n x: str = 1\n y = 2\n+z: int = \"s\"\n--- /dev/null\n+++ b/fresh.py\n@@ -0,0 +1 @@\n+w: bytes = 1\n";
        let result = run.call("apply_patch", json!({"patch": patch})).await;
        assert!(
            result.text.contains(
                "2 new errors in 2 files (1 already known, not repeated)\n  old.py: 1 new error\n  fresh.py: 1 new error\n"
            ),
            "{}",
            result.text
        );
        assert!(
            result.text.contains("old.py:3:10 error")
                && result.text.contains("fresh.py:1:12 error"),
            "{}",
            result.text
        );
        assert_eq!(
            result.structured.as_ref().unwrap()["diagnostics"]["new"].as_array().unwrap().len(),
            2
        );
        run.registry.shutdown().await;
        let _ = &run.root;
    }

    const C_BASE: &str = "int f(int x) { return x; }\n\nint main(void) { return f(1); }\n";
    const C_ERROR: &str = "int g(void) { return missing; }\n";

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn c_writes_report_exactly_the_diagnostics_they_introduce() {
        let Some(run) = check(
            "clangd-16",
            "apt-get install clangd-16 (cargo xtask setup)",
            &[
                ("compile_flags.txt", "-std=c11\n"),
                ("main.c", C_BASE),
                ("old.c", "int h(void) { return gone; }\n"),
            ],
            json!({}),
        ) else {
            return;
        };
        let out = run.write("main.c", &format!("{C_BASE}{C_ERROR}")).await;
        assert!(out.contains("The write was applied. Diagnostics (clangd): 1 new error\nmain.c:4:22 error [undeclared_var_use] Use of undeclared identifier 'missing'\n    int g(void) { return missing; }"), "{out}");
        let out = run
            .write("main.c", &format!("{C_BASE}{C_ERROR}int k(void) {{ return missing; }}\n"))
            .await;
        assert!(
            out.contains("1 new error (1 already known, not repeated)\nmain.c:5:22 error"),
            "{out}"
        );
        let out = run
            .write(
                "main.c",
                &format!("\n\n\n\n{C_BASE}{C_ERROR}int k(void) {{ return missing; }}\n"),
            )
            .await;
        assert!(
            without_uses(&out)
                .ends_with("no new errors or warnings (2 already known, not repeated)"),
            "{out}"
        );
        let out = run.write("main.c", C_BASE).await;
        assert!(
            without_uses(&out).ends_with(
                "no new errors or warnings\n2 diagnostic(s) that were there before are gone (main.c)"
            ),
            "{out}"
        );
        let out = run.write("main.c", &format!("{C_BASE}{C_ERROR}")).await;
        assert!(out.contains("1 new error\nmain.c:4:22 error"), "{out}");
        let out = run.write("old.c", "int h(void) { return gone; }\nint z;\n").await;
        assert!(
            out.contains("Diagnostics (clangd): no new errors or warnings (")
                && without_uses(&out).ends_with(" already known, not repeated)"),
            "{out}"
        );
        run.registry.shutdown().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_slow_server_yields_not_verified_within_the_deadline_never_no_errors() {
        let fake = concat!(env!("CARGO_MANIFEST_DIR"), "/../lsp-tool/tests/fake/fake_lsp.py");
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join("fake.toml"), "").unwrap();
        std::fs::write(root.join("a.fk"), "x\n").unwrap();
        std::fs::write(root.join("script.json"), "{\"delay_ms\": {\"publish\": 5000}}").unwrap();
        let config: agent_tools_lsp::LspConfig = serde_json::from_value(json!({
            "on_write": {"deadline_ms": 300, "startup_wait_ms": 1500},
            "servers": {"fake": {"languages": {"fakelang": ["fk"]}, "root_markers": ["fake.toml"],
                "commands": [["python3", fake, "--script", root.join("script.json").display().to_string()]]}}
        }))
        .unwrap();
        let registry = RegistryBuilder::new()
            .with_reference_file_tools()
            .with_family(LspFamily::new(&root, config))
            .build();
        let surface = registry.surface(SurfaceKind::Build);
        let info = RunInfo::new(&root);
        let ctx = surface.context(&info, None);
        let result =
            surface.call(&ctx, "write", json!({"path": "a.fk", "content": "ERROR: x\n"})).await;
        assert!(!result.is_error);
        assert!(result.text.contains("diagnostics not verified for a.fk (fake-lsp, no diagnostics of its content before the write within 1500 ms)"), "{}", result.text);
        assert!(!result.text.contains("no new errors"), "{}", result.text);
        assert_eq!(std::fs::read_to_string(root.join("a.fk")).unwrap(), "ERROR: x\n");
        registry.shutdown().await;
    }

    /// Diagnostics on write wrap the file tools however the run was put together: attached
    /// before the file tools, the language servers still check what `write` and `edit` change.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn file_tools_registered_after_the_language_servers_are_checked_too() {
        let fake = concat!(env!("CARGO_MANIFEST_DIR"), "/../lsp-tool/tests/fake/fake_lsp.py");
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join("fake.toml"), "").unwrap();
        std::fs::write(root.join("a.fk"), "x\n").unwrap();
        let config: agent_tools_lsp::LspConfig = serde_json::from_value(json!({
            "on_write": {"deadline_ms": 15000},
            "servers": {"fake": {"languages": {"fakelang": ["fk"]}, "root_markers": ["fake.toml"],
                "commands": [["python3", fake]]}}
        }))
        .unwrap();
        let registry = RegistryBuilder::new()
            .with_family(LspFamily::new(&root, config))
            .with_reference_file_tools()
            .build();
        let surface = registry.surface(SurfaceKind::Build);
        let info = RunInfo::new(&root);
        let ctx = surface.context(&info, None);
        let write = surface.call(&ctx, "write", json!({"path": "a.fk", "content": "ERROR: one\n"}));
        let write = write.await;
        assert!(write.text.contains("Diagnostics (fake-lsp): 1 new error"), "{}", write.text);
        let edit = json!({"path": "a.fk", "old_string": "one", "new_string": "one\nERROR: two"});
        let edit = surface.call(&ctx, "edit", edit).await;
        assert!(edit.text.contains("Diagnostics (fake-lsp): 1 new error"), "{}", edit.text);
        registry.shutdown().await;
    }

    fn percentile(values: &[f64], p: f64) -> f64 {
        let mut sorted = values.to_vec();
        sorted.sort_by(|a, b| a.total_cmp(b));
        sorted[((sorted.len() - 1) as f64 * p).round() as usize]
    }

    /// The benchmark behind `cargo xtask bench diagnostics` (ignored in normal test runs).
    ///
    /// For each server, the same sequence of contents goes (a) through a minimal client (the
    /// supervisor's sync + wait for that version's diagnostics: the server's own time) and (b)
    /// through the wrapped `write` (end of the write to the finished result). The overhead is
    /// the difference; both run in the same process against the same server.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    #[ignore = "benchmark: run through `cargo xtask bench diagnostics`"]
    async fn bench_diagnostics_on_write() {
        let writes: usize = std::env::var("AGENT_TOOLS_BENCH_WRITES")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(100);
        for (program, file, base, error, files) in [
            ("basedpyright-langserver", "app.py", PY_BASE, PY_ERROR, vec![("pyproject.toml", "")]),
            ("clangd-16", "main.c", C_BASE, C_ERROR, vec![("compile_flags.txt", "-std=c11\n")]),
        ] {
            let mut all = files.clone();
            all.push((file, base));
            let Some(run) = check(program, "cargo xtask setup", &all, json!({})) else { continue };
            // Contents alternate: an error at a moving line, then clean.
            let contents: Vec<String> = (0..=writes)
                .map(|i| {
                    if i % 2 == 1 {
                        format!("{}{base}{error}", "\n".repeat(i % 7))
                    } else {
                        format!("{base}# {i}\n")
                            .replace("# ", if file.ends_with(".c") { "// " } else { "# " })
                    }
                })
                .collect();
            // (a) The minimal client: the server's own time from didChange to that version's diagnostics.
            let path = run.root.join(file);
            let cancel = tokio_util::sync::CancellationToken::new();
            let sup = agent_tools_lsp::Supervisor::new(
                &run.root,
                serde_json::from_value(json!({
                    "extra_paths": [tools_home().join("venv/bin").display().to_string()]
                }))
                .unwrap(),
            );
            let mut server_ms = Vec::new();
            for (i, text) in contents.iter().enumerate() {
                let t = Instant::now();
                let SyncOutcome::Synced(handle) = sup
                    .sync_document(
                        &path,
                        Some(text.clone()),
                        agent_tools_lsp::Save::Notify,
                        Duration::from_secs(30),
                        &cancel,
                    )
                    .await
                else {
                    panic!("{program} does not cover {file}");
                };
                sup.document_diagnostics(
                    &handle,
                    Instant::now() + Duration::from_secs(30),
                    &cancel,
                )
                .await
                .unwrap();
                if i > 0 {
                    server_ms.push(t.elapsed().as_secs_f64() * 1000.0);
                }
            }
            sup.shutdown().await;
            // (b) The wrapped write: end of the write to the result, as the wrapper measures it.
            let mut wrapper_ms = Vec::new();
            for (i, text) in contents.iter().enumerate() {
                let result = run.call("write", json!({"path": file, "content": text})).await;
                let elapsed = result.structured.as_ref().unwrap()["diagnostics"]["waited_ms"]
                    .as_f64()
                    .unwrap();
                assert!(!result.text.contains("not verified"), "{}", result.text);
                if i > 0 {
                    wrapper_ms.push(elapsed);
                }
            }
            run.registry.shutdown().await;
            let (s50, s90) = (percentile(&server_ms, 0.5), percentile(&server_ms, 0.9));
            let (w50, w90) = (percentile(&wrapper_ms, 0.5), percentile(&wrapper_ms, 0.9));
            let paired: Vec<f64> = wrapper_ms.iter().zip(&server_ms).map(|(w, s)| w - s).collect();
            #[allow(clippy::print_stdout)]
            {
                println!(
                    "bench diagnostics server={program} writes={} server_p50_ms={s50:.1} server_p90_ms={s90:.1} \
                     wrapper_p50_ms={w50:.1} wrapper_p90_ms={w90:.1} overhead_p50_ms={:.1} paired_overhead_p50_ms={:.1} paired_overhead_p90_ms={:.1}",
                    wrapper_ms.len(),
                    w50 - s50,
                    percentile(&paired, 0.5),
                    percentile(&paired, 0.9)
                );
            }
        }
    }
}
