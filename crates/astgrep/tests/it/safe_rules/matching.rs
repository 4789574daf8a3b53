//! What a rule matches: `range` in characters, `labels`, `rewriters`, the literal pre-filter
//! under strictness, a lone `$X` wherever ast-grep allows it, and Go statement patterns on
//! several lines.

use super::{fixed, matched_texts, rule_error};
use crate::support;

use agent_tools_astgrep::{
    EditRequest, EditStore, Lang, Pattern, ResolveAction, ResolveRequest, RuleSet, SearchOptions,
};
use serde_json::{Value, json};

#[test]
fn range_columns_count_characters_not_bytes() {
    let py = "s = \"ééé\"; t = 1\n";
    // `t` is at character 11 (byte 14).
    let rule = json!({"kind": "identifier", "range": {"start": {"line": 0, "column": 11}, "end": {"line": 0, "column": 12}}});
    assert_eq!(matched_texts("a.py", py, "python", rule), vec!["t"]);
    // A four-byte character is one column; columns restart on each line.
    let js = "let a = '🦄'; x\nfoo('é', 1)\n";
    let string = json!({"kind": "string", "range": {"start": {"line": 0, "column": 8}, "end": {"line": 0, "column": 11}}});
    assert_eq!(matched_texts("a.js", js, "javascript", string), vec!["'🦄'"]);
    let number = json!({"kind": "number", "range": {"start": {"line": 1, "column": 9}, "end": {"line": 1, "column": 10}}});
    assert_eq!(matched_texts("a.js", js, "javascript", number), vec!["1"]);
    let by_bytes = json!({"kind": "number", "range": {"start": {"line": 1, "column": 10}, "end": {"line": 1, "column": 11}}});
    assert!(matched_texts("a.js", js, "javascript", by_bytes).is_empty());
}

#[test]
fn a_range_whose_start_is_after_its_end_is_refused() {
    let e = rule_error(
        Lang::Python,
        json!({"range": {"start": {"line": 3, "column": 0}, "end": {"line": 1, "column": 4}}}),
    );
    assert!(e.contains("`rule.range`") && e.contains("after `end`"), "{e}");
    // As the CLI compares them, on one line a start column with no end column is after it;
    // no start column, or none on either side, is fine.
    for (start, end, refused) in [
        (json!({"line": 0, "column": 10}), json!({"line": 0, "column": 5}), true),
        (json!({"line": 0, "column": 10}), json!({"line": 0}), true),
        (json!({"line": 5}), json!({"line": 3}), true),
        (json!({"line": 0}), json!({"line": 0, "column": 17}), false),
        (json!({"line": 0}), json!({"line": 0}), false),
    ] {
        let rule = json!({"kind": "identifier", "range": {"start": start, "end": end}});
        assert_eq!(RuleSet::compile(Lang::Python, &rule).is_err(), refused, "{rule}");
    }
}

#[test]
fn labels_are_accepted_as_report_only_keys() {
    let config = json!({
        "rule": {"pattern": "print($A)"},
        "labels": {"A": {"style": "primary", "message": "printed"}},
        "message": "no prints"
    });
    assert_eq!(matched_texts("a.py", "print(1)\n", "python", config), vec!["print(1)"]);
}

#[test]
fn rewriters_rewrite_the_nodes_inside_a_capture() {
    let config = json!({
        "rule": {"pattern": "log($$$ARGS)"},
        "rewriters": [
            {"id": "quote", "rule": {"kind": "identifier", "pattern": "$N"}, "fix": "repr($N)"},
            {"id": "keep-numbers", "rule": {"kind": "integer"}, "fix": "0"}
        ],
        "transform": {
            "QUOTED": {"rewrite": {"source": "$$$ARGS", "rewriters": ["quote", "keep-numbers"]}},
            "LISTED": "rewrite($$$ARGS, rewriters=[quote], joinBy=' + ')"
        },
        "fix": "log($QUOTED)  # $LISTED"
    });
    let py = "log(a, 7, f(b))\n";
    assert_eq!(
        fixed("a.py", py, config),
        "log(repr(a), 0, repr(f)(repr(b)))  # repr(a) + repr(f) + repr(b)\n"
    );
}

#[test]
fn a_rewrite_naming_an_undefined_rewriter_or_a_transform_is_refused() {
    let base = |transform: Value| {
        json!({
            "rule": {"pattern": "f($A)"},
            "rewriters": [{"id": "r", "rule": {"kind": "integer"}, "fix": "0"}],
            "transform": transform,
            "fix": "$B"
        })
    };
    let e = rule_error(
        Lang::Python,
        base(json!({"B": {"rewrite": {"source": "$A", "rewriters": ["nope"]}}})),
    );
    assert!(
        e.contains("`transform.B.rewrite.rewriters`")
            && e.contains("no rewriter `nope`")
            && e.contains("defined: r"),
        "{e}"
    );
    let e = rule_error(
        Lang::Python,
        base(
            json!({"C": {"convert": {"source": "$A", "toCase": "upperCase"}}, "B": {"rewrite": {"source": "$C", "rewriters": ["r"]}}}),
        ),
    );
    assert!(e.contains("`transform.B.rewrite.source`") && e.contains("nodes of a capture"), "{e}");
    let e = rule_error(
        Lang::Python,
        json!({"rule": {"pattern": "f($A)"}, "rewriters": [{"id": "r", "rule": {"kind": "integer"}}]}),
    );
    assert!(e.contains("`rewriters.r`") && e.contains("`fix`"), "{e}");
    let e = rule_error(
        Lang::Python,
        json!({"rule": {"pattern": "f($A)"}, "rewriters": [{"id": "r", "rule": {"kind": "integer"}, "fix": "$Z"}]}),
    );
    assert!(e.contains("in rewriter `r`") && e.contains("`$Z` is not bound"), "{e}");
}

#[test]
fn the_literal_pre_filter_follows_the_strictness() {
    let js = "foo(baz);\n";
    let rule = json!({"pattern": {"context": "foo(bar)", "strictness": "signature"}});
    assert_eq!(matched_texts("a.js", js, "javascript", rule), vec!["foo(baz)"]);
    let smart = json!({"pattern": {"context": "foo(bar)"}});
    assert!(matched_texts("a.js", js, "javascript", smart).is_empty());
    // The same inside a relational rule, at the config's strictness, and for a selector.
    let has = json!({"kind": "function_declaration", "has": {"stopBy": "end", "pattern": {"context": "foo(bar)", "strictness": "signature"}}});
    let f = "function f() { foo(baz); }\n";
    assert_eq!(matched_texts("b.js", f, "javascript", has), vec!["function f() { foo(baz); }"]);
    let config = json!({"rule": {"pattern": "foo(bar)"}, "strictness": "signature"});
    assert_eq!(matched_texts("c.js", js, "javascript", config), vec!["foo(baz)"]);
    let selected = json!({"pattern": {"context": "class X { foo(b) { return 2 } }", "selector": "method_definition", "strictness": "signature"}});
    let class = "class A { bar(a) { return 1 } }\n";
    assert_eq!(matched_texts("d.js", class, "javascript", selected), vec!["bar(a) { return 1 }"]);
    // `relaxed` compares strings without their quotes.
    let relaxed = json!({"pattern": {"context": "foo(\"bar\")", "strictness": "relaxed"}});
    assert_eq!(matched_texts("e.js", "foo('bar')\n", "javascript", relaxed), vec!["foo('bar')"]);
}

#[test]
fn a_lone_metavariable_pattern_is_allowed_wherever_ast_grep_allows_it() {
    let js = "fooBar(1)\n";
    let fix = |rule: Value| fixed("a.js", js, json!({"rule": rule, "fix": "<$N>"}));
    assert_eq!(fix(json!({"all": [{"pattern": "$N"}, {"kind": "identifier"}]})), "<fooBar>(1)\n");
    assert_eq!(fix(json!({"all": [{"kind": "identifier"}, {"pattern": "$N"}]})), "<fooBar>(1)\n");
    assert_eq!(
        fix(json!({"kind": "call_expression", "any": [{"pattern": "$N"}]})),
        "<fooBar(1)>\n"
    );
    assert_eq!(
        fix(json!({"kind": "call_expression", "has": {"pattern": "$N", "field": "function"}})),
        "<fooBar>\n"
    );
    assert_eq!(
        fix(
            json!({"kind": "number", "inside": {"pattern": "$N", "stopBy": "end", "kind": "call_expression"}})
        ),
        "fooBar(<fooBar(1)>)\n"
    );
    let utils = json!({"rule": {"kind": "identifier", "matches": "u"}, "utils": {"u": {"pattern": "$N"}}, "fix": "<$N>"});
    assert_eq!(fixed("b.js", js, utils), "<fooBar>(1)\n");
    // As a stop rule `$S` stops at the first ancestor, which is not a call here.
    let stop = json!({"kind": "number", "inside": {"kind": "call_expression", "stopBy": {"pattern": "$S"}}});
    assert!(matched_texts("c.js", "f(g(h(1)))\n", "javascript", stop).is_empty());
    let stop =
        json!({"kind": "number", "inside": {"kind": "arguments", "stopBy": {"pattern": "$S"}}});
    assert_eq!(matched_texts("c.js", "f(g(h(1)))\n", "javascript", stop), vec!["1"]);
    let not = json!({"kind": "identifier", "not": {"pattern": "$N"}});
    assert!(matched_texts("d.js", js, "javascript", not).is_empty());
}

const GO: &str = "package p

func f() error {
\tx, err := g()
\tif err != nil {
\t\treturn err
\t}
\tfor i := range x {
\t\th(i)
\t}
\treturn nil
}
";

fn go_matches(pattern: &str) -> Vec<String> {
    let pattern = Pattern::compile(Lang::Go, pattern, None)
        .unwrap_or_else(|e| panic!("`{pattern}` does not compile: {e}"));
    agent_tools_astgrep::match_source(&pattern, GO)
        .iter()
        .map(|m| GO[m.range.clone()].to_string())
        .collect()
}

#[test]
fn go_statement_patterns_may_span_several_lines() {
    let one_line = go_matches("if err != nil { return $E }");
    assert_eq!(one_line, go_matches("if err != nil {\n\treturn $E\n}"));
    assert_eq!(one_line.len(), 1);
    assert_eq!(go_matches("for $I := range $X {\n    h($I)\n}").len(), 1);
    assert_eq!(go_matches("func $F() error {\n\t$$$BODY\n}").len(), 1);
    // Every Go construct with a block or a list, written on several lines.
    let go = "package p\n\nfunc f(x int, c chan int) {\n\tswitch x {\n\tcase 1:\n\t\tg()\n\t}\n\tselect {\n\tcase <-c:\n\t\tg()\n\t}\n\tdefer func() {\n\t\tclose(c)\n\t}()\n\tv := T{\n\t\tA: 1,\n\t}\n\tfor i := 0; i < 3; i++ {\n\t\tg(i,\n\t\t\t2)\n\t}\n\tif x > 0 {\n\t\tg()\n\t} else {\n\t\th(v)\n\t}\n}\n\nvar (\n\ta = 1\n\tb = 2\n)\n";
    for pattern in [
        "switch $X {\ncase 1:\n\tg()\n}",
        "select {\ncase <-$C:\n\t$$$B\n}",
        "defer func() {\n\t$$$B\n}()",
        "$V := T{\n\tA: $E,\n}",
        "for $I := 0; $I < $N; $I++ {\n\t$$$B\n}",
        "g($I,\n\t2)",
        "if $A {\n\tg()\n} else {\n\th($V)\n}",
        "var (\n\ta = $X\n\tb = $Y\n)",
    ] {
        let compiled = Pattern::compile(Lang::Go, pattern, None)
            .unwrap_or_else(|e| panic!("`{pattern}` does not compile: {e}"));
        let found = agent_tools_astgrep::match_source(&compiled, go);
        assert_eq!(found.len(), 1, "`{pattern}`: {found:?}");
    }
}

#[test]
fn go_statement_sequences_may_span_several_lines() {
    let found = go_matches("$V, err := $CALL()\nif err != nil {\n\treturn err\n}");
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("x, err := g()") && found[0].ends_with('}'), "{found:?}");
}

#[test]
fn a_multi_line_go_pattern_rewrites_through_ast_edit() {
    let dir = support::project(&[("a.go", GO)]);
    let request = EditRequest {
        pattern: Some("if err != nil {\n\treturn err\n}".into()),
        rewrite: Some("if err != nil {\n\treturn fmt.Errorf(\"f: %w\", err)\n}".into()),
        path: Some("a.go".into()),
        ..Default::default()
    };
    let store = EditStore::new();
    let proposal =
        store.propose(dir.path(), &request, &SearchOptions::default()).expect("proposal");
    let edit_id = proposal.edit_id.expect("staged");
    store.resolve(&ResolveRequest { edit_id, action: ResolveAction::Accept }).expect("accept");
    let text = std::fs::read_to_string(dir.path().join("a.go")).expect("read back");
    assert!(
        text.contains("\tif err != nil {\n\t\treturn fmt.Errorf(\"f: %w\", err)\n\t}\n"),
        "{text}"
    );
}
