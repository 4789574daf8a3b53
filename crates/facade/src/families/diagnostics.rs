//! Diagnostics on write: a tower-style wrapper around any file tool (`write`, `edit`,
//! `apply_patch`, or a harness's own) whose result then carries only the diagnostics the change
//! introduced.
//!
//! After the inner tool succeeds, every file it changed is sent to the language server of its
//! root (`didChange` with the new content and version, then `didSave`), and the wrapper waits
//! once, for all of them, for the diagnostics of exactly those versions, bounded by a short
//! deadline. A per-run ledger keyed by (severity, code, message) with counts, position left out,
//! decides what is new; before the first write to a file in a run, its existing diagnostics
//! enter the ledger as a baseline. The wrapper never turns a successful write into a failure and
//! never delays the write itself; what it cannot verify it says it did not verify.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    sync::Arc,
    time::{Duration, Instant},
};

use agent_tools_lsp::{
    Diagnostic, DiagnosticsWait, DocHandle, Ledger, OnWriteConfig, Supervisor, SyncOutcome,
    diagnostics::count_phrase, join_all,
};
use async_trait::async_trait;
use serde_json::{Value, json};

use crate::{CallContext, DynTool, Tool, ToolResult, ToolSpec};

/// The ledger of one run, shared by every wrapped tool.
#[derive(Clone, Default)]
pub(crate) struct RunLedger(Arc<tokio::sync::Mutex<Ledger>>);

/// A file tool with diagnostics on write.
pub(crate) struct DiagnosticsOnWrite {
    inner: DynTool,
    supervisor: Supervisor,
    ledger: RunLedger,
    options: OnWriteConfig,
}

impl DiagnosticsOnWrite {
    pub(crate) fn new(inner: DynTool, supervisor: Supervisor, ledger: RunLedger) -> Self {
        let options = supervisor.config().on_write.clone();
        DiagnosticsOnWrite { inner, supervisor, ledger, options }
    }
}

/// Paths a file tool's arguments name: `path`-like strings and the files of a patch
/// (unified diff headers or `*** Update File:` lines). Only a guess, used to remember what the
/// files held before the write; the files actually changed come from the result.
fn guess_paths(root: &Path, args: &Value) -> Vec<PathBuf> {
    let mut names: Vec<String> = Vec::new();
    if let Value::Object(map) = args {
        for key in ["path", "file_path", "file", "filename", "target_file"] {
            if let Some(Value::String(s)) = map.get(key) {
                names.push(s.clone());
            }
        }
        for key in ["patch", "diff", "input"] {
            let Some(Value::String(patch)) = map.get(key) else { continue };
            for line in patch.lines() {
                let name = line
                    .strip_prefix("--- ")
                    .or_else(|| line.strip_prefix("+++ "))
                    .map(|rest| {
                        let rest = rest.split('\t').next().unwrap_or(rest).trim();
                        rest.strip_prefix("a/").or_else(|| rest.strip_prefix("b/")).unwrap_or(rest)
                    })
                    .or_else(|| {
                        ["*** Update File: ", "*** Add File: ", "*** Delete File: "]
                            .iter()
                            .find_map(|p| line.strip_prefix(p))
                            .map(str::trim)
                    });
                if let Some(name) = name
                    && name != "/dev/null"
                    && !name.is_empty()
                {
                    names.push(name.to_string());
                }
            }
        }
    }
    let mut out: Vec<PathBuf> = Vec::new();
    for name in names {
        let path =
            if Path::new(&name).is_absolute() { PathBuf::from(&name) } else { root.join(&name) };
        let path = path
            .parent()
            .and_then(|p| std::fs::canonicalize(p).ok())
            .and_then(|p| path.file_name().map(|n| p.join(n)))
            .unwrap_or(path);
        if path.starts_with(root) && !out.contains(&path) {
            out.push(path);
        }
    }
    out
}

/// What a file held before the write: `Some(None)` it did not exist, `None` unknown.
type Before = BTreeMap<PathBuf, Option<String>>;

fn snapshot(paths: &[PathBuf]) -> Before {
    let mut before = Before::new();
    for path in paths {
        match std::fs::read(path) {
            Ok(bytes) => {
                if let Ok(text) = String::from_utf8(bytes) {
                    before.insert(path.clone(), Some(text));
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                before.insert(path.clone(), None);
            }
            Err(_) => {}
        }
    }
    before
}

/// What happened for one changed file.
enum FileOutcome {
    /// New diagnostics and how many were already known.
    Checked {
        server: String,
        new: Vec<Diagnostic>,
        known: usize,
        baseline_unknown: bool,
    },
    NotVerified {
        server: Option<String>,
        reason: String,
    },
}

fn unverified_reason(wait: &DiagnosticsWait, deadline_ms: u64) -> String {
    match wait {
        DiagnosticsWait::Timeout { indexing: Some(what), .. } => format!("server {what}"),
        DiagnosticsWait::Timeout { .. } => {
            format!("no diagnostics for the new version within {deadline_ms} ms")
        }
        DiagnosticsWait::Closed => "server exited".into(),
        DiagnosticsWait::Cancelled => "cancelled".into(),
        DiagnosticsWait::Failed(e) => e.clone(),
    }
}

impl DiagnosticsOnWrite {
    fn shown(diags: Vec<Diagnostic>) -> Vec<Diagnostic> {
        diags.into_iter().filter(|d| d.is_shown(false)).collect()
    }

    /// Syncs every changed file, waits once, updates the ledger; `None` when no server covers
    /// any of them.
    async fn check(
        &self,
        ctx: &CallContext,
        changed: &[PathBuf],
        before: &Before,
    ) -> Option<Vec<(PathBuf, FileOutcome)>> {
        let startup = Duration::from_millis(self.options.startup_wait_ms);
        let deadline_span = Duration::from_millis(self.options.deadline_ms);
        let mut ledger = self.ledger.0.lock().await;
        let mut outcomes: Vec<(PathBuf, FileOutcome)> = Vec::new();
        let mut pending: Vec<(PathBuf, DocHandle, bool)> = Vec::new();
        for path in changed {
            if !path.is_file() {
                continue;
            }
            // The baseline: what the file's diagnostics were before this run's first write to it.
            let mut baseline_unknown = false;
            if !ledger.knows(path) {
                match before.get(path) {
                    Some(None) => ledger.baseline(path, &[]),
                    Some(Some(old)) => {
                        match self
                            .supervisor
                            .sync_document(path, Some(old.clone()), false, startup, &ctx.cancel)
                            .await
                        {
                            SyncOutcome::NotCovered => continue,
                            SyncOutcome::NotReady(reason) => {
                                outcomes.push((
                                    path.clone(),
                                    FileOutcome::NotVerified { server: None, reason },
                                ));
                                continue;
                            }
                            SyncOutcome::Synced(handle) => {
                                let deadline = Instant::now() + deadline_span;
                                match self
                                    .supervisor
                                    .document_diagnostics(&handle, deadline, &ctx.cancel)
                                    .await
                                {
                                    Ok(diags) => ledger.baseline(path, &Self::shown(diags)),
                                    Err(wait) => {
                                        outcomes.push((
                                            path.clone(),
                                            FileOutcome::NotVerified {
                                                server: Some(handle.server_label()),
                                                reason: unverified_reason(
                                                    &wait,
                                                    self.options.deadline_ms,
                                                ),
                                            },
                                        ));
                                        continue;
                                    }
                                }
                            }
                        }
                    }
                    None => baseline_unknown = true,
                }
            }
            match self.supervisor.sync_document(path, None, true, startup, &ctx.cancel).await {
                SyncOutcome::NotCovered => {}
                SyncOutcome::NotReady(reason) => {
                    outcomes
                        .push((path.clone(), FileOutcome::NotVerified { server: None, reason }));
                }
                SyncOutcome::Synced(handle) => {
                    pending.push((path.clone(), handle, baseline_unknown))
                }
            }
        }
        // One wait for every file of the change.
        let deadline = Instant::now() + deadline_span;
        let waits = pending.iter().map(|(_, handle, _)| {
            self.supervisor.document_diagnostics(handle, deadline, &ctx.cancel)
        });
        let results = join_all(waits).await;
        for ((path, handle, baseline_unknown), result) in pending.into_iter().zip(results) {
            let server = handle.server_label();
            match result {
                Ok(diags) => {
                    let shown = Self::shown(diags);
                    if baseline_unknown {
                        ledger.baseline(&path, &shown);
                        outcomes.push((
                            path,
                            FileOutcome::Checked {
                                server,
                                new: Vec::new(),
                                known: shown.len(),
                                baseline_unknown,
                            },
                        ));
                    } else {
                        let delta = ledger.update(&path, &shown);
                        outcomes.push((
                            path,
                            FileOutcome::Checked {
                                server,
                                new: delta.new,
                                known: delta.known,
                                baseline_unknown,
                            },
                        ));
                    }
                }
                Err(wait) => outcomes.push((
                    path,
                    FileOutcome::NotVerified {
                        server: Some(server),
                        reason: unverified_reason(&wait, self.options.deadline_ms),
                    },
                )),
            }
        }
        if outcomes.is_empty() { None } else { Some(outcomes) }
    }

    fn render(&self, ctx: &CallContext, outcomes: &[(PathBuf, FileOutcome)]) -> (String, Value) {
        let mut new: Vec<&Diagnostic> = Vec::new();
        let mut known = 0;
        let mut servers: Vec<String> = Vec::new();
        let mut unverified: Vec<String> = Vec::new();
        let mut unknown_baseline: Vec<String> = Vec::new();
        for (path, outcome) in outcomes {
            let shown = agent_tools_lsp::paths::display_relative(&ctx.root, path);
            match outcome {
                FileOutcome::Checked { server, new: n, known: k, baseline_unknown } => {
                    new.extend(n.iter());
                    known += k;
                    if !servers.contains(server) {
                        servers.push(server.clone());
                    }
                    if *baseline_unknown {
                        unknown_baseline.push(shown);
                    }
                }
                FileOutcome::NotVerified { server, reason } => {
                    let by = server.as_deref().map(|s| format!("{s}, ")).unwrap_or_default();
                    unverified.push(format!("{shown} ({by}{reason})"));
                }
            }
        }
        let owned: Vec<Diagnostic> = new.iter().map(|d| (*d).clone()).collect();
        let mut lines = Vec::new();
        let known_note = if known > 0 {
            format!(" ({known} already known, not repeated)")
        } else {
            String::new()
        };
        if !servers.is_empty() {
            let summary = if owned.is_empty() {
                format!("no new errors or warnings{known_note}")
            } else {
                format!("{}{known_note}", count_phrase(&owned, "new"))
            };
            lines.push(format!(
                "The write was applied. Diagnostics ({}): {summary}",
                servers.join(", ")
            ));
            for d in owned.iter().take(self.options.max_shown) {
                lines.push(d.render());
            }
            if owned.len() > self.options.max_shown {
                lines.push(format!(
                    "[+{} more new diagnostics not shown; call lsp diagnostics on the file for all]",
                    owned.len() - self.options.max_shown
                ));
            }
            if !unknown_baseline.is_empty() {
                lines.push(format!(
                    "(first write to {} in this run and its earlier content is unknown: its current diagnostics were taken as the baseline)",
                    unknown_baseline.join(", ")
                ));
            }
        } else {
            lines.push("The write was applied.".into());
        }
        if !unverified.is_empty() {
            lines.push(format!("diagnostics not verified for {}", unverified.join(", ")));
        }
        let structured = json!({
            "new": owned,
            "known": known,
            "servers": servers,
            "not_verified": unverified,
        });
        (lines.join("\n"), structured)
    }
}

#[async_trait]
impl Tool for DiagnosticsOnWrite {
    fn spec(&self) -> &ToolSpec {
        self.inner.spec()
    }

    async fn call(&self, ctx: &CallContext, args: Value) -> ToolResult {
        // Remember what the named files hold (a read, no server work), then write at once.
        let before = snapshot(&guess_paths(&ctx.root, &args));
        let mut result = self.inner.call(ctx, args).await;
        if result.is_error || result.changed_files.is_empty() {
            return result;
        }
        let written = Instant::now();
        let changed: Vec<_> = result.changed_files.iter().map(|c| c.path.clone()).collect();
        let Some(outcomes) = self.check(ctx, &changed, &before).await else { return result };
        let (text, mut structured) = self.render(ctx, &outcomes);
        structured["elapsed_ms"] = json!(written.elapsed().as_secs_f64() * 1000.0);
        if !result.text.ends_with('\n') {
            result.text.push('\n');
        }
        result.text.push('\n');
        result.text.push_str(&text);
        match &mut result.structured {
            Some(Value::Object(map)) => {
                map.insert("diagnostics".into(), structured);
            }
            None => result.structured = Some(json!({"diagnostics": structured})),
            Some(_) => {}
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use agent_tools_lsp::testing::{require_program, setup_paths, tools_home};

    use super::*;
    use crate::{RegistryBuilder, RunInfo, Surface, SurfaceKind};

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
        let registry =
            RegistryBuilder::new().with_reference_file_tools().with_lsp(&root, config).build();
        let surface = registry.surface(SurfaceKind::Build);
        let info = RunInfo::new(&root);
        Some(Run { _dir: dir, root, registry, surface, info })
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
            out.ends_with(
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
            out.ends_with("no new errors or warnings (2 already known, not repeated)"),
            "{out}"
        );
        // Fixed, then reintroduced: new again.
        let out = run.write("app.py", PY_BASE).await;
        assert!(out.ends_with("no new errors or warnings"), "{out}");
        let out = run.write("app.py", &format!("{PY_BASE}{PY_ERROR}")).await;
        assert!(out.contains("1 new error\napp.py:6:12 error"), "{out}");
        // A pre-existing error is never blamed on a write that did not cause it.
        let out = run.write("old.py", "x: str = 1\ny = 2\n").await;
        assert!(
            out.ends_with("no new errors or warnings (1 already known, not repeated)"),
            "{out}"
        );
        // A file of a language with no server gets no diagnostics note.
        let out = run.write("notes.txt", "hello\n").await;
        assert_eq!(out, "replaced notes.txt (1 lines, 6 bytes)");
        // A multi-file patch reports diagnostics of both files, after one wait.
        let patch = "--- a/old.py\n+++ b/old.py\n@@ -1,2 +1,3 @@\n x: str = 1\n y = 2\n+z: int = \"s\"\n--- /dev/null\n+++ b/fresh.py\n@@ -0,0 +1 @@\n+w: bytes = 1\n";
        let result = run.call("apply_patch", json!({"patch": patch})).await;
        assert!(
            result.text.contains("2 new errors (1 already known, not repeated)"),
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
            out.ends_with("no new errors or warnings (2 already known, not repeated)"),
            "{out}"
        );
        let out = run.write("main.c", C_BASE).await;
        assert!(out.ends_with("no new errors or warnings"), "{out}");
        let out = run.write("main.c", &format!("{C_BASE}{C_ERROR}")).await;
        assert!(out.contains("1 new error\nmain.c:4:22 error"), "{out}");
        let out = run.write("old.c", "int h(void) { return gone; }\nint z;\n").await;
        assert!(
            out.contains("Diagnostics (clangd): no new errors or warnings (")
                && out.ends_with(" already known, not repeated)"),
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
            "on_write": {"deadline_ms": 300},
            "servers": {"fake": {"languages": {"fakelang": ["fk"]}, "root_markers": ["fake.toml"],
                "commands": [["python3", fake, "--script", root.join("script.json").display().to_string()]]}}
        }))
        .unwrap();
        let registry =
            RegistryBuilder::new().with_reference_file_tools().with_lsp(&root, config).build();
        let surface = registry.surface(SurfaceKind::Build);
        let info = RunInfo::new(&root);
        let ctx = surface.context(&info, None);
        let result =
            surface.call(&ctx, "write", json!({"path": "a.fk", "content": "ERROR: x\n"})).await;
        assert!(!result.is_error);
        assert!(result.text.contains("diagnostics not verified for a.fk (fake-lsp, no diagnostics for the new version within 300 ms)"), "{}", result.text);
        assert!(!result.text.contains("no new errors"), "{}", result.text);
        assert_eq!(std::fs::read_to_string(root.join("a.fk")).unwrap(), "ERROR: x\n");
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
                        true,
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
                let elapsed = result.structured.as_ref().unwrap()["diagnostics"]["elapsed_ms"]
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

    #[test]
    fn paths_are_guessed_from_path_arguments_and_patch_headers() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let args = json!({"path": "a.py", "patch": "--- a/b.py\n+++ b/b.py\n--- /dev/null\n+++ b/c.py\n*** Update File: d.py\n"});
        let names: Vec<String> = guess_paths(&root, &args)
            .iter()
            .map(|p| p.strip_prefix(&root).unwrap().display().to_string())
            .collect();
        assert_eq!(names, ["a.py", "b.py", "c.py", "d.py"]);
        assert!(guess_paths(&root, &json!({"path": "../outside.py"})).is_empty());
    }
}
