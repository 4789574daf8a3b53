//! The rest of the rule language as ast-grep reads it: `nthChild`, constraints, fix templates,
//! kind selectors, report-only keys, `files`/`ignores`, utility rules and lists of fixes.

use super::{fixed, matched_texts, rule_error};
use crate::support;

use agent_tools_astgrep::{Lang, RuleSet, SearchOptions, SearchRequest, search};
use serde_json::{Value, json};

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
