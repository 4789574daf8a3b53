//! The host over MCP with the reference file tools: initialise, list, call, errors, no orphans.

use serde_json::{Value, json};

use crate::support::{McpScript, TempProject, text_of, tool_names};

fn check(project: &TempProject, script: McpScript) -> Option<Vec<Value>> {
    let _ = project;
    script.run_and_end().map(crate::support::results)
}

#[test]
fn a_python_client_lists_sorted_tools_and_reads_a_file() {
    let project = TempProject::new(&[("hello.txt", "one\ntwo\n")]);
    let script = McpScript::new(&project.root, &[])
        .list_tools()
        .call("read", json!({"path": "hello.txt"}))
        .call("no_such_tool", json!({}));
    let Some(results) = check(&project, script) else { return };
    assert_eq!(results[0]["server"], "agent-tools");
    let names = tool_names(&results[1]);
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted, "the tool list is sorted by name");
    for file_tool in ["apply_patch", "edit", "read", "write"] {
        assert!(names.contains(&file_tool), "{file_tool} missing from {names:?}");
    }
    let read_only = |name: &str| {
        results[1]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == name && t["readOnly"] == true)
    };
    assert!(read_only("read") && !read_only("write"));
    assert_eq!(results[2]["isError"], false);
    assert_eq!(text_of(&results[2]), "1\tone\n2\ttwo\n");
    assert_eq!(results[3]["isError"], true);
    assert!(
        text_of(&results[3]).contains("unknown tool `no_such_tool`"),
        "{}",
        text_of(&results[3])
    );
    let listed = format!("are: {}", names.join(", "));
    assert!(text_of(&results[3]).ends_with(&listed), "{}", text_of(&results[3]));
}

#[test]
fn a_plan_surface_over_mcp_hides_write_tools_and_refuses_them_by_tier() {
    let project = TempProject::new(&[("a.txt", "x\n")]);
    let script = McpScript::new(&project.root, &["--surface", "plan"])
        .list_tools()
        .call("write", json!({"path": "a.txt", "content": "y\n"}));
    let Some(results) = check(&project, script) else { return };
    let tools = results[1]["tools"].as_array().unwrap();
    assert!(
        tools.iter().all(|t| t["readOnly"] == true),
        "a plan surface lists only read tools: {tools:?}"
    );
    let names = tool_names(&results[1]);
    assert!(
        names.contains(&"read") && !names.contains(&"write") && !names.contains(&"edit"),
        "{names:?}"
    );
    assert_eq!(results[2]["isError"], true);
    assert!(
        text_of(&results[2]).contains(
            "`write` is a write-tier tool; this surface (plan) is limited to read-tier tools"
        ),
        "{}",
        text_of(&results[2])
    );
    assert_eq!(std::fs::read_to_string(project.root.join("a.txt")).unwrap(), "x\n");
}

#[test]
fn a_write_over_mcp_changes_the_file_and_says_so() {
    let project = TempProject::new(&[]);
    let script = McpScript::new(&project.root, &[])
        .call("write", json!({"path": "new/dir/f.txt", "content": "hi\n"}));
    let Some(results) = check(&project, script) else { return };
    assert_eq!(results[1]["isError"], false, "{}", text_of(&results[1]));
    assert_eq!(text_of(&results[1]), "created new/dir/f.txt (1 line, 3 bytes)");
    assert_eq!(std::fs::read_to_string(project.root.join("new/dir/f.txt")).unwrap(), "hi\n");
}
