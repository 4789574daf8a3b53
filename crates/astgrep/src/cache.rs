//! Parsed files kept between searches of one run, within a memory budget: a repeated search
//! over the same tree skips reading and parsing, and a search repeated with the same pattern
//! also skips matching (each file keeps the matches of its last few queries, keyed by the
//! query). An entry is valid while the file's size and modification time are unchanged;
//! `resolve` also drops the files it wrote, so after an edit only the files it changed are read,
//! parsed and matched again.

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
    time::SystemTime,
};

use crate::{lang::Lang, matcher::RawMatch};

/// Bytes of memory a parsed tree takes per byte of source (measured on Rust crates: ~30).
const BYTES_PER_SOURCE_BYTE: usize = 30;

/// Queries whose matches one file keeps; a new one replaces the oldest.
const QUERIES_PER_FILE: usize = 4;

/// The matches of one query in one version of a file, and where candidates ran out of steps.
#[derive(Debug, Default)]
pub(crate) struct FileMatches {
    pub(crate) matches: Vec<RawMatch>,
    pub(crate) budget_hits: Vec<usize>,
}

impl FileMatches {
    /// Estimated memory held.
    fn cost(&self) -> usize {
        let per_match = std::mem::size_of::<RawMatch>();
        let captures: usize = self.matches.iter().map(|m| m.captures.len() * 24).sum();
        64 + self.matches.len() * per_match + captures + self.budget_hits.len() * 8
    }
}

/// A syntax tree that may move between threads: tree-sitter trees are not thread-safe to use
/// concurrently, so the cache hands out a copy (`Tree::clone`, a cheap `ts_tree_copy`) made
/// under the lock, and every thread then owns its copy.
struct SharedTree(Mutex<tree_sitter::Tree>);

// SAFETY: the tree is only touched under the mutex (to copy it); copies are owned by one thread.
unsafe impl Send for SharedTree {}
// SAFETY: as above: all access goes through the mutex.
unsafe impl Sync for SharedTree {}

struct Entry {
    lang: Lang,
    len: u64,
    modified: Option<SystemTime>,
    src: Arc<str>,
    /// Absent for a file only read (the pre-filter dropped it): its text is kept, cheaply.
    tree: Option<Arc<SharedTree>>,
    /// The matches of the last queries run on this version, by query key, oldest first.
    matches: Vec<(String, Arc<FileMatches>, usize)>,
    cost: usize,
}

impl Entry {
    fn valid(&self, lang: Lang, len: u64, modified: Option<SystemTime>) -> bool {
        self.lang == lang && self.len == len && self.modified == modified && modified.is_some()
    }
}

/// What the cache holds, for reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    pub files: usize,
    /// Estimated memory held, in bytes.
    pub bytes: usize,
    pub budget: usize,
    pub hits: u64,
    pub misses: u64,
    /// Files whose matches were reused (the same query on the same version of the file).
    pub match_hits: u64,
}

#[derive(Default)]
struct State {
    entries: HashMap<PathBuf, Entry>,
    bytes: usize,
    hits: u64,
    misses: u64,
    match_hits: u64,
}

/// Parsed files of one run, shared by its searches and edits.
pub struct TreeCache {
    budget: usize,
    state: Mutex<State>,
}

impl std::fmt::Debug for TreeCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TreeCache").field("stats", &self.stats()).finish()
    }
}

/// The default memory budget: 1 GiB.
pub const DEFAULT_CACHE_BYTES: usize = 1024 * 1024 * 1024;

impl TreeCache {
    /// A cache holding at most about `budget` bytes; 0 keeps nothing.
    pub fn new(budget: usize) -> TreeCache {
        TreeCache { budget, state: Mutex::new(State::default()) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn stats(&self) -> CacheStats {
        let s = self.lock();
        CacheStats {
            files: s.entries.len(),
            bytes: s.bytes,
            budget: self.budget,
            hits: s.hits,
            misses: s.misses,
            match_hits: s.match_hits,
        }
    }

    /// The cached text and a copy of the tree of `path`, if still valid for `len` and `modified`.
    pub(crate) fn get(
        &self,
        path: &Path,
        lang: Lang,
        len: u64,
        modified: Option<SystemTime>,
    ) -> Option<(Arc<str>, Option<tree_sitter::Tree>)> {
        let mut s = self.lock();
        let valid = s.entries.get(path).is_some_and(|e| e.valid(lang, len, modified));
        if !valid {
            s.misses += 1;
            return None;
        }
        s.hits += 1;
        let entry = s.entries.get(path)?;
        let tree =
            entry.tree.as_ref().map(|t| t.0.lock().unwrap_or_else(|e| e.into_inner()).clone());
        Some((entry.src.clone(), tree))
    }

    /// Keeps a parsed file, unless the budget is spent.
    pub(crate) fn put(
        &self,
        path: &Path,
        lang: Lang,
        len: u64,
        modified: Option<SystemTime>,
        src: Arc<str>,
        tree: Option<&tree_sitter::Tree>,
    ) {
        let per_byte = if tree.is_some() { BYTES_PER_SOURCE_BYTE + 1 } else { 1 };
        let cost = src.len().saturating_mul(per_byte).max(256);
        if modified.is_none() || cost > self.budget {
            return;
        }
        let mut s = self.lock();
        if let Some(old) = s.entries.remove(path) {
            s.bytes -= old.cost;
        }
        // Full: keep what is there rather than evict. A search walks every file in order, so
        // least-recently-used eviction would throw out exactly the files the next search
        // needs first and never hit; a stable set of cached files hits every time.
        if s.bytes + cost > self.budget {
            return;
        }
        s.bytes += cost;
        let tree = tree.map(|t| Arc::new(SharedTree(Mutex::new(t.clone()))));
        let entry = Entry { lang, len, modified, src, tree, matches: Vec::new(), cost };
        s.entries.insert(path.to_path_buf(), entry);
    }

    /// The matches of query `key` in the cached version `len`/`modified` of `path`, if kept.
    pub(crate) fn matches(
        &self,
        path: &Path,
        lang: Lang,
        len: u64,
        modified: Option<SystemTime>,
        key: &str,
    ) -> Option<Arc<FileMatches>> {
        let mut s = self.lock();
        let entry = s.entries.get(path).filter(|e| e.valid(lang, len, modified))?;
        let found = entry.matches.iter().find(|(k, _, _)| k == key).map(|(_, m, _)| m.clone())?;
        s.match_hits += 1;
        Some(found)
    }

    /// Keeps the matches of query `key` with the cached version `len`/`modified` of `path`
    /// (nothing when that version is not cached or the budget is spent).
    pub(crate) fn put_matches(
        &self,
        path: &Path,
        lang: Lang,
        len: u64,
        modified: Option<SystemTime>,
        key: &str,
        found: Arc<FileMatches>,
    ) {
        let cost = found.cost() + key.len();
        let mut s = self.lock();
        let budget = self.budget;
        let State { entries, bytes, .. } = &mut *s;
        let Some(entry) = entries.get_mut(path).filter(|e| e.valid(lang, len, modified)) else {
            return;
        };
        if let Some(at) = entry.matches.iter().position(|(k, _, _)| k == key) {
            let (_, _, old) = entry.matches.remove(at);
            entry.cost -= old;
            *bytes -= old;
        }
        if entry.matches.len() >= QUERIES_PER_FILE {
            let (_, _, old) = entry.matches.remove(0);
            entry.cost -= old;
            *bytes -= old;
        }
        if *bytes + cost > budget {
            return;
        }
        entry.matches.push((key.to_string(), found, cost));
        entry.cost += cost;
        *bytes += cost;
    }

    /// Drops the entries of files this run wrote.
    pub fn invalidate<'a>(&self, paths: impl IntoIterator<Item = &'a Path>) {
        let mut s = self.lock();
        for path in paths {
            if let Some(e) = s.entries.remove(path) {
                s.bytes -= e.cost;
            }
        }
    }
}
