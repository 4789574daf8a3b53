//! One server and one check per real project, and cold servers that answer what exists:
//! nested markers, the project check, cold workspace symbols, a clangd named without a version.

use super::{trees::*, *};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_src_layout_package_resolves_to_itself_so_references_reach_the_tests() {
    let Some(p) = python_package(false) else { return };
    let refs = p
        .ok(json!({"action": "references", "file": "src/pkg/__init__.py", "line": 1, "symbol": "echo"}))
        .await;
    for loc in [
        "src/pkg/__init__.py:1:5",
        "src/pkg/__init__.py:6:12",
        "tests/test_echo.py:1:17",
        "tests/test_echo.py:5:12",
        "tests/test_echo.py:6:12",
        "examples/demo/run.py:3:1",
    ] {
        assert!(refs.contains(loc), "{loc} in {refs}");
    }
    // Paging: two at a time, the rest on request.
    let page = p
        .ok(json!({"action": "references", "file": "src/pkg/__init__.py", "line": 1, "symbol": "echo", "offset": 6}))
        .await;
    assert!(page.contains("[showing 7–") || page.contains("[offset 6 is past the end"), "{page}");
    // One server for the package and its examples: their markers are covered by the top one.
    let ws = p.ok(json!({"action": "symbols", "query": "shout"})).await;
    assert!(ws.contains("src/pkg/__init__.py:5:5 function shout"), "{ws}");
    assert_eq!(p.sup.server_pids().len(), 1, "nested pyproject.toml files start no servers");
    p.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_project_check_runs_once_per_project_in_the_servers_mode() {
    let Some(p) = python_package(false) else { return };
    let before = p.tree();
    let out = p.ok(json!({"action": "diagnostics", "file": "*"})).await;
    assert_eq!(out.matches("\nok: `basedpyright").count(), 1, "{out}");
    // demo passes an int to echo: reported once, with the standard mode's rule.
    assert_eq!(
        out.matches("examples/demo/run.py:3:6 error [reportArgumentType]").count(),
        1,
        "{out}"
    );
    assert!(!out.contains("reportUnusedCallResult"), "standard mode, as the server: {out}");
    assert_eq!(p.tree(), before, "the check leaves nothing in the tree");
    p.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_cold_workspace_symbols_find_what_exists_with_one_server() {
    let Some(p) = typescript_tree() else { return };
    let ws = p.ok(json!({"action": "symbols", "query": "formatPrice"})).await;
    assert!(ws.contains("src/util.ts:1:") && ws.contains(" function formatPrice"), "{ws}");
    assert_eq!(p.sup.server_pids().len(), 1, "ajax/package.json is covered by the root's config");
    let err =
        p.rename("src/util.ts", 1, "formatPrice", "1 bad-name").await.unwrap_err().to_string();
    assert!(err.contains("is not a TypeScript/JavaScript identifier"), "{err}");
    let err = p.rename("src/util.ts", 1, "formatPrice", "class").await.unwrap_err().to_string();
    assert!(err.contains("reserved word"), "{err}");
    let before = p.tree();
    let out = p.ok(json!({"action": "diagnostics", "file": "*"})).await;
    assert!(out.starts_with("project check: no errors or warnings"), "{out}");
    assert_eq!(p.tree(), before, "tsc's build info stays outside the tree");
    p.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_typescript_checker_is_reported_as_a_failure() {
    let Some(p) = Project::new(
        "typescript-language-server",
        &[("package.json", "{}\n"), ("a.ts", "export const a: number = 1;\n")],
        false,
    ) else {
        return;
    };
    let out = p.ok(json!({"action": "diagnostics", "file": "*"})).await;
    assert!(
        out.starts_with("project check: nothing could run")
            || out.starts_with("project check FAILED"),
        "{out}"
    );
    assert!(out.contains("no tsconfig.json"), "{out}");
    p.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cold_clangd_named_without_a_version_answers_a_definition_and_sees_open_headers() {
    // Debian's `clangd` is an alternative for some clangd-N: its version is probed, so an
    // open header's text (not the disk's) is what including files see from 16 on.
    let Some(clangd) = which("clangd-16") else {
        assert!(!agent_tools_lsp::testing::in_ci(), "clangd-16 is missing in CI");
        eprintln!("\n!!! SKIPPED: clangd-16 is not installed !!!\n");
        return;
    };
    let link = move |bin: &Path| {
        std::os::unix::fs::symlink(&clangd, bin.join("clangd")).expect("symlink clangd");
    };
    let files = [
        (
            "compile_commands.json",
            "[{\"directory\": \"$ROOT\", \"file\": \"main.c\", \"arguments\": [\"cc\", \"-c\", \"main.c\"]}]\n",
        ),
        ("area.h", "int square_area(int side);\n"),
        ("main.c", "#include \"area.h\"\n\nint main(void) { return square_area(2); }\n"),
    ];
    let Some(p) = Project::with_bin("clangd-16", &files, false, Some(&link)) else { return };
    // The first call of the run, on a cold server: answered, not "not ready".
    let out = p
        .ok(json!({"action": "definition", "file": "main.c", "line": 3, "symbol": "square_area"}))
        .await;
    assert!(out.contains("area.h:1:5"), "{out}");
    let pids = p.sup.server_pids();
    assert_eq!(pids.len(), 1, "one clangd");
    let cmdline = std::fs::read(format!("/proc/{}/cmdline", pids[0])).expect("cmdline");
    let args: Vec<String> =
        cmdline.split(|b| *b == 0).map(|a| String::from_utf8_lossy(a).to_string()).collect();
    assert!(args[0].ends_with("/clangd"), "the bare name runs: {args:?}");
    assert!(args.iter().any(|a| a == "--use-dirty-headers"), "{args:?}");
    p.finish().await;
}

/// A call's scope hears what the servers do as it happens: the cold start of the first call,
/// then the server's own progress titles while it indexes, without asking the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cold_call_tells_its_caller_that_the_server_is_starting_and_what_it_indexes() {
    struct Heard(parking_lot::Mutex<Vec<String>>);
    impl agent_tools_lsp::Progress for Heard {
        fn report(&self, _elapsed_seconds: f64, message: &str) {
            self.0.lock().push(message.to_string());
        }
    }
    let Some(p) = typescript_tree() else { return };
    let heard = std::sync::Arc::new(Heard(parking_lot::Mutex::default()));
    let scope =
        agent_tools_lsp::CallScope::new(CancellationToken::new()).with_progress(heard.clone());
    let _ = p.sup.call(LspArgs::symbols("greet"), &scope).await;
    let heard = heard.0.lock().clone();
    assert!(
        heard.iter().any(|m| m.starts_with("lsp symbols: ") && m.contains("): starting")),
        "the cold start is told to the caller: {heard:?}"
    );
}
