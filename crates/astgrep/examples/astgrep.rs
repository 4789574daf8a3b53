//! A minimal command line over the library, used by `cargo xtask bench astgrep`:
//! `astgrep PATTERN LANGUAGE DIR` prints the match count and scan statistics as one JSON line,
//! after building the rendered answer of the first `--max-results N` matches (default 1, at most
//! 500) as the tool does; add `--show` to print the rendered result instead (500 matches). A PATTERN starting with `{` is a rule
//! (ast-grep's rule language, as JSON). `--repeat N` runs the search N times in one process and
//! reports each run's milliseconds (`runs_ms`), sharing one parse cache (`--cache-mb N`,
//! default 1024) between them. `--parse-only` walks, reads, pre-filters and parses the files the
//! search would, without matching (the floor), and reports the same line without matches.
//! `--rewrite TEXT` stages the rewrite (`ast_edit`) of every match of PATTERN under DIR (a file
//! or folder) and accepts it (`resolve`), reporting `propose_ms` and `accept_ms`;
//! `--rewrite-file PATH` reads TEXT from a file (a long rewrite exceeds an argument's limit).

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::{path::Path, process::ExitCode, sync::Arc, time::Instant};

use agent_tools_astgrep::{
    DEFAULT_CACHE_BYTES, EditRequest, EditStore, ResolveAction, ResolveRequest, SearchOptions,
    SearchRequest, TreeCache, parse_only, render_payload, render_search, search, search_payload,
};

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
    let flag = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1));
    if let Some(rewrite) = flag("--rewrite") {
        return rewrite_and_accept(pattern, rule, language, dir, rewrite);
    }
    if let Some(file) = flag("--rewrite-file") {
        return match std::fs::read_to_string(file) {
            Ok(rewrite) => rewrite_and_accept(pattern, rule, language, dir, &rewrite),
            Err(e) => {
                eprintln!("cannot read the rewrite from {file}: {e}");
                ExitCode::from(2)
            }
        };
    }
    let request = SearchRequest {
        pattern,
        rule,
        path: None,
        language: Some(language.clone()),
        max_results: Some(if args.iter().any(|a| a == "--show") {
            500
        } else {
            flag("--max-results").and_then(|n| n.parse().ok()).unwrap_or(1)
        }),
        context: None,
    };
    let repeat: usize = args
        .iter()
        .position(|a| a == "--repeat")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(1)
        .max(1);
    // One cache for the whole process, as one run of the host keeps one.
    let cache_bytes = args
        .iter()
        .position(|a| a == "--cache-mb")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse::<usize>().ok())
        .map_or(DEFAULT_CACHE_BYTES, |mb| mb * 1024 * 1024);
    let cache = Arc::new(TreeCache::new(cache_bytes));
    let options =
        SearchOptions { cache: (repeat > 1).then(|| cache.clone()), ..SearchOptions::default() };
    if args.iter().any(|a| a == "--parse-only") {
        let start = Instant::now();
        return match parse_only(Path::new(dir), &request, &options) {
            Ok(stats) => {
                let line = serde_json::json!({
                    "matches": 0,
                    "stats": stats,
                    "runs_ms": [start.elapsed().as_millis() as u64],
                });
                println!("{line}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("{e}");
                ExitCode::from(1)
            }
        };
    }
    let mut runs_ms = Vec::new();
    let mut last = None;
    for _ in 0..repeat {
        let start = Instant::now();
        match search(Path::new(dir), &request, &options) {
            Ok(result) => last = Some(result),
            Err(e) => {
                eprintln!("{e}");
                return ExitCode::from(1);
            }
        }
        runs_ms.push(start.elapsed().as_millis() as u64);
    }
    let Some(result) = last else { return ExitCode::from(1) };
    if args.iter().any(|a| a == "--show") {
        println!("{}", render_search(&result));
        return ExitCode::SUCCESS;
    }
    // The answer a model gets, built as the tool builds it (the shown matches rendered).
    let rendered = render_payload(&search_payload(&result));
    let stats = cache.stats();
    let line = serde_json::json!({
        "matches": result.total_matches,
        "shown": result.matches.len(),
        "rendered_chars": rendered.len(),
        "files_with_matches": result.files_with_matches,
        "context": result.pattern.context.map_or("rule".to_string(), |c| c.to_string()),
        "stats": result.stats,
        "runs_ms": runs_ms,
        "cache_files": stats.files,
        "cache_mb": stats.bytes / (1024 * 1024),
    });
    println!("{line}");
    ExitCode::SUCCESS
}

/// `ast_edit` of every match under `target` (a file or a folder, its parent taken as the root),
/// then `resolve` accept; prints the replacement count and the time of each step.
fn rewrite_and_accept(
    pattern: Option<String>,
    rule: Option<serde_json::Value>,
    language: &str,
    target: &str,
    rewrite: &str,
) -> ExitCode {
    let target = Path::new(target);
    let (root, path) = match (target.is_file(), target.parent(), target.file_name()) {
        (true, Some(parent), Some(name)) => (parent, Some(name.to_string_lossy().to_string())),
        _ => (target, None),
    };
    let store = EditStore::new();
    let request = EditRequest {
        pattern,
        rule,
        rewrite: Some(rewrite.to_string()),
        path,
        language: Some(language.to_string()),
        context: None,
    };
    let start = Instant::now();
    let proposal = match store.propose(root, &request, &SearchOptions::default()) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(1);
        }
    };
    let propose_ms = start.elapsed().as_millis() as u64;
    let Some(edit_id) = proposal.edit_id.clone() else {
        eprintln!("nothing was staged: no match changed the code");
        return ExitCode::from(1);
    };
    let start = Instant::now();
    if let Err(e) = store.resolve(&ResolveRequest { edit_id, action: ResolveAction::Accept }) {
        eprintln!("{e}");
        return ExitCode::from(1);
    }
    let line = serde_json::json!({
        "matches": proposal.replacements,
        "diff_lines": proposal.diff.lines().count(),
        "propose_ms": propose_ms,
        "accept_ms": start.elapsed().as_millis() as u64,
    });
    println!("{line}");
    ExitCode::SUCCESS
}
