//! Step 4: the new world. Every written file's new content goes out (`didChange`, `didSave`,
//! a watched-file event), then every user again as a new version so that its answer is
//! computed against the change; other open files the ledger knows are re-checked too.

use std::{collections::HashMap, path::PathBuf, time::Duration};

use lsp_types::FileChangeType;

use super::{Measure, NewText, Opened, User, WriteCheck, Written, language_of};
use crate::{
    diagnostics::Diagnostic,
    server::{DiagnosticMode, DiagnosticsWait, Save},
    supervisor::DocHandle,
};

/// How long other open files get to re-publish after the written files answered.
const CROSS_FILE_WINDOW: Duration = Duration::from_millis(300);

/// Why a file is checked.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Role {
    Written,
    /// Uses what the write changed (the impact set).
    User,
    /// Open in the run and known to the ledger: re-checked in a short window, best effort.
    Open,
}

/// A file waiting for its diagnostics.
pub(super) struct Pending {
    pub(super) handle: DocHandle,
    pub(super) role: Role,
    pub(super) baseline_unknown: bool,
    /// Fixed when the wait starts, so the text names the bound that applied.
    pub(super) deadline: Duration,
}

impl WriteCheck<'_> {
    /// Sends the new content of the written files and the users; what to wait for.
    pub(super) async fn new_world(&mut self, written: &[Written], users: &[User]) -> Vec<Pending> {
        let mut pending = self.send_written(written).await;
        for user in users {
            if self.unverified.contains(&user.path) {
                continue;
            }
            let (file, server) = (&user.path, &user.server);
            let open = server.holders(file).await.is_some_and(|h| h.contains(&self.run));
            let doc = if open {
                server.touch(file, self.run).await
            } else {
                // Opened after the change: its first answer is about the new content.
                self.opened.push(Opened { path: file.clone(), server: server.clone() });
                let language = language_of(server, file);
                server.sync(file, &language, Save::Skip, self.run).await.ok().map(|mut d| {
                    d.versioned_only = true;
                    d
                })
            };
            if let Some(doc) = doc {
                pending.push(Pending {
                    handle: DocHandle { server: server.clone(), doc },
                    role: Role::User,
                    baseline_unknown: false,
                    deadline: Duration::ZERO,
                });
            }
        }
        for p in &mut pending {
            p.deadline = self.deadline(&p.handle.server, p.handle.path());
        }
        pending
    }

    /// The written files' new content. A deleted file is first emptied in the server: a
    /// watched-file deletion is applied by some servers later (pyright), so users checked now
    /// would still see it. It is closed, and its deletion sent, once they answered.
    async fn send_written(&mut self, written: &[Written]) -> Vec<Pending> {
        for w in written.iter().filter(|w| w.deleted) {
            let _ =
                w.server.sync_text(&w.path, &w.language, String::new(), Save::Skip, self.run).await;
        }
        let mut pending = Vec::new();
        for w in written {
            if self.unverified.contains(&w.path) || w.deleted {
                continue;
            }
            let baseline_unknown = !self.sup.ledger().lock().knows(&w.path);
            let synced = match &w.new {
                NewText::Disk => w.server.sync(&w.path, &w.language, Save::Notify, self.run).await,
                // Not on disk: no save (a server would read the disk), no watched-file event.
                NewText::Proposed(text) => {
                    let text = text.clone().unwrap_or_default();
                    w.server.sync_text(&w.path, &w.language, text, Save::Skip, self.run).await
                }
            };
            match synced {
                Ok(doc) => pending.push(Pending {
                    handle: DocHandle { server: w.server.clone(), doc },
                    role: Role::Written,
                    baseline_unknown,
                    deadline: Duration::ZERO,
                }),
                Err(e) => {
                    let shown = self.shown(&w.path);
                    self.report.not_verified.push(format!("{shown} ({e})"))
                }
            }
        }
        for w in written.iter().filter(|w| !w.deleted && w.new == NewText::Disk) {
            let kind = if w.created { FileChangeType::CREATED } else { FileChangeType::CHANGED };
            w.server.files_changed(&[(w.path.clone(), kind)]).await;
        }
        pending
    }

    /// Other open files the ledger knows, best effort: their diagnostics come with (or just
    /// after) those of the written files. A pull server answers for the current state (the
    /// write's deadline); a push server re-publishes within a short window.
    pub(super) async fn other_open_files(
        &self,
        written: &[Written],
        users: &[User],
        marks: &HashMap<u32, u64>,
    ) -> Vec<Pending> {
        let mut skip: Vec<PathBuf> = written.iter().map(|w| w.path.clone()).collect();
        skip.extend(users.iter().map(|u| u.path.clone()));
        self.sup
            .other_open_documents(&skip, marks)
            .await
            .into_iter()
            .filter(|(path, _)| self.sup.ledger().lock().knows(path))
            .map(|(_, handle)| Pending {
                deadline: match handle.diagnostic_mode() {
                    DiagnosticMode::Pull => self.deadline(&handle.server, handle.path()),
                    DiagnosticMode::Push => CROSS_FILE_WINDOW,
                },
                handle,
                role: Role::Open,
                baseline_unknown: false,
            })
            .collect()
    }

    /// Waits for every pending file at once, each within its own deadline.
    pub(super) async fn wait_all(
        &self,
        pending: &[Pending],
        measure: Measure,
    ) -> Vec<Result<Vec<Diagnostic>, DiagnosticsWait>> {
        futures_util::future::join_all(
            pending.iter().map(|p| self.wait_for(&p.handle, p.deadline, measure)),
        )
        .await
    }
}
