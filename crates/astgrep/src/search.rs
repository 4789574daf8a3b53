//! `ast_grep`: the search request, its result, and the model-facing rendering.

use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{
    error::AstError,
    lang::{ContextKind, Lang},
    matcher::RawMatch,
    pattern::Pattern,
    query::Query,
    rule::RuleSet,
    walk::{
        BudgetNote, FileCtx, ScanStats, Scope, SearchOptions, Work, line_col, resolve_scope, scan,
    },
};

/// Default number of matches shown.
pub const DEFAULT_MAX_RESULTS: usize = 50;
/// Upper bound on `max_results`.
pub const MAX_RESULTS_CAP: usize = 500;

/// Search code by syntax.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchRequest {
    #[serde(default)]
    pub pattern: Option<String>,
    /// Instead of `pattern`.
    #[serde(default)]
    #[schemars(schema_with = "crate::search::rule_schema")]
    pub rule: Option<serde_json::Value>,
    /// File or directory (default: the root).
    #[serde(default)]
    pub path: Option<String>,
    /// Inferred from a file's extension.
    #[serde(default)]
    pub language: Option<String>,
    /// Default 50.
    #[serde(default)]
    #[schemars(range(min = 1, max = 500))]
    pub max_results: Option<usize>,
    /// Force one parse context.
    #[serde(default)]
    #[schemars(schema_with = "crate::search::context_schema")]
    pub context: Option<ContextKind>,
}

/// The `rule` argument's schema: a free-form object whose keys are ast-grep's.
pub(crate) fn rule_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "object",
        "description": "ast-grep rule: pattern, kind, regex, nthChild, range, inside/has/follows/precedes (stopBy, field), all, any, not, matches; or a config {rule, constraints, utils, transform, fix}."
    })
}

/// `rule` for `ast_edit`: as for `ast_grep`.
pub(crate) fn edit_rule_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "type": "object", "description": "As for ast_grep." })
}

/// `context`: the rungs of the ladder, without per-rung prose.
pub(crate) fn context_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "string",
        "enum": ["statement", "expression", "member", "declaration"]
    })
}

/// The query of a request: exactly one of `pattern` and `rule`.
pub(crate) enum QuerySource<'a> {
    Pattern(&'a str),
    Rule(&'a serde_json::Value),
}

pub(crate) fn query_source<'a>(
    pattern: Option<&'a str>,
    rule: Option<&'a serde_json::Value>,
) -> Result<QuerySource<'a>, AstError> {
    match (pattern, rule) {
        (Some(p), None) => Ok(QuerySource::Pattern(p)),
        (None, Some(r)) => Ok(QuerySource::Rule(r)),
        (Some(_), Some(_)) => Err(AstError::Pattern(
            "give `pattern` or `rule`, not both (a rule can hold the pattern: {\"pattern\": \"…\", \"inside\": …})".into(),
        )),
        (None, None) => Err(AstError::Pattern(
            "give `pattern` (code with metavariables, e.g. `$A.unwrap()`) or `rule` (an ast-grep rule object)".into(),
        )),
    }
}

/// A compiled pattern or rule, owned.
pub(crate) enum Compiled {
    Pattern(Pattern),
    Rule(Box<RuleSet>),
}

impl Compiled {
    pub(crate) fn new(
        lang: Lang,
        source: &QuerySource<'_>,
        context: Option<ContextKind>,
    ) -> Result<Compiled, AstError> {
        match source {
            QuerySource::Pattern(p) => Ok(Compiled::Pattern(Pattern::compile(lang, p, context)?)),
            QuerySource::Rule(r) => Ok(Compiled::Rule(Box::new(RuleSet::compile(lang, r)?))),
        }
    }

    pub(crate) fn query(&self) -> Query<'_> {
        match self {
            Compiled::Pattern(p) => Query::Pattern(p),
            Compiled::Rule(r) => Query::Rule(r),
        }
    }

    pub(crate) fn info(&self) -> PatternInfo {
        match self {
            Compiled::Pattern(p) => PatternInfo::of(p),
            Compiled::Rule(r) => PatternInfo {
                pattern: r.source().to_string(),
                language: r.lang(),
                context: None,
                shape: "a rule".to_string(),
                literals: r.literals().to_vec(),
            },
        }
    }
}

/// The language a request names, directly or in its rule config.
pub(crate) fn request_language<'a>(
    language: Option<&'a str>,
    source: &QuerySource<'a>,
) -> Option<&'a str> {
    language.or(match source {
        QuerySource::Rule(r) => RuleSet::language_of(r),
        QuerySource::Pattern(_) => None,
    })
}

/// One capture of a match.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CaptureView {
    /// `$X` or `$$$X`.
    pub name: String,
    /// The captured code, cut to a readable size.
    pub text: String,
}

/// One match, as shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct MatchView {
    /// Relative to the root.
    pub file: String,
    /// 1-based.
    pub line: usize,
    /// 1-based, in characters.
    pub column: usize,
    pub end_line: usize,
    /// The matched code, trimmed to a few lines.
    pub text: String,
    pub captures: Vec<CaptureView>,
}

/// Facts about the compiled pattern, shown with every result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PatternInfo {
    pub pattern: String,
    pub language: Lang,
    /// The context of the ladder that parsed it; none for a rule.
    pub context: Option<ContextKind>,
    /// The parsed shape as an S-expression.
    pub shape: String,
    /// Words a file must contain to be parsed at all.
    pub literals: Vec<String>,
}

impl PatternInfo {
    /// `pattern parsed as statement`, or `rule`.
    pub(crate) fn parsed_as(&self) -> String {
        match self.context {
            Some(c) => format!("pattern parsed as {c}"),
            None => "rule".to_string(),
        }
    }

    pub(crate) fn of(pattern: &Pattern) -> Self {
        PatternInfo {
            pattern: pattern.source().to_string(),
            language: pattern.lang(),
            context: Some(pattern.context()),
            shape: pattern.sexp().to_string(),
            literals: pattern.literals().to_vec(),
        }
    }
}

/// The result of `ast_grep`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SearchResult {
    pub pattern: PatternInfo,
    /// The searched path, relative to the root.
    pub scope: String,
    pub scope_is_file: bool,
    /// All matches found (not only those shown).
    pub total_matches: usize,
    pub files_with_matches: usize,
    /// The first `max_results` matches, sorted by file and position.
    pub matches: Vec<MatchView>,
    pub stats: ScanStats,
    /// Set when candidates were abandoned because the matcher's step budget ran out.
    pub budget_exceeded: Option<BudgetNote>,
}

/// Runs `ast_grep` under `root`.
pub fn search(
    root: &Path,
    request: &SearchRequest,
    options: &SearchOptions,
) -> Result<SearchResult, AstError> {
    let source = query_source(request.pattern.as_deref(), request.rule.as_ref())?;
    let language = request_language(request.language.as_deref(), &source);
    let scope = resolve_scope(root, request.path.as_deref(), language)?;
    let compiled = Compiled::new(scope.lang, &source, request.context)?;
    search_query(&scope, compiled.query(), &compiled.info(), request.max_results, options)
}

/// Walks, reads, pre-filters and parses the files `search` would, without matching: what a
/// search cannot go below, for benchmarks (`cargo xtask bench astgrep` shows ours ÷ this).
pub fn parse_only(
    root: &Path,
    request: &SearchRequest,
    options: &SearchOptions,
) -> Result<ScanStats, AstError> {
    let source = query_source(request.pattern.as_deref(), request.rule.as_ref())?;
    let language = request_language(request.language.as_deref(), &source);
    let scope = resolve_scope(root, request.path.as_deref(), language)?;
    let compiled = Compiled::new(scope.lang, &source, request.context)?;
    Ok(scan(&scope, compiled.query(), options, Work::ParseOnly, &|_| ())?.stats)
}

/// Runs a compiled pattern over a resolved scope.
pub fn search_compiled(
    scope: &Scope,
    pattern: &Pattern,
    max_results: Option<usize>,
    options: &SearchOptions,
) -> Result<SearchResult, AstError> {
    search_query(scope, Query::Pattern(pattern), &PatternInfo::of(pattern), max_results, options)
}

fn search_query(
    scope: &Scope,
    query: Query<'_>,
    info: &PatternInfo,
    max_results: Option<usize>,
    options: &SearchOptions,
) -> Result<SearchResult, AstError> {
    let limit = max_results.unwrap_or(DEFAULT_MAX_RESULTS).clamp(1, MAX_RESULTS_CAP);
    let names = query.metavariables();
    // A file's matches are kept as found; only the first `limit` of them in file order are
    // rendered, once the walk is done.
    let per_file = |ctx: FileCtx<'_>| (ctx.text.clone(), ctx.found.clone());
    let scan = scan(scope, query, options, Work::Search, &per_file)?;
    let total_matches = scan.files.iter().map(|(_, (_, found))| found.matches.len()).sum();
    let files_with_matches = scan.files.len();
    let mut matches: Vec<MatchView> = Vec::new();
    for (rel, (text, found)) in &scan.files {
        let room = limit - matches.len();
        if room == 0 {
            break;
        }
        matches.extend(found.matches.iter().take(room).map(|m| view(rel, text, m, &names)));
    }
    Ok(SearchResult {
        pattern: info.clone(),
        scope: scope.display.clone(),
        scope_is_file: scope.is_file,
        total_matches,
        files_with_matches,
        matches,
        stats: scan.stats,
        budget_exceeded: scan.budget,
    })
}

/// One match as the model sees it: where, the code, the captures.
fn view(rel: &str, src: &str, m: &RawMatch, names: &[String]) -> MatchView {
    // The matcher knows the start's row and byte column: no count of lines from the top.
    let (row, byte_column) = m.start;
    let line_start = m.range.start.saturating_sub(byte_column);
    let (line, column) = match src.get(line_start..m.range.start) {
        Some(before) if line_start == 0 || src.as_bytes()[line_start - 1] == b'\n' => {
            (row + 1, before.chars().count() + 1)
        }
        _ => line_col(src, m.range.start),
    };
    let end_line = line + memchr::memchr_iter(b'\n', &src.as_bytes()[m.range.clone()]).count();
    let captures = names
        .iter()
        .zip(&m.captures)
        .map(|(name, range)| CaptureView {
            name: name.clone(),
            text: range.as_ref().map(|r| short_capture(&src[r.clone()])).unwrap_or_default(),
        })
        .collect();
    MatchView {
        file: rel.to_string(),
        line,
        column,
        end_line,
        text: short_match(src, m.range.clone()),
        captures,
    }
}

const MAX_MATCH_LINES: usize = 3;
const MAX_LINE_CHARS: usize = 160;
const MAX_CAPTURE_CHARS: usize = 120;

fn cut(line: &str, max: usize) -> String {
    if line.chars().count() <= max {
        return line.to_string();
    }
    let mut s: String = line.chars().take(max).collect();
    s.push('…');
    s
}

/// The matched code: up to three lines, later lines de-indented by the first line's indentation.
fn short_match(src: &str, range: std::ops::Range<usize>) -> String {
    let text = &src[range.clone()];
    let line_start = src[..range.start].rfind('\n').map_or(0, |i| i + 1);
    let indent: String =
        src[line_start..range.start].chars().take_while(|c| c.is_whitespace()).collect();
    let lines: Vec<&str> = text.lines().collect();
    let mut out: Vec<String> = lines
        .iter()
        .take(MAX_MATCH_LINES)
        .enumerate()
        .map(|(i, l)| {
            let l = if i == 0 { l } else { l.strip_prefix(indent.as_str()).unwrap_or(l) };
            cut(l.trim_end(), MAX_LINE_CHARS)
        })
        .collect();
    if lines.len() > MAX_MATCH_LINES {
        out.push(format!("… ({} more lines)", lines.len() - MAX_MATCH_LINES));
    }
    out.join("\n")
}

fn short_capture(text: &str) -> String {
    let mut lines = text.lines();
    let first = lines.next().unwrap_or("").trim_end();
    let rest = lines.count();
    if rest == 0 {
        cut(first, MAX_CAPTURE_CHARS)
    } else {
        format!("{} … ({} more lines)", cut(first, MAX_CAPTURE_CHARS), rest)
    }
}

/// What `ast_grep` returns to the model, as data: the text block is this, rendered, and MCP
/// structured content is this, so a client showing either gives the model the same answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SearchPayload {
    /// The first line: query, language, how it parsed, counts.
    pub summary: String,
    pub matches: Vec<PayloadMatch>,
    /// What else the model should know: more matches not shown, syntax errors, why none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// One match of a [`SearchPayload`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PayloadMatch {
    /// `file:line:col`.
    pub at: String,
    pub code: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub captures: Vec<CaptureView>,
}

/// The model-facing payload of a search result.
pub fn search_payload(result: &SearchResult) -> SearchPayload {
    let info = &result.pattern;
    let head = format!(
        "ast_grep `{}` ({}, {}): ",
        one_line(&info.pattern),
        info.language,
        info.parsed_as()
    );
    let mut notes: Vec<String> = Vec::new();
    let mut budget = String::new();
    push_budget(&mut budget, result.budget_exceeded.as_ref());
    if result.total_matches == 0 {
        let explain = explain_empty(result.pattern.language, &result.scope, &result.stats, info);
        notes.extend(explain.lines().map(str::to_string));
        notes.extend(budget.lines().map(str::to_string));
        return SearchPayload {
            summary: format!("{head}no matches in `{}`", result.scope),
            matches: Vec::new(),
            notes,
        };
    }
    let summary = format!(
        "{head}{} in {}",
        count(result.total_matches, "match", "matches"),
        count(result.files_with_matches, "file", "files")
    );
    let matches = result
        .matches
        .iter()
        .map(|m| PayloadMatch {
            at: format!("{}:{}:{}", m.file, m.line, m.column),
            code: m.text.clone(),
            captures: m.captures.clone(),
        })
        .collect();
    let shown = result.matches.len();
    if shown < result.total_matches {
        notes.push(format!(
            "[showing {shown} of {} matches; {} more not shown: narrow `path` or raise `max_results` (at most {MAX_RESULTS_CAP})]",
            result.total_matches,
            result.total_matches - shown
        ));
    }
    if result.stats.with_syntax_errors > 0 {
        notes.push(format!(
            "[{} of {} parsed files have syntax errors; matches inside broken code may be missing]",
            result.stats.with_syntax_errors, result.stats.parsed
        ));
    }
    notes.extend(budget.lines().map(str::to_string));
    SearchPayload { summary, matches, notes }
}

/// The model-facing text of a search result.
pub fn render_search(result: &SearchResult) -> String {
    render_payload(&search_payload(result))
}

/// A search payload as text: the summary, `file:line:col  code` and the captures per match,
/// then the notes.
pub fn render_payload(payload: &SearchPayload) -> String {
    let mut out = format!("{}\n", payload.summary);
    for m in &payload.matches {
        let mut lines = m.code.lines();
        out.push_str(&format!("{}  {}\n", m.at, lines.next().unwrap_or("")));
        for l in lines {
            out.push_str(&format!("    {l}\n"));
        }
        let caps: Vec<String> = m
            .captures
            .iter()
            .map(|c| {
                if c.text.is_empty() {
                    format!("{} = (empty)", c.name)
                } else {
                    format!("{} = {}", c.name, c.text)
                }
            })
            .collect();
        if !caps.is_empty() {
            out.push_str(&format!("    {}\n", caps.join("; ")));
        }
    }
    for note in &payload.notes {
        out.push_str(note);
        out.push('\n');
    }
    out
}

fn push_budget(out: &mut String, budget: Option<&BudgetNote>) {
    if let Some(b) = budget {
        out.push_str(&format!(
            "[step budget exceeded: {} candidate {} abandoned (first at {}); the pattern is too ambiguous there \
             (several `$$$` in one list?). Make it more specific to search those]\n",
            b.candidates,
            plural(b.candidates, "node", "nodes"),
            b.first
        ));
    }
}

/// Why a search found nothing: counts, pre-filter words and the pattern's parsed shape.
pub(crate) fn explain_empty(
    lang: Lang,
    scope: &str,
    stats: &ScanStats,
    info: &PatternInfo,
) -> String {
    let mut out = String::new();
    if stats.files_scanned == 0 {
        let exts: Vec<String> = lang.extensions().iter().map(|e| format!(".{e}")).collect();
        out.push_str(&format!(
            "no {lang} files under `{scope}` ({}); .gitignore'd and hidden files are skipped. \
             Check `path` and `language`\n",
            exts.join(", ")
        ));
    } else {
        out.push_str(&format!(
            "scanned {} {lang} {}: {}{} skipped by the literal pre-filter{}, {} parsed{}, {} not parsed{}\n",
            stats.files_scanned,
            plural(stats.files_scanned, "file", "files"),
            if stats.excluded_by_globs > 0 {
                format!("{} left out by the rule's `files`/`ignores`, ", stats.excluded_by_globs)
            } else {
                String::new()
            },
            stats.prefiltered,
            if info.literals.is_empty() {
                String::new()
            } else {
                format!(
                    " (they lack one of {})",
                    info.literals.iter().map(|l| format!("`{l}`")).collect::<Vec<_>>().join(", ")
                )
            },
            stats.parsed,
            if stats.with_syntax_errors > 0 {
                format!(" ({} with syntax errors)", stats.with_syntax_errors)
            } else {
                String::new()
            },
            stats.not_parsed,
            if stats.not_parsed_reasons.is_empty() {
                String::new()
            } else {
                format!(" ({})", stats.not_parsed_reasons.join(", "))
            },
        ));
    }
    if info.context.is_some() {
        out.push_str(&format!("pattern shape: {}\n", info.shape));
    }
    out
}

pub(crate) fn one_line(s: &str) -> String {
    let joined = s.lines().map(str::trim).collect::<Vec<_>>().join(" ⏎ ");
    cut(&joined, 120)
}

pub(crate) fn plural<'a>(n: usize, one: &'a str, many: &'a str) -> &'a str {
    if n == 1 { one } else { many }
}

/// `n` and the noun in the right number: "1 file", "3 files".
pub(crate) fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", plural(n, one, many))
}
