//! `lsp`, `lsp_rename` and diagnostics on write over MCP with a real basedpyright: a client's
//! `write` result carries the new diagnostics, a client that reads only `structuredContent`
//! gets the same payload as data, and no server process outlives the connection.

use serde_json::{Value, json};

use crate::support::{
    McpScript, TempProject, require_basedpyright, text_of, tool_names, tools_home,
};

/// A Python project whose `agent-tools.toml` points the host at the test venv's basedpyright.
fn python_project() -> TempProject {
    python_project_of(
        "",
        &[
            ("shapes.py", "def make_square(side: float) -> float:\n    return side * side\n"),
            ("main.py", "from shapes import make_square\n\nprint(make_square(2.0))\n"),
        ],
    )
}

/// A Python project of `files`, its `agent-tools.toml` the venv's basedpyright and `config`.
fn python_project_of(config: &str, files: &[(&str, &str)]) -> TempProject {
    let config =
        format!("{config}[lsp]\nextra_paths = [\"{}\"]\n", tools_home().join("venv/bin").display());
    let mut all = vec![
        ("agent-tools.toml", config.as_str()),
        ("pyproject.toml", "[project]\nname = \"demo\"\nversion = \"0.1.0\"\n"),
    ];
    all.extend_from_slice(files);
    TempProject::new(&all)
}

fn check(script: McpScript) -> Option<Vec<Value>> {
    if !require_basedpyright() {
        return None;
    }
    // The run's language server is started through the host and must be gone with it.
    script.run_and_end().map(crate::support::results)
}

#[test]
fn a_client_navigates_renames_and_gets_new_diagnostics_on_write() {
    let project = python_project();
    let script = McpScript::new(&project.root, &[])
        .list_tools()
        .call("lsp", json!({"action": "status"}))
        .call("lsp", json!({"action": "definition", "file": "main.py", "line": 3, "symbol": "make_square"}))
        .call("write", json!({"path": "main.py", "content": "from shapes import make_square\n\nlabel: str = make_square(2.0)\n"}))
        .call("lsp_rename", json!({"file": "shapes.py", "line": 1, "symbol": "make_square", "new_name": "square_area"}))
        .call("lsp", json!({"action": "definition", "file": "main.py", "line": 3}));
    let Some(results) = check(script) else { return };
    let names = tool_names(&results[1]);
    assert!(
        names.contains(&"lsp")
            && names.contains(&"lsp_rename")
            && names.contains(&"lsp_code_action"),
        "{names:?}"
    );
    let listed = results[1]["tools"].as_array().cloned().unwrap_or_default();
    for tool in listed.iter().filter(|t| t["name"].as_str().is_some_and(|n| n.starts_with("lsp"))) {
        assert!(tool["outputSchema"] == true || tool["outputSchema"].is_object(), "{tool}");
    }
    let status = text_of(&results[2]);
    assert!(
        status.contains("python (root ., marker pyproject.toml)")
            && status.contains("— not started"),
        "{status}"
    );
    let def = text_of(&results[3]);
    assert!(def.contains("shapes.py:1:5  def make_square(side: float) -> float:"), "{def}");
    // A client that shows its model only structured content sees the same answer.
    let data = &results[3]["structured"];
    assert_eq!(data["action"], "definition", "{data}");
    assert_eq!(data["locations"][0]["path"], "shapes.py", "{data}");
    assert_eq!(data["locations"][0]["text"], "def make_square(side: float) -> float:", "{data}");
    let write = text_of(&results[4]);
    assert_eq!(results[4]["isError"], false, "{write}");
    assert!(write.starts_with("replaced main.py"), "{write}");
    assert!(
        write.contains("The write was applied. Diagnostics (basedpyright): 1 new error\nmain.py:3:14 error [reportAssignmentType]"),
        "{write}"
    );
    let rename = text_of(&results[5]);
    assert!(rename.contains("3 edit(s) in 2 file(s)"), "{rename}");
    let data = &results[5]["structured"];
    assert_eq!(data["edits"], 3, "{data}");
    assert_eq!(data["files"].as_array().map(Vec::len), Some(2), "{data}");
    assert!(
        std::fs::read_to_string(project.root.join("main.py")).unwrap().contains("square_area(2.0)")
    );
    let missing_symbol = text_of(&results[6]);
    assert_eq!(results[6]["isError"], true);
    assert!(
        missing_symbol.contains("needs `symbol`")
            && missing_symbol.contains("label: str = square_area(2.0)"),
        "{missing_symbol}"
    );
}

#[test]
fn a_plan_surface_sees_lsp_but_not_lsp_rename() {
    let project = python_project();
    let script = McpScript::new(&project.root, &["--surface", "plan"]).list_tools();
    let Some(results) = check(script) else { return };
    let names = tool_names(&results[1]);
    assert!(
        names.contains(&"lsp")
            && !names.contains(&"lsp_rename")
            && !names.contains(&"lsp_code_action"),
        "{names:?}"
    );
}

#[test]
fn a_long_outline_is_cut_by_the_output_cap_alike_in_text_and_structured_content() {
    // A small cap (its lowest value) and a file of 80 functions: the outline is over it.
    let functions: String = (1..=80)
        .map(|i| format!("def function_number_{i:02}(a: int) -> int:\n    return a\n\n"))
        .collect();
    let project = python_project_of("[output]\nmax_chars = 1000\n", &[("many.py", &functions)]);
    let script = McpScript::new(&project.root, &[])
        .call("lsp", json!({"action": "symbols", "file": "many.py"}));
    let Some(results) = check(script) else { return };
    let outline = &results[1];
    assert_eq!(outline["isError"], false, "{}", text_of(outline));
    let text = text_of(outline);
    let structured = &outline["structured"];
    assert!(text.chars().count() <= 1000, "text of {} characters", text.chars().count());
    assert!(structured.to_string().chars().count() <= 1000, "payload over the cap: {structured}");
    let symbols = structured["symbols"].as_array().expect("the cut payload, not dropped");
    let shown = symbols.len();
    let total = structured["total"].as_u64().unwrap_or_default() as usize;
    assert!(shown > 1 && shown < total && total >= 80, "{shown} of {total} rows");
    let named = |name: &str| name.starts_with("function_number_");
    let functions = symbols.iter().filter(|s| s["name"].as_str().is_some_and(named)).count();
    let rows = text.lines().filter(|l| l.contains("function_number_")).count();
    assert_eq!(rows, functions, "the text shows the same rows: {text}");
    let next = format!("call again with offset={shown}");
    assert!(text.contains(&next), "the text says how to go on: {text}");
}

#[test]
fn a_client_reads_and_edits_by_name_path_and_gets_the_new_diagnostics_and_the_callers() {
    let project = python_project();
    let script = McpScript::new(&project.root, &[])
        .call("read", json!({"path": "shapes.py", "symbol": "make_square"}))
        .call(
            "edit",
            json!({"path": "shapes.py", "symbol": "make_square",
            "new_string": "def make_square(side: float) -> float:\n    return str(side)\n"}),
        )
        .call(
            "lsp",
            json!({"action": "incoming_calls", "file": "shapes.py", "symbol": "make_square"}),
        );
    let Some(results) = check(script) else { return };
    let read = text_of(&results[1]);
    assert_eq!(
        read,
        "1\tdef make_square(side: float) -> float:\n2\t    return side * side\n[shapes.py: function make_square, lines 1-2]\n"
    );
    assert!(results[1]["structured"].is_null(), "read has no structured content over MCP");
    let edit = text_of(&results[2]);
    assert!(
        edit.starts_with(
            "edited shapes.py: replaced function make_square (was lines 1-2, now 1-2)"
        ),
        "{edit}"
    );
    assert!(edit.contains("1 new error") && edit.contains("reportReturnType"), "{edit}");
    assert_eq!(
        std::fs::read_to_string(project.root.join("shapes.py")).unwrap(),
        "def make_square(side: float) -> float:\n    return str(side)\n"
    );
    let callers = text_of(&results[3]);
    eprintln!("{callers}");
    assert!(
        callers.contains("main.py:3:7  <module>") || callers.contains("main.py:3:7"),
        "{callers}"
    );
}
