//! Structural search (`ast_grep`), staged rewrite (`ast_edit`) and `resolve` on tree-sitter.
#![doc = include_str!("../README.md")]

mod alloc;
mod cache;
mod config;
mod cursor;
mod edit;
mod error;
pub mod family;
mod lang;
mod matcher;
pub mod outline;
mod pattern;
mod query;
mod rule;
mod search;
mod strictness;
pub mod tools;
mod walk;

pub use crate::{
    cache::{CacheStats, DEFAULT_CACHE_BYTES, TreeCache},
    config::AstgrepConfig,
    edit::{
        EditRequest, EditStore, MAX_DIFF_LINES, MAX_STAGED, Proposal, ProposedFile, Resolution,
        ResolveAction, ResolveRequest, fix_source, render_proposal, render_resolution,
        rewrite_source,
    },
    error::AstError,
    lang::{ContextKind, Lang},
    matcher::{DEFAULT_STEP_BUDGET, Matcher, RawMatch},
    pattern::Pattern,
    rule::RuleSet,
    search::{
        CaptureView, DEFAULT_MAX_RESULTS, MAX_RESULTS_CAP, MatchView, PatternInfo, PayloadMatch,
        SearchPayload, SearchRequest, SearchResult, parse_only, render_payload, render_search,
        search, search_compiled, search_payload,
    },
    strictness::Strictness,
    walk::{BudgetNote, PROGRESS_EVERY, ScanStats, Scope, SearchOptions, resolve_scope},
};

/// Matches `pattern` against `source` (one file's text) and returns the raw matches, walking
/// the tree as `search` does (only subtrees holding the pattern's longest literal word).
///
/// A convenience for tests, fuzzing and hosts that hold text in memory.
pub fn match_source(pattern: &Pattern, source: &str) -> Vec<RawMatch> {
    let mut parser = pattern.data.parser();
    let Some(tree) = parser.parse(source, None) else { return Vec::new() };
    query::Query::Pattern(pattern)
        .find_all(tree.root_node(), source.as_bytes(), DEFAULT_STEP_BUDGET, true)
        .0
}
