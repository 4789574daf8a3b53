//! The MCP boundary itself, through the official SDKs and raw stdio: cancellation that stops
//! the work and leaves the kernel in sync, progress, annotations on every surface, results a
//! structured-content-only client can use, and JSON-RPC errors for bad input.

use std::{
    io::Write,
    process::{Command, Stdio},
};

use serde_json::{Value, json};

use crate::support::{
    McpScript, RawHost, Sdk, TempProject, host_binary, results, text_of, tool_names,
};

/// A project whose kernels use the test venv's Python.
fn eval_project() -> Option<TempProject> {
    let python = Sdk::V1.python()?;
    let config = format!("[eval]\npython = {:?}\n", python.display().to_string());
    Some(TempProject::new(&[("agent-tools.toml", &config), ("data.txt", "alpha\nbeta\n")]))
}

fn cell(code: &str, language: &str) -> Value {
    json!({"code": code, "description": "an e2e cell", "language": language})
}

/// After a cancelled cell, the next three answer with their own values.
fn check_cancel(sdk: Sdk, language: &str, setup: &str, busy: &str, next: [(&str, &str); 3]) {
    let Some(project) = eval_project() else { return };
    let mut script = McpScript::new(&project.root, &[])
        .call("eval", cell(setup, language))
        .call_cancelled("eval", cell(busy, language), 1.5);
    for (code, _) in next {
        script = script.call("eval", cell(code, language));
    }
    let Some(out) = script.run_with(sdk) else { return };
    let results = results(out);
    assert_eq!(results[1]["isError"], false, "{}", text_of(&results[1]));
    assert_eq!(results[2]["cancelled"]["answered"], false, "a cancelled call gets no late answer");
    for (i, (code, expected)) in next.iter().enumerate() {
        let result = &results[3 + i];
        let text = text_of(result);
        assert_eq!(result["isError"], false, "{code}: {text}");
        assert!(text.trim_end().ends_with(expected), "{code} should answer {expected}: {text}");
    }
}

#[test]
fn a_cancelled_ten_second_python_cell_is_interrupted_and_the_next_cells_answer_sdk1() {
    check_cancel(
        Sdk::V1,
        "python",
        "x = 1",
        "import time\ntime.sleep(10)\nx = 99",
        [("x", "1"), ("x + 1", "2"), ("'after'", "'after'")],
    );
}

#[test]
fn a_cancelled_ten_second_python_cell_is_interrupted_and_the_next_cells_answer_sdk2() {
    check_cancel(
        Sdk::V2,
        "python",
        "x = 1",
        "import time\ntime.sleep(10)\nx = 99",
        [("x", "1"), ("x + 1", "2"), ("'after'", "'after'")],
    );
}

#[test]
fn a_cancelled_python_cell_on_a_2026_07_28_connection_is_interrupted_too() {
    let Some(project) = eval_project() else { return };
    let script = McpScript::new(&project.root, &[])
        .mode("2026-07-28")
        .call("eval", cell("z = 5", "python"))
        .call_cancelled("eval", cell("import time\ntime.sleep(10)\nz = 0", "python"), 1.5)
        .call("eval", cell("z", "python"));
    let Some(out) = script.run_with(Sdk::V2) else { return };
    let results = results(out);
    assert_eq!(results[2]["cancelled"]["answered"], false);
    assert!(text_of(&results[3]).trim_end().ends_with('5'), "{}", text_of(&results[3]));
}

#[test]
fn a_cancelled_javascript_busy_loop_is_interrupted_and_the_next_cells_answer() {
    check_cancel(
        Sdk::V2,
        "javascript",
        "globalThis.y = 20",
        "while (true) {}",
        [("y + 1", "21"), ("y * 2", "40"), ("'js'", "'js'")],
    );
}

#[test]
fn a_long_search_reports_progress_that_only_grows() {
    let files: Vec<(String, String)> = (0..4000)
        .map(|i| {
            (format!("src/m{}/f{i}.py", i % 40), format!("def f{i}(a):\n    return a + {i}\n"))
        })
        .collect();
    let borrowed: Vec<(&str, &str)> = files.iter().map(|(p, c)| (p.as_str(), c.as_str())).collect();
    let project = TempProject::new(&borrowed);
    let script = McpScript::new(&project.root, &[]).call_with_progress(
        "ast_grep",
        json!({"pattern": "return $A + $B", "path": "src", "language": "python"}),
    );
    let Some(out) = script.run_with(Sdk::V2) else { return };
    let result = &results(out)[1];
    assert_eq!(result["isError"], false, "{}", text_of(result));
    let progress = result["progress"].as_array().expect("progress list");
    assert!(!progress.is_empty(), "a long search reports progress");
    let values: Vec<f64> = progress.iter().filter_map(|p| p["progress"].as_f64()).collect();
    assert!(values.windows(2).all(|w| w[0] < w[1]), "progress only grows: {values:?}");
}

#[test]
fn annotations_are_honest_on_both_surfaces_and_workers_follow_their_ceiling() {
    let project = TempProject::new(&[("a.txt", "a\n")]);
    for (surface, workers_read_only) in [("build", false), ("plan", true)] {
        let script = McpScript::new(&project.root, &["--vibe", "--surface", surface]).list_tools();
        let Some(out) = script.run_with(Sdk::V2) else { return };
        let listed = &results(out)[1];
        let names = tool_names(listed);
        for worker_tool in ["vibe_spawn", "vibe_send"] {
            assert!(names.contains(&worker_tool), "{worker_tool} on {surface}: {names:?}");
        }
        for tool in listed["tools"].as_array().expect("tools") {
            let name = tool["name"].as_str().unwrap_or_default();
            assert!(tool["title"].as_str().is_some_and(|t| !t.is_empty()), "{name}: title");
            for hint in ["destructive", "idempotent", "openWorld"] {
                assert!(tool[hint].is_boolean(), "{name} on {surface}: {hint} missing");
            }
            if name == "vibe_spawn" || name == "vibe_send" {
                assert_eq!(tool["readOnly"], workers_read_only, "{name} on {surface}");
                // Twice is two workers (or two messages), read-only or not.
                assert_eq!(tool["idempotent"], false, "{name} on {surface}");
            }
            if name == "write" {
                assert_eq!(tool["readOnly"], false);
                assert_eq!(tool["destructive"], true);
            }
        }
    }
}

#[test]
fn a_client_that_reads_only_structured_content_still_gets_the_file_and_the_value() {
    let Some(project) = eval_project() else { return };
    let script = McpScript::new(&project.root, &[])
        .list_tools()
        .call("read", json!({"path": "data.txt"}))
        .call("eval", cell("6 * 7", "python"))
        .call("eval", cell("1 / 0", "python"));
    let Some(out) = script.run_with(Sdk::V2) else { return };
    let results = results(out);
    let declared: Vec<&str> = results[1]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter(|t| t["outputSchema"] == true)
        .filter_map(|t| t["name"].as_str())
        .collect();
    for result in &results[2..] {
        let tool = result["tool"].as_str().unwrap_or_default();
        if !result["structured"].is_null() {
            assert!(declared.contains(&tool), "{tool}: structured content without an outputSchema");
        }
    }
    let view = |i: usize| results[i]["model_view"].as_str().unwrap_or_default().to_string();
    assert!(view(2).contains("alpha") && view(2).contains("beta"), "read: {}", view(2));
    assert!(view(3).contains("42"), "eval value: {}", view(3));
    assert!(view(4).contains("ZeroDivisionError"), "eval traceback: {}", view(4));
}

/// The places in `schema` (a JSON Schema) where a subschema is a bare boolean: valid JSON
/// Schema, but strict validators (the Inspector's) refuse `true` where they expect a schema.
fn boolean_subschemas(schema: &Value, at: &str, found: &mut Vec<String>) {
    let Some(map) = schema.as_object() else { return };
    let mut visit = |sub: &Value, path: String| {
        if sub.is_boolean() {
            found.push(path);
        } else {
            boolean_subschemas(sub, &path, found);
        }
    };
    for (key, child) in map {
        match (key.as_str(), child) {
            (
                "properties" | "patternProperties" | "$defs" | "definitions",
                Value::Object(named),
            ) => {
                for (name, sub) in named {
                    visit(sub, format!("{at}/{key}/{name}"));
                }
            }
            ("anyOf" | "oneOf" | "allOf" | "prefixItems", Value::Array(list)) => {
                for (i, sub) in list.iter().enumerate() {
                    visit(sub, format!("{at}/{key}/{i}"));
                }
            }
            ("items" | "contains" | "not" | "if" | "then" | "else", sub) => {
                visit(sub, format!("{at}/{key}"));
            }
            _ => {}
        }
    }
}

#[test]
fn no_listed_schema_has_a_bare_boolean_where_a_schema_belongs() {
    let project = TempProject::new(&[("a.txt", "a\n")]);
    for surface in ["build", "plan"] {
        let marker = format!("schemas-{surface}");
        let mut host = RawHost::start(&project.root, &marker, &["--vibe", "--surface", surface]);
        host.initialize();
        let listed = host.request(1, "tools/list", json!({}));
        let tools = listed["result"]["tools"].as_array().expect("a tools/list result");
        let mut found = Vec::new();
        for tool in tools {
            let name = tool["name"].as_str().unwrap_or_default();
            for key in ["inputSchema", "outputSchema"] {
                boolean_subschemas(&tool[key], &format!("{name}.{key}"), &mut found);
            }
        }
        assert!(found.is_empty(), "bare booleans as subschemas on {surface}: {found:?}");
        if surface == "build" {
            // The two the Inspector's strict mode refused.
            for name in ["lsp_rename", "lsp_code_action"] {
                let tool = tools.iter().find(|t| t["name"] == name);
                let schema = tool.map(|t| &t["outputSchema"]);
                assert!(schema.is_some_and(Value::is_object), "{name}: {tool:?}");
            }
        }
        assert!(host.finish().success());
    }
}

fn raw_error(host: &mut RawHost, line: &str, id: Option<u64>) -> Value {
    host.send_raw(line);
    host.next_error(id)
}

#[test]
fn bad_input_gets_json_rpc_errors_that_say_what_is_wrong() {
    let project = TempProject::new(&[("a.txt", "a\n")]);
    let mut host = RawHost::start(&project.root, "protocol-errors", &[]);
    host.initialize();
    let parse = raw_error(&mut host, "this is not json", None);
    assert_eq!(parse["error"]["code"], -32700, "{parse}");
    let old =
        raw_error(&mut host, r#"{"jsonrpc": "1.0", "id": 6, "method": "tools/list"}"#, Some(6));
    assert_eq!(old["error"]["code"], -32600, "not JSON-RPC 2.0 is an invalid request: {old}");
    let whole = host.call(11, "read", json!({"path": "a.txt", "start_line": 1.0, "end_line": 1e0}));
    assert_eq!(whole["isError"], false, "whole numbers are integers: {whole}");
    let no_name = host.request(7, "tools/call", json!({"arguments": {"path": "a.txt"}}));
    assert_eq!(no_name["error"]["code"], -32602, "{no_name}");
    assert!(no_name["error"]["message"].as_str().unwrap_or("").contains("name"), "{no_name}");
    let bad_args = host.request(8, "tools/call", json!({"name": "read", "arguments": [1]}));
    assert_eq!(bad_args["error"]["code"], -32602, "{bad_args}");
    let range = host.call(9, "read", json!({"path": "a.txt", "start_line": 4294967296u64}));
    assert_eq!(range["isError"], true, "{range}");
    let text = range["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("start_line") && text.contains("maximum"), "{text}");
    let ok = host.call(10, "read", json!({"path": "a.txt", "start_line": null}));
    assert_eq!(ok["isError"], false, "null stands for a left-out optional argument: {ok}");
    let status = host.finish();
    assert!(status.success(), "the host ends cleanly when the client closes: {status}");
}

#[test]
fn a_batch_over_stdio_gets_its_replies_as_one_array() {
    let project = TempProject::new(&[("a.txt", "a\n")]);
    let mut host = RawHost::start(&project.root, "stdio-batch", &[]);
    host.initialize();
    host.send(json!([
        {"jsonrpc": "2.0", "id": 21, "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "x", "progress": 1}},
        {"jsonrpc": "2.0", "id": 22, "method": "tools/call", "params": {"name": "read", "arguments": {"path": "a.txt"}}},
        {"jsonrpc": "1.0", "id": 23, "method": "ping"},
    ]));
    let mut replies = host.next_array();
    replies.sort_by_key(|r| r["id"].as_u64());
    let ids: Vec<&Value> = replies.iter().map(|r| &r["id"]).collect();
    assert_eq!(ids, [&json!(21), &json!(22), &json!(23)], "{replies:?}");
    assert_eq!(replies[1]["result"]["content"][0]["text"], "1\ta\n", "{replies:?}");
    assert_eq!(replies[2]["error"]["code"], -32600, "{replies:?}");
    // Single messages after it are answered one by one, as before.
    let ok = host.call(24, "read", json!({"path": "a.txt"}));
    assert_eq!(ok["isError"], false, "{ok}");
    let status = host.finish();
    assert!(status.success(), "{status}");
}

#[test]
fn a_batch_whose_call_raises_an_approval_card_gets_the_card_and_then_its_replies() {
    let policy = "[approval]\npolicy = \"before_write\"\n";
    let project = TempProject::new(&[("a.txt", "a\n"), ("agent-tools.toml", policy)]);
    let mut host = RawHost::start(&project.root, "stdio-batch-card", &[]);
    let init = host.request(
        0,
        "initialize",
        json!({"protocolVersion": "2025-03-26",
        "capabilities": {"elicitation": {}}, "clientInfo": {"name": "raw-e2e", "version": "0"}}),
    );
    assert!(init.get("result").is_some(), "{init}");
    host.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    host.send(json!([
        {"jsonrpc": "2.0", "id": 31, "method": "tools/call", "params": {"name": "write",
            "arguments": {"path": "new.txt", "content": "written\n"}}},
        {"jsonrpc": "2.0", "id": 32, "method": "ping"},
    ]));
    // The card comes while the batch waits for it; the client answers it.
    let card = host.next_message(|m| m["method"] == "elicitation/create");
    let message = card["params"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("Allow `write`"), "{card}");
    host.send(json!({"jsonrpc": "2.0", "id": card["id"], "result": {"action": "accept",
        "content": {"choice": "1. Allow"}}}));
    let mut replies = host.next_array();
    replies.sort_by_key(|r| r["id"].as_u64());
    assert_eq!(replies[0]["id"], 31, "{replies:?}");
    assert_eq!(replies[0]["result"]["isError"], false, "{replies:?}");
    assert_eq!(replies[1]["result"], json!({}), "{replies:?}");
    assert_eq!(std::fs::read_to_string(project.root.join("new.txt")).unwrap(), "written\n");
    assert!(host.finish().success());
}

/// Sends `cells` as `tools/call` messages back to back (ids from 100), without waiting.
fn send_cells(host: &mut RawHost, cells: &[&str]) {
    for (i, code) in cells.iter().enumerate() {
        host.send(json!({"jsonrpc": "2.0", "id": 100 + i, "method": "tools/call",
            "params": {"name": "eval", "arguments": cell(code, "python")}}));
    }
}

#[test]
fn cells_sent_back_to_back_run_in_arrival_order_and_a_cancelled_queued_one_never_runs() {
    let Some(project) = eval_project() else { return };
    let mut host = RawHost::start(&project.root, "stdio-cell-order", &[]);
    host.initialize();
    let setup = host.call(1, "eval", cell("order = []\nx = 1", "python"));
    assert_eq!(setup["isError"], false, "{setup}");

    // Twelve cells at once, as a client with parallel tool calls sends them.
    let cells: Vec<String> = (1..=12).map(|n| format!("order.append({n})")).collect();
    let cells: Vec<&str> = cells.iter().map(String::as_str).collect();
    send_cells(&mut host, &cells);
    for answer in host.answers(100..100 + cells.len() as u64) {
        assert_eq!(answer["result"]["isError"], false, "{answer}");
    }
    let order = host.call(2, "eval", cell("order", "python"));
    let text = order["content"][0]["text"].as_str().unwrap_or_default();
    let expected = format!("{:?}", (1..=12).collect::<Vec<_>>());
    assert!(text.trim_end().ends_with(&expected), "cells ran out of arrival order: {text}");

    // A sleeps, B and C wait behind it; B is cancelled while it waits: it never runs, and C
    // still runs after A.
    send_cells(&mut host, &["import time\ntime.sleep(3)\nx = 2", "x += 10", "x += 100"]);
    std::thread::sleep(std::time::Duration::from_millis(500));
    host.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 101, "reason": "the user changed their mind"}}));
    for answer in host.answers([100, 102]) {
        assert_eq!(answer["result"]["isError"], false, "{answer}");
    }
    let x = host.call(3, "eval", cell("x", "python"));
    let text = x["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.trim_end().ends_with("102"), "B ran, or C ran before A: {text}");
    assert!(host.finish().success());
}

#[test]
fn an_empty_connection_ends_cleanly() {
    let project = TempProject::new(&[]);
    let output = Command::new(host_binary())
        .args(["mcp", "--root"])
        .arg(&project.root)
        .stdin(Stdio::null())
        .output()
        .expect("run the host");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
}

#[test]
fn a_closed_stdout_is_not_a_panic() {
    let lines: String = (1..=5000).map(|i| format!("line {i}\n")).collect();
    let project = TempProject::new(&[("long.txt", &lines)]);
    let mut child = Command::new(host_binary())
        .args(["call", "read", r#"{"path": "long.txt"}"#, "--root"])
        .arg(&project.root)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run call");
    // The reader takes nothing and goes away, as `| head -0` would.
    drop(child.stdout.take());
    let output = child.wait_with_output().expect("call exit");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    let _ = std::io::stderr().flush();
}

#[test]
fn a_connection_that_only_discovers_ends_cleanly() {
    let project = TempProject::new(&[]);
    let mut host = RawHost::start(&project.root, "discover-only", &[]);
    let discovered = host.request(
        1,
        "server/discover",
        json!({"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "probe", "version": "0"},
        }}),
    );
    let versions = discovered["result"]["supportedVersions"].as_array().expect("versions");
    assert!(versions.contains(&json!("2026-07-28")), "{discovered}");
    let status = host.finish();
    assert!(status.success(), "a discover-only probe ends with exit 0: {status}");
}

/// The test tools' npm modules (the TypeScript SDK), installed by `cargo xtask setup`.
fn npm_modules() -> Option<std::path::PathBuf> {
    let modules = crate::support::tools_home().join("npm/node_modules");
    let found = modules.join("@modelcontextprotocol/sdk/package.json").exists()
        && Command::new("node").arg("--version").output().is_ok_and(|o| o.status.success());
    crate::support::require("node with the TypeScript MCP SDK", found, "run `cargo xtask setup`")
        .then_some(modules)
}

#[test]
fn a_cell_cancelled_by_the_typescript_sdk_is_interrupted_and_the_next_cells_answer() {
    let (Some(project), Some(modules)) = (eval_project(), npm_modules()) else { return };
    let marker = format!("ts-cancel-{}", std::process::id());
    let args = |code: &str| json!({"code": code, "description": "a TypeScript SDK cell"});
    let script = json!({
        "server": [host_binary(), "mcp", "--root", project.root],
        "env": {"AGENT_TOOLS_E2E_MARKER": marker, "RUST_LOG": "warn"},
        "setup": args("x = 1"),
        "busy": args("import time\ntime.sleep(10)\nx = 99"),
        "cancel_after_ms": 1500,
        "next": [args("x"), args("x + 1"), args("'after'")],
    });
    let file = project.root.join("ts-script.json");
    std::fs::write(&file, script.to_string()).expect("write script");
    let driver = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("js/cancel_driver.cjs");
    let output = Command::new("node")
        .arg(driver)
        .arg(&file)
        .env("NODE_PATH", modules)
        .output()
        .expect("run the TypeScript driver");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let out: Value = serde_json::from_slice(&output.stdout).expect("driver JSON");
    assert_eq!(out["cancelled"]["answered"], false, "{out}");
    let next = out["next"].as_array().expect("next");
    for (result, expected) in next.iter().zip(["1", "2", "'after'"]) {
        let text = result["text"].as_str().unwrap_or_default();
        assert_eq!(result["isError"], false, "{text}");
        assert!(text.trim_end().ends_with(expected), "expected {expected}: {text}");
    }
    crate::support::assert_no_survivors(&marker, std::time::Duration::from_secs(15));
}
