//! Searching a tree of files: walk, pre-filter, counts, ordering, limits, bad inputs, rendering.

use std::{
    path::Path,
    sync::{Arc, Mutex},
};

use agent_tools_astgrep::{
    AstError, SearchOptions, SearchRequest, SearchResult, render_search, search,
};
use agent_tools_support::progress::{CallScope, Progress};

use crate::support;
use support::project;

fn request(pattern: &str, path: Option<&str>, language: Option<&str>) -> SearchRequest {
    SearchRequest {
        pattern: Some(pattern.into()),
        rule: None,
        path: path.map(Into::into),
        language: language.map(Into::into),
        max_results: None,
        context: None,
    }
}

/// Runs a search under `root`; returns the result or the error text.
fn check(root: &Path, req: SearchRequest) -> Result<SearchResult, String> {
    search(root, &req, &SearchOptions::default()).map_err(|e| e.to_string())
}

const RUST_A: &[u8] = b"fn a() {\n    let x = foo().unwrap();\n    let y = bar.unwrap();\n}\n";
const RUST_B: &[u8] =
    b"fn b() {\n    // baz.unwrap()\n    let s = \"q.unwrap()\";\n    q.unwrap();\n}\n";
const RUST_C: &[u8] = b"fn c() { println!(\"no match here\"); }\n";

#[test]
fn a_directory_search_is_sorted_counted_and_rendered() {
    let dir = project(&[
        ("src/b.rs", RUST_B),
        ("src/a.rs", RUST_A),
        ("src/c.rs", RUST_C),
        ("ignored/d.rs", RUST_A),
        (".gitignore", b"ignored/\n"),
        ("notes.txt", b"x.unwrap()"),
    ]);
    let result = check(dir.path(), request("$A.unwrap()", None, Some("rust"))).unwrap();
    assert_eq!(result.total_matches, 3);
    assert_eq!(result.files_with_matches, 2);
    assert_eq!(result.stats.files_scanned, 3, "{:?}", result.stats);
    assert_eq!(result.stats.prefiltered, 1);
    assert_eq!(result.stats.parsed, 2);
    let places: Vec<String> =
        result.matches.iter().map(|m| format!("{}:{}:{}", m.file, m.line, m.column)).collect();
    assert_eq!(places, ["src/a.rs:2:13", "src/a.rs:3:13", "src/b.rs:4:5"]);
    insta::assert_snapshot!("directory_search", render_search(&result));
}

#[test]
fn max_results_cuts_the_list_and_says_how_many_more() {
    let dir = project(&[("src/a.rs", RUST_A), ("src/b.rs", RUST_B)]);
    let mut req = request("$A.unwrap()", Some("src"), Some("rust"));
    req.max_results = Some(2);
    let result = check(dir.path(), req).unwrap();
    assert_eq!(result.matches.len(), 2);
    assert_eq!(result.total_matches, 3);
    let text = render_search(&result);
    assert!(text.contains("[showing 2 of 3 matches; 1 more not shown"), "{text}");
}

#[test]
fn an_empty_result_explains_itself() {
    let dir = project(&[("src/a.rs", RUST_A), ("src/c.rs", RUST_C)]);
    let result = check(dir.path(), request("$A.expect($M)", Some("src"), Some("rust"))).unwrap();
    assert_eq!(result.total_matches, 0);
    insta::assert_snapshot!("empty_search", render_search(&result));
}

#[test]
fn language_is_inferred_from_a_file_and_required_for_a_directory() {
    let dir = project(&[("src/a.rs", RUST_A)]);
    let result = check(dir.path(), request("$A.unwrap()", Some("src/a.rs"), None)).unwrap();
    assert_eq!(result.total_matches, 2);
    let err = check(dir.path(), request("$A.unwrap()", Some("src"), None)).unwrap_err();
    assert!(err.contains("`language` is required when `path` is a directory"), "{err}");
    assert!(
        err.contains(
            "bash, c, cpp, dart, go, java, javascript, json, python, rust, tsx, typescript"
        ),
        "{err}"
    );
    let err = check(dir.path(), request("$A.unwrap()", Some("src"), Some("cobol"))).unwrap_err();
    assert!(err.contains("unknown language `cobol`"), "{err}");
}

#[test]
fn bad_paths_and_files_get_clear_errors() {
    let dir = project::<&[u8]>(&[
        ("a.py", b"print(1)\n"),
        ("bin.py", b"print(\0\x01\x02)"),
        ("latin1.py", b"print('caf\xe9')\n"),
    ]);
    let err = check(dir.path(), request("print($X)", Some("../"), Some("python"))).unwrap_err();
    assert!(err.contains("outside the run's root"), "{err}");
    let err = check(dir.path(), request("print($X)", Some("/etc"), Some("python"))).unwrap_err();
    assert!(err.contains("outside the run's root"), "{err}");
    let err = check(dir.path(), request("print($X)", Some("nope"), Some("python"))).unwrap_err();
    assert!(err.contains("does not exist"), "{err}");
    let err = check(dir.path(), request("print($X)", Some("bin.py"), None)).unwrap_err();
    assert!(err.contains("is a binary file"), "{err}");
    let err = check(dir.path(), request("print($X)", Some("latin1.py"), None)).unwrap_err();
    assert!(err.contains("is not UTF-8 text (invalid byte at offset 10)"), "{err}");
    // In a directory walk they are counted, not fatal.
    let result = check(dir.path(), request("print($X)", None, Some("python"))).unwrap();
    assert_eq!(result.total_matches, 1);
    assert_eq!(result.stats.not_parsed, 2);
    assert_eq!(result.stats.not_parsed_reasons, ["binary: 1", "not UTF-8: 1"]);
    let err = check(dir.path(), request("", None, Some("python"))).unwrap_err();
    assert!(err.contains("pattern is empty"), "{err}");
    let err = check(dir.path(), request("$X", None, Some("python"))).unwrap_err();
    assert!(err.contains("only a metavariable"), "{err}");
}

#[test]
fn a_directory_without_files_of_the_language_says_so() {
    let dir = project(&[("a.py", b"print(1)\n")]);
    let result = check(dir.path(), request("fmt.Println($A)", None, Some("go"))).unwrap();
    assert_eq!(result.total_matches, 0);
    let text = render_search(&result);
    assert!(text.contains("no go files under `.` (.go)"), "{text}");
}

#[test]
fn oversized_files_are_skipped_and_counted() {
    let big = "print(1)\n".repeat(100);
    let dir = project(&[("big.py", big.as_bytes()), ("small.py", b"print(2)\n")]);
    let options = SearchOptions { max_file_bytes: 100, ..SearchOptions::default() };
    let result = search(dir.path(), &request("print($X)", None, Some("python")), &options).unwrap();
    assert_eq!(result.total_matches, 1);
    assert_eq!(result.stats.not_parsed_reasons, ["larger than the size limit: 1"]);
}

#[test]
fn an_exhausted_step_budget_is_reported_with_its_place() {
    let args = vec!["1"; 60].join(", ");
    let src = format!("f({args});\n");
    let dir = project(&[("a.js", src.as_bytes())]);
    let options = SearchOptions { step_budget: 1_000, ..SearchOptions::default() };
    let req = request("f($$$A, $$$B, $$$C, $$$D, 0)", Some("a.js"), None);
    let result = search(dir.path(), &req, &options).unwrap();
    let budget = result.budget_exceeded.clone().expect("budget note");
    assert_eq!((budget.candidates, budget.first.as_str()), (1, "a.js:1:1"));
    let text = render_search(&result);
    assert!(
        text.contains("[step budget exceeded: 1 candidate node abandoned (first at a.js:1:1)"),
        "{text}"
    );
}

/// Records the messages of a call's progress reports, and cancels the call at the first report
/// when told to.
struct Reports {
    seen: Mutex<Vec<String>>,
    cancel_at_first: Option<CallScope>,
}

impl Progress for Reports {
    fn report(&self, _elapsed_seconds: f64, message: &str) {
        self.seen.lock().unwrap().push(message.to_string());
        if let Some(scope) = &self.cancel_at_first {
            scope.token().cancel();
        }
    }
}

#[test]
fn a_long_walk_reports_progress_and_stops_when_cancelled() {
    let files: Vec<(String, String)> =
        (0..450).map(|i| (format!("d/f{i:03}.py"), format!("print({i})\n"))).collect();
    let refs: Vec<(&str, &str)> = files.iter().map(|(p, c)| (p.as_str(), c.as_str())).collect();
    let dir = project(&refs);
    let reports = Arc::new(Reports { seen: Mutex::new(Vec::new()), cancel_at_first: None });
    let options = SearchOptions {
        threads: 1,
        scope: CallScope::default().with_progress(reports.clone()),
        ..SearchOptions::default()
    };
    let result = search(dir.path(), &request("print($X)", None, Some("python")), &options).unwrap();
    assert_eq!(result.total_matches, 450);
    assert_eq!(
        *reports.seen.lock().unwrap(),
        ["100 files searched", "200 files searched", "300 files searched", "400 files searched"]
    );
    // Cancelled from the progress port after the first report: the walk stops there.
    let scope = CallScope::default();
    let reports =
        Arc::new(Reports { seen: Mutex::new(Vec::new()), cancel_at_first: Some(scope.clone()) });
    let options = SearchOptions {
        threads: 1,
        scope: scope.with_progress(reports.clone()),
        ..SearchOptions::default()
    };
    let err =
        search(dir.path(), &request("print($X)", None, Some("python")), &options).unwrap_err();
    assert_eq!(err, AstError::Cancelled);
    assert_eq!(
        *reports.seen.lock().unwrap(),
        ["100 files searched"],
        "the walk went on after the cancel"
    );
}

#[test]
fn a_repeated_search_uses_the_parse_cache_and_sees_changed_files() {
    let dir = project(&[("a.py", "print(1)\n"), ("b.py", "other()\n")]);
    let cache = Arc::new(agent_tools_astgrep::TreeCache::new(64 * 1024 * 1024));
    let options = SearchOptions { cache: Some(cache.clone()), ..SearchOptions::default() };
    let req = request("print($X)", None, Some("python"));
    let first = search(dir.path(), &req, &options).unwrap();
    assert_eq!(first.total_matches, 1);
    let stats = cache.stats();
    assert_eq!((stats.files, stats.hits), (2, 0), "{stats:?}");
    let second = search(dir.path(), &req, &options).unwrap();
    assert_eq!(second.matches, first.matches);
    assert_eq!(cache.stats().hits, 2, "{:?}", cache.stats());
    // A changed file (new size and time) is read and parsed again, not served from the cache.
    std::fs::write(dir.path().join("a.py"), "print(1)\nprint(22)\n").unwrap();
    let third = search(dir.path(), &req, &options).unwrap();
    assert_eq!(third.total_matches, 2);
    // A budget too small for a tree keeps nothing and changes no result.
    let tiny = SearchOptions {
        cache: Some(Arc::new(agent_tools_astgrep::TreeCache::new(0))),
        ..SearchOptions::default()
    };
    assert_eq!(search(dir.path(), &req, &tiny).unwrap().total_matches, 2);
}

/// Issue 25: a search repeated after an edit matches again only the files the edit changed; the
/// others' matches are kept per (query, file version), and a different query matches afresh.
#[test]
fn a_repeated_search_reuses_the_matches_of_unchanged_files() {
    let dir = project(&[("a.py", "print(1)\n"), ("b.py", "print(2)\nprint(3)\n")]);
    let cache = Arc::new(agent_tools_astgrep::TreeCache::new(64 * 1024 * 1024));
    let options = SearchOptions { cache: Some(cache.clone()), ..SearchOptions::default() };
    let req = request("print($X)", None, Some("python"));
    assert_eq!(search(dir.path(), &req, &options).unwrap().total_matches, 3);
    assert_eq!(cache.stats().match_hits, 0);
    let again = search(dir.path(), &req, &options).unwrap();
    assert_eq!((again.total_matches, cache.stats().match_hits), (3, 2), "{:?}", cache.stats());
    std::fs::write(dir.path().join("a.py"), "print(1)\nprint(4)\nprint(5)\n").unwrap();
    let after_edit = search(dir.path(), &req, &options).unwrap();
    assert_eq!(after_edit.total_matches, 5);
    assert_eq!(cache.stats().match_hits, 3, "only b.py's matches are reused");
    let places: Vec<String> =
        after_edit.matches.iter().map(|m| format!("{}:{}", m.file, m.line)).collect();
    assert_eq!(places, ["a.py:1", "a.py:2", "a.py:3", "b.py:1", "b.py:2"]);
    let other = request("print(2)", None, Some("python"));
    assert_eq!(search(dir.path(), &other, &options).unwrap().total_matches, 1);
    assert_eq!(cache.stats().match_hits, 3, "another query is matched afresh");
}

/// The literal pre-filter looks for the pattern's words as the code's tokens hold them: `let` in
/// `delete` or `letter` is not a `let`, so that file is never parsed; a digit before a keyword
/// (`1if`, which Python reads as `1` `if`) still counts, and so does a name next to other
/// characters (`(let`, `let:`).
#[test]
fn the_pre_filter_finds_words_not_substrings() {
    let dir = project(&[
        ("a.rs", &b"fn delete() { let letter: u8 = 1; }\n"[..]),
        ("b.rs", b"fn delete() { outlet(letters); }\n"),
        ("c.py", b"x = 1if y else 2\n"),
        ("d.py", b"x = elif_ if y else 2\n"),
    ]);
    let result = check(dir.path(), request("let $X: $T = $E;", None, Some("rust"))).unwrap();
    assert_eq!(result.total_matches, 1);
    assert_eq!((result.stats.prefiltered, result.stats.parsed), (1, 1), "{:?}", result.stats);
    let result = check(dir.path(), request("$A if $B else $C", None, Some("python"))).unwrap();
    assert_eq!(result.total_matches, 2, "{:?}", result.stats);
}
