//! Scope and file walking: path confinement, language choice, the parallel walk, the literal
//! pre-filter, parsing with one parser per thread, and the scan statistics.

use std::{
    path::{Path, PathBuf},
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use agent_tools_support::{
    fs::{Kind, Root},
    progress::CallScope,
};

use crate::{
    cache::{FileMatches, TreeCache},
    error::AstError,
    lang::Lang,
    matcher::RawMatch,
    query::Query,
};

/// Limits and plumbing a host passes to a search.
#[derive(Debug, Clone)]
pub struct SearchOptions {
    /// Files larger than this are skipped (and counted).
    pub max_file_bytes: u64,
    /// Worker threads for directory walks; 0 = one per CPU.
    pub threads: usize,
    /// Steps one candidate node may take in the matcher.
    pub step_budget: u64,
    /// The call's cancellation and progress: cancelling it stops the walk at the next file
    /// (the call then fails with `AstError::Cancelled`), and every [`PROGRESS_EVERY`] files it
    /// is told how many were searched.
    pub scope: CallScope,
    /// Parsed files kept between the searches of a run (none: every search parses).
    pub cache: Option<Arc<TreeCache>>,
}

/// How often (in files) a directory walk reports progress.
pub const PROGRESS_EVERY: usize = 100;

impl Default for SearchOptions {
    fn default() -> Self {
        SearchOptions {
            max_file_bytes: 2 * 1024 * 1024,
            threads: 0,
            step_budget: crate::matcher::DEFAULT_STEP_BUDGET,
            scope: CallScope::default(),
            cache: None,
        }
    }
}

/// What the walk saw, so an empty result can say why it is empty.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ScanStats {
    /// Files of the language found under the path.
    pub files_scanned: usize,
    /// Of those, skipped because they lack a word the pattern requires.
    pub prefiltered: usize,
    /// Of those, skipped because the rule's `files`/`ignores` leave them out.
    #[serde(default)]
    pub excluded_by_globs: usize,
    /// Parsed and matched.
    pub parsed: usize,
    /// Parsed, but with syntax errors (still searched).
    pub with_syntax_errors: usize,
    /// Not parsed: binary, not UTF-8, larger than the limit, or unreadable.
    pub not_parsed: usize,
    /// Why files were not parsed, e.g. `binary: 2`.
    pub not_parsed_reasons: Vec<String>,
}

/// The searched scope: a file or a directory inside the root, and its language.
#[derive(Debug, Clone)]
pub struct Scope {
    pub root: PathBuf,
    pub target: PathBuf,
    pub is_file: bool,
    pub lang: Lang,
    /// The target as shown to the model (relative to the root, `.` for the root).
    pub display: String,
    /// The root, held open: files are read beneath it by handle.
    pub(crate) handle: Arc<Root>,
}

/// Resolves `path` (default: the root) inside `root` and chooses the language.
pub fn resolve_scope(
    root: &Path,
    path: Option<&str>,
    language: Option<&str>,
) -> Result<Scope, AstError> {
    // Confinement goes through the support crate's root handle: `..` and symlinks are judged
    // by the kernel beneath the root, never by comparing path strings.
    let handle = Root::open(root).map_err(|e| {
        AstError::Path(format!("the run's root {} is not usable: {e}", root.display()))
    })?;
    let root = handle.path().to_path_buf();
    let arg = path.map(str::trim).filter(|p| !p.is_empty()).unwrap_or(".");
    let rel = handle.confine(arg, "path").map_err(|e| AstError::Path(e.to_string()))?;
    let kind = handle.kind(&rel, "path").map_err(|e| AstError::Path(e.to_string()))?;
    let Some(kind) = kind else {
        return Err(AstError::Path(format!(
            "path `{arg}` does not exist under the root {}; give a file or directory inside it",
            root.display()
        )));
    };
    let real = handle.real(&rel, "path").map_err(|e| AstError::Path(e.to_string()))?;
    let target = handle.join(&real);
    let is_file = kind == Kind::File;
    let display = real.to_string();
    let lang = match language.map(str::trim).filter(|l| !l.is_empty()) {
        Some(id) => Lang::from_id(id).ok_or_else(|| {
            AstError::Language(format!(
                "unknown language `{id}`; languages in this build: {}",
                Lang::built_ids()
            ))
        })?,
        None if is_file => Lang::from_path(&target).ok_or_else(|| {
            AstError::Language(format!(
                "cannot infer the language of `{display}` from its extension; pass `language`, one of: {}",
                Lang::built_ids()
            ))
        })?,
        None => {
            return Err(AstError::Language(format!(
                "`language` is required when `path` is a directory (`{display}`); languages in this build: {}",
                Lang::built_ids()
            )));
        }
    };
    lang.require_built()?;
    Ok(Scope { root, target, is_file, lang, display, handle: Arc::new(handle) })
}

/// A parsed file with at least one match, handed to the per-file step.
pub(crate) struct FileCtx<'a> {
    pub(crate) path: &'a Path,
    pub(crate) rel: &'a str,
    pub(crate) src: &'a str,
    pub(crate) tree: &'a tree_sitter::Tree,
    pub(crate) matches: &'a [RawMatch],
    pub(crate) parser: &'a mut tree_sitter::Parser,
}

/// A candidate abandoned because the matcher's step budget ran out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct BudgetNote {
    /// How many candidate nodes were abandoned.
    pub candidates: usize,
    /// The first of them, `file:line:col`.
    pub first: String,
}

pub(crate) struct Scan<T> {
    pub(crate) files: Vec<(String, T)>,
    pub(crate) stats: ScanStats,
    pub(crate) budget: Option<BudgetNote>,
}

#[derive(Default)]
struct Counters {
    scanned: AtomicUsize,
    prefiltered: AtomicUsize,
    excluded: AtomicUsize,
    parsed: AtomicUsize,
    syntax: AtomicUsize,
    binary: AtomicUsize,
    non_utf8: AtomicUsize,
    large: AtomicUsize,
    unreadable: AtomicUsize,
}

enum Skip {
    Binary,
    NonUtf8(usize),
    Large(u64),
    Unreadable(String),
}

/// What a scan does with each file that passes the pre-filter.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Work {
    /// Parse it, match the query, and run the per-file step on a file with matches.
    Search,
    /// As `Search`, and each match also records the comments a rewrite must keep.
    Edit,
    /// Parse it and stop: the floor a search cannot go below, for benchmarks.
    ParseOnly,
}

/// Walks the scope, parses files that pass the pre-filter, and runs `per_file` on those with matches.
pub(crate) fn scan<T: Send>(
    scope: &Scope,
    query: Query<'_>,
    options: &SearchOptions,
    work: Work,
    per_file: &(dyn Fn(FileCtx<'_>) -> T + Sync),
) -> Result<Scan<T>, AstError> {
    let counters = Counters::default();
    let results: Mutex<Vec<(String, T)>> = Mutex::new(Vec::new());
    let budget: Mutex<(usize, Option<(String, usize, usize)>)> = Mutex::new((0, None));
    let literals: Vec<memchr::memmem::Finder<'_>> =
        query.literals().iter().map(|l| memchr::memmem::Finder::new(l.as_bytes())).collect();
    let cancelled = || options.scope.is_cancelled();
    let started = std::time::Instant::now();
    // What the matches of a file depend on besides its content.
    let key = format!("{}\0{}\0{}", query.cache_key(), options.step_budget, work == Work::Edit);

    let visit = |path: &Path, parser: &mut tree_sitter::Parser| -> Result<(), Skip> {
        let scanned = counters.scanned.fetch_add(1, Ordering::Relaxed) + 1;
        if scanned % PROGRESS_EVERY == 0 && options.scope.reports() {
            options.scope.report(
                started.elapsed().as_secs_f64(),
                &agent_tools_support::words::count(
                    scanned as u64,
                    "file searched",
                    "files searched",
                ),
            );
        }
        let rel = rel_path(&scope.root, path);
        if !query.applies_to(&rel) {
            counters.excluded.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
        // Read by handle beneath the root: a folder swapped for a symlink during the walk can
        // never make the search read (and a rewrite stage) a file outside the root.
        let confined = scope
            .handle
            .relative_of(path)
            .ok_or_else(|| Skip::Unreadable("outside the root".into()))?;
        let mut file = scope
            .handle
            .open_file(&confined, "path")
            .map_err(|e| Skip::Unreadable(e.to_string()))?;
        let meta = file.metadata().map_err(|e| Skip::Unreadable(e.to_string()))?;
        if meta.len() > options.max_file_bytes {
            return Err(Skip::Large(meta.len()));
        }
        let modified = meta.modified().ok();
        let cached =
            options.cache.as_ref().and_then(|c| c.get(path, scope.lang, meta.len(), modified));
        let (src, tree) = match cached {
            Some((src, tree)) => (src, tree),
            None => {
                let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
                std::io::Read::read_to_end(&mut file, &mut bytes)
                    .map_err(|e| Skip::Unreadable(e.to_string()))?;
                if memchr::memchr(0, &bytes[..bytes.len().min(8192)]).is_some() {
                    return Err(Skip::Binary);
                }
                let src = String::from_utf8(bytes)
                    .map_err(|e| Skip::NonUtf8(e.utf8_error().valid_up_to()))?;
                (Arc::from(src), None)
            }
        };
        if !literals.iter().all(|f| crate::matcher::contains_word(f, src.as_bytes())) {
            counters.prefiltered.fetch_add(1, Ordering::Relaxed);
            if let Some(cache) = &options.cache
                && tree.is_none()
            {
                cache.put(path, scope.lang, meta.len(), modified, src.clone(), None);
            }
            return Ok(());
        }
        let tree = match tree {
            Some(tree) => tree,
            None => {
                let Some(tree) = parser.parse(&*src, None) else {
                    return Err(Skip::Unreadable("the parser gave up".into()));
                };
                if let Some(cache) = &options.cache {
                    cache.put(path, scope.lang, meta.len(), modified, src.clone(), Some(&tree));
                }
                tree
            }
        };
        let src: &str = &src;
        counters.parsed.fetch_add(1, Ordering::Relaxed);
        let root = tree.root_node();
        if root.has_error() {
            counters.syntax.fetch_add(1, Ordering::Relaxed);
        }
        if work == Work::ParseOnly {
            return Ok(());
        }
        // A search repeated with the same query on the same version of the file reuses its
        // matches: an edit or a tool that changed the file changed its size or time.
        let kept = match &options.cache {
            Some(cache) => cache.matches(path, scope.lang, meta.len(), modified, &key),
            None => None,
        };
        let found = match kept {
            Some(found) => found,
            None => {
                let (matches, budget_hits) =
                    query.find_all(root, src.as_bytes(), options.step_budget, work == Work::Edit);
                let found = Arc::new(FileMatches { matches, budget_hits });
                if let Some(cache) = &options.cache {
                    cache.put_matches(path, scope.lang, meta.len(), modified, &key, found.clone());
                }
                found
            }
        };
        let (matches, budget_hits) = (&found.matches, &found.budget_hits);
        if let Some(&first) = budget_hits.first() {
            let mut b = budget.lock().unwrap_or_else(|e| e.into_inner());
            b.0 += budget_hits.len();
            let (line, col) = line_col(src, first);
            if b.1.as_ref().is_none_or(|(f, l, _)| (f.as_str(), *l) > (rel.as_str(), line)) {
                b.1 = Some((rel.clone(), line, col));
            }
        }
        if matches.is_empty() {
            return Ok(());
        }
        let value = per_file(FileCtx { path, rel: &rel, src, tree: &tree, matches, parser });
        results.lock().unwrap_or_else(|e| e.into_inner()).push((rel, value));
        Ok(())
    };
    let record = |skip: Skip| match skip {
        Skip::Binary => counters.binary.fetch_add(1, Ordering::Relaxed),
        Skip::NonUtf8(_) => counters.non_utf8.fetch_add(1, Ordering::Relaxed),
        Skip::Large(_) => counters.large.fetch_add(1, Ordering::Relaxed),
        Skip::Unreadable(_) => counters.unreadable.fetch_add(1, Ordering::Relaxed),
    };

    if scope.is_file {
        let mut parser = query.data().parser();
        if let Err(skip) = visit(&scope.target, &mut parser) {
            let what = match skip {
                Skip::Binary => "is a binary file".to_string(),
                Skip::NonUtf8(at) => format!("is not UTF-8 text (invalid byte at offset {at})"),
                Skip::Large(n) => format!(
                    "is {n} bytes, larger than the limit of {} bytes (astgrep.max_file_bytes)",
                    options.max_file_bytes
                ),
                Skip::Unreadable(e) => format!("cannot be read: {e}"),
            };
            return Err(AstError::Io(format!("`{}` {what}; nothing was searched", scope.display)));
        }
    } else {
        let threads = if options.threads == 0 {
            std::thread::available_parallelism().map_or(2, usize::from)
        } else {
            options.threads
        };
        let lang = scope.lang;
        let stop = AtomicBool::new(false);
        ignore::WalkBuilder::new(&scope.target)
            .threads(threads)
            .require_git(false)
            .build_parallel()
            .run(|| {
                let mut parser = query.data().parser();
                let visit = &visit;
                let record = &record;
                let stop = &stop;
                Box::new(move |entry| {
                    if stop.load(Ordering::Relaxed) || cancelled() {
                        stop.store(true, Ordering::Relaxed);
                        return ignore::WalkState::Quit;
                    }
                    let Ok(entry) = entry else { return ignore::WalkState::Continue };
                    if !entry.file_type().is_some_and(|t| t.is_file()) {
                        return ignore::WalkState::Continue;
                    }
                    if Lang::from_path(entry.path()) != Some(lang) {
                        return ignore::WalkState::Continue;
                    }
                    if let Err(skip) = visit(entry.path(), &mut parser) {
                        record(skip);
                    }
                    ignore::WalkState::Continue
                })
            });
    }
    if cancelled() {
        return Err(AstError::Cancelled);
    }
    let mut files = results.into_inner().unwrap_or_else(|e| e.into_inner());
    files.sort_by(|a, b| a.0.cmp(&b.0));
    let c = &counters;
    let get = |a: &AtomicUsize| a.load(Ordering::Relaxed);
    let mut reasons = Vec::new();
    for (name, n) in [
        ("binary", get(&c.binary)),
        ("not UTF-8", get(&c.non_utf8)),
        ("larger than the size limit", get(&c.large)),
        ("unreadable", get(&c.unreadable)),
    ] {
        if n > 0 {
            reasons.push(format!("{name}: {n}"));
        }
    }
    let stats = ScanStats {
        files_scanned: get(&c.scanned),
        prefiltered: get(&c.prefiltered),
        excluded_by_globs: get(&c.excluded),
        parsed: get(&c.parsed),
        with_syntax_errors: get(&c.syntax),
        not_parsed: get(&c.binary) + get(&c.non_utf8) + get(&c.large) + get(&c.unreadable),
        not_parsed_reasons: reasons,
    };
    let (count, first) = budget.into_inner().unwrap_or_else(|e| e.into_inner());
    let budget = first.map(|(file, line, col)| BudgetNote {
        candidates: count,
        first: format!("{file}:{line}:{col}"),
    });
    Ok(Scan { files, stats, budget })
}

/// `path` relative to `root`, with `/` separators.
pub(crate) fn rel_path(root: &Path, path: &Path) -> String {
    path.strip_prefix(root).unwrap_or(path).display().to_string()
}

/// 1-based line and column (in characters) of byte `offset`.
pub(crate) fn line_col(src: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(src.len());
    let before = &src.as_bytes()[..offset];
    let line = memchr::memchr_iter(b'\n', before).count() + 1;
    let line_start = memchr::memrchr(b'\n', before).map_or(0, |i| i + 1);
    let column = String::from_utf8_lossy(&before[line_start..]).chars().count() + 1;
    (line, column)
}
