//! `eval` through `agent-tools mcp`: a cell's value, a figure as MCP image content, the
//! `tool()` bridge to `read`, the tier ceiling, a cancelled Python cell and Node busy loop that
//! leave their kernels in sync, a Node cell with built-in and project modules, a cell that
//! outlives its call and is collected by number, no kernel left.

use serde_json::{Value, json};

use crate::support::{McpScript, Sdk, TempProject, require, test_python, text_of};

/// Serves a project whose `agent-tools.toml` points the kernel at the test venv's Python.
fn check(extra_config: &str, files: &[(&str, &str)], steps: Vec<Value>) -> Option<Vec<Value>> {
    let python = test_python();
    if !require("python venv with the `mcp` SDK", python.is_some(), "run `cargo xtask setup`") {
        return None;
    }
    let python = python.unwrap();
    let config = format!("[eval]\npython = {:?}\n{extra_config}", python.display().to_string());
    let mut all: Vec<(&str, &str)> = vec![("agent-tools.toml", &config)];
    all.extend_from_slice(files);
    let project = TempProject::new(&all);
    let mut script = McpScript::new(&project.root, &[]);
    for step in steps {
        script = script.call(step["tool"].as_str().unwrap_or_default(), step["args"].clone());
    }
    script.run_and_end().map(crate::support::results)
}

fn cell(code: &str) -> Value {
    json!({"tool": "eval", "args": {"code": code, "description": "an e2e cell"}})
}

#[test]
fn a_cell_value_a_figure_as_image_content_and_a_bridged_read() {
    let steps = vec![
        cell("x = 6 * 7\nx"),
        cell("import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.title('line')\nx + 1"),
        cell("tool('read', {'path': 'data.txt'})['text']"),
        json!({"tool": "eval", "args": {"code": "(await tool('read', {path: 'data.txt'})).total_lines", "description": "js bridge", "language": "javascript"}}),
        cell("import subprocess\nsubprocess.Popen(['sleep', '300']).pid > 0"),
    ];
    let Some(results) = check("", &[("data.txt", "alpha\nbeta\n")], steps) else { return };
    assert_eq!(results[1]["isError"], false, "{}", text_of(&results[1]));
    assert!(text_of(&results[1]).ends_with("Out[1]: 42"), "{}", text_of(&results[1]));
    let figure = &results[2];
    assert_eq!(figure["isError"], false, "{}", text_of(figure));
    let content = figure["content"].as_array().expect("content");
    assert_eq!(content.len(), 2, "text plus one image: {content:?}");
    assert_eq!(content[1]["type"], "image");
    assert_eq!(content[1]["mimeType"], "image/png");
    assert!(content[1]["bytes"].as_u64().unwrap_or(0) > 1000);
    assert!(text_of(figure).contains("[image 1: <Figure size"), "{}", text_of(figure));
    assert!(text_of(figure).ends_with("Out[2]: 43"), "{}", text_of(figure));
    assert_eq!(figure["structured"]["outputs"][0]["image"], 1, "{}", figure["structured"]);
    assert!(
        text_of(&results[3]).ends_with("Out[3]: '1\\talpha\\n2\\tbeta\\n'"),
        "{}",
        text_of(&results[3])
    );
    assert!(text_of(&results[4]).ends_with("Out[1]: 2"), "{}", text_of(&results[4]));
    assert!(text_of(&results[5]).ends_with("Out[4]: True"), "{}", text_of(&results[5]));
}

#[test]
fn a_read_only_bridge_refuses_write_and_description_is_required() {
    let steps = vec![
        cell("tool('write', {'path': 'new.txt', 'content': 'x'})"),
        json!({"tool": "eval", "args": {"code": "1"}}),
    ];
    let Some(results) = check("bridge_tier = \"read\"\n", &[], steps) else { return };
    assert_eq!(results[1]["isError"], true);
    assert!(
        text_of(&results[1]).contains("ToolError: `write` is a write-tier tool"),
        "{}",
        text_of(&results[1])
    );
    assert_eq!(results[2]["isError"], true);
    assert!(text_of(&results[2]).contains("description"), "{}", text_of(&results[2]));
}

fn js_cell(code: &str) -> Value {
    json!({"code": code, "description": "an e2e cell", "language": "javascript"})
}

fn py_cell(code: &str) -> Value {
    json!({"code": code, "description": "an e2e cell"})
}

/// The official SDK's own cancel of a 10 s Python cell and of a Node busy loop: each is
/// interrupted, the next three cells answer correctly, and the first says the state survived.
#[test]
fn a_cancelled_python_cell_and_a_cancelled_node_busy_loop_leave_their_kernels_in_sync() {
    let project = TempProject::new(&[("data.txt", "alpha\n")]);
    let script = McpScript::new(&project.root, &[])
        .call("eval", py_cell("kept = 40"))
        .call_cancelled(
            "eval",
            py_cell("import time\nprint('working')\ntime.sleep(10)\n'late'"),
            1.0,
        )
        .call("eval", py_cell("kept + 1"))
        .call("eval", py_cell("kept + 2"))
        .call("eval", py_cell("kept + 3"))
        .call("eval", js_cell("var js = 20"))
        .call_cancelled("eval", js_cell("while (true) {}"), 1.0)
        .call("eval", js_cell("js + 1"))
        .call("eval", js_cell("js + 2"))
        .call_with_progress("eval", js_cell("await new Promise(r => setTimeout(r, 2500)); js + 3"));
    let Some(out) = script.run_with(Sdk::V2) else { return };
    // The driver's first result is the handshake; the calls follow.
    let results: Vec<Value> = crate::support::results(out).into_iter().skip(1).collect();
    let texts: Vec<&str> = results.iter().map(text_of).collect();
    assert!(
        results[1]["cancelled"].is_object() || results[1]["cancelled"].is_string(),
        "{results:?}"
    );
    assert!(
        texts[2].contains("was cancelled by the client and interrupted; the kernel's state"),
        "{}",
        texts[2]
    );
    for (i, want) in [(2, "41"), (3, "42"), (4, "43")] {
        assert!(texts[i].ends_with(&format!(": {want}")), "cell {i}: {}", texts[i]);
        assert!(
            !texts[i].contains("agent-tools-end") && !texts[i].contains("'late'"),
            "{}",
            texts[i]
        );
    }
    assert!(texts[7].contains("was cancelled by the client and interrupted"), "{}", texts[7]);
    assert!(texts[7].ends_with(": 21"), "the loop stopped and the state is kept: {}", texts[7]);
    assert!(texts[8].ends_with(": 22"), "{}", texts[8]);
    assert!(texts[9].ends_with(": 23"), "{}", texts[9]);
    assert_eq!(results[9]["structured"]["value"]["text"], "23", "{}", results[9]["model_view"]);
    let progress = results[9]["progress"].as_array().cloned().unwrap_or_default();
    assert!(!progress.is_empty(), "a 2.5 s cell reports progress: {:?}", results[9]);
}

/// Node.js through MCP: `node:fs` and a package from the project's `node_modules`, a `tool()`
/// call awaited, and a client that reads only structured content sees the value.
#[test]
fn a_node_cell_imports_builtins_and_project_packages_and_awaits_a_tool() {
    let project = TempProject::new(&[
        ("data.txt", "alpha\nbeta\n"),
        ("node_modules/shout/package.json", r#"{"name":"shout","main":"index.js"}"#),
        ("node_modules/shout/index.js", "module.exports = (s) => s.toUpperCase() + '!';"),
    ]);
    let code = "import { readFileSync } from 'node:fs';\nimport shout from 'shout';\n\
                const read = await tool('read', {path: 'data.txt'});\n\
                [shout(readFileSync('data.txt', 'utf8').split('\\n')[0]), read.total_lines]";
    let script = McpScript::new(&project.root, &[]).call("eval", js_cell(code));
    let Some(out) = script.run_with(Sdk::V2) else { return };
    let results: Vec<Value> = crate::support::results(out).into_iter().skip(1).collect();
    let text = text_of(&results[0]);
    assert_eq!(results[0]["isError"], false, "{text}");
    assert!(text.starts_with("[started Node.js v"), "{text}");
    assert!(text.ends_with("Out[1]: [ 'ALPHA!', 2 ]"), "{text}");
    let view = results[0]["model_view"].as_str().unwrap_or_default();
    assert!(view.contains("ALPHA!"), "structured content carries the value: {view}");
}

/// A cell still running at `wait_s` through MCP: its call returns (not an error) with the
/// output so far and its number, progress carries its last line, `cell: N` collects the rest
/// and the value, and the kernel's state holds what the loop did.
#[test]
fn a_cell_outlives_its_call_and_is_collected_by_number() {
    let project = TempProject::new(&[]);
    let long = "import time\nfor i in range(6):\n    total += i\n    print(f'step {i}', flush=True)\n    time.sleep(1)\ntotal";
    let script = McpScript::new(&project.root, &[])
        .call("eval", py_cell("total = 0"))
        .call_with_progress(
            "eval",
            json!({"code": long, "description": "a long loop", "wait_s": 3}),
        )
        .call_with_progress("eval", json!({"cell": 2, "wait_s": 60}))
        .call("eval", py_cell("total * 2"));
    let Some(out) = script.run_with(Sdk::V2) else { return };
    let results: Vec<Value> = crate::support::results(out).into_iter().skip(1).collect();
    let running = &results[1];
    assert_eq!(running["isError"], false, "a running cell is no failed call: {running}");
    assert!(text_of(running).contains("still running as cell 2 (for "), "{}", text_of(running));
    assert_eq!(running["structured"]["status"], "running", "{running}");
    assert_eq!(running["structured"]["cell"], 2, "{running}");
    let progress = running["progress"].as_array().cloned().unwrap_or_default();
    assert!(
        progress.iter().any(|p| p["message"].as_str().is_some_and(|m| m.contains("; last: step "))),
        "progress carries the last line: {progress:?}"
    );
    let ended = &results[2];
    assert_eq!(ended["structured"]["status"], "ok", "{ended}");
    let printed = format!("{}{}", text_of(running), text_of(ended));
    for i in 0..6 {
        assert_eq!(printed.matches(&format!("step {i}\n")).count(), 1, "step {i}: {printed}");
    }
    assert!(text_of(ended).ends_with("Out[2]: 15"), "{}", text_of(ended));
    assert!(text_of(&results[3]).ends_with(": 30"), "{}", text_of(&results[3]));
}
