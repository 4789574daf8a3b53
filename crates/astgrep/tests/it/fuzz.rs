//! Property test: random patterns and sources never panic the compiler or the matcher.

use agent_tools_astgrep::{Lang, Pattern, match_source};
use proptest::prelude::*;

const PIECES: &[&str] = &[
    "$X",
    "$Y",
    "$$$A",
    "$_",
    "$$$",
    "$x",
    "$$B",
    "a$B",
    "$",
    "foo",
    "bar",
    "(",
    ")",
    "{",
    "}",
    "[",
    "]",
    ",",
    ";",
    ".",
    ":",
    "=",
    "==",
    "!=",
    "+",
    "if",
    "else",
    "return",
    "fn",
    "def",
    "class",
    "null",
    "1",
    "'s'",
    "\"t\"",
    "`u`",
    "//c",
    "#c",
    "/*",
    "*/",
    "\n",
    " ",
    "    ",
    "µ",
    "\u{10000}",
    "<",
    ">",
    "->",
    "=>",
    "\\",
    "'",
    "\"",
    "let",
    "var",
    "func",
    "print",
    "dispose",
    "\t",
];

fn fragment() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(PIECES), 0..14).prop_map(|v| v.join(" "))
}

fn lang() -> impl Strategy<Value = Lang> {
    prop::sample::select(Lang::ALL.to_vec())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

    #[test]
    fn compiling_and_matching_never_panics(lang in lang(), pattern in fragment(), source in fragment()) {
        if let Ok(compiled) = Pattern::compile(lang, &pattern, None) {
            let _ = compiled.sexp();
            for m in match_source(&compiled, &source) {
                prop_assert!(m.range.end <= source.len());
                prop_assert_eq!(m.captures.len(), compiled.metavariables().len());
            }
            // The pattern's own text, with metavariables, is also a valid input.
            let _ = match_source(&compiled, &pattern);
        }
    }

    #[test]
    fn arbitrary_unicode_never_panics(lang in lang(), pattern in "\\PC{0,40}", source in "\\PC{0,80}") {
        if let Ok(compiled) = Pattern::compile(lang, &pattern, None) {
            let _ = match_source(&compiled, &source);
        }
    }
}

#[test]
fn known_patterns_match_their_own_source() {
    // A pattern without metavariables matches its own text (sanity for the fuzz oracle).
    for (lang, src) in [
        (Lang::Rust, "fn m() { foo(1, 2); }"),
        (Lang::Python, "foo(1, 2)\n"),
        (Lang::Javascript, "foo(1, 2);"),
        (Lang::Go, "package p\nfunc m() { foo(1, 2) }"),
    ] {
        let p = Pattern::compile(lang, "foo(1, 2)", None).unwrap();
        assert_eq!(match_source(&p, src).len(), 1, "{lang}");
    }
}
