//! The supervisor against real servers (basedpyright, typescript-language-server, clangd,
//! gopls) on the fixture projects: navigation, diagnostics, rename, status, reload, a SIGKILL
//! between two calls, and no process left after shutdown.
//!
//! A server missing on the machine fails the test in CI and skips it loudly elsewhere
//! (`cargo xtask setup` installs them all).

#![allow(clippy::print_stderr)]

use std::{
    path::{Path, PathBuf},
    time::Duration,
};

use agent_tools_lsp::{
    LspArgs, LspConfig, LspError, RenameArgs, Supervisor,
    testing::{process_group_alive, require_program, setup_paths},
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

pub(crate) struct Real {
    _dir: tempfile::TempDir,
    root: PathBuf,
    sup: Supervisor,
}

impl Real {
    pub(crate) async fn call(&self, args: Value) -> Result<String, LspError> {
        let parsed: LspArgs = serde_json::from_value(args).expect("valid lsp args");
        self.sup.call(parsed, &agent_tools_lsp::CallScope::default()).await.map(|o| o.text)
    }

    pub(crate) async fn ok(&self, args: Value) -> String {
        match self.call(args.clone()).await {
            Ok(text) => {
                eprintln!("--- lsp {args}\n{text}");
                text
            }
            Err(e) => panic!("lsp {args} failed: {e}"),
        }
    }

    async fn rename(&self, file: &str, line: u32, symbol: &str, new_name: &str) -> String {
        let args: RenameArgs = serde_json::from_value(
            json!({"file": file, "line": line, "symbol": symbol, "new_name": new_name}),
        )
        .expect("rename args");
        match self.sup.rename(args, &agent_tools_lsp::CallScope::default()).await {
            Ok(out) => {
                eprintln!("--- lsp_rename {symbol} -> {new_name}\n{}", out.text);
                out.text
            }
            Err(e) => panic!("lsp_rename failed: {e}"),
        }
    }

    fn read(&self, file: &str) -> String {
        std::fs::read_to_string(self.root.join(file)).expect("read fixture file")
    }

    pub(crate) async fn finish(self) {
        let pids = self.sup.server_pids();
        self.sup.shutdown().await;
        for pid in pids {
            assert!(!process_group_alive(pid), "server group {pid} survived the shutdown");
        }
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("fixture dir").flatten() {
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).expect("copy fixture");
        }
    }
}

/// A fresh copy of the fixture project of `language` with a supervisor, or `None` (after a
/// loud skip) when its server is not installed here. In CI a missing server fails the test.
pub(crate) fn check(language: &str) -> Option<Real> {
    let (program, how) = match language {
        "python" => ("basedpyright-langserver", "pip install basedpyright (cargo xtask setup)"),
        "typescript" => (
            "typescript-language-server",
            "npm install typescript-language-server@5 typescript@5 (cargo xtask setup)",
        ),
        "c" => ("clangd-16", "apt-get install clangd-16 (cargo xtask setup)"),
        "go" => ("gopls", "apt-get install gopls golang-go (cargo xtask setup)"),
        other => panic!("no fixture for {other}"),
    };
    let extra = setup_paths();
    let programs: &[&str] = if language == "c" { &[program, "clangd"] } else { &[program] };
    if !require_program(programs, &extra, how) {
        return None;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().canonicalize().expect("canonical").join(language);
    copy_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(language), &root);
    // clangd's background index (cross-file references, rename) needs an absolute directory.
    let cdb = root.join("compile_commands.json");
    if let Ok(text) = std::fs::read_to_string(&cdb) {
        let absolute =
            text.replace("\"directory\": \".\"", &format!("\"directory\": \"{}\"", root.display()));
        std::fs::write(&cdb, absolute).expect("write compile_commands.json");
    }
    let config: LspConfig = serde_json::from_value(json!({"extra_paths": extra})).expect("config");
    let sup = Supervisor::new(&root, config);
    Some(Real { _dir: dir, root, sup })
}

/// Status before first use, after it, reload, and a SIGKILL between two calls.
async fn lifecycle(real: Real, file: &str, line: u32, symbol: &str, expect: &str) {
    let before = real.ok(json!({"action": "status"})).await;
    assert!(before.contains("— not started"), "{before}");
    let args = json!({"action": "definition", "file": file, "line": line, "symbol": symbol});
    assert!(real.ok(args.clone()).await.contains(expect));
    let after = real.ok(json!({"action": "status"})).await;
    // clangd answers a definition while its background index still runs.
    let running = after.contains("— ready") || after.contains("— indexing");
    assert!(running && after.contains("; pid "), "{after}");
    let first = real.sup.server_pids()[0];
    let reloaded = real.ok(json!({"action": "reload", "file": file})).await;
    assert!(reloaded.starts_with("reloaded the "), "{reloaded}");
    assert!(!process_group_alive(first), "the reloaded server's old process is gone");
    let second = real.sup.server_pids()[0];
    assert!(real.ok(args.clone()).await.contains(expect));
    // SAFETY: sending a signal has no memory-safety preconditions.
    unsafe { libc::killpg(second as libc::pid_t, libc::SIGKILL) };
    for _ in 0..200 {
        if !process_group_alive(second) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let again = real.ok(args).await;
    assert!(again.contains(expect), "the call after a SIGKILL answers: {again}");
    let status = real.ok(json!({"action": "status"})).await;
    // A restarted clangd may still be indexing in the background when it answers.
    let running = status.contains("— ready") || status.contains("— indexing");
    assert!(status.contains("crashed 1 time(s)") && running, "{status}");
    real.finish().await;
}

// ---------------------------------------------------------------- python (basedpyright)

/// `cargo xtask soak --seed 38` found it: once a `references` call was cancelled while
/// basedpyright worked on it, the server failed every later one ("this._token.cancel is not a
/// function") until it restarted. Calls cancelled at every moment from at once to 300 ms.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_references_answer_after_cancelled_ones() {
    let Some(real) = check("python") else { return };
    let args =
        json!({"action": "references", "file": "shapes.py", "line": 19, "symbol": "make_square"});
    assert!(real.ok(args.clone()).await.contains("main.py:5:14"));
    for delay in (0..=300).step_by(10) {
        let cancel = CancellationToken::new();
        let trigger = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(delay)).await;
            trigger.cancel();
        });
        let parsed: LspArgs = serde_json::from_value(args.clone()).expect("valid lsp args");
        let _ = real.sup.call(parsed, &agent_tools_lsp::CallScope::new(cancel.clone())).await;
        let again = real.call(args.clone()).await;
        assert!(
            again.as_ref().is_ok_and(|text| text.contains("main.py:5:14")),
            "references after one cancelled at {delay} ms: {again:?}"
        );
    }
    real.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_navigation() {
    let Some(real) = check("python") else { return };
    let def = real
        .ok(json!({"action": "definition", "file": "main.py", "line": 5, "symbol": "make_square"}))
        .await;
    assert!(def.contains("shapes.py:19:5  def make_square(side: float) -> Square:"), "{def}");
    let refs = real.ok(json!({"action": "references", "file": "shapes.py", "line": 19, "symbol": "make_square"})).await;
    for loc in ["shapes.py:19:5", "main.py:1:20", "main.py:5:14"] {
        assert!(refs.contains(loc), "{loc} in {refs}");
    }
    let hover = real
        .ok(json!({"action": "hover", "file": "main.py", "line": 5, "symbol": "make_square"}))
        .await;
    assert!(
        hover.contains("def make_square(side: float) -> Square")
            && hover.contains("Build a square."),
        "{hover}"
    );
    let ty = real
        .ok(json!({"action": "type_definition", "file": "main.py", "line": 6, "symbol": "square"}))
        .await;
    assert!(ty.contains("shapes.py:11:7  class Square(Shape):"), "{ty}");
    let outline = real.ok(json!({"action": "symbols", "file": "shapes.py"})).await;
    assert!(
        outline.contains("4:7 class Shape")
            && outline.contains("  15:9 method area")
            && outline.contains("19:5 function make_square"),
        "{outline}"
    );
    let ws = real.ok(json!({"action": "symbols", "query": "make_square"})).await;
    assert!(ws.contains("shapes.py:19:5 function make_square"), "{ws}");
    real.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_diagnostics() {
    let Some(real) = check("python") else { return };
    let out = real.ok(json!({"action": "diagnostics", "file": "main.py"})).await;
    assert!(out.starts_with("1 error in main.py (basedpyright, pull"), "{out}");
    assert!(
        out.contains("main.py:9:14 error [reportAssignmentType]")
            && out.contains("label: str = total_area(3)"),
        "{out}"
    );
    let clean = real.ok(json!({"action": "diagnostics", "file": "shapes.py"})).await;
    assert!(clean.starts_with("no errors or warnings in shapes.py"), "{clean}");
    real.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_rename_across_two_files() {
    let Some(real) = check("python") else { return };
    let out = real.rename("main.py", 5, "make_square", "build_square").await;
    assert!(
        out.contains("3 edit(s) in 2 file(s)")
            && out.contains("main.py: 2 edit(s)")
            && out.contains("shapes.py: 1 edit(s)"),
        "{out}"
    );
    assert!(real.read("shapes.py").contains("def build_square(side: float)"));
    assert!(real.read("main.py").contains("from shapes import build_square"));
    let def = real
        .ok(json!({"action": "definition", "file": "main.py", "line": 5, "symbol": "build_square"}))
        .await;
    assert!(def.contains("shapes.py:19:5"), "the server sees the renamed files: {def}");
    real.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_lifecycle() {
    let Some(real) = check("python") else { return };
    lifecycle(real, "main.py", 5, "make_square", "shapes.py:19:5").await;
}

// ---------------------------------------------------------------- typescript (tsls + typescript 5)

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_navigation() {
    let Some(real) = check("typescript") else { return };
    let def = real.ok(json!({"action": "definition", "file": "src/main.ts", "line": 4, "symbol": "makeSquare"})).await;
    assert!(
        def.contains("src/shapes.ts:13:17  export function makeSquare(side: number): Square {"),
        "{def}"
    );
    let refs = real.ok(json!({"action": "references", "file": "src/shapes.ts", "line": 13, "symbol": "makeSquare"})).await;
    for loc in ["src/shapes.ts:13:17", "src/main.ts:1:10", "src/main.ts:4:25"] {
        assert!(refs.contains(loc), "{loc} in {refs}");
    }
    let hover = real
        .ok(json!({"action": "hover", "file": "src/main.ts", "line": 4, "symbol": "makeSquare"}))
        .await;
    assert!(hover.contains("makeSquare(side: number): Square"), "{hover}");
    let imp = real.ok(json!({"action": "implementation", "file": "src/shapes.ts", "line": 1, "symbol": "Shape"})).await;
    assert!(imp.contains("src/shapes.ts:5:14  export class Square implements Shape {"), "{imp}");
    let ty = real.ok(json!({"action": "type_definition", "file": "src/main.ts", "line": 5, "symbol": "square"})).await;
    assert!(ty.contains("src/shapes.ts:1:18"), "{ty}");
    let outline = real.ok(json!({"action": "symbols", "file": "src/shapes.ts"})).await;
    assert!(
        outline.contains("1:18 interface Shape") && outline.contains("13:17 function makeSquare"),
        "{outline}"
    );
    let ws = real.ok(json!({"action": "symbols", "query": "makeSquare"})).await;
    assert!(ws.contains("src/shapes.ts:13:1 function makeSquare"), "{ws}");
    real.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_diagnostics() {
    let Some(real) = check("typescript") else { return };
    let out = real.ok(json!({"action": "diagnostics", "file": "src/main.ts"})).await;
    assert!(out.starts_with("1 error in src/main.ts (typescript-language-server, pull"), "{out}");
    assert!(
        out.contains(
            "src/main.ts:8:7 error [2322] Type 'number' is not assignable to type 'string'."
        ),
        "{out}"
    );
    real.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_rename_across_two_files() {
    let Some(real) = check("typescript") else { return };
    let out = real.rename("src/main.ts", 4, "makeSquare", "buildSquare").await;
    assert!(out.contains("3 edit(s) in 2 file(s)"), "{out}");
    assert!(real.read("src/shapes.ts").contains("export function buildSquare(side: number)"));
    assert!(real.read("src/main.ts").contains("import { buildSquare, Shape }"));
    real.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_lifecycle() {
    let Some(real) = check("typescript") else { return };
    lifecycle(real, "src/main.ts", 4, "makeSquare", "src/shapes.ts:13:17").await;
}

// ---------------------------------------------------------------- c (clangd)

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c_navigation() {
    let Some(real) = check("c") else { return };
    let def = real
        .ok(json!({"action": "definition", "file": "main.c", "line": 6, "symbol": "square_area"}))
        .await;
    assert!(def.contains("shapes.c:3:8") || def.contains("shapes.h:8:8"), "{def}");
    let refs = real
        .ok(json!({"action": "references", "file": "main.c", "line": 6, "symbol": "square_area"}))
        .await;
    for loc in ["main.c:6:20", "shapes.h:8:8"] {
        assert!(refs.contains(loc), "{loc} in {refs}");
    }
    let hover = real
        .ok(json!({"action": "hover", "file": "main.c", "line": 6, "symbol": "square_area"}))
        .await;
    assert!(hover.contains("double square_area(const struct square *s)"), "{hover}");
    let ty = real
        .ok(json!({"action": "type_definition", "file": "main.c", "line": 6, "symbol": "sq"}))
        .await;
    assert!(ty.contains("shapes.h:4:8  struct square {"), "{ty}");
    let outline = real.ok(json!({"action": "symbols", "file": "main.c"})).await;
    assert!(outline.contains("4:5 function main"), "{outline}");
    let ws = real.ok(json!({"action": "symbols", "query": "square_area"})).await;
    assert!(ws.contains("function square_area"), "{ws}");
    real.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c_diagnostics() {
    let Some(real) = check("c") else { return };
    let out = real.ok(json!({"action": "diagnostics", "file": "main.c"})).await;
    assert!(out.starts_with("1 error in main.c (clangd, push"), "{out}");
    assert!(
        out.contains(
            "main.c:7:18 error [undeclared_var_use] Use of undeclared identifier 'missing_value'"
        ),
        "{out}"
    );
    real.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c_rename_across_two_files() {
    let Some(real) = check("c") else { return };
    let out = real.rename("main.c", 6, "square_area", "compute_area").await;
    assert!(out.contains("main.c: 1 edit(s)") && out.contains("shapes.h: 1 edit(s)"), "{out}");
    assert!(real.read("main.c").contains("compute_area(&sq)"));
    assert!(real.read("shapes.h").contains("double compute_area(const struct square *s);"));
    real.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c_lifecycle() {
    let Some(real) = check("c") else { return };
    lifecycle(real, "main.c", 6, "square_area", "square_area").await;
}

// ---------------------------------------------------------------- go (gopls)

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn go_navigation() {
    let Some(real) = check("go") else { return };
    let def = real
        .ok(json!({"action": "definition", "file": "main.go", "line": 6, "symbol": "MakeSquare"}))
        .await;
    assert!(def.contains("shapes.go:19:6  func MakeSquare(side float64) Square {"), "{def}");
    let refs = real.ok(json!({"action": "references", "file": "shapes.go", "line": 19, "symbol": "MakeSquare"})).await;
    for loc in ["shapes.go:19:6", "main.go:6:8"] {
        assert!(refs.contains(loc), "{loc} in {refs}");
    }
    let hover = real
        .ok(json!({"action": "hover", "file": "main.go", "line": 6, "symbol": "MakeSquare"}))
        .await;
    assert!(hover.contains("func MakeSquare(side float64) Square"), "{hover}");
    let imp = real
        .ok(json!({"action": "implementation", "file": "shapes.go", "line": 4, "symbol": "Shape"}))
        .await;
    assert!(imp.contains("shapes.go:9:6  type Square struct {"), "{imp}");
    let ty = real
        .ok(json!({"action": "type_definition", "file": "main.go", "line": 7, "symbol": "sq"}))
        .await;
    assert!(ty.contains("shapes.go:9:6"), "{ty}");
    let outline = real.ok(json!({"action": "symbols", "file": "shapes.go"})).await;
    assert!(
        outline.contains("4:6 interface Shape") && outline.contains("19:6 function MakeSquare"),
        "{outline}"
    );
    let ws = real.ok(json!({"action": "symbols", "query": "MakeSquare"})).await;
    assert!(ws.contains("shapes.go:19:6 function MakeSquare"), "{ws}");
    real.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn go_diagnostics() {
    let Some(real) = check("go") else { return };
    let out = real.ok(json!({"action": "diagnostics", "file": "main.go"})).await;
    assert!(out.starts_with("1 error in main.go (gopls, push"), "{out}");
    assert!(out.contains("main.go:8:18 error") && out.contains("\"three\""), "{out}");
    real.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn go_rename_across_two_files() {
    let Some(real) = check("go") else { return };
    let out = real.rename("main.go", 6, "MakeSquare", "BuildSquare").await;
    // gopls also renames the doc comment that starts with the name.
    assert!(out.contains("3 edit(s) in 2 file(s)") && out.contains("main.go: 1 edit(s)"), "{out}");
    assert!(real.read("shapes.go").contains("// BuildSquare builds a square."));
    assert!(real.read("shapes.go").contains("func BuildSquare(side float64) Square"));
    assert!(real.read("main.go").contains("sq := BuildSquare(2)"));
    real.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn go_lifecycle() {
    let Some(real) = check("go") else { return };
    lifecycle(real, "main.go", 6, "MakeSquare", "shapes.go:19:6").await;
}

// ---------------------------------------------------------------- the project check

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_project_check_parses_the_checkers_output() {
    for (language, expect) in [
        ("python", "main.py:9:14 error [reportAssignmentType]"),
        ("typescript", "src/main.ts:8:7 error [TS2322]"),
        ("go", "main.go:8:18 error"),
    ] {
        let Some(real) = check(language) else { continue };
        let out = real.ok(json!({"action": "diagnostics", "file": "*"})).await;
        assert!(out.contains(expect), "{language}: {out}");
        real.finish().await;
    }
}

/// Every `preamble-*.pch` under `dir`, at any depth.
fn preambles(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            found.extend(preambles(&path));
        } else if path.extension().is_some_and(|e| e == "pch") {
            found.push(path);
        }
    }
    found
}

/// `cargo xtask soak` found it (23 files in 15 minutes): a SIGKILLed clangd cannot remove its
/// preamble (`preamble-*.pch`) from the temp folder. The pool's servers now get a temp folder
/// of their own, removed with the pool: after the run no preamble is left.
///
/// A plain test that sets `TMPDIR` before any thread starts (nextest runs each test in its own
/// process).
#[test]
fn a_killed_clangd_leaves_no_preamble_in_the_temp_folder() {
    let temp = tempfile::tempdir().expect("temp dir");
    // SAFETY: no other thread runs yet in this test's process.
    unsafe { std::env::set_var("TMPDIR", temp.path()) };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let Some(real) = check("c") else { return };
        let args = json!({"action": "diagnostics", "file": "main.c"});
        assert!(real.ok(args.clone()).await.contains("missing_value"));
        let mut written = Vec::new();
        for _ in 0..600 {
            written = preambles(temp.path());
            if !written.is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(!written.is_empty(), "clangd wrote its preamble under TMPDIR");
        let pid = real.sup.server_pids()[0];
        // SAFETY: sending a signal has no memory-safety preconditions.
        unsafe { libc::killpg(pid as libc::pid_t, libc::SIGKILL) };
        for _ in 0..200 {
            if !process_group_alive(pid) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        assert!(real.ok(args).await.contains("missing_value"), "the restarted clangd answers");
        real.finish().await;
    });
    drop(runtime);
    let left = preambles(temp.path());
    assert!(left.is_empty(), "preambles left in TMPDIR after the run: {left:?}");
}
