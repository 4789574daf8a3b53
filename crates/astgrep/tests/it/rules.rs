//! ast-grep's rule language: real rules over real code, through `search` and `ast_edit`.

use crate::support;

use agent_tools_astgrep::{
    EditRequest, EditStore, Lang, RuleSet, SearchOptions, SearchRequest, render_search, search,
};
use serde_json::{Value, json};

const RUST: &str = r#"use std::io;
fn a() -> Result<(), String> { let x = f(); x.unwrap(); Ok(()) }
unsafe fn b() -> Result<u8, E> { y.unwrap() }
pub(crate) fn c<T: Clone>(t: T) -> io::Result<T> { z.unwrap() }
fn d() -> u8 { w.unwrap() }
impl S { pub async fn e(&self) -> Result<u8, E> { let g = || v.unwrap(); g() } }
fn h() { q.unwrap(); }
"#;

/// `file:line` of every match of `rule` in the files of `project`.
fn lines(files: &[(&str, &str)], language: &str, rule: Value) -> Vec<String> {
    let dir = support::project(files);
    let request = SearchRequest {
        rule: Some(rule),
        language: Some(language.into()),
        max_results: Some(500),
        ..Default::default()
    };
    let result = search(dir.path(), &request, &SearchOptions::default())
        .unwrap_or_else(|e| panic!("search failed: {e}"));
    result.matches.iter().map(|m| format!("{}:{}", m.file, m.line)).collect()
}

fn rule_error(lang: Lang, rule: Value) -> String {
    match RuleSet::compile(lang, &rule) {
        Ok(_) => panic!("{rule} compiled"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn unwrap_inside_a_function_returning_result_finds_unsafe_pub_crate_and_generic_functions() {
    let rule = json!({
        "pattern": "$A.unwrap()",
        "inside": {
            "kind": "function_item",
            "stopBy": "end",
            "has": {"field": "return_type", "regex": "Result"}
        }
    });
    assert_eq!(
        lines(&[("src/lib.rs", RUST)], "rust", rule),
        ["src/lib.rs:2", "src/lib.rs:3", "src/lib.rs:4", "src/lib.rs:6"]
    );
}

#[test]
fn a_whole_rule_config_with_utils_constraints_and_composites_works_unchanged() {
    let config = json!({
        "id": "no-unwrap-in-result-fn",
        "language": "rust",
        "severity": "warning",
        "utils": {
            "result-fn": {"kind": "function_item", "has": {"field": "return_type", "regex": "Result"}}
        },
        "rule": {
            "all": [
                {"pattern": "$A.unwrap()"},
                {"inside": {"matches": "result-fn", "stopBy": "end"}},
                {"not": {"inside": {"kind": "closure_expression", "stopBy": "end"}}}
            ]
        },
        "constraints": {"A": {"regex": "^[xyz]$"}}
    });
    let dir = support::project(&[("src/lib.rs", RUST)]);
    // The config names the language, so `language` may be left out.
    let request =
        SearchRequest { rule: Some(config), path: Some("src".into()), ..Default::default() };
    let result = search(dir.path(), &request, &SearchOptions::default()).expect("search");
    let found: Vec<String> =
        result.matches.iter().map(|m| format!("{}:{}", m.line, m.captures[0].text)).collect();
    assert_eq!(found, ["2:x", "3:y", "4:z"]);
    let text = render_search(&result);
    assert!(text.contains("(rust, rule): 3 matches in 1 file"), "{text}");
}

#[test]
fn relational_rules_follow_precedes_has_and_any() {
    let js = "function f() {\n  const a = load();\n  use(a);\n  done();\n}\nfunction g() {\n  use(b);\n}\n";
    let files = [("a.js", js)];
    // A call that follows a declaration, anywhere before it in the block.
    assert_eq!(
        lines(
            &files,
            "javascript",
            json!({"pattern": "done();", "follows": {"kind": "lexical_declaration", "stopBy": "end"}})
        ),
        ["a.js:4"]
    );
    // Only the immediate neighbour by default.
    assert_eq!(
        lines(
            &files,
            "javascript",
            json!({"pattern": "done();", "follows": {"kind": "lexical_declaration"}})
        ),
        Vec::<String>::new()
    );
    assert_eq!(
        lines(
            &files,
            "javascript",
            json!({"kind": "lexical_declaration", "precedes": {"pattern": "use($X);"}})
        ),
        ["a.js:2"]
    );
    // Functions whose body calls `done()` somewhere.
    assert_eq!(
        lines(
            &files,
            "javascript",
            json!({"kind": "function_declaration", "has": {"pattern": "done()", "stopBy": "end"}})
        ),
        ["a.js:1"]
    );
    assert_eq!(
        lines(&files, "javascript", json!({"any": [{"pattern": "load()"}, {"pattern": "done()"}]})),
        ["a.js:2", "a.js:4"]
    );
    // The second statement of each block.
    assert_eq!(
        lines(&files, "javascript", json!({"kind": "expression_statement", "nthChild": 2})),
        ["a.js:3"]
    );
    assert_eq!(
        lines(
            &files,
            "javascript",
            json!({"kind": "expression_statement", "nthChild": {"position": 1, "reverse": true}})
        ),
        ["a.js:4", "a.js:7"]
    );
    assert_eq!(
        lines(
            &files,
            "javascript",
            json!({"kind": "call_expression", "range": {"start": {"line": 6, "column": 2}, "end": {"line": 6, "column": 8}}})
        ),
        ["a.js:7"]
    );
}

#[test]
fn metavariables_for_unnamed_nodes_strictness_and_selectors() {
    // `_` is an unnamed token in Rust's grammar: `$P` never binds it, `$$P` does.
    let rs = [("a.rs", "fn m() { let _ = 1; let x = 1; }")];
    assert_eq!(lines(&rs, "rust", json!({"pattern": "let $P = 1;"})), ["a.rs:1"]);
    assert_eq!(lines(&rs, "rust", json!({"pattern": "let $$P = 1;"})).len(), 2);
    let py = "z = foo(a, )\n";
    let files = [("m.py", py)];
    // `cst` makes the trailing comma significant.
    assert_eq!(lines(&files, "python", json!({"pattern": "foo(a)"})), ["m.py:1"]);
    assert_eq!(
        lines(&files, "python", json!({"pattern": {"context": "foo(a)", "strictness": "cst"}})),
        Vec::<String>::new()
    );
    let js = "class A { b = 1; c = d(); }\nconst e = 2;\n";
    assert_eq!(
        lines(
            &[("a.js", js)],
            "javascript",
            json!({"pattern": {"context": "class X { $F = $V }", "selector": "field_definition"}})
        ),
        ["a.js:1", "a.js:1"]
    );
}

#[test]
fn rule_errors_name_the_key_and_say_what_would_work() {
    let e = rule_error(
        Lang::Rust,
        json!({"pattern": "$A.unwrap()", "insde": {"kind": "function_item"}}),
    );
    assert!(e.contains("`rule.insde`") && e.contains("inside, has"), "{e}");
    let e = rule_error(Lang::Rust, json!({"kind": "function_itm"}));
    assert!(e.contains("`rule.kind`") && e.contains("function_item"), "{e}");
    let e = rule_error(
        Lang::Rust,
        json!({"has": {"kind": "function_item", "stopBy": "forever"}, "kind": "block"}),
    );
    assert!(e.contains("`rule.has.stopBy`") && e.contains("neighbor"), "{e}");
    let e = rule_error(
        Lang::Rust,
        json!({"has": {"field": "retrun_type", "kind": "type_identifier"}, "kind": "function_item"}),
    );
    assert!(e.contains("`rule.has.field`") && e.contains("retrun_type"), "{e}");
    let e = rule_error(Lang::Rust, json!({"not": {"kind": "block"}}));
    assert!(e.contains("needs a positive `kind`"), "{e}");
    let e = rule_error(Lang::Rust, json!({"kind": "block", "matches": "nope"}));
    assert!(e.contains("`rule.matches`") && e.contains("utils"), "{e}");
    let e = rule_error(Lang::Rust, json!({"regex": "(", "kind": "block"}));
    assert!(e.contains("`rule.regex`") && e.contains("invalid regex"), "{e}");
    let e = rule_error(
        Lang::Rust,
        json!({"rule": {"kind": "block"}, "constraints": {"X": {"regex": "a"}}}),
    );
    assert!(e.contains("`constraints.X`") && e.contains("not bound"), "{e}");
    let e = rule_error(Lang::Rust, json!({"pattern": {"selector": "block"}}));
    assert!(e.contains("`rule.pattern.context`"), "{e}");
    let e = rule_error(Lang::Rust, json!("kind: block"));
    assert!(e.contains("must be an object"), "{e}");
    let dir = support::project(&[("a.rs", "fn m() {}")]);
    let both = SearchRequest {
        pattern: Some("m()".into()),
        rule: Some(json!({"kind": "block"})),
        path: Some("a.rs".into()),
        ..Default::default()
    };
    let e = search(dir.path(), &both, &SearchOptions::default()).unwrap_err().to_string();
    assert!(e.contains("not both"), "{e}");
}

fn propose(files: &[(&str, &str)], request: EditRequest) -> (tempfile::TempDir, String) {
    let dir = support::project(files);
    let store = EditStore::new();
    let proposal =
        store.propose(dir.path(), &request, &SearchOptions::default()).expect("proposal");
    let id = proposal.edit_id.clone().expect("staged");
    store
        .resolve(&agent_tools_astgrep::ResolveRequest {
            edit_id: id,
            action: agent_tools_astgrep::ResolveAction::Accept,
        })
        .expect("accepted");
    let path = dir.path().join(files[0].0);
    let text = std::fs::read_to_string(path).expect("read");
    (dir, text)
}

#[test]
fn a_fix_with_transform_renames_calls_to_snake_case() {
    let py = "getUserName(a, b)\nkeep(c)\nparseHTTPHeader(d)\n";
    let config = json!({
        "rule": {"pattern": "$F($$$ARGS)"},
        "constraints": {"F": {"regex": "[a-z][A-Z]"}},
        "transform": {
            "S": {"convert": {"source": "$F", "toCase": "snakeCase"}},
            "T": {"substring": {"source": "$S", "startChar": 0, "endChar": 3}}
        },
        "fix": "$S($$$ARGS)  # $T"
    });
    let (_dir, text) = propose(
        &[("m.py", py)],
        EditRequest { rule: Some(config), path: Some("m.py".into()), ..Default::default() },
    );
    assert_eq!(text, "get_user_name(a, b)  # get\nkeep(c)\nparse_http_header(d)  # par\n");
}

#[test]
fn a_fix_with_expand_end_removes_the_trailing_comma_too() {
    let js = "const o = { debug: true, b: 2 };\n";
    let config = json!({
        "rule": {"kind": "pair", "has": {"field": "key", "regex": "^debug$"}},
        "fix": {"template": "", "expandEnd": {"regex": "^,$"}}
    });
    let (_dir, text) = propose(
        &[("a.js", js)],
        EditRequest { rule: Some(config), path: Some("a.js".into()), ..Default::default() },
    );
    assert_eq!(text, "const o = {  b: 2 };\n");
}

#[test]
fn a_fix_with_expand_start_removes_the_leading_comma_too() {
    let js = "const o = { a: 1, debug: true };\n";
    let config = json!({
        "rule": {"kind": "pair", "has": {"field": "key", "regex": "^debug$"}},
        "fix": {"template": "", "expandStart": {"regex": "^,$"}}
    });
    let (_dir, text) = propose(
        &[("a.js", js)],
        EditRequest { rule: Some(config), path: Some("a.js".into()), ..Default::default() },
    );
    assert_eq!(text, "const o = { a: 1 };\n");
}

#[test]
fn a_rule_with_a_rewrite_argument_rewrites_only_what_the_rule_selects() {
    let (_dir, text) = propose(
        &[("src/lib.rs", RUST)],
        EditRequest {
            rule: Some(json!({
                "pattern": "$A.unwrap()",
                "inside": {"kind": "function_item", "stopBy": "end", "has": {"field": "return_type", "regex": "Result"}}
            })),
            rewrite: Some("$A?".into()),
            path: Some("src".into()),
            language: Some("rust".into()),
            ..Default::default()
        },
    );
    assert!(text.contains("x?;") && text.contains("{ y? }") && text.contains("|| v?;"), "{text}");
    assert!(text.contains("w.unwrap()") && text.contains("q.unwrap()"), "{text}");
}
