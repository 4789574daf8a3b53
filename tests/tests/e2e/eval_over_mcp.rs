//! `eval` through `agent-tools mcp`: a cell's value, a figure as MCP image content, the
//! `tool()` bridge to `read`, the tier ceiling from configuration, and no kernel left behind.

use serde_json::{Value, json};

use crate::support::{McpScript, TempProject, require, test_python, text_of};

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
    assert_eq!(figure["structured"]["images"], 1);
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
