//! Step 2: the old world. What changed outside the tools first, then every written file's old
//! text, so that no answer comes from a mix of old and new files; then the impact set, asked
//! while the servers still have the old text (a renamed or removed declaration has no
//! references once the new text is in).

use std::{path::PathBuf, sync::Arc, time::Duration, time::Instant};

use super::{
    User, WriteCheck, Written,
    impact::{Impact, impact_of},
};
use crate::server::{Save, Server};

impl WriteCheck<'_> {
    /// Sends every written file's old text, after what changed on disk outside the tools.
    pub(super) async fn old_world(&self, written: &[Written]) {
        let written_paths: Vec<PathBuf> = written.iter().map(|w| w.path.clone()).collect();
        let mut servers: Vec<&Arc<Server>> = Vec::new();
        for w in written {
            if !servers.iter().any(|s| Arc::ptr_eq(s, &w.server)) {
                servers.push(&w.server);
            }
        }
        for server in servers {
            server.resync_open_except(&written_paths).await;
        }
        for w in written {
            if let Some(old) = &w.old {
                let _ = w
                    .server
                    .sync_text(&w.path, &w.language, old.clone(), Save::Skip, self.run)
                    .await;
            }
        }
    }

    /// The files that use what the writes change, nearest first, at most `max_files`; the
    /// rest are named as not checked.
    pub(super) async fn impact(&mut self, written: &[Written]) -> Vec<User> {
        let mut users: Vec<User> = Vec::new();
        for (impact, server, path) in self.impacts(written).await {
            for name in &impact.names {
                if !self.report.changed.contains(name) {
                    self.report.changed.push(name.clone());
                }
            }
            if impact.scanned_because.is_some() && !impact.files.is_empty() {
                self.report.found_by_scan = impact.scanned_because.clone();
            }
            for how in &impact.searched {
                if !self.report.searched.contains(how) {
                    self.report.searched.push(how.clone());
                }
            }
            if let Some(why) = &impact.undetermined {
                let shown = self.shown(&path);
                self.report.undetermined.push(format!("{shown}: {why}"));
            }
            for (file, _) in impact.files {
                if written.iter().any(|w| w.path == file) || users.iter().any(|u| u.path == file) {
                    continue;
                }
                // Only files the same server covers: another root's server sees the change
                // through the disk, not through this write.
                let same = self
                    .sup
                    .target_for(&file)
                    .is_ok_and(|t| t.def.id == server.def.id && t.root.root == server.root);
                if !same {
                    continue;
                }
                let user = User { path: file, server: server.clone() };
                if users.len() < self.options.max_files {
                    users.push(user);
                } else if !self.overflow.iter().any(|u| u.path == user.path) {
                    self.report.settling.push(self.shown(&user.path));
                    self.overflow.push(user);
                }
            }
        }
        users
    }

    /// The impact of each written file whose old text is known, asked of its server.
    async fn impacts(&self, written: &[Written]) -> Vec<(Impact, Arc<Server>, PathBuf)> {
        let budget = Duration::from_millis(self.sup.config().request_timeout_ms);
        futures_util::future::join_all(written.iter().filter_map(|w| {
            let old = w.old.as_ref()?;
            let new = match w.deleted {
                true => None,
                false => Some(w.new_text()?),
            };
            let deadline = Instant::now() + self.deadline(&w.server, &w.path).min(budget);
            Some(async move {
                let impact =
                    impact_of(&w.server, &w.path, old, new.as_deref(), deadline, self.cancel).await;
                (impact, w.server.clone(), w.path.clone())
            })
        }))
        .await
    }
}
