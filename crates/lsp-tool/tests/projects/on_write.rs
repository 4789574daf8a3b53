//! Diagnostics on write: cross-file breakage named in the callers (opened or never opened) and
//! fixed again, reverts, deletes and changes made outside the tools.

use super::{trees::*, *};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signature_change_reports_the_broken_caller_in_another_python_file() {
    let Some(p) = python_package(false) else { return };
    // The test file is open (the model looked at it) and known to the ledger (written once).
    let test = p.root.join("tests/test_echo.py");
    let first = p
        .sup
        .diagnostics_after_write(
            &[WrittenFile { path: test.clone(), before: Before::Absent }],
            &agent_tools_lsp::CallScope::default(),
        )
        .await
        .expect("covered");
    assert!(first.new.is_empty() && first.not_verified.is_empty(), "{}", first.render());
    let pkg = p.root.join("src/pkg/__init__.py");
    let old = std::fs::read(&pkg).expect("read");
    p.write(
        "src/pkg/__init__.py",
        &PY_PKG.replace("def echo(message: str)", "def echo(message: str, loud: bool)"),
    );
    let report = p
        .sup
        .diagnostics_after_write(
            &[WrittenFile { path: pkg, before: Before::Contents(old.into()) }],
            &agent_tools_lsp::CallScope::default(),
        )
        .await
        .expect("covered");
    let text = report.render();
    assert!(text.contains("tests/test_echo.py:5:12 error [reportCallIssue]"), "{text}");
    assert!(text.contains("src/pkg/__init__.py:6:12 error [reportCallIssue]"), "{text}");
    p.finish().await;
}

/// Writes `caller` once (so it is open and the ledger knows it), then changes `callee` from
/// `old` to `new` and returns the section the second write reports.
async fn break_a_caller(p: &Project, caller: &str, callee: &str, old: &str, new: &str) -> String {
    // The model looked at the caller first (a cold server's first answer can take longer
    // than a write's deadline).
    p.ok_once_ready(json!({"action": "diagnostics", "file": caller})).await;
    let cancel = CancellationToken::new();
    let caller = p.root.join(caller);
    let before = std::fs::read(&caller).expect("read caller");
    let first = p
        .sup
        .diagnostics_after_write(
            &[WrittenFile { path: caller, before: Before::Contents(before.into()) }],
            &agent_tools_lsp::CallScope::new(cancel.clone()),
        )
        .await
        .expect("covered");
    assert!(first.new.is_empty() && first.not_verified.is_empty(), "{}", first.render());
    let path = p.root.join(callee);
    let text = std::fs::read_to_string(&path).expect("read callee");
    assert!(text.contains(old), "{old} in {text}");
    std::fs::write(&path, text.replace(old, new)).expect("write callee");
    let report = p
        .sup
        .diagnostics_after_write(
            &[WrittenFile { path, before: Before::Contents(text.into_bytes().into()) }],
            &agent_tools_lsp::CallScope::new(cancel.clone()),
        )
        .await
        .expect("covered");
    let out = report.render();
    eprintln!("--- after changing {callee}\n{out}");
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signature_change_reports_the_broken_caller_in_typescript() {
    let Some(p) = typescript_tree() else { return };
    let out = break_a_caller(
        &p,
        "src/main.ts",
        "src/util.ts",
        "cents: number)",
        "cents: number, currency: string)",
    )
    .await;
    assert!(
        out.contains("src/main.ts:3:30 error [2554]")
            || out.contains("src/main.ts:3:30 error [TS2554]"),
        "{out}"
    );
    p.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signature_change_reports_the_broken_caller_in_c() {
    let Some(p) = c_project(true) else { return };
    let out = break_a_caller(&p, "main.c", "area.h", "int side)", "int side, int scale)").await;
    assert!(out.contains("main.c:3:") && out.contains("Too few arguments"), "{out}");
    p.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signature_change_reports_the_broken_caller_in_go() {
    let Some(p) = Project::new(
        "gopls",
        &[
            ("go.mod", "module example.com/calls\n\ngo 1.19\n"),
            (
                "lib.go",
                "package calls\n\n// Scale multiplies.\nfunc Scale(x int) int {\n\treturn x * 2\n}\n",
            ),
            ("use.go", "package calls\n\nfunc use() int {\n\treturn Scale(3)\n}\n"),
        ],
        false,
    ) else {
        return;
    };
    let out = break_a_caller(&p, "use.go", "lib.go", "Scale(x int)", "Scale(x int, y int)").await;
    assert!(out.contains("use.go:4:") && out.contains("not enough arguments"), "{out}");
    p.finish().await;
}

/// Writes `text` to `file` as a file tool would (what it held before is known) and returns
/// the write's diagnostics; nothing was opened before.
pub(crate) async fn write_file(
    p: &Project,
    file: &str,
    text: &str,
) -> agent_tools_lsp::WriteDiagnostics {
    change_file(p, file, Some(text)).await
}

/// Writes `text` to `file` (deletes it for `None`) as a file tool would, what it held before
/// known, and returns the diagnostics of the change.
async fn change_file(
    p: &Project,
    file: &str,
    text: Option<&str>,
) -> agent_tools_lsp::WriteDiagnostics {
    let path = p.root.join(file);
    let before = std::fs::read(&path).expect("read before");
    match text {
        Some(text) => std::fs::write(&path, text).expect("write"),
        None => std::fs::remove_file(&path).expect("delete"),
    }
    let report = p
        .sup
        .diagnostics_after_write(
            &[WrittenFile { path, before: Before::Contents(before.into()) }],
            &agent_tools_lsp::CallScope::default(),
        )
        .await
        .expect("covered");
    eprintln!("--- change of {file}\n{}\n{report:?}", report.render());
    report
}

/// The user's sequence on a cold server: a signature change that breaks `callers` (never
/// opened), the revert, then what `lsp diagnostics` says of each caller.
async fn break_and_fix_unopened_callers(
    p: &Project,
    callee: &str,
    old: &str,
    new: &str,
    callers: &[&str],
    message: &str,
) {
    let original = p.read(callee);
    assert!(original.contains(old), "{old} in {original}");
    let broken = write_file(p, callee, &original.replace(old, new)).await;
    let text = broken.render();
    assert!(broken.not_verified.is_empty(), "the first write of a run is verified: {text}");
    assert!(!text.contains("no new errors"), "{text}");
    for caller in callers {
        assert!(
            broken.new.iter().any(|d| d.path == *caller && d.message.contains(message)),
            "{caller} is named with {message:?}: {text}"
        );
        assert!(broken.checked.iter().any(|c| c == caller), "{caller} checked: {text}");
    }
    let fixed = write_file(p, callee, &original).await;
    let text = fixed.render();
    assert!(fixed.new.is_empty() && fixed.complete(), "{text}");
    assert!(
        text.contains("Diagnostics (") && text.contains(": no new errors or warnings"),
        "{text}"
    );
    for caller in callers {
        assert!(fixed.fixed_in.iter().any(|c| c == caller), "{caller} reported fixed: {text}");
        let now = p.ok(json!({"action": "diagnostics", "file": caller})).await;
        assert!(!now.contains(message), "no stale diagnostics in {caller}: {now}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_callers_never_opened_are_named_broken_then_fixed() {
    let Some(p) = python_callers() else { return };
    break_and_fix_unopened_callers(
        &p,
        "src/pkg/termui.py",
        "text: str, color",
        "text: str, strict: bool, color",
        &["tests/test_utils.py", "examples/termui.py"],
        "strict",
    )
    .await;
    p.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_callers_never_opened_are_named_broken_then_fixed() {
    let Some(p) = typescript_tree() else { return };
    break_and_fix_unopened_callers(
        &p,
        "src/util.ts",
        "cents: number)",
        "cents: number, currency: string)",
        &["src/main.ts", "ajax/index.ts"],
        "Expected 2 arguments",
    )
    .await;
    p.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c_callers_never_opened_are_named_broken_then_fixed() {
    let Some(p) = Project::new(
        "clangd-16",
        &[
            (
                "compile_commands.json",
                "[{\"directory\": \"$ROOT\", \"file\": \"main.c\", \"arguments\": [\"cc\", \"-c\", \"main.c\"]}, {\"directory\": \"$ROOT\", \"file\": \"area.c\", \"arguments\": [\"cc\", \"-c\", \"area.c\"]}, {\"directory\": \"$ROOT\", \"file\": \"report.c\", \"arguments\": [\"cc\", \"-c\", \"report.c\"]}]\n",
            ),
            ("area.h", "int square_area(int side);\n"),
            (
                "area.c",
                "#include \"area.h\"\n\nint square_area(int side) { return side * side; }\n",
            ),
            ("main.c", "#include \"area.h\"\n\nint main(void) { return square_area(2); }\n"),
            (
                "report.c",
                "#include \"area.h\"\n\nint report(void) { return square_area(5) > 3; }\n",
            ),
        ],
        false,
    ) else {
        return;
    };
    break_and_fix_unopened_callers(
        &p,
        "area.h",
        "int side)",
        "int side, int scale)",
        &["main.c", "report.c"],
        "Too few arguments",
    )
    .await;
    p.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn go_callers_never_opened_are_named_broken_then_fixed() {
    let Some(p) = go_calls() else { return };
    break_and_fix_unopened_callers(
        &p,
        "lib.go",
        "Scale(x int)",
        "Scale(x int, y int)",
        &["use.go", "cmd/run/main.go"],
        "not enough arguments",
    )
    .await;
    p.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revert_made_outside_the_tools_leaves_no_stale_diagnostics() {
    let Some(p) = python_callers() else { return };
    let original = p.read("src/pkg/termui.py");
    let broken = original.replace("text: str, color", "text: str, strict: bool, color");
    let report = write_file(&p, "src/pkg/termui.py", &broken).await;
    assert!(report.new.iter().any(|d| d.path == "tests/test_utils.py"), "{}", report.render());
    // `git checkout` of the file, say: the disk is back, no tool said so.
    p.write("src/pkg/termui.py", &original);
    for caller in ["tests/test_utils.py", "examples/termui.py"] {
        let now = p.ok(json!({"action": "diagnostics", "file": caller})).await;
        assert!(now.starts_with("no errors or warnings"), "{caller}: {now}");
    }
    p.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_module_names_the_files_that_import_it() {
    let Some(p) = python_callers() else { return };
    // The server runs (a search earlier in the session); no importer was opened.
    p.ok(json!({"action": "symbols", "query": "term_len"})).await;
    let report = change_file(&p, "src/pkg/termui.py", None).await;
    let text = report.render();
    assert!(!text.contains("no new errors"), "{text}");
    // `examples/termui.py` imports `pkg.termui` by name; the package re-exports from it.
    for importer in ["tests/test_utils.py", "examples/termui.py", "src/pkg/__init__.py"] {
        assert!(report.new.iter().any(|d| d.path == importer), "{importer} named: {text}");
    }
    p.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delete_that_starts_the_server_does_not_claim_what_it_cannot_know() {
    let Some(p) = python_callers() else { return };
    let report = change_file(&p, "src/pkg/termui.py", None).await;
    let text = report.render();
    assert!(!report.complete() && !text.contains("no new errors or warnings\n"), "{text}");
    assert!(text.contains("started after it was deleted"), "{text}");
    p.finish().await;
}

/// A file the session never opened changes on disk outside the tools (a `git checkout`, a
/// formatter): the caller's diagnostics follow it both ways, with no reload.
async fn an_outside_change_reaches_the_server(
    p: &Project,
    caller: &str,
    changed: &str,
    from: &str,
    to: &str,
    error: &str,
) {
    let clean = p.ok(json!({"action": "diagnostics", "file": caller})).await;
    assert!(clean.starts_with("no errors or warnings"), "{caller} before: {clean}");
    let original = p.read(changed);
    p.write(changed, &original.replace(from, to));
    let broken = p.ok(json!({"action": "diagnostics", "file": caller})).await;
    assert!(broken.contains(error), "{caller} after {changed} changed on disk: {broken}");
    p.write(changed, &original);
    let fixed = p.ok(json!({"action": "diagnostics", "file": caller})).await;
    assert!(fixed.starts_with("no errors or warnings"), "{caller} after the revert: {fixed}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_signature_changed_outside_the_tools_in_a_file_never_opened_is_seen() {
    let Some(p) = python_callers() else { return };
    let from = "text: str, color";
    let to = "text: str, strict: bool, color";
    an_outside_change_reaches_the_server(
        &p,
        "tests/test_utils.py",
        "src/pkg/termui.py",
        from,
        to,
        "strict",
    )
    .await;
    p.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_go_signature_changed_outside_the_tools_in_a_file_never_opened_is_seen() {
    let Some(p) = go_calls() else { return };
    let (from, to) = ("Scale(x int)", "Scale(x int, y int)");
    an_outside_change_reaches_the_server(&p, "use.go", "lib.go", from, to, "not enough arguments")
        .await;
    p.finish().await;
}
