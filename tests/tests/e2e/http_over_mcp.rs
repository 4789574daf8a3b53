//! `agent-tools mcp --http` driven by the official Python SDK's Streamable HTTP client: tools
//! listed and called, two sessions at once with their own kernels, a foreign Origin, a missing
//! token and an over-long body refused, a deleted or expired session's processes gone, SDK 2.x
//! clients (Python and TypeScript) in `auto` mode or pinned to 2026-07-28 (no session) kept in
//! their credential's run with cards in rounds, in `legacy` mode in a session each, and nothing
//! left once the server is stopped.

use std::{path::PathBuf, process::Command};

use serde_json::{Value, json};

use crate::{
    http_host::HttpHost,
    support::{Sdk, TempProject, host_binary, require, test_python, text_of},
};

/// The test venv's Python and a project whose kernel runs on it, or `None` after a loud skip.
fn check(extra_config: &str, files: &[(&str, &str)]) -> Option<(PathBuf, TempProject)> {
    let python = test_python();
    if !require("python venv with the `mcp` SDK", python.is_some(), "run `cargo xtask setup`") {
        return None;
    }
    let python = python?;
    let config = format!("[eval]\npython = {:?}\n{extra_config}", python.display().to_string());
    let mut all: Vec<(&str, &str)> = vec![("agent-tools.toml", &config)];
    all.extend_from_slice(files);
    Some((python, TempProject::new(&all)))
}

fn call(tool: &str, args: Value) -> Value {
    json!({"op": "call", "tool": tool, "args": args})
}

fn cell(code: &str) -> Value {
    call("eval", json!({"code": code, "description": "an http e2e cell"}))
}

fn session(out: &Value, index: usize) -> Vec<Value> {
    out["sessions"][index]["results"].as_array().cloned().unwrap_or_default()
}

#[test]
fn two_sessions_at_once_list_call_and_keep_their_own_kernels() {
    let files = [("data.txt", "alpha\nbeta\n"), ("src/main.py", "def main():\n    print('hi')\n")];
    let Some((python, project)) = check("", &files) else { return };
    let host = HttpHost::start(&project.root, &[]);
    let out = host.drive(
        &python,
        json!({"sessions": [
            [
                {"op": "list_tools"},
                call("read", json!({"path": "data.txt"})),
                call("ast_grep", json!({"pattern": "print($$$A)", "path": "src", "language": "python"})),
                cell("x = 'first'"),
                cell("x"),
            ],
            [
                {"op": "list_tools"},
                cell("import subprocess\nsleeper = subprocess.Popen(['sleep', '300'])"),
                cell("x = 'second'"),
                cell("x"),
            ],
        ]}),
    );
    assert_eq!(out["error"], Value::Null, "{out}");
    let (first, second) = (session(&out, 0), session(&out, 1));
    assert_ne!(out["sessions"][0]["id"], out["sessions"][1]["id"], "{out}");
    let tools = |results: &[Value]| -> Vec<String> {
        results[0]["tools"]
            .as_array()
            .map(|t| t.iter().filter_map(|t| t["name"].as_str().map(String::from)).collect())
            .unwrap_or_default()
    };
    for name in ["read", "ast_grep", "eval"] {
        assert!(tools(&first).iter().any(|t| t == name), "{name} not listed: {:?}", tools(&first));
    }
    assert_eq!(text_of(&first[1]), "1\talpha\n2\tbeta\n", "{}", first[1]);
    assert_eq!(first[2]["isError"], false, "{}", first[2]);
    assert!(text_of(&first[2]).contains("src/main.py"), "{}", text_of(&first[2]));
    assert!(text_of(&first[4]).ends_with("'first'"), "{}", text_of(&first[4]));
    assert_eq!(second[1]["isError"], false, "{}", second[1]);
    assert!(text_of(&second[3]).ends_with("'second'"), "{}", text_of(&second[3]));
    // The driver deleted both sessions: their kernels and the sleeper are gone, the host is not.
    host.assert_only_the_host_is_left();
    host.stop();
}

#[test]
fn a_foreign_origin_a_missing_token_and_an_over_long_body_are_refused() {
    let Some((python, project)) = check("[mcp]\nmax_body_bytes = 4000\n", &[("a.txt", "hi\n")])
    else {
        return;
    };
    let token_file = project.root.join("token.txt");
    std::fs::write(&token_file, "s3cret-token\n").expect("write the token");
    let token_file = token_file.display().to_string();
    let host = HttpHost::start(&project.root, &["--token-file", &token_file]);
    let one_read = json!({"sessions": [[call("read", json!({"path": "a.txt"}))]]});
    let refused = |out: &Value| out["refused"][0].clone();

    let no_token = host.drive(&python, one_read.clone());
    assert_ne!(no_token["error"], Value::Null, "{no_token}");
    assert_eq!(refused(&no_token)["status"], 401, "{no_token}");
    assert!(
        refused(&no_token)["body"].as_str().unwrap_or("").contains("bearer token"),
        "{no_token}"
    );

    let mut foreign = one_read.clone();
    foreign["headers"] =
        json!({"Authorization": "Bearer s3cret-token", "Origin": "http://evil.example"});
    let foreign = host.drive(&python, foreign);
    assert_eq!(refused(&foreign)["status"], 403, "{foreign}");
    assert!(
        refused(&foreign)["body"]
            .as_str()
            .unwrap_or("")
            .contains("Origin http://evil.example is not allowed"),
        "{foreign}"
    );

    let mut allowed = one_read.clone();
    allowed["headers"] =
        json!({"Authorization": "Bearer s3cret-token", "Origin": "http://localhost:3000"});
    let allowed = host.drive(&python, allowed);
    assert_eq!(allowed["error"], Value::Null, "{allowed}");
    assert_eq!(text_of(&session(&allowed, 0)[0]), "1\thi\n", "{allowed}");

    let mut long = json!({"sessions": [[call("read", json!({"path": "x".repeat(5000)}))]]});
    long["headers"] = json!({"Authorization": "Bearer s3cret-token"});
    let long = host.drive(&python, long);
    assert_eq!(refused(&long)["status"], 413, "{long}");
    assert!(
        refused(&long)["body"].as_str().unwrap_or("").contains("limit of 4000 bytes"),
        "{long}"
    );
    host.stop();
}

/// A session (or 2026-07-28 run) that starts a kernel with a sleeper and is never deleted ends
/// by itself under `config`, kernel and sleeper with it.
fn assert_an_undeleted_session_ends(config: &str, sdk: Sdk, mode: &str) {
    let Some((_, project)) = check(config, &[]) else { return };
    let Some(python) = sdk.python() else { return };
    let host = HttpHost::start(&project.root, &[]);
    let sleeper =
        cell("import subprocess\nsleeper = subprocess.Popen(['sleep', '300'])\nsleeper.pid > 0");
    let script = json!({"terminate_on_close": false, "mode": mode, "sessions": [[sleeper]]});
    let out = host.drive(&python, script);
    assert_eq!(out["error"], Value::Null, "{out}");
    assert!(text_of(&session(&out, 0)[0]).ends_with("True"), "{out}");
    host.assert_only_the_host_is_left();
    host.stop();
}

#[test]
fn an_idle_session_expires_with_its_processes() {
    // The client's dropped stream would end it only after an hour: this is the idle rule.
    let config = "[mcp]\nsession_idle_seconds = 1\nsession_detached_seconds = 3600\n";
    assert_an_undeleted_session_ends(config, Sdk::V1, "legacy");
}

#[test]
fn a_session_whose_client_left_without_deleting_it_ends_after_the_detached_time() {
    // An hour of idle time: the dropped standing stream ends it.
    let config = "[mcp]\nsession_idle_seconds = 3600\nsession_detached_seconds = 1\n";
    assert_an_undeleted_session_ends(config, Sdk::V1, "legacy");
}

#[test]
fn the_run_of_a_2026_07_28_client_idles_out_with_its_processes() {
    // There is no session to delete: the credential's run ends once idle.
    assert_an_undeleted_session_ends("[mcp]\nsession_idle_seconds = 1\n", Sdk::V2, "2026-07-28");
}

#[test]
fn an_sdk2_client_in_auto_mode_speaks_2026_07_28_and_keeps_its_kernel() {
    let Some((_, project)) = check("", &[]) else { return };
    let Some(python) = Sdk::V2.python() else { return };
    let host = HttpHost::start(&project.root, &[]);
    let out = host.drive(&python, json!({"sessions": [[cell("y = 5"), cell("y * 2")]]}));
    assert_eq!(out["error"], Value::Null, "{out}");
    // `server/discover` is answered over HTTP as over stdio, so `auto` picks 2026-07-28: no
    // session, and the second request still sees the first one's kernel (its credential's run).
    assert_eq!(out["sessions"][0]["protocol"], "2026-07-28", "{out}");
    let results = session(&out, 0);
    assert!(text_of(&results[1]).ends_with("10"), "{}", text_of(&results[1]));
    host.stop();
}

#[test]
fn an_sdk2_client_in_legacy_mode_gets_a_session_of_its_own() {
    let Some((_, project)) = check("", &[]) else { return };
    let Some(python) = Sdk::V2.python() else { return };
    let host = HttpHost::start(&project.root, &[]);
    let script =
        json!({"mode": "legacy", "sessions": [[cell("y = 5"), cell("y * 2")], [cell("y")]]});
    let out = host.drive(&python, script);
    assert_eq!(out["error"], Value::Null, "{out}");
    let first = session(&out, 0);
    assert!(text_of(&first[1]).ends_with("10"), "{}", text_of(&first[1]));
    // The other session has a kernel of its own, where `y` was never set.
    let second = session(&out, 1);
    assert!(text_of(&second[0]).contains("NameError"), "{}", text_of(&second[0]));
    host.assert_only_the_host_is_left();
    host.stop();
}

/// The TypeScript client SDK 2.x (`@modelcontextprotocol/client`) against `host` in `mode`;
/// `None` after a loud skip.
fn typescript_client2(host: &HttpHost, mode: &str, calls: Value) -> Option<Value> {
    let modules = crate::support::tools_home().join("npm/node_modules");
    let found = modules.join("@modelcontextprotocol/client/package.json").exists()
        && Command::new("node").arg("--version").output().is_ok_and(|o| o.status.success());
    if !require("node with the TypeScript client SDK 2.x", found, "run `cargo xtask setup`") {
        return None;
    }
    let script = json!({"url": host.url, "mode": mode, "calls": calls});
    let file = std::env::temp_dir().join(format!("ts-client2-{}.json", crate::support::unique()));
    std::fs::write(&file, script.to_string()).expect("write the script");
    let driver =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("js/client2_http_driver.cjs");
    let output = Command::new("node")
        .arg(driver)
        .arg(&file)
        .env("NODE_PATH", modules)
        .output()
        .expect("run the TypeScript driver");
    let _ = std::fs::remove_file(&file);
    let out: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!("driver output is not JSON ({e}): {}", String::from_utf8_lossy(&output.stderr))
    });
    Some(out)
}

#[test]
fn the_typescript_client_pinned_to_2026_07_28_connects_and_keeps_its_kernel() {
    let Some((_, project)) = check("", &[("a.txt", "hi\n")]) else { return };
    let host = HttpHost::start(&project.root, &[]);
    let calls = json!([
        {"tool": "read", "args": {"path": "a.txt"}},
        {"tool": "eval", "args": {"code": "w = 7", "description": "e2e", "language": "python"}},
        {"tool": "eval", "args": {"code": "w * 6", "description": "e2e", "language": "python"}},
    ]);
    for mode in ["2026-07-28", "auto", "legacy"] {
        let Some(out) = typescript_client2(&host, mode, calls.clone()) else { return };
        assert_eq!(out["error"], Value::Null, "{mode}: {out}");
        let expected = if mode == "legacy" { "2025-11-25" } else { "2026-07-28" };
        assert_eq!(out["protocol"], expected, "{mode}: {out}");
        let results = out["results"].as_array().expect("results");
        assert_eq!(results[0]["text"], "1\thi\n", "{mode}: {out}");
        let answer = results[2]["text"].as_str().unwrap_or_default();
        assert!(answer.ends_with("42"), "{mode}: the kernel carried over: {out}");
    }
    host.stop();
}

#[test]
fn a_client_pinned_to_2026_07_28_keeps_its_kernel_and_answers_cards_in_rounds() {
    let Some((_, project)) = check("[approval]\npolicy = \"before_write\"\n", &[]) else {
        return;
    };
    let Some(python) = Sdk::V2.python() else { return };
    let host = HttpHost::start(&project.root, &[]);
    let write = call("write", json!({"path": "new.txt", "content": "hello\n"}));
    let script = json!({
        "mode": "2026-07-28",
        "elicitation": {"action": "accept", "content": {"choice": "1. Allow"}},
        "sessions": [[cell("z = 20"), cell("z + 1"), write]],
    });

    let out = host.drive(&python, script);

    assert_eq!(out["error"], Value::Null, "{out}");
    assert_eq!(out["sessions"][0]["mode"], "2026-07-28", "{out}");
    // No session: each request stands alone, yet the second sees the first one's kernel.
    let results = session(&out, 0);
    assert!(text_of(&results[1]).ends_with("21"), "{}", text_of(&results[1]));
    // The approval card went out as an input_required round, and its Allow let the write in.
    assert_eq!(results[2]["isError"], false, "{}", text_of(&results[2]));
    assert_eq!(std::fs::read_to_string(project.root.join("new.txt")).unwrap(), "hello\n");
    let message = out["elicitations"][0]["message"].as_str().unwrap_or_default();
    assert!(message.starts_with("Card 1 · approval"), "{out}");
    host.stop();
}

#[test]
fn a_non_loopback_address_without_a_token_is_refused() {
    let project = TempProject::new(&[]);
    let out = Command::new(host_binary())
        .args(["mcp", "--http", "0.0.0.0:0", "--root"])
        .arg(&project.root)
        .output()
        .expect("run the host");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("not a loopback address") && stderr.contains("--token-file"),
        "{stderr}"
    );
}
