//! The supervisor against a scripted fake server: what real servers do rarely (never answering,
//! push-only, pull-only, crashing at start, indexing, ignoring `exit`) and Dart, which cannot be
//! installed offline.

use std::{path::PathBuf, time::Duration};

use agent_tools_lsp::{
    Action, LspArgs, LspConfig, LspError, LspOutput, RenameArgs, Supervisor, SyncOutcome,
    testing::process_group_alive,
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const FAKE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fake/fake_lsp.py");

struct Project {
    _dir: tempfile::TempDir,
    root: PathBuf,
    sup: Supervisor,
}

impl Project {
    async fn call(&self, args: Value) -> Result<LspOutput, LspError> {
        let args: LspArgs = serde_json::from_value(args).expect("valid lsp args");
        self.sup.call(args, &agent_tools_lsp::CallScope::default()).await
    }

    async fn ok(&self, args: Value) -> String {
        match self.call(args.clone()).await {
            Ok(out) => out.text,
            Err(e) => panic!("lsp {args} failed: {e}"),
        }
    }

    async fn err(&self, args: Value) -> String {
        match self.call(args.clone()).await {
            Ok(out) => panic!("lsp {args} should fail, but answered: {}", out.text),
            Err(e) => e.to_string(),
        }
    }

    /// Shuts down and asserts that no process of any server is left.
    async fn finish(self) {
        let pids = self.sup.server_pids();
        self.sup.shutdown().await;
        for pid in pids {
            assert!(!process_group_alive(pid), "server group {pid} survived the shutdown");
        }
    }
}

/// A project with `files`, a fake server for `*.fk` files (marker `fake.toml`) driven by
/// `script`, and `config` merged into the `[lsp]` section.
fn check(script: Value, files: &[(&str, &str)], config: Value) -> Project {
    check_serving(script, files, config, json!({"fakelang": ["fk"]}))
}

/// [`check`] with the fake serving `languages` (`{"python": ["py"]}`); a built-in server of
/// those languages is disabled.
fn check_serving(
    script: Value,
    files: &[(&str, &str)],
    config: Value,
    languages: Value,
) -> Project {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().canonicalize().expect("canonical");
    for (path, text) in files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }
    let script_path = root.join(".fake-script.json");
    std::fs::write(&script_path, script.to_string()).expect("script");
    let mut section = json!({
        "request_timeout_ms": 10000,
        "servers": {"fake": {
            "languages": languages.clone(),
            "root_markers": ["fake.toml"],
            "commands": [["python3", FAKE, "--script", script_path.display().to_string()]],
            "install_hint": "it is a test fake",
            "settings": {"fake": {"answer": 42}},
        }}
    });
    for language in languages.as_object().into_iter().flat_map(|l| l.keys()) {
        if language != "fakelang" {
            section["servers"][language] = json!({"disabled": true});
        }
    }
    if let (Value::Object(base), Value::Object(extra)) = (&mut section, config) {
        for (k, v) in extra {
            base.insert(k, v);
        }
    }
    let config: LspConfig = serde_json::from_value(section).expect("config");
    let sup = Supervisor::new(&root, config);
    Project { _dir: dir, root, sup }
}

const SOURCE: &str = "def greet\nname = 1\ngreet(name) ERROR: broken here\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_answers_times_out_with_a_clear_message() {
    let p = check(
        json!({"never_answer": ["textDocument/definition"]}),
        &[("fake.toml", ""), ("a.fk", SOURCE)],
        json!({"request_timeout_ms": 800}),
    );
    let err =
        p.err(json!({"action": "definition", "file": "a.fk", "line": 3, "symbol": "greet"})).await;
    assert!(err.contains("did not answer within 800 ms"), "{err}");
    assert!(err.contains("`reload`"), "{err}");
    // The server is still usable for what it does answer.
    let hover =
        p.ok(json!({"action": "hover", "file": "a.fk", "line": 3, "symbol": "greet"})).await;
    assert!(hover.contains("fake hover: `greet`"), "{hover}");
    p.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_only_diagnostics_are_taken_for_the_version_sent() {
    let p =
        check(json!({"diagnostics": "push"}), &[("fake.toml", ""), ("a.fk", SOURCE)], json!({}));
    let out = p.ok(json!({"action": "diagnostics", "file": "a.fk"})).await;
    assert_eq!(
        out,
        "1 error in a.fk (fake-lsp, push):\na.fk:3:13 error [E1] broken here\n    greet(name) ERROR: broken here"
    );
    // An edit made outside the tools is seen on the next call.
    std::fs::write(p.root.join("a.fk"), "def greet\nWARN: careful\n").expect("edit");
    let out = p.ok(json!({"action": "diagnostics", "file": "a.fk"})).await;
    assert!(out.starts_with("1 warning in a.fk"), "{out}");
    let status = p.ok(json!({"action": "status"})).await;
    assert!(status.contains("diagnostics: push"), "{status}");
    p.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pull_only_diagnostics_are_pulled_static_or_dynamically_registered() {
    for script in
        [json!({"diagnostics": "pull"}), json!({"diagnostics": "pull", "pull_dynamic": true})]
    {
        let p = check(script.clone(), &[("fake.toml", ""), ("a.fk", SOURCE)], json!({}));
        let out = p.ok(json!({"action": "diagnostics", "file": "a.fk"})).await;
        assert!(out.starts_with("1 error in a.fk (fake-lsp, pull)"), "{script}: {out}");
        std::fs::write(p.root.join("a.fk"), "def greet\n").expect("fix");
        let out = p.ok(json!({"action": "diagnostics", "file": "a.fk"})).await;
        assert!(out.starts_with("no errors or warnings in a.fk (fake-lsp, pull"), "{out}");
        p.finish().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_versionless_push_after_the_change_is_taken() {
    let p = check(json!({"versionless": true}), &[("fake.toml", ""), ("a.fk", SOURCE)], json!({}));
    let out = p.ok(json!({"action": "diagnostics", "file": "a.fk"})).await;
    assert!(out.starts_with("1 error in a.fk"), "{out}");
    std::fs::write(p.root.join("a.fk"), "x\nERROR: two\nERROR: three\n").expect("edit");
    let out = p.ok(json!({"action": "diagnostics", "file": "a.fk"})).await;
    assert!(out.starts_with("2 errors in a.fk"), "{out}");
    p.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_diagnostics_are_reported_as_not_verified_never_as_no_errors() {
    let p = check(
        json!({"delay_ms": {"publish": 4000}}),
        &[("fake.toml", ""), ("a.fk", SOURCE)],
        json!({"diagnostics_timeout_ms": 300}),
    );
    let err = p.err(json!({"action": "diagnostics", "file": "a.fk"})).await;
    assert!(err.contains("not verified"), "{err}");
    assert!(err.contains("not the same as \"no errors\""), "{err}");
    p.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_crashes_at_start_is_reported_with_its_stderr_and_restarts_are_capped() {
    let p = check(
        json!({"crash_at_start": true}),
        &[("fake.toml", ""), ("a.fk", SOURCE)],
        json!({"max_restarts_per_minute": 2}),
    );
    let args = json!({"action": "hover", "file": "a.fk", "line": 1, "symbol": "greet"});
    let err = p.err(args.clone()).await;
    assert!(err.contains("exited during initialize"), "{err}");
    assert!(err.contains("fake-lsp: configured to crash at start"), "{err}");
    for _ in 0..2 {
        let again = p.err(args.clone()).await;
        assert!(again.contains("exited during initialize"), "{again}");
    }
    let capped = p.err(args.clone()).await;
    assert!(capped.contains("restarted 2 times in the last minute; not restarting"), "{capped}");
    let status = p.ok(json!({"action": "status"})).await;
    assert!(
        status.contains("crashed; crashed 3 time(s)") || status.contains("crashed 3 time(s)"),
        "{status}"
    );
    p.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_still_indexing_answers_what_it_has_and_says_it_may_be_partial() {
    let p = check(
        json!({"progress_ms": 5000}),
        &[("fake.toml", ""), ("a.fk", SOURCE)],
        json!({"ready_timeout_ms": 300}),
    );
    // The first call starts the server; its indexing begins right after `initialized`.
    let _ = p.call(json!({"action": "status"})).await;
    let mut answer = String::new();
    for _ in 0..20 {
        let out = p
            .call(json!({"action": "references", "file": "a.fk", "line": 3, "symbol": "name"}))
            .await
            .unwrap_or_else(|e| panic!("an answer, not a refusal: {e}"))
            .text;
        if out.contains("may be partial") {
            answer = out;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        answer.contains("reference(s) to `name`")
            && answer.contains("(may be partial: the server is still indexing (10%): Indexing"),
        "{answer}"
    );
    p.finish().await;
}

/// A FIFO named like a source file (nobody writes it) is refused at once by every action that
/// reads the file, instead of blocking the call forever; the server stays usable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fifo_named_like_a_source_file_is_refused_at_once() {
    let p = check(json!({}), &[("fake.toml", ""), ("a.fk", SOURCE)], json!({}));
    let fifo = p.root.join("pipe.fk");
    let status = std::process::Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(status.success());
    for args in [
        json!({"action": "hover", "file": "pipe.fk", "line": 1, "symbol": "greet"}),
        json!({"action": "diagnostics", "file": "pipe.fk"}),
        json!({"action": "symbols", "file": "pipe.fk"}),
    ] {
        // A guard against a hang, not a timing expectation: a blocked read never returns.
        let answer = tokio::time::timeout(Duration::from_secs(120), p.call(args.clone()))
            .await
            .unwrap_or_else(|_| panic!("lsp {args} blocked on the FIFO"));
        let text = match answer {
            Ok(out) => out.text,
            Err(e) => e.to_string(),
        };
        assert!(
            text.contains("FIFO")
                || text.contains("not a regular file")
                || text.contains("not a file"),
            "{args}: {text}"
        );
    }
    let hover =
        p.ok(json!({"action": "hover", "file": "a.fk", "line": 3, "symbol": "greet"})).await;
    assert!(hover.contains("fake hover: `greet`"), "{hover}");
    p.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_server_request_is_answered() {
    let log = tempfile::NamedTempFile::new().expect("log");
    let p = check(
        json!({"server_requests": true, "log": log.path()}),
        &[("fake.toml", ""), ("a.fk", SOURCE)],
        json!({}),
    );
    p.ok(json!({"action": "hover", "file": "a.fk", "line": 1, "symbol": "greet"})).await;
    let mut replies: Vec<Value> = Vec::new();
    for _ in 0..50 {
        replies = std::fs::read_to_string(log.path())
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| v["method"].is_null())
            .collect();
        if replies.len() >= 4 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let reply = |id: &str| replies.iter().find(|r| r["id"] == id).cloned().unwrap_or(Value::Null);
    assert_eq!(reply("cfg")["result"], json!([{"answer": 42}, null]));
    assert_eq!(reply("wdp")["result"], Value::Null);
    assert!(reply("wdp")["error"].is_null());
    assert_eq!(reply("unk")["error"]["code"], -32601);
    assert_eq!(reply("edit")["result"]["applied"], false);
    p.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_ignores_exit_and_sigterm_and_has_a_helper_is_still_ended() {
    let p = check(
        json!({"ignore_exit": true, "ignore_sigterm": true, "spawn_child": true}),
        &[("fake.toml", ""), ("a.fk", SOURCE)],
        json!({}),
    );
    p.ok(json!({"action": "hover", "file": "a.fk", "line": 1, "symbol": "greet"})).await;
    let pids = p.sup.server_pids();
    assert_eq!(pids.len(), 1);
    p.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_between_two_calls_is_restarted_and_the_second_call_answers() {
    let p = check(json!({}), &[("fake.toml", ""), ("a.fk", SOURCE)], json!({}));
    let args = json!({"action": "definition", "file": "a.fk", "line": 3, "symbol": "greet"});
    assert!(p.ok(args.clone()).await.contains("a.fk:1:5"));
    let pid = p.sup.server_pids()[0];
    // SAFETY: sending a signal has no memory-safety preconditions.
    unsafe { libc::killpg(pid as libc::pid_t, libc::SIGKILL) };
    for _ in 0..100 {
        if !process_group_alive(pid) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let again = p.ok(args).await;
    assert!(again.contains("a.fk:1:5  def greet"), "{again}");
    assert_ne!(p.sup.server_pids()[0], pid);
    let status = p.ok(json!({"action": "status"})).await;
    assert!(status.contains("crashed 1 time(s)"), "{status}");
    p.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn columns_follow_the_negotiated_encoding_on_a_line_with_an_accent_and_an_emoji() {
    for encoding in ["utf-8", "utf-16"] {
        let p = check(
            json!({"encoding": encoding}),
            &[("fake.toml", ""), ("a.fk", "s = \"é🙂\"; ERROR: here\nname = s\n")],
            json!({}),
        );
        let out = p.ok(json!({"action": "diagnostics", "file": "a.fk"})).await;
        assert!(out.contains("a.fk:1:11 error"), "{encoding}: {out}");
        let status = p.ok(json!({"action": "status"})).await;
        assert!(status.contains(&format!("encoding: {encoding}")), "{status}");
        p.finish().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_intersection_rule_names_the_missing_half() {
    let p = check(json!({}), &[("a.fk", SOURCE)], json!({}));
    let err = p.err(json!({"action": "hover", "file": "a.fk", "line": 1, "symbol": "greet"})).await;
    assert!(
        err.contains("no root marker (fake.toml) between . and the run's root; binary resolved at"),
        "{err}"
    );
    assert!(err.contains("create one of fake.toml"), "{err}");
    let status = p.ok(json!({"action": "status"})).await;
    assert!(status.contains("nothing starts: no root marker (fake.toml)"), "{status}");

    let p = check(
        json!({}),
        &[("fake.toml", ""), ("a.fk", SOURCE)],
        json!({"servers": {"fake": {"languages": {"fakelang": ["fk"]}, "root_markers": ["fake.toml"], "commands": [["agent-tools-no-such-server"]], "install_hint": "install the fake"}}}),
    );
    let err = p.err(json!({"action": "hover", "file": "a.fk", "line": 1, "symbol": "greet"})).await;
    assert_eq!(
        err,
        "lsp (fakelang): marker fake.toml found in ., but none of agent-tools-no-such-server resolves \
         (searched PATH; project-local folders are not searched because project code may not run here); install the fake"
    );
    let err =
        p.err(json!({"action": "hover", "file": "notes.txt", "line": 1, "symbol": "x"})).await;
    assert!(err.contains("notes.txt does not exist"), "{err}");
    p.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn navigation_without_a_symbol_is_an_error_showing_the_line() {
    let p = check(json!({}), &[("fake.toml", ""), ("a.fk", SOURCE)], json!({}));
    let err = p.err(json!({"action": "definition", "file": "a.fk", "line": 3})).await;
    assert!(
        err.contains("needs `symbol`")
            && err.contains("Line 3 of a.fk reads: `greet(name) ERROR: broken here`"),
        "{err}"
    );
    let err =
        p.err(json!({"action": "definition", "file": "a.fk", "line": 2, "symbol": "greet"})).await;
    assert!(
        err.contains("does not occur on line 2") && err.contains("it occurs on line 1, 3 nearby"),
        "{err}"
    );
    assert!(p.sup.server_pids().is_empty(), "an addressing error starts no server");
    p.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_before_and_after_first_use_and_reload() {
    let p = check(json!({}), &[("fake.toml", ""), ("a.fk", SOURCE)], json!({}));
    let before = p.ok(json!({"action": "status"})).await;
    assert!(
        before.contains("fakelang (root ., marker fake.toml): ")
            && before.contains("— not started"),
        "{before}"
    );
    p.ok(json!({"action": "hover", "file": "a.fk", "line": 1, "symbol": "greet"})).await;
    let after = p.ok(json!({"action": "status"})).await;
    assert!(
        after.contains("(fake-lsp 0.1) — ready; diagnostics: push; encoding: utf-16; pid"),
        "{after}"
    );
    let first = p.sup.server_pids()[0];
    let reloaded = p.ok(json!({"action": "reload"})).await;
    assert!(
        reloaded.starts_with("reloaded the fakelang server for root .: fake-lsp (pid"),
        "{reloaded}"
    );
    let second = p.sup.server_pids()[0];
    assert_ne!(first, second);
    assert!(!process_group_alive(first), "the old server is gone after reload");
    assert!(
        p.ok(json!({"action": "hover", "file": "a.fk", "line": 1, "symbol": "greet"}))
            .await
            .contains("greet")
    );
    p.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dart_is_served_by_the_builtin_definition_through_a_dart_program() {
    // A `dart` that runs the fake: the built-in command `dart language-server --protocol=lsp`.
    let bin = tempfile::tempdir().expect("bin dir");
    let script = bin.path().join("script.json");
    std::fs::write(&script, json!({"diagnostics": "push", "name": "Dart SDK"}).to_string())
        .expect("script");
    let dart = bin.path().join("dart");
    std::fs::write(
        &dart,
        format!("#!/bin/sh\nexec python3 {FAKE} --script {} \"$@\"\n", script.display()),
    )
    .expect("shim");
    std::fs::set_permissions(&dart, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let p = check(
        json!({}),
        &[
            ("pubspec.yaml", "name: demo\n"),
            (
                "lib/main.dart",
                "void main() {\n  greet();\n}\nvoid greet() { ERROR: missing semicolon }\n",
            ),
        ],
        json!({"extra_paths": [bin.path().display().to_string()]}),
    );
    let status = p.ok(json!({"action": "status"})).await;
    assert!(
        status.contains(&format!("dart (root ., marker pubspec.yaml): {}", dart.display())),
        "{status}"
    );
    let def = p
        .ok(json!({"action": "definition", "file": "lib/main.dart", "line": 2, "symbol": "greet"}))
        .await;
    assert!(def.contains("lib/main.dart:2:3"), "{def}");
    let diags = p.ok(json!({"action": "diagnostics", "file": "lib/main.dart"})).await;
    assert!(diags.contains("lib/main.dart:4:16 error [E1] missing semicolon }"), "{diags}");
    let symbols = p.ok(json!({"action": "symbols", "file": "lib/main.dart"})).await;
    assert!(
        symbols.contains("1:6 function main") && symbols.contains("4:6 function greet"),
        "{symbols}"
    );
    let actions = p.ok(json!({"action": "code_actions", "file": "lib/main.dart", "line": 4, "symbol": "greet"})).await;
    assert!(actions.contains("1. Fake fix (quickfix) [preferred]"), "{actions}");
    let renamed = p
        .sup
        .rename(
            serde_json::from_value::<RenameArgs>(json!({"file": "lib/main.dart", "line": 4, "symbol": "greet", "new_name": "welcome"})).expect("args"),
            &agent_tools_lsp::CallScope::default(),
        )
        .await
        .expect("rename");
    assert!(renamed.text.contains("2 edit(s) in 1 file(s)"), "{}", renamed.text);
    let text = std::fs::read_to_string(p.root.join("lib/main.dart")).expect("read");
    assert!(text.contains("  welcome();") && text.contains("void welcome()"), "{text}");
    p.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_server_yields_not_verified_for_a_write_within_the_deadline() {
    let p = check(
        json!({"delay_ms": {"publish": 5000}}),
        &[("fake.toml", ""), ("a.fk", SOURCE)],
        json!({}),
    );
    let cancel = CancellationToken::new();
    let path = p.root.join("a.fk");
    let SyncOutcome::Synced(handle) = p
        .sup
        .sync_document(&path, None, agent_tools_lsp::Save::Notify, Duration::from_secs(10), &cancel)
        .await
    else {
        panic!("the fake covers a.fk");
    };
    let deadline = std::time::Instant::now() + Duration::from_millis(300);
    let outcome = p.sup.document_diagnostics(&handle, deadline, &cancel).await;
    assert!(
        matches!(outcome, Err(agent_tools_lsp::results::DiagnosticsWait::Timeout { .. })),
        "{outcome:?}"
    );
    let none = p
        .sup
        .sync_document(
            &p.root.join("x.txt"),
            Some(String::new()),
            agent_tools_lsp::Save::Notify,
            Duration::from_secs(1),
            &cancel,
        )
        .await;
    assert!(matches!(none, SyncOutcome::NotCovered));
    p.finish().await;
}

#[test]
fn the_schemas_of_both_tools_are_stable() {
    let lsp = serde_json::to_value(schemars::schema_for!(LspArgs)).expect("schema");
    let rename = serde_json::to_value(schemars::schema_for!(RenameArgs)).expect("schema");
    insta::assert_json_snapshot!("lsp_args_schema", lsp);
    insta::assert_json_snapshot!("rename_args_schema", rename);
    let _ = Action::Status;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_call_returns_at_once_and_the_server_answers_the_next_call() {
    let p = check(
        json!({"never_answer": ["textDocument/definition"]}),
        &[("fake.toml", ""), ("a.fk", SOURCE)],
        json!({"request_timeout_ms": 600000}),
    );
    let cancel = CancellationToken::new();
    let args: LspArgs = serde_json::from_value(
        json!({"action": "definition", "file": "a.fk", "line": 3, "symbol": "greet"}),
    )
    .expect("args");
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        trigger.cancel();
    });
    // The request would wait ten minutes; the cancellation ends it (the bound only guards
    // against a hang).
    let outcome = tokio::time::timeout(
        std::time::Duration::from_secs(120),
        p.sup.call(args, &agent_tools_lsp::CallScope::new(cancel.clone())),
    )
    .await
    .expect("the cancelled call returned");
    let err = outcome.expect_err("cancelled").to_string();
    assert!(err.contains("cancelled"), "{err}");
    let hover =
        p.ok(json!({"action": "hover", "file": "a.fk", "line": 3, "symbol": "greet"})).await;
    assert!(hover.contains("fake hover: `greet`"), "{hover}");
    p.finish().await;
}

/// The soak project's rename files: `ratio` in pkg/scale.py, two importers naming it through
/// their imports, an importer with a `ratio` of its own, and a file that imports nothing.
const RENAME_FILES: &[(&str, &str)] = &[
    ("fake.toml", ""),
    ("pkg/__init__.py", ""),
    ("pkg/scale.py", "ratio = 2\n\ndef scaled(x):\n    return x * ratio\n"),
    ("pkg/uses_a.py", "from pkg.scale import ratio\n\nprint(ratio)\n"),
    ("pkg/uses_b.py", "import pkg.scale\n\nprint(pkg.scale.ratio)\n"),
    ("pkg/own.py", "from pkg import scale\n\nratio = 3\nprint(scale, ratio)\n"),
    ("pkg/other.py", "ratio = 3\n"),
];

/// [`RENAME_FILES`] served by the fake with `script`, and `ratio` renamed to `factor` there.
async fn rename_ratio(script: Value) -> (Project, Result<LspOutput, LspError>) {
    let p = check_serving(script, RENAME_FILES, json!({}), json!({"python": ["py"]}));
    let args = RenameArgs::new("pkg/scale.py", 1, "ratio", "factor");
    let out = p.sup.rename(args, &agent_tools_lsp::CallScope::default()).await;
    (p, out)
}

/// A server that has read only its open files (restarted, or stopped before it read the rest)
/// leaves the renamed module's importers out of its edit. The rename opens the importers that
/// say the old name and asks again, so every file is renamed; an importer with a `ratio` of its
/// own that the server still leaves out is named in the answer, never passed over in silence.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rename_by_a_server_that_has_not_read_the_importers_still_renames_them() {
    let (p, renamed) =
        rename_ratio(json!({"rename_open_docs": true, "rename_never": ["pkg/own.py"]})).await;
    let renamed = renamed.expect("rename");
    let read = |f: &str| std::fs::read_to_string(p.root.join(f)).expect("read");
    assert_eq!(read("pkg/scale.py"), "factor = 2\n\ndef scaled(x):\n    return x * factor\n");
    assert_eq!(read("pkg/uses_a.py"), "from pkg.scale import factor\n\nprint(factor)\n");
    assert_eq!(read("pkg/uses_b.py"), "import pkg.scale\n\nprint(pkg.scale.factor)\n");
    assert_eq!(read("pkg/own.py"), "from pkg import scale\n\nratio = 3\nprint(scale, ratio)\n");
    assert_eq!(read("pkg/other.py"), "ratio = 3\n");
    let text = &renamed.text;
    assert!(text.contains("5 edit(s) in 3 file(s)"), "{text}");
    assert!(
        text.contains(
            "not changed: pkg/own.py (imports a renamed file and still says `ratio`): fake-lsp left it out of its edit, also when asked again with the file open"
        ),
        "{text}"
    );
    p.finish().await;
}

/// A server whose view stays stale even with the importers open, also after a restart, would
/// break the ones that name the symbol through their import: the rename is refused, nothing is
/// written, and the answer names them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rename_that_would_break_an_importer_is_refused_and_changes_nothing() {
    let (p, refused) = rename_ratio(
        json!({"rename_open_docs": true, "rename_never": ["pkg/uses_b.py", "pkg/own.py"]}),
    )
    .await;
    let refused = refused.expect_err("the rename leaves out pkg/uses_b.py");
    let said = refused.to_string();
    assert!(
        said.contains(
            "pkg/uses_b.py import `ratio` from a renamed file, but fake-lsp's edit left them out"
        ) && said.contains("also after the server was restarted; nothing was changed"),
        "{said}"
    );
    for (path, text) in RENAME_FILES {
        let now = std::fs::read_to_string(p.root.join(path)).expect("read");
        assert_eq!(&now, text, "{path} changed although the rename was refused");
    }
    p.finish().await;
}

/// A stale view that a restart clears (basedpyright's, seen under the soak): the server is
/// restarted, asked again, and the rename goes through, saying so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_server_is_restarted_and_the_rename_then_renames_every_importer() {
    let marker = tempfile::NamedTempFile::new().expect("marker");
    let marker_path = marker.path().to_path_buf();
    drop(marker);
    let (p, renamed) = rename_ratio(json!({"rename_open_docs": true,
        "rename_never": ["pkg/uses_b.py"], "stale_until_restart": marker_path}))
    .await;
    let renamed = renamed.expect("rename");
    let read = |f: &str| std::fs::read_to_string(p.root.join(f)).expect("read");
    assert_eq!(read("pkg/uses_a.py"), "from pkg.scale import factor\n\nprint(factor)\n");
    assert_eq!(read("pkg/uses_b.py"), "import pkg.scale\n\nprint(pkg.scale.factor)\n");
    let text = &renamed.text;
    assert!(
        text.contains(
            "(fake-lsp was restarted first: pkg/uses_b.py import `ratio` from a renamed file, but fake-lsp's edit left them out, also when asked again with them open (a stale view of the project))"
        ),
        "{text}"
    );
    assert_eq!(
        renamed.structured["restarted"].as_str().map(|s| s.contains("restarted first")),
        Some(true)
    );
    let _ = std::fs::remove_file(&marker_path);
    p.finish().await;
}
