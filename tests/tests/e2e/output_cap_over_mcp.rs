//! A result over the output cap, through the official Python SDKs (which validate structured
//! content against the tool's output schema): a 3,519-line `read` and a 500-match `ast_grep`
//! are cut once, at a whole line or match (`read` is text only), and the text and the structured content say the
//! same: where they stop and how to go on.

use serde_json::{Value, json};

use crate::support::{McpScript, Sdk, TempProject, results, text_of};

/// The host's default cap on one result, in characters.
pub(crate) const CAP: usize = 40_000;
pub(crate) const LINES: usize = 3_519;
pub(crate) const MATCHES: usize = 500;

/// A 3,519-line source file, about 180 KB.
pub(crate) fn big_file() -> String {
    (1..=LINES)
        .map(|i| format!("    let value_{i:04} = compute({i}, \"some text to read\");\n"))
        .collect()
}

/// A Python file with 500 calls of `print`, long enough that the matches are over the cap.
pub(crate) fn many_calls() -> String {
    (1..=MATCHES)
        .map(|i| {
            format!("print(\"call number {i} with an argument long enough to add up quickly\")\n")
        })
        .collect()
}

/// The number of the last numbered line in a `read` text.
pub(crate) fn last_numbered_line(text: &str) -> usize {
    text.lines()
        .rev()
        .filter_map(|line| line.split_once('\t'))
        .find_map(|(number, _)| number.trim().parse().ok())
        .unwrap_or(0)
}

fn chars(value: &Value) -> usize {
    value.to_string().chars().count()
}

fn check(sdk: Sdk) {
    let project = TempProject::new(&[("big.rs", &big_file()), ("many.py", &many_calls())]);
    let script = McpScript::new(&project.root, &[])
        .call("read", json!({"path": "big.rs"}))
        .call("ast_grep", json!({"pattern": "print($X)", "path": "many.py", "max_results": 500}));
    let Some(out) = script.run_with(sdk) else { return };
    let results = results(out);

    // read: text only (so every client shows the numbered lines), within the cap, cut at a
    // whole line with a note saying how to go on.
    // The first result is the connection's own (initialize).
    let read = &results[1];
    assert_eq!(read["isError"], false, "{}", text_of(read));
    let text = text_of(read);
    assert!(read["structured"].is_null(), "read has no structured content: {}", read["structured"]);
    assert!(text.chars().count() <= CAP, "text of {} characters", text.chars().count());
    let end = last_numbered_line(text);
    assert!(end > 100 && end < 2000, "the cap cut the read, at line {end}");
    let note = text.lines().last().unwrap_or_default();
    let next = format!("start_line={}", end + 1);
    assert!(note.contains(&next) && note.contains("output cap"), "note: {note}");
    assert!(note.contains(&format!("of {LINES}")), "note: {note}");

    // ast_grep: cut at a whole match, the same matches in both, and a note saying so.
    let search = &results[2];
    assert_eq!(search["isError"], false, "{}", text_of(search));
    let text = text_of(search);
    let structured = &search["structured"];
    assert!(text.chars().count() <= CAP, "text of {} characters", text.chars().count());
    assert!(chars(structured) <= CAP, "structured content of {} characters", chars(structured));
    let matches = structured["matches"].as_array().expect("matches");
    assert!(matches.len() > 10 && matches.len() < MATCHES, "cut at {} matches", matches.len());
    let shown_in_text = text.lines().filter(|l| l.starts_with("many.py:")).count();
    assert_eq!(shown_in_text, matches.len(), "the text shows the same matches");
    let last = matches.last().expect("a match")["at"].as_str().unwrap_or_default();
    assert!(text.contains(&format!("{last}  ")), "the text shows the last match {last}");
    let notes: Vec<&str> =
        structured["notes"].as_array().expect("notes").iter().filter_map(Value::as_str).collect();
    let cut = format!("showing {} of {MATCHES} matches", matches.len());
    assert!(notes.iter().any(|n| n.contains(&cut) && n.contains("output cap")), "{notes:?}");
    assert!(text.contains(&cut), "the text has the same note");
}

#[test]
fn a_long_read_and_a_large_search_are_cut_the_same_way_in_text_and_structured_content_sdk1() {
    check(Sdk::V1);
}

#[test]
fn a_long_read_and_a_large_search_are_cut_the_same_way_in_text_and_structured_content_sdk2() {
    check(Sdk::V2);
}
