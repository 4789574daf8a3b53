//! Document sync: didOpen, full-text didChange with a new version when the content differs,
//! didSave, didClose, watched-file events, and re-reading open documents edited outside.

use std::{
    collections::{BTreeSet, HashMap},
    path::{Path, PathBuf},
    sync::atomic::Ordering,
    time::Instant,
};

use lsp_types::{
    FileChangeType,
    notification::{
        DidChangeTextDocument, DidChangeWatchedFiles, DidCloseTextDocument, DidOpenTextDocument,
        DidSaveTextDocument,
    },
};

use super::{Doc, Server, SyncedDoc};
use crate::paths::uri_from_path;

/// One supervisor among those that share a server (through a pool): the holder of leases and
/// documents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct RunId(pub(crate) u64);

/// Whether a sync that sent new content is followed by `didSave` (servers such as
/// rust-analyzer and gopls check the project on save).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Save {
    /// `didSave` after a `didOpen`/`didChange` that sent something.
    Notify,
    /// Only the content.
    Skip,
}

/// How many closed files are watched for changes on disk.
const MAX_CLOSED_SEEN: usize = 4096;

/// A file's modification time and size (`None`, 0 when it is gone).
fn disk_stamp(path: &Path) -> (Option<std::time::SystemTime>, u64) {
    let meta = std::fs::metadata(path).ok();
    (meta.as_ref().and_then(|m| m.modified().ok()), meta.map_or(0, |m| m.len()))
}

impl Server {
    fn save_includes_text(&self) -> bool {
        self.capabilities.save_includes_text()
    }

    /// Makes the server's copy of `path` equal to the file on disk: `didOpen` on first use,
    /// `didChange` (full text, next version) when the content differs, then `didSave` when
    /// `save` is set and something was sent. `holder` now holds the document open.
    pub(crate) async fn sync(
        &self,
        path: &Path,
        language_id: &str,
        save: Save,
        holder: RunId,
    ) -> Result<SyncedDoc, String> {
        self.sync_from_disk(path, language_id, save, Some(holder)).await
    }

    async fn sync_from_disk(
        &self,
        path: &Path,
        language_id: &str,
        save: Save,
        holder: Option<RunId>,
    ) -> Result<SyncedDoc, String> {
        let text = crate::paths::read_source(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        self.sync_content(path, language_id, text, save, holder, true).await
    }

    /// Like [`Server::sync`] with given content (which must be what is on disk, or what the
    /// caller wants the server to see as the file's content).
    pub(crate) async fn sync_text(
        &self,
        path: &Path,
        language_id: &str,
        text: String,
        save: Save,
        holder: RunId,
    ) -> Result<SyncedDoc, String> {
        let from_disk = crate::paths::read_source(path).is_ok_and(|disk| disk == text);
        self.sync_content(path, language_id, text, save, Some(holder), from_disk).await
    }

    /// The document as the server has it now, as a version whose diagnostics are current:
    /// synced from `text` (or the disk), and sent again as a new version when another file
    /// changed after it was last sent.
    pub(crate) async fn current(
        &self,
        path: &Path,
        language_id: &str,
        text: Option<String>,
        holder: RunId,
    ) -> Result<SyncedDoc, String> {
        let doc = match text {
            Some(text) => self.sync_text(path, language_id, text, Save::Skip, holder).await?,
            None => self.sync(path, language_id, Save::Skip, holder).await?,
        };
        if self.outdated(path).await
            && let Some(touched) = self.touch(path, holder).await
        {
            return Ok(touched);
        }
        Ok(doc)
    }

    /// The one place versions change: under the documents lock, so concurrent syncs of one
    /// document (from the runs sharing the server) get increasing versions in send order.
    /// `from_disk`: `text` is what the disk holds, so opening it changes nothing the server
    /// sees of other files.
    async fn sync_content(
        &self,
        path: &Path,
        language_id: &str,
        text: String,
        save: Save,
        holder: Option<RunId>,
        from_disk: bool,
    ) -> Result<SyncedDoc, String> {
        let uri =
            uri_from_path(path).ok_or_else(|| format!("{} has no file URI", path.display()))?;
        let meta = std::fs::metadata(path).ok();
        let mtime = meta.as_ref().and_then(|m| m.modified().ok());
        let len = meta.as_ref().map_or(0, |m| m.len());
        let mut docs = self.docs.lock().await;
        let seq_now = self.shared.state.lock().push_seq;
        if let Some(doc) = docs.get_mut(path) {
            doc.holders.extend(holder);
        }
        let (version, sent, sent_seq) = match docs.get_mut(path) {
            None => {
                self.first_open.lock().get_or_insert_with(Instant::now);
                self.closed_seen.lock().remove(path);
                let version = self.closed_versions.lock().remove(path).map_or(1, |v| v + 1);
                let document = lsp_types::TextDocumentItem {
                    uri: uri.clone(),
                    language_id: language_id.to_string(),
                    version,
                    text: text.clone(),
                };
                self.notify::<DidOpenTextDocument>(lsp_types::DidOpenTextDocumentParams {
                    text_document: document,
                })
                .await;
                docs.insert(
                    path.to_path_buf(),
                    Doc {
                        version,
                        text: text.clone(),
                        mtime,
                        len,
                        sent_seq: seq_now,
                        holders: holder.into_iter().collect(),
                        changes_at: if from_disk {
                            self.content_changes.load(Ordering::SeqCst)
                        } else {
                            self.count_content_change()
                        },
                    },
                );
                (version, true, seq_now)
            }
            Some(doc) if doc.text != text => {
                doc.version += 1;
                doc.text.clone_from(&text);
                doc.mtime = mtime;
                doc.len = len;
                doc.sent_seq = seq_now;
                doc.changes_at = self.count_content_change();
                self.notify::<DidChangeTextDocument>(whole_text(&uri, doc.version, &text)).await;
                (doc.version, true, seq_now)
            }
            Some(doc) => {
                doc.mtime = mtime;
                doc.len = len;
                (doc.version, false, doc.sent_seq)
            }
        };
        if save == Save::Notify && sent {
            let params = lsp_types::DidSaveTextDocumentParams {
                text_document: lsp_types::TextDocumentIdentifier { uri: uri.clone() },
                text: self.save_includes_text().then(|| text.clone()),
            };
            self.notify::<DidSaveTextDocument>(params).await;
        }
        Ok(SyncedDoc {
            path: path.to_path_buf(),
            version,
            text,
            sent_seq,
            min_seq: 0,
            settle: false,
            versioned_only: false,
        })
    }

    /// Re-reads every open document whose size or modification time changed, and sends what
    /// differs; documents deleted from disk are closed; closed files the run had open that
    /// changed on disk get a watched-file event. Edits made outside the tools are seen.
    pub(crate) async fn resync_open(&self) {
        self.resync_open_except(&[]).await
    }

    /// [`Server::resync_open`] but for `except` (files a write is about to send itself).
    pub(crate) async fn resync_open_except(&self, except: &[PathBuf]) {
        let stale: Vec<PathBuf> = {
            let docs = self.docs.lock().await;
            docs.iter()
                .filter(|(path, _)| !except.contains(path))
                .filter(|(path, doc)| {
                    let meta = std::fs::metadata(path).ok();
                    let mtime = meta.as_ref().and_then(|m| m.modified().ok());
                    meta.is_none() || mtime != doc.mtime || meta.map(|m| m.len()) != Some(doc.len)
                })
                .map(|(p, _)| p.clone())
                .collect()
        };
        // Files the server does not have open that changed on disk since: watched-file
        // events, so the server reads them again. The watch sees every file it asked for;
        // closed files the run had open are also checked by their stamp (the watch may be
        // full or missing).
        let mut changed = self.watched_changes(except).await;
        {
            let mut seen = self.closed_seen.lock();
            for (path, stamp) in seen.iter_mut() {
                let now = disk_stamp(path);
                if now != *stamp {
                    *stamp = now;
                    if !changed.iter().any(|(p, _)| p == path) {
                        changed.push((
                            path.clone(),
                            if path.exists() {
                                FileChangeType::CHANGED
                            } else {
                                FileChangeType::DELETED
                            },
                        ));
                    }
                }
            }
        }
        self.files_changed(&changed).await;
        for path in stale {
            if path.exists() {
                let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
                let language = self.def.language_of(ext).unwrap_or("plaintext").to_string();
                let _ = self.sync_from_disk(&path, &language, Save::Skip, None).await;
            } else {
                self.close(&path).await;
            }
        }
    }

    /// Lets go of every document `holder` holds; a document nobody holds any more is closed.
    /// The didClose goes out under the documents lock, like every sync, so a concurrent open
    /// of the same file comes after it.
    pub(crate) async fn release_documents(&self, holder: RunId) {
        let mut docs = self.docs.lock().await;
        let unheld: Vec<PathBuf> = docs
            .iter_mut()
            .filter_map(|(path, doc)| {
                (doc.holders.remove(&holder) && doc.holders.is_empty()).then(|| path.clone())
            })
            .collect();
        for path in unheld {
            if let Some(doc) = docs.remove(&path) {
                self.forget(&path, &doc);
            }
            self.notify_closed(&path).await;
            self.shared.state.lock().push.remove(&path);
        }
    }

    /// Who holds `path` open on this server (`None`: it is not open).
    pub(crate) async fn holders(&self, path: &Path) -> Option<BTreeSet<RunId>> {
        self.docs.lock().await.get(path).map(|d| d.holders.clone())
    }

    /// Tells the server a document is closed (deleted or renamed away).
    pub(crate) async fn close(&self, path: &Path) {
        let mut docs = self.docs.lock().await;
        self.close_locked(&mut docs, path).await;
    }

    /// Closes `path` under the documents lock the caller holds (a concurrent open of the same
    /// file comes after the didClose).
    async fn close_locked(&self, docs: &mut HashMap<PathBuf, Doc>, path: &Path) {
        if let Some(doc) = docs.remove(path) {
            self.forget(path, &doc);
            self.notify_closed(path).await;
        }
        self.shared.state.lock().push.remove(path);
    }

    /// Lets `holder` go of one document; closes it when nobody else holds it (a file opened
    /// only to check it goes back to the server's view of the disk).
    pub(crate) async fn release_document(&self, path: &Path, holder: RunId) {
        let mut docs = self.docs.lock().await;
        let Some(doc) = docs.get_mut(path) else { return };
        doc.holders.remove(&holder);
        if doc.holders.is_empty() {
            self.close_locked(&mut docs, path).await;
        }
    }

    /// Sends an open document again as a new version with the same text, so that the server
    /// analyses it against what changed elsewhere and answers for that version (a push
    /// server re-publishes; an unchanged version's old push may predate the change).
    /// `None` when it is not open.
    ///
    /// A push server whose document only `holder` holds gets it closed and opened again
    /// instead: some (clangd) ignore a change that does not change the text, and publish for
    /// the version before it.
    pub(crate) async fn touch(&self, path: &Path, holder: RunId) -> Option<SyncedDoc> {
        let uri = uri_from_path(path)?;
        if self.diagnostic_mode() == super::DiagnosticMode::Push
            && self.holders(path).await?.iter().all(|h| *h == holder)
        {
            let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
            let language = self.def.language_of(ext).unwrap_or("plaintext").to_string();
            self.release_document(path, holder).await;
            let mut doc = self.sync(path, &language, Save::Skip, holder).await.ok()?;
            doc.settle = true;
            doc.versioned_only = true;
            return Some(doc);
        }
        let mut docs = self.docs.lock().await;
        let doc = docs.get_mut(path)?;
        let seq_now = self.shared.state.lock().push_seq;
        doc.holders.insert(holder);
        doc.version += 1;
        doc.sent_seq = seq_now;
        // The same text again: nothing changes for the other files.
        doc.changes_at = self.content_changes.load(Ordering::SeqCst);
        self.notify::<DidChangeTextDocument>(whole_text(&uri, doc.version, &doc.text)).await;
        Some(SyncedDoc {
            path: path.to_path_buf(),
            version: doc.version,
            text: doc.text.clone(),
            sent_seq: seq_now,
            min_seq: 0,
            settle: true,
            versioned_only: false,
        })
    }

    /// Whether another file's content changed on this server after `path` was last sent, so
    /// that its last diagnostics may be out of date (`false` when it is not open).
    pub(crate) async fn outdated(&self, path: &Path) -> bool {
        let changes = self.content_changes.load(Ordering::SeqCst);
        self.docs.lock().await.get(path).is_some_and(|d| d.changes_at < changes)
    }

    /// A closed document's last version is remembered (a reopened one continues from it);
    /// closing a text the disk does not hold changes what the server sees.
    fn forget(&self, path: &Path, doc: &Doc) {
        self.closed_versions.lock().insert(path.to_path_buf(), doc.version);
        let mut seen = self.closed_seen.lock();
        if seen.len() < MAX_CLOSED_SEEN {
            seen.insert(path.to_path_buf(), disk_stamp(path));
        }
        drop(seen);
        if crate::paths::read_source(path).map_or(true, |disk| disk != doc.text) {
            self.count_content_change();
        }
    }

    /// Counts one content notification; returns the count after it.
    fn count_content_change(&self) -> u64 {
        self.content_changes.fetch_add(1, Ordering::SeqCst) + 1
    }

    /// Tells the server about files changed on disk that it does not have open
    /// (`workspace/didChangeWatchedFiles`).
    pub(crate) async fn files_changed(&self, changes: &[(PathBuf, FileChangeType)]) {
        if changes.is_empty() {
            return;
        }
        let events: Vec<lsp_types::FileEvent> = changes
            .iter()
            .filter_map(|(p, typ)| {
                uri_from_path(p).map(|uri| lsp_types::FileEvent { uri, typ: *typ })
            })
            .collect();
        self.count_content_change();
        let params = lsp_types::DidChangeWatchedFilesParams { changes: events };
        self.notify::<DidChangeWatchedFiles>(params).await;
    }

    /// Every document `holder` holds open but `except`, as a handle that waits for diagnostics
    /// pushed after `since` (default: now); their content did not change, but what they
    /// depend on may have.
    pub(crate) async fn open_documents_except(
        &self,
        except: &[PathBuf],
        since: Option<u64>,
        holder: RunId,
    ) -> Vec<SyncedDoc> {
        let seq = since.unwrap_or_else(|| self.push_mark());
        self.docs
            .lock()
            .await
            .iter()
            .filter(|(path, doc)| !except.contains(path) && doc.holders.contains(&holder))
            .map(|(path, doc)| SyncedDoc {
                path: path.clone(),
                version: doc.version,
                text: doc.text.clone(),
                sent_seq: seq,
                min_seq: seq,
                settle: false,
                versioned_only: false,
            })
            .collect()
    }

    /// The sequence number of the last push so far (pushes after it are newer).
    pub(crate) fn push_mark(&self) -> u64 {
        self.shared.state.lock().push_seq
    }

    /// Whether any document is open.
    pub(crate) async fn has_open_documents(&self) -> bool {
        !self.docs.lock().await.is_empty()
    }

    /// The version and text the server has for `path`, if it is open.
    pub(crate) async fn open_doc(&self, path: &Path) -> Option<(i32, String)> {
        self.docs.lock().await.get(path).map(|d| (d.version, d.text.clone()))
    }
}

/// A didChange that sends the whole text (the sync kind every server accepts).
fn whole_text(
    uri: &lsp_types::Uri,
    version: i32,
    text: &str,
) -> lsp_types::DidChangeTextDocumentParams {
    lsp_types::DidChangeTextDocumentParams {
        text_document: lsp_types::VersionedTextDocumentIdentifier { uri: uri.clone(), version },
        content_changes: vec![lsp_types::TextDocumentContentChangeEvent {
            range: None,
            range_length: None,
            text: text.to_string(),
        }],
    }
}

impl Server {
    /// didClose of `path`.
    async fn notify_closed(&self, path: &Path) {
        if let Some(uri) = uri_from_path(path) {
            let text_document = lsp_types::TextDocumentIdentifier { uri };
            self.notify::<DidCloseTextDocument>(lsp_types::DidCloseTextDocumentParams {
                text_document,
            })
            .await;
        }
    }
}
