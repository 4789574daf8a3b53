//! Broken transforms are refused with the reason, `expandStart`/`expandEnd` reach only the
//! sibling their `stopBy` allows, and `pattern: $X` names the matched node.

use super::{edit_error, fixed, rule_error};
use crate::support;

use agent_tools_astgrep::{Lang, Pattern, SearchOptions, SearchRequest, search};
use serde_json::{Value, json};

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
