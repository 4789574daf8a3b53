//! Step 3: baselines, in one wait. What the run's ledger does not know yet: the written files'
//! old versions and the users as they are. A file whose baseline cannot be had is not checked
//! after the change (its errors could not be called new or old).

use super::{Measure, Opened, User, WriteCheck, Written, language_of, unverified_reason};
use crate::{server::DiagnosticsWait, supervisor::DocHandle};

impl WriteCheck<'_> {
    /// Takes the baselines the ledger lacks; files that could not get one are `unverified`.
    pub(super) async fn baselines(&mut self, written: &[Written], users: &[User]) {
        let handles = self.baseline_documents(written, users).await;
        let this = &*self;
        let results = futures_util::future::join_all(handles.iter().map(|handle| {
            let deadline = this.deadline(&handle.server, handle.path());
            async move { (this.wait_for(handle, deadline, Measure::Ignored).await, deadline) }
        }))
        .await;
        for (handle, (result, deadline)) in handles.iter().zip(results) {
            let path = handle.path().to_path_buf();
            match result {
                Ok(diags) => {
                    let mut ledger = self.sup.ledger().lock();
                    if !ledger.knows(&path) {
                        ledger.baseline(&path, &diags);
                    }
                }
                Err(wait) => {
                    let why = match wait {
                        DiagnosticsWait::Timeout { .. } => format!(
                            "no diagnostics of its content before the write within {} ms{}",
                            deadline.as_millis(),
                            handle
                                .server
                                .busy()
                                .map(|b| format!(" (server {b})"))
                                .unwrap_or_default()
                        ),
                        other => unverified_reason(&other, deadline),
                    };
                    let shown = self.shown(&path);
                    self.report
                        .not_verified
                        .push(format!("{shown} ({}, {why})", handle.server_label()));
                    self.unverified.push(path);
                }
            }
        }
        for w in written.iter().filter(|w| w.created) {
            let mut ledger = self.sup.ledger().lock();
            if !ledger.knows(&w.path) {
                ledger.baseline(&w.path, &[]);
            }
        }
    }

    /// The documents whose diagnostics are the baselines: the written files' old text, and
    /// the users as they are now. A user the ledger knows needs no baseline, and is opened
    /// only after the change (opening and closing files in quick succession stalls clangd's
    /// preamble builds).
    async fn baseline_documents(&mut self, written: &[Written], users: &[User]) -> Vec<DocHandle> {
        let mut handles: Vec<DocHandle> = Vec::new();
        for w in written.iter().filter(|w| !w.deleted) {
            if let Some(old) = &w.old
                && !self.sup.ledger().lock().knows(&w.path)
                && let Ok(doc) =
                    w.server.current(&w.path, &w.language, Some(old.clone()), self.run).await
            {
                handles.push(DocHandle { server: w.server.clone(), doc });
            }
        }
        for user in users {
            let (file, server) = (&user.path, &user.server);
            if self.sup.ledger().lock().knows(file) {
                continue;
            }
            if !server.holders(file).await.is_some_and(|h| h.contains(&self.run)) {
                self.opened.push(Opened { path: file.clone(), server: server.clone() });
            }
            if let Ok(mut doc) =
                server.current(file, &language_of(server, file), None, self.run).await
            {
                doc.versioned_only = true;
                handles.push(DocHandle { server: server.clone(), doc });
            }
        }
        handles
    }
}
