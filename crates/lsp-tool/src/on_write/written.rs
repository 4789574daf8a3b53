//! Step 1: the written files and the servers that cover them, each waited for at most the
//! start-up wait.

use agent_tools_support::Before;
use std::time::Duration;

use super::{Change, NewText, WriteCheck, Written};

impl WriteCheck<'_> {
    /// The written files a server covers; `None` when no server covers any of them.
    pub(super) async fn written_files(&mut self, changes: Vec<Change<'_>>) -> Option<Vec<Written>> {
        let startup = Duration::from_millis(self.options.startup_wait_ms);
        let mut covered = false;
        let mut out = Vec::new();
        for change in changes {
            let path = change.path;
            let deleted = match &change.new {
                NewText::Disk => !path.exists(),
                NewText::Proposed(text) => text.is_none(),
            };
            if !deleted && path.is_dir()
                || change.new == NewText::Disk && !deleted && !path.is_file()
            {
                continue;
            }
            let Ok(target) = self.sup.target_for(path) else { continue };
            covered = true;
            match self.sup.server_within(&target, startup, self.cancel).await {
                Ok(server) => out.push(Written {
                    path: path.to_path_buf(),
                    server,
                    language: target.language_id.clone(),
                    old: match change.before {
                        Before::Contents(bytes) => String::from_utf8(bytes.to_vec()).ok(),
                        _ => None,
                    },
                    created: *change.before == Before::Absent,
                    deleted,
                    new: change.new,
                }),
                Err(reason) => {
                    let shown = self.shown(path);
                    self.report.not_verified.push(format!("{shown} ({reason})"))
                }
            }
        }
        covered.then_some(out)
    }

    /// A server that started after a file was deleted never saw it: what the files that used
    /// it had before cannot be known, so their errors now are not called new or old.
    pub(super) fn note_deleted_before_start(&mut self, written: &[Written]) {
        for w in written.iter().filter(|w| w.deleted && w.server.started >= self.started) {
            let shown = self.shown(&w.path);
            self.report.not_verified.push(format!(
                "the files that used {shown} (the {} server started after it was deleted, so their errors before are unknown; lsp diagnostics on them shows their errors now)",
                w.server.def.display_languages()
            ));
        }
    }
}
