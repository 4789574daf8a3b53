//! Two runs on one [`ServerPool`] over one Python project, against a real basedpyright: one
//! server process between them, each run's ledger and documents its own, the server kept while
//! either run uses it and gone when both ended; a reload by one run is survived by the other.
//! With the scripted fake server: two runs syncing one file at once get increasing versions,
//! and the run whose version was overtaken before the server published gets the newer one's
//! diagnostics instead of waiting in vain.
//!
//! A server missing on the machine fails the test in CI and skips it loudly elsewhere.

#![allow(clippy::print_stderr)]

use std::{
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use agent_tools_lsp::{
    Before, LspArgs, LspConfig, ServerPool, Supervisor, SyncOutcome, WrittenFile,
    testing::{holders_of, process_group_alive, require_program, setup_paths},
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

fn copy_python_fixture(to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/python");
    for entry in std::fs::read_dir(from).expect("fixture dir").flatten() {
        std::fs::copy(entry.path(), to.join(entry.file_name())).expect("copy fixture");
    }
}

/// A copy of the Python fixture, or `None` after a loud skip when basedpyright is missing.
fn project() -> Option<(tempfile::TempDir, PathBuf, LspConfig)> {
    let extra = setup_paths();
    if !require_program(
        &["basedpyright-langserver"],
        &extra,
        "pip install basedpyright (cargo xtask setup)",
    ) {
        return None;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().canonicalize().expect("canonical").join("python");
    copy_python_fixture(&root);
    let config: LspConfig = serde_json::from_value(json!({"extra_paths": extra})).expect("config");
    Some((dir, root, config))
}

async fn ok(sup: &Supervisor, args: Value) -> String {
    let parsed: LspArgs = serde_json::from_value(args.clone()).expect("valid lsp args");
    match sup.call(parsed, &agent_tools_lsp::CallScope::default()).await {
        Ok(out) => {
            eprintln!("--- lsp {args}\n{}", out.text);
            out.text
        }
        Err(e) => panic!("lsp {args} failed: {e}"),
    }
}

fn hover() -> Value {
    json!({"action": "hover", "file": "main.py", "line": 5, "symbol": "make_square"})
}

fn process_gone(pid: u32) -> bool {
    !process_group_alive(pid) && !Path::new(&format!("/proc/{pid}")).exists()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_runs_on_one_pool_share_one_server_and_keep_their_own_ledgers_and_documents() {
    let Some((_dir, root, config)) = project() else { return };
    let pool = ServerPool::new();
    let a = Supervisor::with_pool(&root, config.clone(), pool.clone());
    let b = Supervisor::with_pool(&root, config, pool.clone());

    // Both answer, concurrently, from one process.
    let (hover_a, hover_b) = tokio::join!(ok(&a, hover()), ok(&b, hover()));
    for text in [&hover_a, &hover_b] {
        assert!(text.contains("def make_square(side: float) -> Square"), "{text}");
    }
    let diagnostics = json!({"action": "diagnostics", "file": "main.py"});
    let (diag_a, diag_b) = tokio::join!(ok(&a, diagnostics.clone()), ok(&b, diagnostics));
    for text in [&diag_a, &diag_b] {
        assert!(text.starts_with("1 error in main.py (basedpyright, pull"), "{text}");
    }
    let pids = pool.server_pids();
    assert_eq!(pids.len(), 1, "one server for the two runs: {pids:?}");
    assert_eq!(a.server_pids(), pids);
    assert_eq!(b.server_pids(), pids);
    let pid = pids[0];
    let main = root.join("main.py");
    assert_eq!(holders_of(&b, &main).await, Some(2), "main.py is held by both runs");
    let status = ok(&b, json!({"action": "status"})).await;
    assert!(status.contains(&format!("; pid {pid}; shared by 2 runs of this host")), "{status}");

    // A write in run A: A's ledger learns it, B's does not; shapes.py is A's alone.
    let shapes = root.join("shapes.py");
    let before: std::sync::Arc<[u8]> = std::fs::read(&shapes).expect("read shapes.py").into();
    let broken = String::from_utf8(before.to_vec())
        .unwrap()
        .replace("return self.side * self.side", "return self.side * undefined_name");
    std::fs::write(&shapes, broken).expect("write shapes.py");
    let written = [WrittenFile { path: shapes.clone(), before: Before::Contents(before) }];
    let report = a
        .diagnostics_after_write(&written, &agent_tools_lsp::CallScope::default())
        .await
        .expect("basedpyright covers shapes.py");
    eprintln!("--- write in A\n{}", report.render());
    assert!(
        report.new.iter().any(|d| d.message.contains("undefined_name")),
        "the write's new error is reported to A: {}",
        report.render()
    );
    assert!(a.ledger().lock().knows(&shapes), "A's ledger has shapes.py");
    assert!(!b.ledger().lock().knows(&shapes), "B's ledger knows nothing of A's write");
    assert_eq!(holders_of(&b, &shapes).await, Some(1), "shapes.py is held by A only");

    // A reloads the shared server: it says so, and B recovers on its next call.
    let reloaded = ok(&a, json!({"action": "reload", "file": "main.py"})).await;
    assert!(reloaded.contains("shared with 1 other run(s)"), "{reloaded}");
    assert!(process_gone(pid), "the reloaded server's old process is gone");
    assert!(ok(&b, hover()).await.contains("def make_square(side: float) -> Square"));
    let pids = pool.server_pids();
    assert_eq!(pids.len(), 1, "still one server after the reload: {pids:?}");
    let pid = pids[0];
    ok(&a, json!({"action": "diagnostics", "file": "shapes.py"})).await;
    assert_eq!(holders_of(&b, &main).await, Some(1), "after the restart B synced main.py again");
    ok(&a, hover()).await;
    assert_eq!(holders_of(&b, &main).await, Some(2));

    // A ends: the server stays for B, A's documents are closed unless B holds them too.
    a.shutdown().await;
    assert!(process_group_alive(pid), "B still uses the server");
    assert_eq!(holders_of(&b, &shapes).await, None, "shapes.py, held by A only, is closed");
    assert_eq!(holders_of(&b, &main).await, Some(1), "main.py stays open for B");
    assert!(ok(&b, hover()).await.contains("def make_square(side: float) -> Square"));
    let fresh = ok(&b, json!({"action": "diagnostics", "file": "shapes.py"})).await;
    assert!(fresh.contains("undefined_name"), "B sees the file on disk: {fresh}");

    // B ends: nobody uses the server, so it is gone.
    b.shutdown().await;
    assert!(process_gone(pid), "the server process {pid} is gone after the last run ended");
    assert!(pool.server_pids().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pool_shutdown_ends_servers_of_runs_still_attached_and_refuses_new_starts() {
    let Some((_dir, root, config)) = project() else { return };
    let pool = ServerPool::new();
    let run = Supervisor::with_pool(&root, config.clone(), pool.clone());
    ok(&run, hover()).await;
    let pids = pool.server_pids();
    assert_eq!(pids.len(), 1, "{pids:?}");
    pool.shutdown().await;
    assert!(process_gone(pids[0]), "the pool's server is gone after the pool shut down");
    let parsed: LspArgs = serde_json::from_value(hover()).unwrap();
    let refused = run.call(parsed, &agent_tools_lsp::CallScope::default()).await;
    let text = refused.map(|o| o.text).unwrap_or_else(|e| e.to_string());
    assert!(text.contains("no server starts now"), "{text}");
    run.shutdown().await;
    let late = Supervisor::with_pool(&root, config, pool.clone());
    let parsed: LspArgs = serde_json::from_value(hover()).unwrap();
    let refused = late.call(parsed, &agent_tools_lsp::CallScope::default()).await;
    assert!(refused.is_err(), "a run joining a stopped pool starts nothing");
    assert!(pool.server_pids().is_empty());
}

const FAKE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fake/fake_lsp.py");

async fn synced(sup: &Supervisor, path: &Path, text: &str) -> agent_tools_lsp::DocHandle {
    let outcome = sup
        .sync_document(
            path,
            Some(text.into()),
            agent_tools_lsp::Save::Notify,
            Duration::from_secs(10),
            &CancellationToken::new(),
        )
        .await;
    match outcome {
        SyncOutcome::Synced(handle) => handle,
        SyncOutcome::NotReady(why) => panic!("not synced: {why}"),
        SyncOutcome::NotCovered => panic!("the fake server does not cover {}", path.display()),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_whose_version_was_overtaken_by_another_run_gets_the_newer_diagnostics() {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().canonicalize().expect("canonical");
    // A server that publishes late and only what it has then, as coalescing servers do: the
    // push for the first version never comes.
    let script = root.join(".fake-script.json");
    let script_json =
        json!({"diagnostics": "push", "publish_latest": true, "delay_ms": {"publish": 400}});
    std::fs::write(&script, script_json.to_string()).expect("script");
    std::fs::write(root.join("fake.toml"), "").expect("marker");
    let file = root.join("a.fk");
    std::fs::write(&file, "fine\n").expect("source");
    let config: LspConfig = serde_json::from_value(json!({"servers": {"fake": {
        "languages": {"fakelang": ["fk"]},
        "root_markers": ["fake.toml"],
        "commands": [["python3", FAKE, "--script", script.display().to_string()]],
        "install_hint": "it is a test fake",
    }}}))
    .expect("config");
    let pool = ServerPool::new();
    let a = Supervisor::with_pool(&root, config.clone(), pool.clone());
    let b = Supervisor::with_pool(&root, config, pool.clone());

    let first = synced(&a, &file, "ERROR: from run A\n").await;
    let second = synced(&b, &file, "ERROR: from run B\n").await;
    assert_eq!((first.version(), second.version()), (1, 2), "versions rise across the runs");
    assert_eq!(pool.server_pids().len(), 1);
    let deadline = Instant::now() + Duration::from_secs(20);
    let cancel = CancellationToken::new();
    let (of_a, of_b) = tokio::join!(
        a.document_diagnostics(&first, deadline, &cancel),
        b.document_diagnostics(&second, deadline, &cancel),
    );
    let messages = |r: Result<Vec<agent_tools_lsp::diagnostics::Diagnostic>, _>| -> Vec<String> {
        r.expect("diagnostics arrive").into_iter().map(|d| d.message).collect()
    };
    assert_eq!(messages(of_b), vec!["from run B".to_string()]);
    assert_eq!(
        messages(of_a),
        vec!["from run B".to_string()],
        "A's version was overtaken: it gets the newer version's diagnostics"
    );
    let pid = pool.server_pids()[0];
    a.shutdown().await;
    b.shutdown().await;
    assert!(process_gone(pid), "the fake server is gone after both runs ended");
}
