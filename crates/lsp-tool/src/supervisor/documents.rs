//! Documents synced for diagnostics on write: a file's content sent to the server that covers
//! it, the diagnostics of exactly that version, and the other documents open on the run's
//! servers.

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
    sync::Arc,
    time::{Duration, Instant},
};

use tokio_util::sync::CancellationToken;

use super::{Supervisor, Target, server_label};
use crate::{
    diagnostics::Diagnostic,
    server::{DiagnosticMode, DiagnosticsWait, Save, Server, SyncedDoc},
};

/// A document synced to its server, ready to wait for its diagnostics.
pub struct DocHandle {
    pub(crate) server: Arc<Server>,
    pub(crate) doc: SyncedDoc,
}

impl DocHandle {
    pub fn version(&self) -> i32 {
        self.doc.version
    }

    pub fn path(&self) -> &Path {
        &self.doc.path
    }

    /// The content the server has for this version.
    pub fn text(&self) -> &str {
        &self.doc.text
    }

    /// A short label for the server: `basedpyright`, `clangd`, or the server id.
    pub fn server_label(&self) -> String {
        server_label(&self.server)
    }

    pub fn diagnostic_mode(&self) -> DiagnosticMode {
        self.server.diagnostic_mode()
    }
}

/// What syncing a file for diagnostics found.
pub enum SyncOutcome {
    /// No server covers this file (no server for the language, no marker, or no binary).
    NotCovered,
    /// A server covers it but is not usable now (starting, crashed); the text says why.
    NotReady(String),
    Synced(DocHandle),
}

impl Supervisor {
    /// The push mark of every running server, by pid (see [`Supervisor::other_open_documents`]).
    pub(crate) fn push_marks(&self) -> HashMap<u32, u64> {
        self.running().iter().map(|s| (s.pid, s.push_mark())).collect()
    }

    /// The other open documents of every running server, for a re-check after a write: a
    /// push counts when it came after the server's mark in `since` (taken before the write was
    /// synced), or after now for a server without one.
    pub(crate) async fn other_open_documents(
        &self,
        except: &[PathBuf],
        since: &HashMap<u32, u64>,
    ) -> Vec<(PathBuf, DocHandle)> {
        let mut out = Vec::new();
        for server in self.running() {
            let since = since.get(&server.pid).copied();
            for doc in server.open_documents_except(except, since, self.inner.run).await {
                out.push((doc.path.clone(), DocHandle { server: server.clone(), doc }));
            }
        }
        out
    }

    /// Sends the file's content to the server that covers it (`didOpen`, or `didChange` with a
    /// new version, then `didSave` when `save`). `text` is the content to send; `None` reads
    /// the file. Waits for a server that is still starting at most `startup_wait` (the start
    /// goes on in the background).
    pub async fn sync_document(
        &self,
        path: &Path,
        text: Option<String>,
        save: Save,
        startup_wait: Duration,
        cancel: &CancellationToken,
    ) -> SyncOutcome {
        let Ok(target) = self.target_for(path) else { return SyncOutcome::NotCovered };
        let server = match self.server_within(&target, startup_wait, cancel).await {
            Ok(server) => server,
            Err(reason) => return SyncOutcome::NotReady(reason),
        };
        let synced = match text {
            Some(text) => {
                server.sync_text(path, &target.language_id, text, save, self.inner.run).await
            }
            None => server.sync(path, &target.language_id, save, self.inner.run).await,
        };
        match synced {
            Ok(doc) => SyncOutcome::Synced(DocHandle { server, doc }),
            Err(e) => SyncOutcome::NotReady(e),
        }
    }

    /// The running server of `target`, waiting for a start at most `startup_wait` (the start
    /// goes on in the background); the error says why it is not usable now.
    pub(crate) async fn server_within(
        &self,
        target: &Target,
        startup_wait: Duration,
        cancel: &CancellationToken,
    ) -> Result<Arc<Server>, String> {
        let this = self.clone();
        let start_target = target.clone();
        let run_cancel = self.inner.closing.child_token();
        let start = tokio::spawn(async move { this.server(&start_target, &run_cancel).await });
        let server = tokio::select! {
            r = start => r,
            _ = tokio::time::sleep(startup_wait) => {
                return Err(format!("server still starting after {} ms", startup_wait.as_millis()))
            }
            _ = cancel.cancelled() => return Err("cancelled".into()),
        };
        match server {
            Ok(Ok(s)) => Ok(s),
            Ok(Err(e)) => Err(format!("server unavailable: {}", first_line(&e.to_string()))),
            Err(e) => Err(format!("server unavailable: {e}")),
        }
    }

    /// The diagnostics of exactly the synced version, at most until `deadline`.
    pub async fn document_diagnostics(
        &self,
        handle: &DocHandle,
        deadline: Instant,
        cancel: &CancellationToken,
    ) -> Result<Vec<Diagnostic>, DiagnosticsWait> {
        let items = handle.server.diagnostics(&handle.doc, deadline, cancel).await?;
        Ok(items
            .iter()
            .map(|d| {
                Diagnostic::from_lsp(
                    d,
                    &handle.doc.path,
                    &self.inner.root,
                    &handle.doc.text,
                    handle.server.encoding,
                )
            })
            .collect())
    }

    /// How many runs hold `path` open on its running server (`None`: not open there).
    #[cfg(any(test, feature = "testing"))]
    pub(crate) async fn holders_of(&self, path: &Path) -> Option<usize> {
        let target = self.target_for(path).ok()?;
        let slot =
            self.inner.slots.lock().get(&(target.def.id.clone(), target.root.root)).cloned()?;
        let server = slot.current.lock().clone()?;
        server.holders(path).await.map(|h| h.len())
    }

    /// What the server covering `path` is busy with, if it runs and is busy.
    pub fn busy(&self, handle: &DocHandle) -> Option<String> {
        handle.server.busy()
    }
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}
