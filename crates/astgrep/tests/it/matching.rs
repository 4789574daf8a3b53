//! Matching semantics: the context ladder, metavariables, backtracking, leftovers, strings and comments.

use agent_tools_astgrep::{ContextKind, Lang, Matcher, Pattern, match_source};

/// Compiles `pattern` for `lang`, matches `source`, and returns each match as
/// `text` or `text | $X=… $Y=…`.
fn check(lang: Lang, pattern: &str, source: &str) -> Vec<String> {
    let compiled = Pattern::compile(lang, pattern, None)
        .unwrap_or_else(|e| panic!("pattern `{pattern}` did not compile: {e}"));
    let names = compiled.metavariables();
    match_source(&compiled, source)
        .into_iter()
        .map(|m| {
            let text = source[m.range.clone()].to_string();
            let caps: Vec<String> = names
                .iter()
                .zip(&m.captures)
                .map(|(n, r)| format!("{n}={}", r.clone().map(|r| &source[r]).unwrap_or("")))
                .collect();
            if caps.is_empty() { text } else { format!("{text} | {}", caps.join(" ")) }
        })
        .collect()
}

fn context_of(lang: Lang, pattern: &str) -> ContextKind {
    Pattern::compile(lang, pattern, None).expect("compiles").context()
}

fn pattern_error(lang: Lang, pattern: &str) -> String {
    match Pattern::compile(lang, pattern, None) {
        Ok(p) => panic!("`{pattern}` compiled as {}: {}", p.context(), p.sexp()),
        Err(e) => e.to_string(),
    }
}

#[test]
fn dart_spec_example_matches_only_a_guard_that_disposes_what_it_checked() {
    let src = "class A {\n  void close() {\n    if (c != null) c.dispose();\n    if (c != null) d.dispose();\n  }\n}\n";
    let pattern = "if ($X != null) $X.dispose();";
    assert_eq!(context_of(Lang::Dart, pattern), ContextKind::Statement);
    assert_eq!(check(Lang::Dart, pattern, src), ["if (c != null) c.dispose(); | $X=c"]);
}

#[test]
fn bare_dart_call_parses_as_a_statement_not_a_signature() {
    let src = "void main() {\n  dispose(controller);\n  other.dispose(x);\n  final s = 'dispose(y)';\n}\n";
    assert_eq!(context_of(Lang::Dart, "dispose($X)"), ContextKind::Statement);
    assert_eq!(check(Lang::Dart, "dispose($X)", src), ["dispose(controller) | $X=controller"]);
}

#[test]
fn c_call_free_matches_calls_not_a_macro_type() {
    let src = "#include <stdlib.h>\nvoid f(char *p, char *q) {\n  free(p);\n  if (q) free(q + 1);\n  /* free(r); */\n}\n";
    assert_eq!(context_of(Lang::C, "free($P)"), ContextKind::Statement);
    assert_eq!(check(Lang::C, "free($P)", src), ["free(p) | $P=p", "free(q + 1) | $P=q + 1"]);
}

#[test]
fn go_call_is_a_call_not_a_type_conversion() {
    let src = "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"hi\")\n\tfmt.Println(a, b)\n\tx := fmt.Println(y)\n}\n";
    assert_eq!(context_of(Lang::Go, "fmt.Println($A)"), ContextKind::Statement);
    assert_eq!(
        check(Lang::Go, "fmt.Println($A)", src),
        ["fmt.Println(\"hi\") | $A=\"hi\"", "fmt.Println(y) | $A=y"]
    );
}

#[test]
fn python_print_with_any_arguments() {
    let src = "print()\nprint(1, 2, sep='')\nlog('print(x)')\n# print(y)\n";
    assert_eq!(
        check(Lang::Python, "print($$$ARGS)", src),
        ["print() | $$$ARGS=", "print(1, 2, sep='') | $$$ARGS=1, 2, sep=''"]
    );
}

#[test]
fn multi_metavariable_backtracks() {
    assert_eq!(
        check(Lang::Javascript, "f($$$A, $B)", "f(1, 2, 3);"),
        ["f(1, 2, 3) | $$$A=1, 2 $B=3"]
    );
    assert_eq!(check(Lang::Javascript, "f($$$A, 1, 2)", "f(1, 1, 2);"), ["f(1, 1, 2) | $$$A=1"]);
    assert_eq!(check(Lang::Rust, "f($$$A, $B)", "fn m() { f(x); }"), ["f(x) | $$$A= $B=x"]);
    assert!(check(Lang::Javascript, "f($$$A, $B)", "f();").is_empty());
}

#[test]
fn the_step_budget_stops_a_blow_up_and_is_reported() {
    let pattern = Pattern::compile(Lang::Javascript, "f($$$A, $$$B, $$$C, $$$D, 0)", None).unwrap();
    let args = vec!["1"; 60].join(", ");
    let src = format!("f({args});");
    let mut parser_src = agent_tools_astgrep::match_source(&pattern, &src);
    assert!(parser_src.is_empty());
    parser_src.clear();
    // With a small budget the candidate is abandoned and counted.
    let mut matcher = Matcher::with_budget(&pattern, 1_000);
    let lang_src = src.clone();
    let tree = {
        let mut p = tree_sitter_parser(Lang::Javascript);
        p.parse(&lang_src, None).unwrap()
    };
    assert!(matcher.find_all(tree.root_node(), lang_src.as_bytes()).is_empty());
    assert_eq!(matcher.budget_hits, [0]);
}

fn tree_sitter_parser(lang: Lang) -> tree_sitter::Parser {
    let mut parser = tree_sitter::Parser::new();
    let language: tree_sitter::Language = match lang {
        Lang::Javascript => tree_sitter_javascript::LANGUAGE.into(),
        _ => unreachable!("only javascript here"),
    };
    parser.set_language(&language).unwrap();
    parser
}

#[test]
fn leftover_named_children_do_not_match() {
    let src = "def g():\n    if a:\n        yield\n    if b:\n        yield\n        cleanup()\n";
    assert_eq!(check(Lang::Python, "if $A: yield", src), ["if a:\n        yield | $A=a"]);
    let rust = "fn m() { if x { a(); } if y { a(); b(); } }";
    assert_eq!(check(Lang::Rust, "if $C { a(); }", rust), ["if x { a(); } | $C=x"]);
    assert_eq!(check(Lang::Rust, "if $C { a(); $$$REST }", rust).len(), 2);
}

#[test]
fn strings_and_comments_never_match_code_patterns() {
    let js = "// foo(a)\nconst s = \"foo(b)\";\nconst t = `foo(c)`;\n/* foo(d) */\nfoo(e);\n";
    assert_eq!(check(Lang::Javascript, "foo($X)", js), ["foo(e) | $X=e"]);
    let py = "x = 'foo(a)'\n\"\"\"foo(b)\"\"\"\n# foo(c)\nfoo(d)\n";
    assert_eq!(check(Lang::Python, "foo($X)", py), ["foo(d) | $X=d"]);
}

#[test]
fn comments_and_formatting_inside_the_code_are_ignored() {
    let js = "foo(a /* c */);\nfoo(\n  b,\n);\nfoo(// x\n c);\n";
    assert_eq!(
        check(Lang::Javascript, "foo($X)", js),
        ["foo(a /* c */) | $X=a", "foo(\n  b,\n) | $X=b", "foo(// x\n c) | $X=c"]
    );
}

#[test]
fn repeated_metavariables_compare_structurally() {
    let js = "a.b == a . b;\nf(x /*c*/) == f(x);\nf(x) == g(x);\n";
    assert_eq!(
        check(Lang::Javascript, "$X == $X", js),
        ["a.b == a . b | $X=a.b", "f(x /*c*/) == f(x) | $X=f(x /*c*/)"]
    );
    let rust = "fn m() { let _ = f(x,) == f(x); let _ = f(x) == f(y); }";
    assert_eq!(check(Lang::Rust, "$X == $X", rust), ["f(x,) == f(x) | $X=f(x,)"]);
    // Repeated lists too.
    assert_eq!(
        check(Lang::Python, "f($$$A) + g($$$A)", "f(1, 2) + g(1, 2)\nf(1) + g(2)\n").len(),
        1
    );
}

#[test]
fn multi_statement_patterns_match_consecutive_siblings() {
    let py =
        "def m():\n    f = open(p)\n    f.close()\n    g = open(q)\n    other()\n    g.close()\n";
    assert_eq!(
        check(Lang::Python, "$A = open($F)\n$A.close()", py),
        ["f = open(p)\n    f.close() | $A=f $F=p"]
    );
    let rust = "fn m() { let a = 1; let b = 2; let c = 3; }";
    assert_eq!(
        check(Lang::Rust, "let $X = 1; let $Y = 2;", rust),
        ["let a = 1; let b = 2; | $X=a $Y=b"]
    );
}

#[test]
fn a_pattern_that_no_context_accepts_is_an_error_naming_the_contexts() {
    let err = pattern_error(Lang::Dart, "if ($X != null");
    assert!(
        err.contains("unparsable as dart: tried statement, expression, class member, declaration; first error at 1:"),
        "{err}"
    );
    let err = pattern_error(Lang::Javascript, "foo($A $B)");
    assert!(err.contains("unparsable as javascript"), "{err}");
    let err = pattern_error(Lang::Rust, "let $X = ;");
    assert!(err.contains("unparsable as rust"), "{err}");
}

#[test]
fn bad_metavariables_are_pattern_errors_with_a_hint() {
    let err = pattern_error(Lang::Javascript, "foo($x)");
    assert!(err.contains("`$x` is not a metavariable") && err.contains("`$X`"), "{err}");
    let err = pattern_error(Lang::Javascript, "el.on$EVENT(h)");
    assert!(err.contains("`on$EVENT`") && err.contains("whole node"), "{err}");
    let err = pattern_error(Lang::Rust, "f($$)");
    assert!(err.contains("`$$` is not a metavariable"), "{err}");
    let err = pattern_error(Lang::Python, "$X");
    assert!(err.contains("only a metavariable"), "{err}");
    let err = pattern_error(Lang::Python, "$$$ARGS");
    assert!(err.contains("only a metavariable"), "{err}");
    let err = pattern_error(Lang::Python, "   ");
    assert!(err.contains("empty"), "{err}");
    // Inside a string `$x` is text, not a metavariable.
    assert_eq!(
        check(Lang::Dart, "print('$x')", "void m() { print('$x'); print('$y'); }"),
        ["print('$x')"]
    );
}

#[test]
fn every_bundled_language_compiles_a_call_pattern_and_matches() {
    let cases: &[(Lang, &str, &str, usize)] = &[
        (Lang::Bash, "echo $X", "echo hi\necho there\nls\n", 2),
        (Lang::C, "foo($A)", "int m() { return foo(1) + foo(2); }", 2),
        (Lang::Cpp, "foo($A)", "int m() { return foo(1) + foo(2); }", 2),
        (Lang::Dart, "foo($A)", "int m() { return foo(1) + foo(2); }", 2),
        (Lang::Go, "foo($A)", "package p\nfunc m() int { return foo(1) + foo(2) }", 2),
        (Lang::Java, "foo($A)", "class C { int m() { return foo(1) + foo(2); } }", 2),
        (Lang::Javascript, "foo($A)", "foo(1) + foo(2);", 2),
        (Lang::Json, "{\"a\": $V}", "[{\"a\": 1}, {\"a\": [2]}, {\"b\": 3}]", 2),
        (Lang::Python, "foo($A)", "foo(1) + foo(2)\n", 2),
        (Lang::Rust, "foo($A)", "fn m() -> i32 { foo(1) + foo(2) }", 2),
        (Lang::Tsx, "foo($A)", "const x = <div>{foo(1)}</div>; foo(2);", 2),
        (Lang::Typescript, "foo($A)", "const x: number = foo(1) + foo(2);", 2),
    ];
    for (lang, pattern, src, n) in cases {
        assert_eq!(check(*lang, pattern, src).len(), *n, "{lang}: {pattern} in {src}");
    }
    assert_eq!(
        check(Lang::Json, "\"a\": $V", "{\"a\": 1, \"b\": {\"a\": true}}"),
        ["\"a\": 1 | $V=1", "\"a\": true | $V=true"]
    );
}

#[test]
fn explicit_context_forces_a_rung() {
    let p = Pattern::compile(Lang::Javascript, "a: 123", None).unwrap();
    assert_eq!(p.context(), ContextKind::Statement);
    let p = Pattern::compile(Lang::Javascript, "a: 123", Some(ContextKind::Member)).unwrap();
    assert_eq!(p.context(), ContextKind::Member);
    assert_eq!(match_source(&p, "const o = { a: 123, b: 1 };").len(), 1);
}

/// The walk tries only subtrees holding the pattern's longest word; nested matches, a word
/// that also occurs in strings and comments, and a multi-statement pattern are all still found,
/// exactly as a walk of every node finds them.
#[test]
fn the_walk_skipping_subtrees_without_the_word_finds_every_match() {
    let py = "# isinstance(q, r)\nok = isinstance(isinstance(a, b), c) or f(\"isinstance\")\n\
              if x:\n    y = isinstance(d, e)\n";
    let pattern = Pattern::compile(Lang::Python, "isinstance($X, $T)", None).expect("compiles");
    let mut parser = tree_sitter::Parser::new();
    parser.set_language(&tree_sitter_python::LANGUAGE.into()).expect("python");
    let tree = parser.parse(py, None).expect("parses");
    let every_node = Matcher::new(&pattern).find_all(tree.root_node(), py.as_bytes());
    assert_eq!(match_source(&pattern, py), every_node);
    assert_eq!(
        check(Lang::Python, "isinstance($X, $T)", py),
        vec![
            "isinstance(isinstance(a, b), c) | $X=isinstance(a, b) $T=c",
            "isinstance(a, b) | $X=a $T=b",
            "isinstance(d, e) | $X=d $T=e",
        ]
    );
    let rs = "fn f() { let a = 1; let b = 2; }\nfn g() { let a = 1; let b = 2; }\n";
    assert_eq!(check(Lang::Rust, "let $X = 1;\nlet $Y = 2;", rs).len(), 2);
}

/// A `\` line continuation is skipped where the pattern has a token next, and only there, as
/// ast-grep skips it: the counts of both tools agree on code that uses it.
#[test]
fn a_line_continuation_is_skipped_before_a_token_but_not_before_arguments() {
    assert_eq!(check(Lang::Python, "$A + $B", "x = 1 \\\n + 2\n"), ["1 \\\n + 2 | $A=1 $B=2"]);
    let src = "r = re.compile \\\n    ('a')\ns = re.compile('b')\n";
    assert_eq!(
        check(Lang::Python, "$F($$$ARGS)", src),
        ["re.compile('b') | $F=re.compile $$$ARGS='b'"]
    );
}
