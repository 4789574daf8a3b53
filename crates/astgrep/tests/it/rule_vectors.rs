//! ast-grep's own rule tests (crates/config), every rule of its website catalog and the edge
//! cases of issue 25, ported as data in `tests/rule_vectors/ast-grep-config-rules.json` (MIT),
//! classified like the core conformance suite: every vector agrees with ast-grep, or is a
//! deliberate difference listed in `DIFFERENCES` with its reason (and in the crate README);
//! vectors in languages this crate does not bundle are marked `na` and counted.

use agent_tools_astgrep::{Lang, RuleSet, fix_source};
use serde_json::Value;

/// Vectors that differ on purpose, by test name, with the reason.
const DIFFERENCES: &[(&str, &str)] = &[
    ("typescript/find-import-identifiers", UNKNOWN_KEY),
    (
        "severity off",
        "`severity` only describes a report: a rule passed to `ast_grep` runs even when it is `off`",
    ),
    (
        "nthChild 0",
        "`nthChild: 0` can never match (positions start at 1): it is refused with that reason",
    ),
    ("transform source $$$B of a single capture", OTHER_DOLLARS),
    ("transform source $B of a list capture", OTHER_DOLLARS),
    ("fix $B for a list capture", OTHER_DOLLARS),
    ("fix $$$A for a single capture", OTHER_DOLLARS),
    ("fix $$$B for a transform", OTHER_DOLLARS),
    (
        "two rewriters with one id",
        "two rewriters with one `id` are refused; the CLI silently keeps the last",
    ),
    (
        "rewriter fix reading a transform of the config",
        "the CLI computes the config's transforms after its rewriters and writes nothing for them \
         there; the rule is refused with that reason instead of deleting code",
    ),
    ("a trailing comma after a list capture", LIST_END),
    ("a trailing comment after a list capture", LIST_END),
    ("python/migrate-openai-sdk (rule 3)", LIST_END),
    (
        "rust/rewrite-indoc-macro",
        "a whitespace-only line of a multi-line capture is written empty, without trailing \
         whitespace; the CLI re-indents it (the only difference is the spaces before the last \
         backtick)",
    ),
    (
        "config-level strictness",
        "a rule config's top-level `strictness` is this crate's addition (a default for its patterns)",
    ),
];

const UNKNOWN_KEY: &str = "an unknown key inside a relational rule (`parent` here) is refused; the CLI \
    ignores it there, so the published rule runs as if it were absent (the vector without it agrees)";
const OTHER_DOLLARS: &str = "a capture read with the other number of dollars (`$B` for a `$$$B` \
    list, `$$$A` for one node or a transform) is substituted; the CLI writes nothing, deleting the \
    code the fix replaces";
const LIST_END: &str = "a `$$$` capture ends at its last named node: a trailing comma or comment \
    after it is not part of it, so `g($$$A, x)` stays valid code (the CLI takes them and writes \
    `g(a, b, # c)`, which comments out the closing parenthesis)";

fn lang_of(case: &Value) -> Lang {
    match case["lang"].as_str() {
        Some("tsx") => Lang::Tsx,
        other => other.and_then(Lang::from_id).expect("a language this crate bundles"),
    }
}

fn compile(case: &Value) -> Result<RuleSet, String> {
    RuleSet::compile(lang_of(case), &case["rule"]).map_err(|e| e.to_string())
}

/// How one vector disagrees with ast-grep, if it does.
fn disagreement(group: &str, case: &Value) -> Option<String> {
    match group {
        "refused" => {
            return compile(case).is_ok().then(|| "compiles; ast-grep refuses it".to_string());
        }
        "accepted" => {
            return compile(case).err().map(|e| format!("refused ({e}); ast-grep accepts it"));
        }
        _ => {}
    }
    let rules = match compile(case) {
        Ok(r) => r,
        Err(e) => return Some(format!("does not compile: {e}")),
    };
    match group {
        "matches" => {
            let mut wrong = Vec::new();
            for (list, want) in [("found", true), ("not_found", false)] {
                for source in case[list].as_array().into_iter().flatten() {
                    let source = source.as_str().unwrap_or("");
                    if rules.match_source(source).is_empty() == want {
                        wrong.push(format!(
                            "{} on `{}`",
                            if want { "no match" } else { "a match" },
                            source.replace('\n', "⏎")
                        ));
                    }
                }
            }
            (!wrong.is_empty()).then(|| wrong.join("; "))
        }
        "texts" => {
            let source = case["source"].as_str().unwrap_or("");
            let got: Vec<&str> =
                rules.match_source(source).iter().map(|m| &source[m.range.clone()]).collect();
            let want: Vec<&str> =
                case["texts"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
            (got != want).then(|| format!("matches {got:?}, expected {want:?}"))
        }
        "lines" => {
            let source = case["source"].as_str().unwrap_or("");
            let mut got: Vec<u64> =
                rules.match_source(source).iter().map(|m| m.start.0 as u64 + 1).collect();
            got.sort_unstable();
            got.dedup();
            let want: Vec<u64> =
                case["lines"].as_array().into_iter().flatten().filter_map(Value::as_u64).collect();
            (got != want).then(|| format!("matches on lines {got:?}, expected {want:?}"))
        }
        "fixes" => {
            let source = case["source"].as_str().unwrap_or("");
            let want = case["fixed"].as_str().unwrap_or("");
            match fix_source(&rules, source) {
                Ok(got) if got == want => None,
                Ok(got) => Some(format!("fixed to {got:?}, expected {want:?}")),
                Err(e) => Some(format!("no fix: {e}")),
            }
        }
        other => Some(format!("unknown group `{other}`")),
    }
}

// The agreement figures are printed: they are the suite's report (`--nocapture` shows them).
#[allow(clippy::print_stdout)]
#[test]
fn every_ported_ast_grep_rule_vector_agrees_or_is_a_listed_difference() {
    let text = include_str!("../rule_vectors/ast-grep-config-rules.json");
    let vectors: Value = serde_json::from_str(text).expect("valid JSON");
    let mut failures = Vec::new();
    let mut unexpected_passes = Vec::new();
    let mut ran = 0;
    let mut not_bundled = 0;
    let mut listed_differences = 0;
    for group in ["matches", "lines", "texts", "fixes", "refused", "accepted"] {
        for case in vectors[group].as_array().into_iter().flatten() {
            if case["na"].as_bool().unwrap_or(false) {
                not_bundled += 1;
                continue;
            }
            ran += 1;
            let test = case["test"].as_str().unwrap_or("");
            let listed = DIFFERENCES.iter().any(|(t, _)| *t == test);
            match (disagreement(group, case), listed) {
                (None, false) => {}
                (Some(_), true) => listed_differences += 1,
                (None, true) => unexpected_passes.push(test.to_string()),
                (Some(why), false) => failures.push(format!(
                    "{group} {test} ({}): {why}",
                    case["origin"].as_str().unwrap_or("")
                )),
            }
        }
    }
    println!(
        "{} of {ran} vectors agree, {listed_differences} are listed differences ({not_bundled} in \
         languages not bundled)",
        ran - listed_differences - failures.len()
    );
    assert!(ran >= 350, "only {ran} vectors");
    assert!(
        failures.is_empty() && unexpected_passes.is_empty(),
        "{} of {ran} vectors disagree:\n{}\nlisted as differences but agree: {unexpected_passes:?}",
        failures.len(),
        failures.join("\n")
    );
}

/// Vectors on which the ast-grep 0.51.1 CLI disagrees with its own source's expectation.
const CLI_DIFFERS: &[(&str, &str)] = &[(
    "undefined_rewriter",
    "ast-grep's check_var.rs refuses a `rewrite` naming no defined rewriter; the 0.51.1 CLI \
     runs no rewriter and writes the capture unchanged",
)];

fn ast_grep_cli() -> Option<std::path::PathBuf> {
    let venv = std::env::var_os("HOME")
        .map(|h| std::path::PathBuf::from(h).join(".cache/agent-tools-test/venv/bin/ast-grep"));
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join("ast-grep"));
    venv.into_iter().chain(on_path).find(|p| p.is_file())
}

/// The expectations themselves are checked against the real CLI (`check_with_cli.py`), so a
/// vector never encodes a guess about what ast-grep does.
#[test]
fn the_ast_grep_cli_agrees_with_every_vector_but_the_noted_ones() {
    let in_ci = std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "false");
    let Some(cli) = ast_grep_cli() else {
        assert!(!in_ci, "the ast-grep CLI is missing in CI; run `cargo xtask setup`");
        #[allow(clippy::print_stderr)]
        {
            eprintln!(
                "\n!!! SKIPPED: the ast-grep CLI is not installed; run `cargo xtask setup` !!!\n"
            );
        }
        return;
    };
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/rule_vectors/check_with_cli.py");
    let out = std::process::Command::new("python3")
        .arg(script)
        .arg(&cli)
        .output()
        .expect("python3 runs the CLI check");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    let differ: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with("the CLI agrees"))
        .filter_map(|l| l.split('\t').nth(1))
        .collect();
    let expected: Vec<&str> = CLI_DIFFERS.iter().map(|(t, _)| *t).collect();
    assert_eq!(differ, expected, "{text}");
    assert!(text.contains("the CLI agrees with"), "{text}");
}
