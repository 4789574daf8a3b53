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
    /// `src`, shared: kept by a search that renders its matches after the walk.
    pub(crate) text: &'a Arc<str>,
    /// The matches, shared as the match cache keeps them.
    pub(crate) found: &'a Arc<FileMatches>,
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
    let walker = Walker {
        scope,
        query,
        options,
        work,
        per_file,
        counters: Counters::default(),
        results: Mutex::new(Vec::new()),
        budget: Mutex::new((0, None)),
        literals: query
            .literals()
            .iter()
            .map(|l| memchr::memmem::Finder::new(l.as_bytes()))
            .collect(),
        // What the matches of a file depend on besides its content.
        key: format!("{}\0{}\0{}", query.cache_key(), options.step_budget, work == Work::Edit),
        started: std::time::Instant::now(),
    };
    if scope.is_file {
        walker.one_file()?;
    } else {
        walker.directory();
    }
    if options.scope.is_cancelled() {
        return Err(AstError::Cancelled);
    }
    Ok(walker.finish())
}

/// One scan's state, shared by the walk's threads.
struct Walker<'a, 'q, T> {
    scope: &'a Scope,
    query: Query<'q>,
    options: &'a SearchOptions,
    work: Work,
    per_file: &'a (dyn Fn(FileCtx<'_>) -> T + Sync),
    counters: Counters,
    results: Mutex<Vec<(String, T)>>,
    /// Candidates abandoned for the step budget, and the first of them (file, line, column).
    budget: Mutex<(usize, Option<(String, usize, usize)>)>,
    literals: Vec<memchr::memmem::Finder<'q>>,
    key: String,
    started: std::time::Instant,
}

/// A file's text and, when the parse cache held it, its tree; with what the cache keys it by.
struct Loaded {
    src: Arc<str>,
    tree: Option<tree_sitter::Tree>,
    len: u64,
    modified: Option<std::time::SystemTime>,
}

impl<T: Send> Walker<'_, '_, T> {
    /// The scope is one file: a file that cannot be searched is an error naming why.
    fn one_file(&self) -> Result<(), AstError> {
        let mut parser = self.query.data().parser();
        let Err(skip) = self.visit(&self.scope.target, &mut parser) else { return Ok(()) };
        let what = match skip {
            Skip::Binary => "is a binary file".to_string(),
            Skip::NonUtf8(at) => format!("is not UTF-8 text (invalid byte at offset {at})"),
            Skip::Large(n) => format!(
                "is {n} bytes, larger than the limit of {} bytes (astgrep.max_file_bytes)",
                self.options.max_file_bytes
            ),
            Skip::Unreadable(e) => format!("cannot be read: {e}"),
        };
        Err(AstError::Io(format!("`{}` {what}; nothing was searched", self.scope.display)))
    }

    /// The scope is a directory: a parallel walk (respecting ignore files) with one parser per
    /// thread, stopped by the call's scope at the next file.
    fn directory(&self) {
        let threads = match self.options.threads {
            0 => std::thread::available_parallelism().map_or(2, usize::from),
            n => n,
        };
        let lang = self.scope.lang;
        let stop = AtomicBool::new(false);
        ignore::WalkBuilder::new(&self.scope.target)
            .threads(threads)
            .require_git(false)
            .build_parallel()
            .run(|| {
                // Made on the worker's first file, on its own thread: `ignore` builds every
                // worker's visitor on this thread, one after another, and parsers made here sat
                // side by side in memory, so two workers parsing at once wrote to the same cache
                // lines (the GLR stack's bookkeeping, on every token) and spent 20-75% more CPU.
                let mut parser: Option<tree_sitter::Parser> = None;
                let stop = &stop;
                Box::new(move |entry| {
                    if stop.load(Ordering::Relaxed) || self.options.scope.is_cancelled() {
                        stop.store(true, Ordering::Relaxed);
                        return ignore::WalkState::Quit;
                    }
                    let Ok(entry) = entry else { return ignore::WalkState::Continue };
                    if !entry.file_type().is_some_and(|t| t.is_file())
                        || Lang::from_path(entry.path()) != Some(lang)
                    {
                        return ignore::WalkState::Continue;
                    }
                    let parser = parser.get_or_insert_with(|| self.query.data().parser());
                    if let Err(skip) = self.visit(entry.path(), parser) {
                        self.record(skip);
                    }
                    ignore::WalkState::Continue
                })
            });
    }

    /// One file: counted, filtered by the rule's globs and the literal words, parsed (or taken
    /// from the cache), matched, and handed to the per-file step when it has matches.
    fn visit(&self, path: &Path, parser: &mut tree_sitter::Parser) -> Result<(), Skip> {
        let scanned = self.counters.scanned.fetch_add(1, Ordering::Relaxed) + 1;
        if scanned.is_multiple_of(PROGRESS_EVERY) && self.options.scope.reports() {
            self.options.scope.report(
                self.started.elapsed().as_secs_f64(),
                &agent_tools_support::words::count(
                    scanned as u64,
                    "file searched",
                    "files searched",
                ),
            );
        }
        let rel = rel_path(&self.scope.root, path);
        if !self.query.applies_to(&rel) {
            self.counters.excluded.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
        let loaded = self.load(path)?;
        let cache = self.options.cache.as_ref();
        if !self.literals.iter().all(|f| crate::matcher::contains_word(f, loaded.src.as_bytes())) {
            self.counters.prefiltered.fetch_add(1, Ordering::Relaxed);
            if let Some(cache) = cache
                && loaded.tree.is_none()
            {
                let lang = self.scope.lang;
                cache.put(path, lang, loaded.len, loaded.modified, loaded.src.clone(), None);
            }
            return Ok(());
        }
        let parsed;
        let tree = match &loaded.tree {
            Some(tree) => tree,
            None => {
                let Some(tree) = parser.parse(&*loaded.src, None) else {
                    return Err(Skip::Unreadable("the parser gave up".into()));
                };
                if let Some(cache) = cache {
                    let (lang, src) = (self.scope.lang, loaded.src.clone());
                    cache.put(path, lang, loaded.len, loaded.modified, src, Some(&tree));
                }
                parsed = tree;
                &parsed
            }
        };
        self.counters.parsed.fetch_add(1, Ordering::Relaxed);
        if tree.root_node().has_error() {
            self.counters.syntax.fetch_add(1, Ordering::Relaxed);
        }
        if self.work == Work::ParseOnly {
            return Ok(());
        }
        let found = self.matches(path, &loaded, tree);
        let src: &str = &loaded.src;
        self.note_budget(&rel, src, &found.budget_hits);
        if found.matches.is_empty() {
            return Ok(());
        }
        let ctx = FileCtx {
            path,
            rel: &rel,
            src,
            text: &loaded.src,
            found: &found,
            tree,
            matches: &found.matches,
            parser,
        };
        let value = (self.per_file)(ctx);
        self.results.lock().unwrap_or_else(|e| e.into_inner()).push((rel, value));
        Ok(())
    }

    /// The file's text (and tree, when cached), read by handle beneath the root: a folder
    /// swapped for a symlink during the walk can never make the search read (and a rewrite
    /// stage) a file outside the root.
    fn load(&self, path: &Path) -> Result<Loaded, Skip> {
        let handle = &self.scope.handle;
        let confined =
            handle.relative_of(path).ok_or_else(|| Skip::Unreadable("outside the root".into()))?;
        let mut file =
            handle.open_file(&confined, "path").map_err(|e| Skip::Unreadable(e.to_string()))?;
        let meta = file.metadata().map_err(|e| Skip::Unreadable(e.to_string()))?;
        let len = meta.len();
        if len > self.options.max_file_bytes {
            return Err(Skip::Large(len));
        }
        let modified = meta.modified().ok();
        let cached =
            self.options.cache.as_ref().and_then(|c| c.get(path, self.scope.lang, len, modified));
        if let Some((src, tree)) = cached {
            return Ok(Loaded { src, tree, len, modified });
        }
        let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
        std::io::Read::read_to_end(&mut file, &mut bytes)
            .map_err(|e| Skip::Unreadable(e.to_string()))?;
        if memchr::memchr(0, &bytes[..bytes.len().min(8192)]).is_some() {
            return Err(Skip::Binary);
        }
        let src =
            String::from_utf8(bytes).map_err(|e| Skip::NonUtf8(e.utf8_error().valid_up_to()))?;
        Ok(Loaded { src: Arc::from(src), tree: None, len, modified })
    }

    /// The query's matches in one parsed file. A search repeated with the same query on the
    /// same version of the file reuses its matches: an edit or a tool that changed the file
    /// changed its size or time.
    fn matches(&self, path: &Path, loaded: &Loaded, tree: &tree_sitter::Tree) -> Arc<FileMatches> {
        let (lang, len, modified) = (self.scope.lang, loaded.len, loaded.modified);
        let cache = self.options.cache.as_ref();
        if let Some(kept) = cache.and_then(|c| c.matches(path, lang, len, modified, &self.key)) {
            return kept;
        }
        let (matches, budget_hits) = self.query.find_all(
            tree.root_node(),
            loaded.src.as_bytes(),
            self.options.step_budget,
            self.work == Work::Edit,
        );
        let found = Arc::new(FileMatches { matches, budget_hits });
        if let Some(cache) = cache {
            cache.put_matches(path, lang, len, modified, &self.key, found.clone());
        }
        found
    }

    /// Counts candidates that ran out of steps, keeping the first by file and line.
    fn note_budget(&self, rel: &str, src: &str, hits: &[usize]) {
        let Some(&first) = hits.first() else { return };
        let mut b = self.budget.lock().unwrap_or_else(|e| e.into_inner());
        b.0 += hits.len();
        let (line, col) = line_col(src, first);
        if b.1.as_ref().is_none_or(|(f, l, _)| (f.as_str(), *l) > (rel, line)) {
            b.1 = Some((rel.to_string(), line, col));
        }
    }

    fn record(&self, skip: Skip) {
        let c = &self.counters;
        match skip {
            Skip::Binary => c.binary.fetch_add(1, Ordering::Relaxed),
            Skip::NonUtf8(_) => c.non_utf8.fetch_add(1, Ordering::Relaxed),
            Skip::Large(_) => c.large.fetch_add(1, Ordering::Relaxed),
            Skip::Unreadable(_) => c.unreadable.fetch_add(1, Ordering::Relaxed),
        };
    }

    /// The files with matches, sorted by path, the counts and the budget note.
    fn finish(self) -> Scan<T> {
        let mut files = self.results.into_inner().unwrap_or_else(|e| e.into_inner());
        files.sort_by(|a, b| a.0.cmp(&b.0));
        let c = &self.counters;
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
        let (count, first) = self.budget.into_inner().unwrap_or_else(|e| e.into_inner());
        let budget = first.map(|(file, line, col)| BudgetNote {
            candidates: count,
            first: format!("{file}:{line}:{col}"),
        });
        Scan { files, stats, budget }
    }
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
