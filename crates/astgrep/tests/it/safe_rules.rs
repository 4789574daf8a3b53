//! Rules ported from ast-grep that used to delete code or be refused (issue 25): broken
//! transforms are refused with the reason, `expandStart`/`expandEnd` reach only the sibling
//! their `stopBy` allows, `pattern: $X` names the matched node, and Go statement patterns may
//! span several lines.

use crate::support;

use agent_tools_astgrep::{
    EditRequest, EditStore, Lang, Pattern, ResolveAction, ResolveRequest, RuleSet, SearchOptions,
    SearchRequest, search,
};
use serde_json::{Value, json};

fn rule_error(lang: Lang, rule: Value) -> String {
    match RuleSet::compile(lang, &rule) {
        Ok(_) => panic!("{rule} compiled"),
        Err(e) => e.to_string(),
    }
}

/// Applies `config`'s fix to one file through `ast_edit` and `resolve`, and returns the file.
fn fixed(name: &str, text: &str, config: Value) -> String {
    let dir = support::project(&[(name, text)]);
    let store = EditStore::new();
    let request = EditRequest { rule: Some(config), path: Some(name.into()), ..Default::default() };
    let proposal =
        store.propose(dir.path(), &request, &SearchOptions::default()).expect("proposal");
    if let Some(edit_id) = proposal.edit_id.clone() {
        store.resolve(&ResolveRequest { edit_id, action: ResolveAction::Accept }).expect("accept");
    }
    std::fs::read_to_string(dir.path().join(name)).expect("read back")
}

/// What `ast_edit` says about `config` on one file, when it refuses it.
fn edit_error(name: &str, text: &str, config: Value) -> String {
    let dir = support::project(&[(name, text)]);
    let request = EditRequest { rule: Some(config), path: Some(name.into()), ..Default::default() };
    match EditStore::new().propose(dir.path(), &request, &SearchOptions::default()) {
        Ok(p) => panic!("proposed {:?}", p.edit_id),
        Err(e) => e.to_string(),
    }
}

fn transform_config(transform: Value) -> Value {
    json!({
        "rule": {"pattern": "let $A = $B"},
        "transform": transform,
        "fix": "let $A = $NEW"
    })
}

#[test]
fn a_transform_whose_source_is_not_a_metavariable_is_refused_and_nothing_is_staged() {
    let config = transform_config(json!({"NEW": {"substring": {"source": "B", "startChar": 1}}}));
    let e = edit_error("a.js", "let a = 123\n", config);
    assert!(e.contains("`transform.NEW.substring.source`"), "{e}");
    assert!(e.contains("not a metavariable") && e.contains("`$B`"), "{e}");
    let e = rule_error(
        Lang::Javascript,
        transform_config(json!({"NEW": {"convert": {"source": "$_", "toCase": "upperCase"}}})),
    );
    assert!(e.contains("`$_` is not a metavariable"), "{e}");
}

#[test]
fn a_transform_reading_its_own_result_is_refused() {
    let config = transform_config(json!({"NEW": {"substring": {"source": "$NEW"}}}));
    let e = edit_error("a.js", "let a = 123\n", config);
    assert!(e.contains("`transform.NEW`") && e.contains("its own result"), "{e}");
    assert!(e.contains("$A, $B"), "names what it could read: {e}");
}

#[test]
fn every_malformed_transform_source_is_refused_in_both_forms() {
    for (transform, why) in [
        (json!({"NEW": "substring(B, startChar=1)"}), "`B` is not a metavariable (write `$B`)"),
        (
            json!({"NEW": {"convert": {"source": "$b", "toCase": "upperCase"}}}),
            "`$b` is not a metavariable",
        ),
        (
            json!({"NEW": {"replace": {"source": "$$$$B", "replace": "1", "by": "2"}}}),
            "`$$$$B` is not a metavariable",
        ),
        (json!({"NEW": {"substring": {"source": ""}}}), "`` is not a metavariable"),
        (json!({"NEW": {"substring": {"source": 5}}}), "is required"),
    ] {
        let e = edit_error("a.js", "let a = 123\n", transform_config(transform.clone()));
        assert!(e.contains("`transform.NEW") && e.contains(why), "{transform}: {e}");
    }
}

#[test]
fn transforms_reading_each_other_in_a_cycle_are_refused() {
    let three = transform_config(json!({
        "NEW": "convert($X, toCase=upperCase)",
        "X": "substring($Y, startChar=1)",
        "Y": {"replace": {"source": "$NEW", "replace": "a", "by": "b"}}
    }));
    let e = edit_error("a.js", "let a = 123\n", three);
    assert!(e.contains("is part of the cycle") && e.contains("$NEW"), "{e}");
    let config = transform_config(json!({
        "NEW": {"substring": {"source": "$OTHER"}},
        "OTHER": {"replace": {"source": "$NEW", "replace": "1", "by": "2"}}
    }));
    let e = rule_error(Lang::Javascript, config);
    assert!(e.contains("cycle $NEW → $OTHER → $NEW"), "{e}");
}

#[test]
fn a_transform_reading_an_unbound_metavariable_is_refused() {
    let config = transform_config(json!({"NEW": {"substring": {"source": "$C"}}}));
    let e = rule_error(Lang::Javascript, config);
    assert!(e.contains("`transform.NEW`") && e.contains("reads `$C`"), "{e}");
    assert!(e.contains("bound: $A, $B"), "{e}");
}

#[test]
fn a_transform_named_like_a_capture_is_refused() {
    let config = transform_config(json!({"B": {"substring": {"source": "$A"}}}));
    let e = rule_error(Lang::Javascript, config);
    assert!(e.contains("`transform.B`") && e.contains("already a metavariable"), "{e}");
}

#[test]
fn a_transform_may_read_one_declared_after_it() {
    let config = json!({
        "rule": {"pattern": "let $A = $B"},
        "transform": {
            "SHORT": {"substring": {"source": "$UPPER", "endChar": 3}},
            "UPPER": {"convert": {"source": "$A", "toCase": "upperCase"}}
        },
        "fix": "let $SHORT = $B"
    });
    assert_eq!(fixed("a.js", "let alpha = 123\n", config), "let ALP = 123\n");
}

fn drop_file_argument(stop_by: Option<&str>) -> Value {
    let mut expand = json!({"regex": ","});
    if let Some(s) = stop_by {
        expand["stopBy"] = json!(s);
    }
    json!({
        "rule": {"kind": "keyword_argument", "has": {"field": "name", "regex": "^file$"}},
        "fix": {"template": "", "expandStart": expand}
    })
}

#[test]
fn expand_start_with_stop_by_neighbor_reaches_only_the_adjacent_comma() {
    let py = "print(\"a, b\", file=self.stream)\n";
    assert_eq!(fixed("p.py", py, drop_file_argument(Some("neighbor"))), "print(\"a, b\")\n");
    // `neighbor` is the default.
    assert_eq!(fixed("p.py", py, drop_file_argument(None)), "print(\"a, b\")\n");
}

#[test]
fn expand_start_with_stop_by_end_takes_the_nearest_matching_sibling_only() {
    let py = "print(\"a, b\", file=self.stream)\n";
    assert_eq!(fixed("p.py", py, drop_file_argument(Some("end"))), "print(\"a, b\")\n");
}

#[test]
fn expand_end_stops_at_the_adjacent_comma_and_keeps_the_next_pair() {
    let js = "const o = { debug: true, b: \"x, y\" };\n";
    let config = json!({
        "rule": {"kind": "pair", "has": {"field": "key", "regex": "^debug$"}},
        "fix": {"template": "", "expandEnd": {"regex": ",", "stopBy": "neighbor"}}
    });
    assert_eq!(fixed("a.js", js, config), "const o = {  b: \"x, y\" };\n");
}

#[test]
fn expand_end_whose_neighbour_does_not_match_replaces_only_the_match() {
    let js = "const o = { b: 2, debug: true };\n";
    let config = json!({
        "rule": {"kind": "pair", "has": {"field": "key", "regex": "^debug$"}},
        "fix": {"template": "", "expandEnd": {"regex": "^,$"}}
    });
    assert_eq!(fixed("a.js", js, config), "const o = { b: 2,  };\n");
}

#[test]
fn a_lone_metavariable_pattern_beside_kind_names_the_matched_node_for_a_transform() {
    let js = "fooBar(1);\nother(2);\nfooBaz(3);\n";
    let config = json!({
        "rule": {"kind": "identifier", "pattern": "$NAME", "regex": "^foo"},
        "transform": {"SNAKE": {"convert": {"source": "$NAME", "toCase": "snakeCase"}}},
        "fix": "$SNAKE"
    });
    assert_eq!(fixed("a.js", js, config), "foo_bar(1);\nother(2);\nfoo_baz(3);\n");
}

#[test]
fn a_lone_metavariable_pattern_works_inside_relational_rules() {
    let dir =
        support::project(&[("a.rs", "fn f() { a.unwrap(); }\nfn g() { b.expect(\"x\"); }\n")]);
    let request = SearchRequest {
        rule: Some(json!({
            "kind": "function_item",
            "has": {"pattern": "$BODY", "field": "body", "has": {"pattern": "$X.unwrap()", "stopBy": "end"}}
        })),
        language: Some("rust".into()),
        ..Default::default()
    };
    let result = search(dir.path(), &request, &SearchOptions::default()).expect("search");
    let lines: Vec<usize> = result.matches.iter().map(|m| m.line).collect();
    assert_eq!(lines, vec![1]);
}

#[test]
fn a_rule_without_a_kind_is_refused_as_ast_grep_refuses_it() {
    for rule in
        [json!({"regex": "^legacy_"}), json!({"pattern": "$X"}), json!({"not": {"kind": "call"}})]
    {
        let e = rule_error(Lang::Python, rule);
        assert!(e.contains("needs a positive `kind`") && e.contains("lone `$X`"), "{e}");
    }
}

#[test]
fn a_lone_list_metavariable_pattern_is_refused_with_the_single_node_form() {
    let e = rule_error(Lang::Rust, json!({"kind": "block", "pattern": "$$$BODY"}));
    assert!(e.contains("`rule.pattern`") && e.contains("write `$BODY`"), "{e}");
}

#[test]
fn a_bare_metavariable_search_pattern_points_to_a_rule_not_to_a_kind_it_lacks() {
    let e = Pattern::compile(Lang::Rust, "$X", None).unwrap_err().to_string();
    assert!(e.contains("only a metavariable") && e.contains("pattern: \"$X\""), "{e}");
}

#[test]
fn a_transform_in_ast_grep_string_form_works_like_the_object_form() {
    let config = json!({
        "rule": {"pattern": "let $A = $B"},
        "transform": {
            "UPPER": "convert($A, toCase=upperCase)",
            "SHORT": "substring($UPPER, startChar=1, endChar=-1)",
            "DASHED": "replace($B, replace='2', by='-')"
        },
        "fix": "let $SHORT = $DASHED"
    });
    assert_eq!(fixed("a.js", "let alpha = 123\n", config), "let LPH = 1-3\n");
    let e = rule_error(
        Lang::Javascript,
        json!({"rule": {"pattern": "let $A = $B"}, "transform": {"X": "convert $A"}}),
    );
    assert!(e.contains("`transform.X`") && e.contains("KIND($SOURCE"), "{e}");
}

fn matched_texts(name: &str, text: &str, language: &str, rule: Value) -> Vec<String> {
    let dir = support::project(&[(name, text)]);
    let request =
        SearchRequest { rule: Some(rule), language: Some(language.into()), ..Default::default() };
    let result = search(dir.path(), &request, &SearchOptions::default()).expect("search");
    result.matches.iter().map(|m| m.text.clone()).collect()
}

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

/// As ast-grep counts: every named sibling, and comments are named nodes, so a comment before
/// an argument shifts its position.
#[test]
fn nth_child_counts_named_siblings_comments_included_as_ast_grep_does() {
    let js = "f(/* first */ a, b);\n";
    let nth =
        |n: u64| json!({"kind": "identifier", "nthChild": n, "inside": {"kind": "arguments"}});
    assert!(matched_texts("a.js", js, "javascript", nth(1)).is_empty());
    assert_eq!(matched_texts("a.js", js, "javascript", nth(2)), vec!["a"]);
    assert_eq!(matched_texts("a.js", js, "javascript", nth(3)), vec!["b"]);
    let py = "# a\nx = 1\n# b\ny = 2\n";
    let second = json!({"kind": "expression_statement", "nthChild": 2});
    assert_eq!(matched_texts("a.py", py, "python", second), vec!["x = 1"]);
    let last =
        json!({"kind": "expression_statement", "nthChild": {"position": 1, "reverse": true}});
    assert!(matched_texts("b.py", "x = 1\ny = 2\n# tail\n", "python", last).is_empty());
    // `ofRule` counts only what it matches, so comments drop out again.
    let of = json!({
        "kind": "identifier",
        "nthChild": {"position": 1, "ofRule": {"kind": "identifier"}},
        "inside": {"kind": "arguments"}
    });
    assert_eq!(matched_texts("a.js", js, "javascript", of), vec!["a"]);
}

#[test]
fn nth_child_of_rule_supplies_the_kind_and_its_bindings_reach_the_fix() {
    // `ofRule` alone says which nodes to try, as in ast-grep.
    let alone = json!({"nthChild": {"position": 2, "ofRule": {"kind": "number"}}});
    assert_eq!(matched_texts("a.js", "[1, x, 2, 3]\n", "javascript", alone), vec!["2"]);
    let config = json!({
        "rule": {"kind": "number", "nthChild": {"position": 2, "ofRule": {"pattern": "$S"}}},
        "fix": "<$S>"
    });
    assert_eq!(fixed("a.js", "[1,2,3]\n", config), "[1,<2>,3]\n");
    let selector =
        json!({"rule": {"kind": ":nth-child(2 of number)", "pattern": "$N"}, "fix": "($N)"});
    assert_eq!(fixed("b.js", "f(a, 1, b, 2)\n", selector), "f(a, 1, b, (2))\n");
}

#[test]
fn constraints_bind_metavariables_that_a_fix_may_use() {
    let config = json!({
        "rule": {"pattern": "$A = $B"},
        "constraints": {"B": {"pattern": "$C + $D"}},
        "fix": "$A = $D + $C"
    });
    assert_eq!(fixed("a.js", "a = 1 + 2\nb = 3\n", config), "a = 2 + 1\nb = 3\n");
    let lone = json!({
        "rule": {"pattern": "$F($A)"},
        "constraints": {"A": {"kind": "number", "pattern": "$V"}},
        "fix": "$F(<$V>)"
    });
    assert_eq!(fixed("b.js", "fooBar(1)\nbaz(x)\n", lone), "fooBar(<1>)\nbaz(x)\n");
    // A constraint sees what the rule bound: `$B` must equal `$A`'s code.
    let same = json!({"rule": {"pattern": "$A = $B"}, "constraints": {"A": {"pattern": "$B"}}});
    assert_eq!(matched_texts("c.js", "a = a\nb = c\n", "javascript", same), vec!["a = a"]);
}

#[test]
fn fix_templates_read_metavariables_as_ast_grep_does() {
    // `$$OP` (an operator token) is `$OP` in a template.
    let binary = json!({
        "rule": {"pattern": "$X + $Y", "has": {"pattern": "$$OP", "regex": "^\\+$"}},
        "fix": "$Y $$OP $X"
    });
    assert_eq!(fixed("a.js", "a + b\n", binary), "b + a\n");
    // A name is uppercase letters, digits and `_`: `$Abc` is `$A` then `bc`.
    let glued = json!({"rule": {"pattern": "f($A)"}, "fix": "g($Abc, $A1x)"});
    let e = rule_error(Lang::Javascript, glued);
    assert!(e.contains("`$A1` is not bound"), "{e}");
    let glued = json!({"rule": {"pattern": "f($A)"}, "fix": "g($Abc)"});
    assert_eq!(fixed("b.js", "f(x)\n", glued), "g(xbc)\n");
    // `$$$$A` is `$` and then the list `$$$A`; `$1` and a lone `$` are text.
    let list = json!({"rule": {"pattern": "f($$$A)"}, "fix": "g($$$$A, $1, $)"});
    assert_eq!(fixed("c.js", "f(x, y)\n", list), "g($x, y, $1, $)\n");
    let underscore = json!({"rule": {"pattern": "f($A)"}, "fix": "g($A_b)"});
    let e = rule_error(Lang::Javascript, underscore);
    assert!(e.contains("`$A_` is not bound"), "{e}");
}

/// A deliberate difference: the ast-grep CLI writes nothing for a list capture read as one node
/// (or the reverse), deleting the code it matched; here the capture is substituted.
#[test]
fn a_capture_read_with_the_other_number_of_dollars_is_substituted_never_dropped() {
    let as_one = json!({"rule": {"pattern": "f($$$B)"}, "fix": "g($B)"});
    assert_eq!(fixed("a.js", "f(1,2)\n", as_one), "g(1,2)\n");
    let as_list = json!({"rule": {"pattern": "f($A)"}, "fix": "g($$$A)"});
    assert_eq!(fixed("b.js", "f(1)\n", as_list), "g(1)\n");
    let transformed = json!({
        "rule": {"pattern": "let $A = $B"},
        "transform": {"N": {"substring": {"source": "$$$B", "startChar": 1}}, "U": "convert($A, toCase=upperCase)"},
        "fix": "let $$$U = $N"
    });
    assert_eq!(fixed("c.js", "let a = 123\n", transformed), "let A = 23\n");
}

#[test]
fn kind_takes_ast_grep_selectors() {
    let js = "foo(a, [b]);\nbar(1);\n";
    let texts = |kind: &str| matched_texts("a.js", js, "javascript", json!({"kind": kind}));
    assert_eq!(texts("call_expression > arguments > identifier"), vec!["a"]);
    assert_eq!(texts("call_expression identifier"), vec!["foo", "a", "b", "bar"]);
    assert_eq!(texts("number, array"), vec!["[b]", "1"]);
    assert_eq!(texts("call_expression:has(number)"), vec!["bar(1)"]);
    assert_eq!(texts("call_expression:not(:has(number))"), vec!["foo(a, [b])"]);
    // `:has(> x)` looks at children only; a complex selector inside names its last part.
    assert_eq!(texts("arguments:has(> array)"), vec!["(a, [b])"]);
    assert!(texts("call_expression:has(> arguments > array)").is_empty());
    assert_eq!(texts("arguments > :is(identifier, array)"), vec!["a", "[b]"]);
    assert_eq!(texts("arguments > array:nth-child(2)"), vec!["[b]"]);
    assert_eq!(texts("arguments > :is(identifier, array):nth-last-child(2)"), vec!["a"]);
    let statements = "a; b; c;\n";
    let siblings =
        |kind: &str| matched_texts("b.js", statements, "javascript", json!({"kind": kind}));
    assert_eq!(siblings("expression_statement + expression_statement"), vec!["b;", "c;"]);
    assert_eq!(siblings("expression_statement ~ expression_statement"), vec!["b;", "c;"]);
    for (kind, why) in [
        ("call_expression > nope", "`nope` is not a node kind"),
        ("identifier.foo", "class selectors"),
        ("identifier:first(x)", "unknown pseudo-class `:first`"),
        ("call_expression:has(identifier", "not closed"),
        ("call_expression >", "missing at the end"),
        ("identifier:nth-child(x)", "not a position"),
    ] {
        let e = rule_error(Lang::Javascript, json!({"kind": kind}));
        assert!(e.contains("`rule.kind`") && e.contains(why), "{kind}: {e}");
    }
    // A selector without a kind to start from is refused like any rule without one.
    for kind in [":has(number)", "arguments > :nth-child(2)"] {
        let e = rule_error(Lang::Javascript, json!({"kind": kind}));
        assert!(e.contains("needs a positive `kind`"), "{kind}: {e}");
    }
}

#[test]
fn composite_parts_are_evaluated_before_relational_ones_as_in_ast_grep() {
    // `all` binds `$N` to `2` first; `has` then finds that number. Relational first would bind
    // `$N` to `1` and the `all` would fail.
    let config = json!({
        "rule": {
            "kind": "array",
            "has": {"kind": "number", "pattern": "$N"},
            "all": [{"has": {"kind": "number", "pattern": "$N", "regex": "2"}}]
        },
        "fix": "<$N>"
    });
    assert_eq!(fixed("a.js", "x = [1, 2]\n", config), "x = <2>\n");
}

#[test]
fn labels_and_report_keys_are_checked_as_ast_grep_checks_them() {
    let with = |extra: Value| {
        let mut config =
            json!({"rule": {"pattern": "f($A)"}, "constraints": {"A": {"pattern": "$C"}}});
        for (k, v) in extra.as_object().expect("object") {
            config[k] = v.clone();
        }
        config
    };
    for (extra, key, why) in [
        (
            json!({"labels": {"B": {"style": "primary"}}}),
            "`labels.B`",
            "bound in `rule` or `constraints`",
        ),
        (
            json!({"labels": {"A": {"style": "red"}}}),
            "`labels.A.style`",
            "`primary` or `secondary`",
        ),
        (json!({"labels": {"A": {"message": "m"}}}), "`labels.A.style`", "is required"),
        (json!({"labels": ["A"]}), "`labels`", "must map"),
        (json!({"severity": "critical"}), "`severity`", "hint, info, warning, error, off"),
        (json!({"message": ["m"]}), "`message`", "must be a string"),
        (json!({"metadata": [1, 2]}), "`metadata`", "must be an object"),
    ] {
        let e = rule_error(Lang::Javascript, with(extra.clone()));
        assert!(e.contains(key) && e.contains(why), "{extra}: {e}");
    }
    let transformed = json!({
        "rule": {"pattern": "f($A)"},
        "transform": {"T": "convert($A, toCase=upperCase)"},
        "labels": {"T": {"style": "secondary"}}
    });
    assert!(rule_error(Lang::Javascript, transformed).contains("`labels.T`"));
    for extra in [
        json!({"labels": {"A": {"style": "primary", "message": "m"}, "C": {"style": "secondary"}}}),
        json!({"severity": "off", "message": "found $A", "note": 3, "url": "u", "metadata": {"a": [1]}, "id": 7}),
    ] {
        let config = with(extra.clone());
        assert_eq!(matched_texts("a.js", "f(x)\n", "javascript", config), vec!["f(x)"], "{extra}");
    }
}

#[test]
fn metavariable_names_as_keys_are_written_without_dollar() {
    let e = rule_error(
        Lang::Javascript,
        json!({"rule": {"pattern": "f($A)"}, "constraints": {"$A": {"regex": "x"}}}),
    );
    assert!(e.contains("`constraints.$A`") && e.contains("write `A`"), "{e}");
    let e = rule_error(
        Lang::Javascript,
        json!({"rule": {"pattern": "f($A)"}, "transform": {"$B": "convert($A, toCase=upperCase)"}, "fix": "$B"}),
    );
    assert!(e.contains("`transform.$B`") && e.contains("write `B`"), "{e}");
}

#[test]
fn field_is_refused_on_siblings_as_ast_grep_refuses_it() {
    for key in ["follows", "precedes"] {
        let e = rule_error(
            Lang::Javascript,
            json!({"pattern": "b;", key: {"pattern": "a;", "field": "body"}}),
        );
        assert!(
            e.contains(&format!("`rule.{key}.field`")) && e.contains("`has` and `inside`"),
            "{e}"
        );
    }
    // In an expansion ast-grep accepts and ignores it.
    let config = json!({
        "rule": {"kind": "identifier", "regex": "^b$", "inside": {"kind": "arguments"}},
        "fix": {"template": "", "expandStart": {"regex": ",", "field": "arguments"}}
    });
    assert_eq!(fixed("a.js", "f(a, b)\n", config), "f(a)\n");
}

#[test]
fn rewriters_need_no_kind_and_see_the_utils_of_their_config() {
    let config = json!({
        "rule": {"pattern": "a = $A"},
        "transform": {"B": {"rewrite": {"rewriters": ["re"], "source": "$A"}}},
        "rewriters": [
            {"id": "handle-num", "rule": {"regex": "114"}, "fix": "1919810"},
            {"id": "re", "rule": {"kind": "number", "pattern": "$A"},
             "transform": {"B": {"rewrite": {"rewriters": ["handle-num"], "source": "$A"}}}, "fix": "$B"}
        ],
        "fix": "a = $B"
    });
    assert_eq!(fixed("a.ts", "a = 114514\n", config), "a = 1919810\n");
    // A rewriter `pattern: $C` starts from the rule's bindings: it matches only `$C`'s code.
    let inherit = |src: &str| {
        fixed(
            "b.ts",
            src,
            json!({
                "rule": {"pattern": "x = [$A, $C]"},
                "transform": {"D": {"rewrite": {"rewriters": ["re"], "source": "$A"}}},
                "rewriters": [{"id": "re", "rule": {"pattern": "$C"}, "fix": "123"}],
                "fix": "x = $D"
            }),
        )
    };
    assert_eq!(inherit("x = [1, 2]\n"), "x = 1\n");
    assert_eq!(inherit("x = [1, 1]\n"), "x = 123\n");
    let utils = json!({
        "rule": {"pattern": "a = $A"},
        "utils": {"num": {"kind": "number"}},
        "transform": {"B": {"rewrite": {"rewriters": ["re"], "source": "$A"}}},
        "rewriters": [{"id": "re", "rule": {"matches": "num", "pattern": "$NOT"}, "fix": "yjsnp"}],
        "fix": "a = $B"
    });
    assert_eq!(fixed("c.ts", "a = 456\n", utils), "a = yjsnp\n");
    // A rewriter's own utils stay its own.
    let leaked = json!({
        "rule": {"matches": "num"},
        "rewriters": [{"id": "re", "rule": {"matches": "num"}, "fix": "y", "utils": {"num": {"kind": "number"}}}]
    });
    assert!(rule_error(Lang::Typescript, leaked).contains("no utility rule `num`"));
    // The rule's transforms are computed after its rewriters run (ast-grep writes nothing for
    // them there): refused with the reason.
    let upper = json!({
        "rule": {"pattern": "$B = $A"},
        "transform": {"D": {"rewrite": {"rewriters": ["re"], "source": "$A"}}},
        "rewriters": [{"id": "re", "rule": {"kind": "number", "pattern": "$C"}, "fix": "$D.$C"}],
        "fix": "$D"
    });
    let e = rule_error(Lang::Typescript, upper);
    assert!(e.contains("in rewriter `re`") && e.contains("`$D` is a transform"), "{e}");
}

#[test]
fn files_and_ignores_choose_the_files_a_rule_applies_to() {
    let dir = support::project(&[
        ("src/a.js", "foo(1)\n"),
        ("src/sub/b.js", "foo(2)\n"),
        ("lib/c.js", "foo(3)\n"),
        ("d.js", "foo(4)\n"),
    ]);
    let files = |extra: Value| -> Vec<String> {
        let mut rule = json!({"rule": {"pattern": "foo($A)"}, "language": "javascript"});
        for (k, v) in extra.as_object().expect("object") {
            rule[k] = v.clone();
        }
        let request = SearchRequest { rule: Some(rule), ..Default::default() };
        let result = search(dir.path(), &request, &SearchOptions::default()).expect("search");
        result.matches.iter().map(|m| m.file.clone()).collect()
    };
    assert_eq!(files(json!({"files": ["src/**/*.js"]})), vec!["src/a.js", "src/sub/b.js"]);
    // As in ast-grep (globset), `*` crosses `/`.
    assert_eq!(files(json!({"files": ["src/*.js"]})), vec!["src/a.js", "src/sub/b.js"]);
    assert_eq!(files(json!({"files": ["**/b.js", "d.js"]})), vec!["d.js", "src/sub/b.js"]);
    assert!(files(json!({"files": ["SRC/**"]})).is_empty());
    assert_eq!(
        files(json!({"files": [{"glob": "SRC/**", "caseInsensitive": true}]})),
        vec!["src/a.js", "src/sub/b.js"]
    );
    assert_eq!(files(json!({"ignores": ["src/**"]})), vec!["d.js", "lib/c.js"]);
    assert_eq!(
        files(json!({"files": ["**/*.js"], "ignores": ["lib/**", "src/sub/**"]})),
        vec!["d.js", "src/a.js"]
    );
    let e =
        rule_error(Lang::Javascript, json!({"rule": {"pattern": "f($A)"}, "files": ["src/[a"]}));
    assert!(e.contains("`files[0]`") && e.contains("invalid glob"), "{e}");
    let e = rule_error(Lang::Javascript, json!({"rule": {"pattern": "f($A)"}, "ignores": "src"}));
    assert!(e.contains("`ignores`") && e.contains("list of globs"), "{e}");
    // An empty result says the globs left files out.
    let request = SearchRequest {
        rule: Some(
            json!({"rule": {"pattern": "foo($A)"}, "language": "javascript", "files": ["none/**"]}),
        ),
        ..Default::default()
    };
    let result = search(dir.path(), &request, &SearchOptions::default()).expect("search");
    assert_eq!(result.stats.excluded_by_globs, 4);
    let text = agent_tools_astgrep::render_search(&result);
    assert!(text.contains("4 left out by the rule's `files`/`ignores`"), "{text}");
}

#[test]
fn utility_rules_referring_to_themselves_at_the_same_node_are_refused() {
    let e = rule_error(
        Lang::Rust,
        json!({"rule": {"matches": "a"}, "utils": {"a": {"not": {"matches": "b"}}, "b": {"all": [{"matches": "a"}]}}}),
    );
    assert!(e.contains("`utils.a`") && e.contains("a → b → a"), "{e}");
    // Through a relational rule the reference moves to another node: a recursive rule.
    let nested = json!({
        "rule": {"matches": "nested-block"},
        "utils": {"nested-block": {"kind": "block", "has": {"matches": "nested-block", "stopBy": "end"}}}
    });
    assert!(RuleSet::compile(Lang::Rust, &nested).is_ok());
}

#[test]
fn a_fix_using_a_metavariable_the_rule_does_not_bind_is_refused_when_the_rule_is_read() {
    let config = json!({"rule": {"pattern": "$F($A)"}, "fix": "$F($B)"});
    let e = rule_error(Lang::Python, config.clone());
    assert!(e.contains("`fix`") && e.contains("`$B` is not bound") && e.contains("$F, $A"), "{e}");
    // A search with that config is refused too, not only the edit.
    let dir = support::project(&[("a.py", "f(1)\n")]);
    let request =
        SearchRequest { rule: Some(config), path: Some("a.py".into()), ..Default::default() };
    let e = search(dir.path(), &request, &SearchOptions::default()).unwrap_err().to_string();
    assert!(e.contains("`$B` is not bound"), "{e}");
}

#[test]
fn a_list_of_fixes_applies_the_first_as_the_ast_grep_cli_does() {
    let config = json!({
        "rule": {"pattern": "f($A)"},
        "fix": [{"template": "g($A)", "title": "to g"}, {"template": "h($A)", "title": "to h"}]
    });
    assert_eq!(fixed("l.py", "f(1)\n", config), "g(1)\n");
    let untitled = json!({
        "rule": {"pattern": "f($A)"},
        "fix": [{"template": "g($A)", "title": "to g"}, {"template": "h($A)"}]
    });
    let e = rule_error(Lang::Python, untitled);
    assert!(e.contains("`fix[1].title`") && e.contains("is required"), "{e}");
    let unbound = json!({
        "rule": {"pattern": "f($A)"},
        "fix": [{"template": "g($A)", "title": "to g"}, {"template": "h($Q)", "title": "to h"}]
    });
    assert!(rule_error(Lang::Python, unbound).contains("`$Q` is not bound"));
}
