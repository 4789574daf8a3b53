//! ast-grep's own rule tests (crates/config) and the rules of its website catalog, ported as
//! data in `tests/rule_vectors/ast-grep-config-rules.json` (MIT): every vector agrees, except
//! the deliberate differences listed in `DIFFERENCES` (and the crate README).

use agent_tools_astgrep::{Lang, RuleSet, fix_source};
use serde_json::Value;

/// Vectors that differ on purpose, by test name, with the reason.
const DIFFERENCES: &[(&str, &str)] = &[];

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
        "lines" => {
            let source = case["source"].as_str().unwrap_or("");
            let got: Vec<u64> =
                rules.match_source(source).iter().map(|m| m.start.0 as u64 + 1).collect();
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

#[test]
fn every_ported_ast_grep_rule_vector_agrees_or_is_a_listed_difference() {
    let text = include_str!("rule_vectors/ast-grep-config-rules.json");
    let vectors: Value = serde_json::from_str(text).expect("valid JSON");
    let mut failures = Vec::new();
    let mut unexpected_passes = Vec::new();
    let mut ran = 0;
    for group in ["matches", "lines", "fixes", "refused", "accepted"] {
        for case in vectors[group].as_array().into_iter().flatten() {
            ran += 1;
            let test = case["test"].as_str().unwrap_or("");
            let listed = DIFFERENCES.iter().any(|(t, _)| *t == test);
            match (disagreement(group, case), listed) {
                (None, false) | (Some(_), true) => {}
                (None, true) => unexpected_passes.push(test.to_string()),
                (Some(why), false) => failures.push(format!(
                    "{group} {test} ({}): {why}",
                    case["origin"].as_str().unwrap_or("")
                )),
            }
        }
    }
    assert!(ran >= 75, "only {ran} vectors");
    assert!(
        failures.is_empty() && unexpected_passes.is_empty(),
        "{} of {ran} vectors disagree:\n{}\nlisted as differences but agree: {unexpected_passes:?}",
        failures.len(),
        failures.join("\n")
    );
}
