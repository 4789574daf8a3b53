//! Files changed on disk that the server does not have open (an outside tool, `git checkout`,
//! a formatter): a watch of the server's root (support's [`FolderWatch`], folders the ignore
//! files keep), drained before every answer and sent as `workspace/didChangeWatchedFiles` for
//! the files the server registered patterns for. Servers cache what they read of closed files
//! and rely on these events (the client said it sends them), so without them a signature
//! changed outside the tools stays old in the server.

use std::path::{Path, PathBuf};

use agent_tools_support::watch::{FileChange, FolderWatch};
use globset::{GlobBuilder, GlobMatcher};
use lsp_types::{FileSystemWatcher, GlobPattern, OneOf, WatchKind};

use super::Server;
use crate::paths::path_from_uri;

/// Folders one server's watch covers at most; past it, closed files the run had open are
/// still checked by their modification time.
const MAX_WATCHED_FOLDERS: usize = 8192;

/// One pattern a server registered.
#[derive(Debug)]
pub(super) struct WatchedPattern {
    pub registration: String,
    glob: GlobMatcher,
    /// A relative pattern's base folder.
    base: Option<PathBuf>,
    kind: WatchKind,
}

/// The patterns of a `workspace/didChangeWatchedFiles` registration; a pattern that is not a
/// glob is skipped.
pub(super) fn patterns(
    root: &Path,
    registration: &str,
    watchers: &[FileSystemWatcher],
) -> Vec<WatchedPattern> {
    watchers
        .iter()
        .filter_map(|w| {
            let (pattern, base) = match &w.glob_pattern {
                GlobPattern::String(p) => (p.clone(), None),
                GlobPattern::Relative(r) => {
                    let uri = match &r.base_uri {
                        OneOf::Left(folder) => &folder.uri,
                        OneOf::Right(uri) => uri,
                    };
                    (r.pattern.clone(), Some(path_from_uri(uri).unwrap_or_else(|| root.into())))
                }
            };
            let glob = GlobBuilder::new(&pattern).literal_separator(true).build().ok()?;
            Some(WatchedPattern {
                registration: registration.to_string(),
                glob: glob.compile_matcher(),
                base,
                kind: w.kind.unwrap_or(WatchKind::all()),
            })
        })
        .collect()
}

impl WatchedPattern {
    /// Whether the server asked to hear of `change` to `path`. A plain pattern may be written
    /// against the root (`**/*.py`) or as an absolute path (gopls: `/root/**/*.go`).
    fn wants(&self, root: &Path, path: &Path, change: FileChange) -> bool {
        let kind = match change {
            FileChange::Created => WatchKind::Create,
            FileChange::Changed => WatchKind::Change,
            FileChange::Deleted => WatchKind::Delete,
        };
        if !self.kind.contains(kind) {
            return false;
        }
        match &self.base {
            Some(base) => path.strip_prefix(base).is_ok_and(|rel| self.glob.is_match(rel)),
            None => {
                self.glob.is_match(path)
                    || path.strip_prefix(root).is_ok_and(|rel| self.glob.is_match(rel))
            }
        }
    }
}

/// The watch of `root`: every folder the ignore files keep, but the usual dependency and build
/// folders; `None` when inotify is unavailable.
pub(super) fn watch_root(root: &Path) -> Option<FolderWatch> {
    let keep = |path: &Path| {
        let name = path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
        !name.starts_with('.') && !crate::discover::SKIP_DIRS.contains(&name.as_ref())
    };
    let watch = match FolderWatch::new(MAX_WATCHED_FOLDERS, keep) {
        Ok(watch) => watch,
        Err(e) => {
            tracing::warn!("no watch of {}: {e}", root.display());
            return None;
        }
    };
    let walker = ignore::WalkBuilder::new(root)
        .hidden(true)
        .parents(true)
        .filter_entry(move |e| {
            e.file_type().is_some_and(|t| t.is_dir()) && (e.depth() == 0 || keep(e.path()))
        })
        .build();
    for entry in walker.flatten() {
        if let Err(e) = watch.watch(entry.path()) {
            tracing::debug!("watch of {}: {e}", root.display());
            break;
        }
    }
    Some(watch)
}

impl Server {
    /// The changes the watch saw that the server asked for, as watched-file events, minus
    /// open documents (they are re-sent whole) and `except` (a write sends those itself).
    pub(super) async fn watched_changes(
        &self,
        except: &[PathBuf],
    ) -> Vec<(PathBuf, lsp_types::FileChangeType)> {
        let Some(watch) = &self.disk_watch else { return Vec::new() };
        let seen = watch.changes();
        if seen.incomplete {
            tracing::debug!(server = %self.def.id, "the watch missed changes (queue overflow)");
        }
        if seen.files.is_empty() {
            return Vec::new();
        }
        let open: Vec<PathBuf> = self.docs.lock().await.keys().cloned().collect();
        let state = self.shared.state.lock();
        seen.files
            .into_iter()
            .filter(|(path, _)| !open.contains(path) && !except.contains(path))
            .filter(|(path, change)| {
                state.file_watchers.iter().any(|w| w.wants(&self.root, path, *change))
            })
            .map(|(path, change)| {
                let kind = match change {
                    FileChange::Created => lsp_types::FileChangeType::CREATED,
                    FileChange::Changed => lsp_types::FileChangeType::CHANGED,
                    FileChange::Deleted => lsp_types::FileChangeType::DELETED,
                };
                (path, kind)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn registered(root: &Path, watchers: serde_json::Value) -> Vec<WatchedPattern> {
        let watchers: Vec<FileSystemWatcher> = serde_json::from_value(watchers).expect("watchers");
        patterns(root, "1", &watchers)
    }

    #[test]
    fn patterns_match_as_pyright_gopls_and_relative_registrations_write_them() {
        let root = Path::new("/work/proj");
        let file = root.join("src/pkg/termui.py");
        let pyright = registered(root, json!([{"globPattern": "**/*.{py,pyi}", "kind": 7}]));
        assert!(pyright[0].wants(root, &file, FileChange::Changed));
        assert!(!pyright[0].wants(root, &root.join("go.mod"), FileChange::Changed));
        let gopls = registered(root, json!([{"globPattern": "/work/proj/**/*.{go,mod,sum}"}]));
        assert!(gopls[0].wants(root, &root.join("cmd/run/main.go"), FileChange::Created));
        assert!(!gopls[0].wants(root, Path::new("/elsewhere/x.go"), FileChange::Created));
        let relative = registered(
            root,
            json!([{"globPattern": {"baseUri": "file:///work/proj/src", "pattern": "*.py"}, "kind": 4}]),
        );
        assert!(relative[0].wants(root, &root.join("src/a.py"), FileChange::Deleted));
        assert!(!relative[0].wants(root, &root.join("src/a.py"), FileChange::Changed), "kind");
        assert!(!relative[0].wants(root, &file, FileChange::Deleted), "* stays in one folder");
    }
}
