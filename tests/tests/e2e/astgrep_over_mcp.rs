//! astgrep over MCP with the official Python client: search, stage, accept, and a stale accept
//! rejected with no file touched.

use serde_json::{Value, json};

use crate::support::{McpScript, TempProject, text_of};

fn check(script: McpScript) -> Option<Vec<Value>> {
    script.run_and_end().map(crate::support::results)
}

const GUARD: &str = "class A {\n  void close() {\n    if (c != null) c.dispose();\n    if (c != null) d.dispose();\n  }\n}\n";

#[test]
fn search_stage_and_accept_over_mcp() {
    let project = TempProject::new(&[
        ("lib/a.dart", GUARD),
        ("src/main.py", "def main():\n    print('hi', end='')\n    print()\n"),
    ]);
    let script = McpScript::new(&project.root, &[])
        .list_tools()
        .call(
            "ast_grep",
            json!({"pattern": "if ($X != null) $X.dispose();", "path": "lib", "language": "dart"}),
        )
        .call(
            "ast_edit",
            json!({"pattern": "print($$$ARGS)", "rewrite": "log($$$ARGS)", "path": "src/main.py"}),
        )
        .call("resolve", json!({"edit_id": "edit_1", "action": "accept"}));
    let Some(results) = check(script) else { return };
    let tools: Vec<&str> =
        results[1]["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    for name in ["ast_grep", "ast_edit", "resolve"] {
        assert!(tools.contains(&name), "{name} missing from {tools:?}");
    }
    let ast_grep = results[1]["tools"].as_array().unwrap().iter().find(|t| t["name"] == "ast_grep");
    assert_eq!(ast_grep.unwrap()["readOnly"], true);

    let found = text_of(&results[2]);
    assert_eq!(results[2]["isError"], false, "{found}");
    assert!(found.contains("1 match in 1 file"), "{found}");
    assert!(found.contains("lib/a.dart:3:5  if (c != null) c.dispose();"), "{found}");
    assert!(found.contains("$X = c"), "{found}");

    let staged = text_of(&results[3]);
    assert!(
        staged.starts_with(
            "(proposed) 2 replacements in 1 file … call resolve with edit_id \"edit_1\""
        ),
        "{staged}"
    );
    assert!(staged.contains("+    log('hi', end='')"), "{staged}");

    let accepted = text_of(&results[4]);
    assert_eq!(results[4]["isError"], false, "{accepted}");
    assert_eq!(accepted, "accepted edit_1: wrote 2 replacements to 1 file: src/main.py");
    assert_eq!(
        std::fs::read_to_string(project.root.join("src/main.py")).unwrap(),
        "def main():\n    log('hi', end='')\n    log()\n"
    );
}

#[test]
fn a_stale_accept_over_mcp_is_rejected_and_touches_no_file() {
    let one = "fn one() {\n    a.unwrap();\n}\n";
    let two = "fn two() {\n    b.unwrap();\n}\n";
    let project = TempProject::new(&[("src/one.rs", one), ("src/two.rs", two)]);
    let two_edited = "fn two() {\n    b.unwrap(); // edited after staging\n}\n";
    let script = McpScript::new(&project.root, &[])
        .call(
            "ast_edit",
            json!({"pattern": "$A.unwrap()", "rewrite": "$A.expect(\"x\")", "path": "src", "language": "rust"}),
        )
        .call("write", json!({"path": "src/two.rs", "content": two_edited}))
        .call("resolve", json!({"edit_id": "edit_1", "action": "accept"}))
        .call("resolve", json!({"edit_id": "edit_1", "action": "accept"}));
    let Some(results) = check(script) else { return };
    let staged = text_of(&results[1]);
    assert!(staged.starts_with("(proposed) 2 replacements in 2 files"), "{staged}");
    assert_eq!(results[2]["isError"], false, "{}", text_of(&results[2]));

    let rejected = text_of(&results[3]);
    assert_eq!(results[3]["isError"], true, "{rejected}");
    assert!(rejected.contains("src/two.rs (changed)"), "{rejected}");
    assert!(rejected.contains("Nothing was written"), "{rejected}");
    assert!(rejected.contains("call ast_edit again"), "{rejected}");
    assert_eq!(std::fs::read_to_string(project.root.join("src/one.rs")).unwrap(), one);
    assert_eq!(std::fs::read_to_string(project.root.join("src/two.rs")).unwrap(), two_edited);

    let again = text_of(&results[4]);
    assert_eq!(results[4]["isError"], true, "{again}");
    assert!(again.contains("already rejected"), "{again}");
    let leftovers: Vec<String> = std::fs::read_dir(project.root.join("src"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
}

#[test]
fn an_unparsable_pattern_over_mcp_is_an_error_not_a_silent_zero() {
    let project = TempProject::new(&[("lib/a.dart", GUARD)]);
    let script = McpScript::new(&project.root, &["--surface", "plan"])
        .list_tools()
        .call("ast_grep", json!({"pattern": "if ($X != null", "path": "lib/a.dart"}))
        .call("ast_grep", json!({"pattern": "$X.dispose()", "path": "../"}));
    let Some(results) = check(script) else { return };
    let tools: Vec<&str> =
        results[1]["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(
        tools.contains(&"ast_grep") && !tools.contains(&"ast_edit") && !tools.contains(&"resolve")
    );
    let err = text_of(&results[2]);
    assert_eq!(results[2]["isError"], true, "{err}");
    assert!(
        err.contains("unparsable as dart: tried statement, expression, class member, declaration"),
        "{err}"
    );
    let err = text_of(&results[3]);
    assert!(err.contains("outside the run's root"), "{err}");
}

#[test]
fn rules_search_and_rewrite_over_mcp_and_structured_content_is_the_text_as_data() {
    let lib = "use std::io;\n\
               fn a() -> Result<(), String> { x.unwrap(); Ok(()) }\n\
               unsafe fn b() -> Result<u8, E> { y.unwrap() }\n\
               pub(crate) fn c<T: Clone>(t: T) -> io::Result<T> { z.unwrap() }\n\
               fn d() -> u8 { w.unwrap() }\n";
    let project = TempProject::new(&[("src/lib.rs", lib)]);
    let rule = json!({
        "pattern": "$A.unwrap()",
        "inside": {"kind": "function_item", "stopBy": "end", "has": {"field": "return_type", "regex": "Result"}}
    });
    let script = McpScript::new(&project.root, &[])
        .call("ast_grep", json!({"rule": rule, "path": "src", "language": "rust"}))
        .call(
            "ast_grep",
            json!({"rule": {"kind": "function_itm"}, "path": "src", "language": "rust"}),
        )
        .call(
            "ast_edit",
            json!({"rule": {"rule": rule, "fix": "$A?"}, "path": "src", "language": "rust"}),
        )
        .call("resolve", json!({"edit_id": "edit_1", "action": "accept"}));
    let Some(results) = check(script) else { return };
    let found = text_of(&results[1]);
    assert_eq!(results[1]["isError"], false, "{found}");
    assert!(found.contains("(rust, rule): 3 matches in 1 file"), "{found}");
    for line in ["src/lib.rs:2:", "src/lib.rs:3:", "src/lib.rs:4:"] {
        assert!(found.contains(line), "{line} missing: {found}");
    }
    assert!(!found.contains("src/lib.rs:5:"), "{found}");
    // A client that shows only structured content gets the same matches and captures.
    let data = &results[1]["structured"];
    assert_eq!(data["matches"].as_array().map(Vec::len), Some(3), "{data}");
    assert_eq!(data["matches"][0]["at"], "src/lib.rs:2:32", "{data}");
    assert_eq!(data["matches"][0]["captures"][0]["text"], "x", "{data}");
    assert!(found.starts_with(data["summary"].as_str().unwrap()), "{data}");

    let err = text_of(&results[2]);
    assert_eq!(results[2]["isError"], true, "{err}");
    assert!(err.contains("`rule.kind`") && err.contains("function_item"), "{err}");

    let staged = text_of(&results[3]);
    assert!(staged.starts_with("(proposed) 3 replacements in 1 file"), "{staged}");
    assert!(results[3]["structured"].is_null(), "{}", results[3]);
    assert_eq!(results[4]["isError"], false, "{}", text_of(&results[4]));
    let written = std::fs::read_to_string(project.root.join("src/lib.rs")).unwrap();
    assert!(written.contains("{ x?; Ok(()) }") && written.contains("{ y? }"), "{written}");
    assert!(written.contains("{ z? }") && written.contains("w.unwrap()"), "{written}");
}

#[test]
fn a_cancelled_search_of_a_large_tree_gets_no_late_answer_and_the_next_search_answers() {
    let project = TempProject::new(&[("needle.py", "def find_me():\n    return 42\n")]);
    // A tree that takes seconds to search: 40,000 files of 30 calls each.
    let body: String =
        (0..30).map(|i| format!("result_{i} = compute(alpha, beta, {i})\n")).collect();
    for dir in 0..40 {
        let folder = project.root.join(format!("pkg{dir:02}"));
        std::fs::create_dir_all(&folder).unwrap();
        for file in 0..1000 {
            std::fs::write(folder.join(format!("m{file:04}.py")), &body).unwrap();
        }
    }
    let script = McpScript::new(&project.root, &[])
        .call_cancelled("ast_grep", json!({"pattern": "$F($$$ARGS)", "language": "python"}), 0.3)
        .call("ast_grep", json!({"pattern": "def find_me(): $$$BODY", "path": "needle.py"}));
    let Some(results) = check(script) else { return };
    // results[0] is the connection's own step; then one result per call.
    assert_eq!(results[1]["cancelled"]["answered"], false, "the cancelled search answered late");
    let next = text_of(&results[2]);
    assert_eq!(results[2]["isError"], false, "{next}");
    assert!(next.contains("needle.py:1"), "{next}");
}
