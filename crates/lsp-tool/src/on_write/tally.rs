//! Step 5: the tally. Each file's diagnostics against the run's ledger: what is new, what was
//! known, what is gone; then the documents opened only for the check are closed.

use lsp_types::FileChangeType;

use super::{
    NewText, WriteCheck, Written,
    new_world::{Pending, Role},
    report::Mode,
    unverified_reason,
};
use crate::{
    diagnostics::Diagnostic,
    server::{DiagnosticsWait, Save},
};

impl WriteCheck<'_> {
    /// Counts every answer into the report: the written files' new diagnostics first, then
    /// those of other files.
    pub(super) fn tally(
        &mut self,
        pending: Vec<Pending>,
        results: Vec<Result<Vec<Diagnostic>, DiagnosticsWait>>,
    ) {
        let mut elsewhere = Vec::new();
        for (p, result) in pending.into_iter().zip(results) {
            let server = p.handle.server_label();
            let path = p.handle.path().to_path_buf();
            let shown_path = self.shown(&path);
            let report = &mut self.report;
            report.deadline_ms = report.deadline_ms.max(p.deadline.as_millis() as u64);
            match result {
                Ok(diags) => {
                    if !report.servers.contains(&server) {
                        report.servers.push(server);
                    }
                    let mut ledger = self.sup.ledger().lock();
                    if p.baseline_unknown && !ledger.knows(&path) {
                        // A preview's diagnostics are no baseline: nothing is on disk.
                        if self.mode == Mode::Applied {
                            ledger.baseline(&path, &diags);
                        }
                        report.known += diags.len();
                        report.baseline_unknown.push(shown_path);
                        continue;
                    }
                    let delta = match self.mode {
                        Mode::Applied => ledger.update(&path, &diags),
                        Mode::Preview => ledger.compare(&path, &diags),
                    };
                    drop(ledger);
                    if delta.resolved > 0 {
                        report.fixed += delta.resolved;
                        report.fixed_in.push(shown_path.clone());
                    }
                    match p.role {
                        // Only the written files' known diagnostics are counted: a re-checked
                        // file reports what is new in it, nothing else.
                        Role::Written => {
                            report.known += delta.known;
                            report.new.extend(delta.new)
                        }
                        Role::User => {
                            report.checked.push(shown_path);
                            elsewhere.extend(delta.new)
                        }
                        Role::Open => elsewhere.extend(delta.new),
                    }
                }
                // An open file that was only re-checked and did not answer in time is no
                // failure of this write: it is not in the impact set.
                Err(_) if p.role == Role::Open => {}
                Err(wait) => report.not_verified.push(format!(
                    "{shown_path} ({server}, {})",
                    unverified_reason(&wait, p.deadline)
                )),
            }
        }
        self.report.new.extend(elsewhere);
    }

    /// Closes deleted files (and sends their deletion) and the files opened for the check; a
    /// preview's files get the disk's content back (a file it would create is closed).
    pub(super) async fn close(&mut self, written: &[Written]) {
        for w in written {
            match (&w.new, w.deleted) {
                (NewText::Disk, true) => {
                    w.server.close(&w.path).await;
                    w.server.files_changed(&[(w.path.clone(), FileChangeType::DELETED)]).await;
                }
                (NewText::Disk, false) => {}
                (NewText::Proposed(_), _) => match crate::paths::read_source(&w.path) {
                    Ok(disk) => {
                        let _ = w
                            .server
                            .sync_text(&w.path, &w.language, disk, Save::Skip, self.run)
                            .await;
                    }
                    Err(_) => w.server.close(&w.path).await,
                },
            }
        }
        for opened in std::mem::take(&mut self.opened) {
            opened.server.release_document(&opened.path, self.run).await;
        }
    }
}
