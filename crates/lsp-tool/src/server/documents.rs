//! Document sync: didOpen, full-text didChange with a new version when the content differs,
//! didSave, didClose, watched-file events, and re-reading open documents edited outside.

use std::{
    collections::BTreeSet,
    path::{Path, PathBuf},
    time::Instant,
};

use serde_json::{Value, json};

use super::{Doc, Server, SyncedDoc};
use crate::{paths::uri_from_path, pool::RunId};

impl Server {
    fn save_includes_text(&self) -> bool {
        self.capabilities.pointer("/textDocumentSync/save/includeText").and_then(Value::as_bool)
            == Some(true)
    }

    /// Makes the server's copy of `path` equal to the file on disk: `didOpen` on first use,
    /// `didChange` (full text, next version) when the content differs, then `didSave` when
    /// `save` is set and something was sent. `holder` now holds the document open.
    pub(crate) async fn sync(
        &self,
        path: &Path,
        language_id: &str,
        save: bool,
        holder: RunId,
    ) -> Result<SyncedDoc, String> {
        self.sync_from_disk(path, language_id, save, Some(holder)).await
    }

    async fn sync_from_disk(
        &self,
        path: &Path,
        language_id: &str,
        save: bool,
        holder: Option<RunId>,
    ) -> Result<SyncedDoc, String> {
        let text = crate::paths::read_source(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        self.sync_content(path, language_id, text, save, holder).await
    }

    /// Like [`Server::sync`] with given content (which must be what is on disk, or what the
    /// caller wants the server to see as the file's content).
    pub(crate) async fn sync_text(
        &self,
        path: &Path,
        language_id: &str,
        text: String,
        save: bool,
        holder: RunId,
    ) -> Result<SyncedDoc, String> {
        self.sync_content(path, language_id, text, save, Some(holder)).await
    }

    /// The one place versions change: under the documents lock, so concurrent syncs of one
    /// document (from the runs sharing the server) get increasing versions in send order.
    async fn sync_content(
        &self,
        path: &Path,
        language_id: &str,
        text: String,
        save: bool,
        holder: Option<RunId>,
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
                self.notify(
                    "textDocument/didOpen",
                    json!({"textDocument": {"uri": uri, "languageId": language_id, "version": 1, "text": text}}),
                )
                .await;
                docs.insert(
                    path.to_path_buf(),
                    Doc {
                        version: 1,
                        text: text.clone(),
                        mtime,
                        len,
                        sent_seq: seq_now,
                        holders: holder.into_iter().collect(),
                    },
                );
                (1, true, seq_now)
            }
            Some(doc) if doc.text != text => {
                doc.version += 1;
                doc.text.clone_from(&text);
                doc.mtime = mtime;
                doc.len = len;
                doc.sent_seq = seq_now;
                self.notify(
                    "textDocument/didChange",
                    json!({"textDocument": {"uri": uri, "version": doc.version}, "contentChanges": [{"text": text}]}),
                )
                .await;
                (doc.version, true, seq_now)
            }
            Some(doc) => {
                doc.mtime = mtime;
                doc.len = len;
                (doc.version, false, doc.sent_seq)
            }
        };
        if save && sent {
            let mut params = json!({"textDocument": {"uri": uri}});
            if self.save_includes_text() {
                params["text"] = Value::String(text.clone());
            }
            self.notify("textDocument/didSave", params).await;
        }
        Ok(SyncedDoc { path: path.to_path_buf(), version, text, sent_seq, min_seq: 0 })
    }

    /// Re-reads every open document whose size or modification time changed, and sends what
    /// differs; documents deleted from disk are closed. Edits made outside the tools are seen.
    pub(crate) async fn resync_open(&self) {
        let stale: Vec<PathBuf> = {
            let docs = self.docs.lock().await;
            docs.iter()
                .filter(|(path, doc)| {
                    let meta = std::fs::metadata(path).ok();
                    let mtime = meta.as_ref().and_then(|m| m.modified().ok());
                    meta.is_none() || mtime != doc.mtime || meta.map(|m| m.len()) != Some(doc.len)
                })
                .map(|(p, _)| p.clone())
                .collect()
        };
        for path in stale {
            if path.exists() {
                let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
                let language = self.def.language_of(ext).unwrap_or("plaintext").to_string();
                let _ = self.sync_from_disk(&path, &language, false, None).await;
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
            docs.remove(&path);
            if let Some(uri) = uri_from_path(&path) {
                self.notify("textDocument/didClose", json!({"textDocument": {"uri": uri}})).await;
            }
            self.shared.state.lock().push.remove(&path);
        }
    }

    /// Who holds `path` open on this server (`None`: it is not open).
    pub(crate) async fn holders(&self, path: &Path) -> Option<BTreeSet<RunId>> {
        self.docs.lock().await.get(path).map(|d| d.holders.clone())
    }

    /// Tells the server a document is closed (deleted or renamed away).
    pub(crate) async fn close(&self, path: &Path) {
        if self.docs.lock().await.remove(path).is_some()
            && let Some(uri) = uri_from_path(path)
        {
            self.notify("textDocument/didClose", json!({"textDocument": {"uri": uri}})).await;
        }
        self.shared.state.lock().push.remove(path);
    }

    /// Tells the server about files changed on disk that it does not have open
    /// (`workspace/didChangeWatchedFiles`: 1 created, 2 changed, 3 deleted).
    pub(crate) async fn files_changed(&self, changes: &[(PathBuf, u8)]) {
        if changes.is_empty() {
            return;
        }
        let events: Vec<Value> = changes
            .iter()
            .filter_map(|(p, kind)| uri_from_path(p).map(|u| json!({"uri": u, "type": kind})))
            .collect();
        self.notify("workspace/didChangeWatchedFiles", json!({"changes": events})).await;
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
