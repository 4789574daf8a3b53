//! The matcher bug classes of issue 15, each tested in several languages: a metavariable where
//! the grammar wants a whole element, bogus parses refused, `$$$` after a fixed element,
//! rewrites that keep what the pattern does not mention, and re-indented `$$$` captures.

use agent_tools_astgrep::{Lang, Pattern, match_source, rewrite_source};

fn compile(lang: Lang, pattern: &str) -> Pattern {
    Pattern::compile(lang, pattern, None)
        .unwrap_or_else(|e| panic!("`{pattern}` ({lang}) did not compile: {e}"))
}

/// The matched texts.
fn found(lang: Lang, pattern: &str, source: &str) -> Vec<String> {
    let compiled = compile(lang, pattern);
    match_source(&compiled, source).into_iter().map(|m| source[m.range].to_string()).collect()
}

/// The text `name` captured in the first match.
fn capture(lang: Lang, pattern: &str, source: &str, name: &str) -> String {
    let compiled = compile(lang, pattern);
    let at = compiled.metavariables().iter().position(|n| n == name).expect("bound name");
    let m = match_source(&compiled, source).into_iter().next().expect("a match");
    m.captures[at].clone().map(|r| source[r].to_string()).unwrap_or_default()
}

fn rewrite(lang: Lang, pattern: &str, template: &str, source: &str) -> String {
    rewrite_source(&compile(lang, pattern), template, source).expect("rewrites")
}

#[test]
fn a_metavariable_where_the_grammar_wants_a_whole_element_is_that_metavariable() {
    let java = "class A { void m() { if (ok) { a(); b(); } if (no) { } } }";
    assert_eq!(found(Lang::Java, "if ($C) { $$$ }", java).len(), 2);
    assert_eq!(found(Lang::Java, "class $C { $$$ }", java).len(), 1);
    assert_eq!(found(Lang::Java, "void $M($$$) { $$$ }", java).len(), 1);
    let c = "int m(int x) { if (x) { a(); b(); } return 0; }";
    assert_eq!(found(Lang::C, "if ($C) { $$$ }", c), ["if (x) { a(); b(); }"]);
    assert_eq!(found(Lang::Cpp, "if ($C) { $$$ }", c), ["if (x) { a(); b(); }"]);
    let rust = "impl Show for Point { fn a(&self) {} fn b(&self) {} }\n\
                struct P { x: u8, y: u8 }\n\
                fn f(v: Option<u8>) -> u8 { match v { Some(x) => x, None => 0 } }";
    assert_eq!(found(Lang::Rust, "match $X { $$$ }", rust).len(), 1);
    assert_eq!(
        capture(Lang::Rust, "match $X { $$$ARMS }", rust, "$$$ARMS"),
        "Some(x) => x, None => 0"
    );
    assert_eq!(found(Lang::Rust, "impl $T for $U { $$$ }", rust).len(), 1);
    assert_eq!(found(Lang::Rust, "struct $S { $$$ }", rust).len(), 1);
    let go = "package p\nfunc f(x int) {\n\tswitch x {\n\tcase 1:\n\t\ta()\n\tdefault:\n\t}\n}\n";
    assert_eq!(found(Lang::Go, "switch $X { $$$ }", go).len(), 1);
    assert_eq!(found(Lang::Json, "{ $$$ }", r#"{"a": {"b": 1}, "c": []}"#).len(), 2);
    assert_eq!(found(Lang::Dart, "class $A { $$$BODY }", "class Foo { int x = 1; }").len(), 1);
}

#[test]
fn a_malformed_metavariable_is_still_an_error_not_a_silent_zero() {
    for (lang, pattern) in
        [(Lang::Javascript, "foo($A $B)"), (Lang::Rust, "foo($A $B)"), (Lang::Python, "foo($A $B)")]
    {
        let err = Pattern::compile(lang, pattern, None).map(|p| p.sexp().to_string());
        assert!(err.is_err(), "`{pattern}` ({lang}) compiled as {err:?}");
    }
}

#[test]
fn a_parse_that_turns_a_keyword_into_a_name_is_refused() {
    // Java reads a lone catch clause as a constructor named `catch`: that would match nothing.
    let err =
        Pattern::compile(Lang::Java, "catch (Exception $E) { }", None).unwrap_err().to_string();
    assert!(err.contains("keyword `catch`"), "{err}");
    // C++ would read `if (…) { … }` as a member declaration of type `if`; it is a statement.
    let cpp = compile(Lang::Cpp, "if ($C) { $$$ }");
    assert!(cpp.sexp().starts_with("(if_statement"), "{}", cpp.sexp());
    let java = compile(Lang::Java, "if ($C) { $$$ }");
    assert!(java.sexp().starts_with("(if_statement"), "{}", java.sexp());
    // The whole construct works.
    assert_eq!(
        found(
            Lang::Java,
            "try { $$$ } catch (Exception $E) { $$$ }",
            "class A { void m() { try { a(); } catch (Exception e) { } } }"
        )
        .len(),
        1
    );
}

#[test]
fn a_list_metavariable_after_a_fixed_element_does_not_take_the_separator() {
    assert_eq!(capture(Lang::Javascript, "foo($A, $$$REST)", "foo(1, 2, 3)", "$$$REST"), "2, 3");
    assert_eq!(capture(Lang::Python, "foo($A, $$$REST)", "foo(1, 2, 3)\n", "$$$REST"), "2, 3");
    assert_eq!(
        capture(Lang::Rust, "foo($A, $$$REST)", "fn m() { foo(1, 2, 3); }", "$$$REST"),
        "2, 3"
    );
    assert_eq!(
        capture(Lang::Go, "foo($A, $$$REST)", "package p\nfunc m() { foo(1, 2, 3) }\n", "$$$REST"),
        "2, 3"
    );
    assert_eq!(
        rewrite(Lang::Javascript, "foo($A, $$$REST)", "foo($$$REST, $A)", "foo(1, 2, 3);"),
        "foo(2, 3, 1);"
    );
    assert_eq!(
        rewrite(Lang::Python, "foo($A, $$$REST)", "foo($$$REST, $A)", "foo(1, 2, 3)\n"),
        "foo(2, 3, 1)\n"
    );
    // An empty `$$$` still takes its comma with it.
    assert_eq!(capture(Lang::Javascript, "foo($A, $$$REST)", "foo(1)", "$$$REST"), "");
}

#[test]
fn a_rewrite_keeps_the_comments_and_terminators_the_pattern_does_not_mention() {
    assert_eq!(
        rewrite(Lang::Javascript, "var $A = $B", "let $A = $B", "var a = 1 /* keep me */;\n"),
        "let a = 1 /* keep me */;\n"
    );
    assert_eq!(
        rewrite(Lang::C, "return $X", "return -$X", "int f(int x) { return x /* keep */; }"),
        "int f(int x) { return -x /* keep */; }"
    );
    assert_eq!(
        rewrite(
            Lang::Java,
            "return $X",
            "return -$X",
            "class A { int f(int x) { return x /* keep */; } }"
        ),
        "class A { int f(int x) { return -x /* keep */; } }"
    );
    assert_eq!(
        rewrite(Lang::Rust, "let $A = $B", "let $A: u8 = $B", "fn m() { let a = 1 /* keep */; }"),
        "fn m() { let a: u8 = 1 /* keep */; }"
    );
}

#[test]
fn a_multi_line_list_capture_is_re_indented_where_it_lands() {
    // Later lines keep their place relative to the line the capture lands on; Go ends
    // statements with a newline token, and the line after the capture lines up again.
    let go = "package p\n\nfunc f() {\n\tdefer func() {\n\t\ta()\n\t\tb()\n\t}()\n}\n";
    assert_eq!(
        rewrite(Lang::Go, "defer func() { $$$BODY }()", "func() { $$$BODY}()", go),
        "package p\n\nfunc f() {\n\tfunc() { a()\n\tb()\n\t}()\n}\n"
    );
    let py = "def f():\n    if x:\n        a()\n        b()\n";
    assert_eq!(
        rewrite(Lang::Python, "if $C:\n    $$$BODY", "while $C:\n    $$$BODY", py),
        "def f():\n    while x:\n        a()\n        b()\n"
    );
    let rust = "fn f() {\n    if x {\n        a();\n        b();\n    }\n}\n";
    assert_eq!(
        rewrite(Lang::Rust, "if $C { $$$BODY }", "loop { $$$BODY }", rust),
        "fn f() {\n    loop { a();\n    b(); }\n}\n"
    );
}

#[test]
fn a_rewrite_keeps_block_comments_between_captures() {
    assert_eq!(
        rewrite(Lang::Javascript, "foo($A, $B)", "bar($B, $A)", "foo(a /* first */, b);"),
        "bar(b, a /* first */);"
    );
    assert_eq!(
        rewrite(Lang::Rust, "foo($A, $B)", "bar($A, $B)", "fn m() { foo(/* lead */ a, b); }"),
        "fn m() { bar(/* lead */ a, b); }"
    );
    assert_eq!(
        rewrite(Lang::C, "foo($A, $B)", "bar($A, $B)", "void m(void) { foo(a, /* mid */ b); }"),
        "void m(void) { bar(a /* mid */, b); }"
    );
}
