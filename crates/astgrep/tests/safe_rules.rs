//! Rules ported from ast-grep that used to delete code or be refused (issue 25): broken
//! transforms are refused with the reason, `expandStart`/`expandEnd` reach only the sibling
//! their `stopBy` allows, `pattern: $X` names the matched node, and Go statement patterns may
//! span several lines.

mod support;

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
fn transforms_reading_each_other_in_a_cycle_are_refused() {
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
}

#[test]
fn a_range_whose_start_is_after_its_end_is_refused() {
    let e = rule_error(
        Lang::Python,
        json!({"range": {"start": {"line": 3, "column": 0}, "end": {"line": 1, "column": 4}}}),
    );
    assert!(e.contains("`rule.range`") && e.contains("after `end`"), "{e}");
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

/// A documented difference: ast-grep counts comments among the siblings (`nthChild: 2` would
/// be `a` here); this crate counts only code, so a comment never shifts a position.
#[test]
fn nth_child_counts_code_siblings_not_comments() {
    let js = "f(/* first */ a, b);\n";
    let first = json!({"kind": "identifier", "nthChild": 1, "inside": {"kind": "arguments"}});
    assert_eq!(matched_texts("a.js", js, "javascript", first), vec!["a"]);
    let second = json!({"kind": "identifier", "nthChild": 2, "inside": {"kind": "arguments"}});
    assert_eq!(matched_texts("a.js", js, "javascript", second), vec!["b"]);
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
