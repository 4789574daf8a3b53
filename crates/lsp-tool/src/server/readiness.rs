//! Readiness: what a server is busy with (`$/progress`, rust-analyzer's serverStatus, Dart's
//! analyzer status) and a bounded wait for it, after the warm-up of lazily loading servers.
//! What counts depends on the answer's [`Scope`]: a background index gates only answers about
//! the whole project.

use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::{Server, WorkDone};

/// What an answer depends on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    /// One open file and what it names (definition, hover, code actions): served while a
    /// background index runs.
    File,
    /// The whole project (references, workspace symbols, rename): waits for the index.
    Project,
}

/// Why a server could not answer yet.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum NotReady {
    /// Still busy (loading the project, indexing 40%) when the wait ended.
    Busy(String),
    /// The call was cancelled while it waited.
    Cancelled,
    /// The server exited while the call waited.
    Exited,
}

impl NotReady {
    /// The error of `what` (a call) waiting on `server` (its name) for `waited`.
    pub(crate) fn into_error(self, what: &str, server: &str, waited: Duration) -> crate::LspError {
        use crate::LspError;
        match self {
            NotReady::Busy(busy) => LspError::NotReady(format!(
                "{what}: not ready: the {server} server is {busy} (waited {} s). An answer now could miss results; try again shortly",
                waited.as_secs()
            )),
            NotReady::Cancelled => LspError::Failed(format!(
                "{what}: cancelled while the {server} server was getting ready"
            )),
            NotReady::Exited => LspError::Failed(format!(
                "{what}: the {server} server exited while this call waited for it; the next call starts it again"
            )),
        }
    }
}

impl Server {
    /// What the server is busy with, if anything: `indexing (45%): Indexing files`.
    pub(crate) fn busy(&self) -> Option<String> {
        self.busy_for(Scope::Project)
    }

    /// Whether `progress` is the server's background index (see `index_progress`).
    fn is_index(&self, progress: &WorkDone) -> bool {
        let title = progress.title.to_lowercase();
        self.def.index_progress.iter().any(|p| title.starts_with(&p.to_lowercase()))
    }

    /// What the server is busy with that an answer of `scope` would depend on.
    pub(crate) fn busy_for(&self, scope: Scope) -> Option<String> {
        let state = self.shared.state.lock();
        let describe = |p: &WorkDone| {
            let mut s = "indexing".to_string();
            if let Some(pct) = p.percentage {
                s.push_str(&format!(" ({pct}%)"));
            }
            let detail: Vec<&str> = [Some(p.title.as_str()), p.message.as_deref()]
                .into_iter()
                .flatten()
                .filter(|t| !t.is_empty())
                .collect();
            if !detail.is_empty() {
                s.push_str(&format!(": {}", detail.join(" ")));
            }
            s
        };
        let mut active = state.progress.values();
        let gating = match scope {
            Scope::Project => active.next(),
            Scope::File => active.find(|p| !self.is_index(p)),
        };
        if let Some(p) = gating {
            return Some(describe(p));
        }
        if state.quiescent == Some(false) {
            return Some("indexing (not quiescent)".into());
        }
        None
    }

    /// Waits until the server is not busy with anything an answer of `scope` depends on, at
    /// most until `deadline`; the error says what it was still busy with.
    pub(crate) async fn wait_ready(
        &self,
        scope: Scope,
        deadline: Instant,
        cancel: &CancellationToken,
    ) -> Result<(), NotReady> {
        // Servers that load their project lazily announce it a moment after the first open;
        // an answer before that would come from a half-loaded project. A warm-up that only
        // announces a background index does not gate file-local answers.
        let gated = scope == Scope::Project || self.def.index_progress.is_empty();
        let warmup_end = self
            .first_open
            .lock()
            .filter(|_| gated)
            .map(|t| t + Duration::from_millis(self.def.warmup_ms));
        while let Some(end) = warmup_end {
            let notified = self.shared.changed.notified();
            let now = Instant::now();
            if self.shared.state.lock().warmed_up || now >= end || now >= deadline {
                break;
            }
            tokio::select! {
                _ = notified => {}
                _ = tokio::time::sleep(end.min(deadline) - now) => {}
                _ = cancel.cancelled() => return Err(NotReady::Cancelled),
                _ = self.exited.cancelled() => return Err(NotReady::Exited),
            }
        }
        loop {
            let notified = self.shared.changed.notified();
            let Some(busy) = self.busy_for(scope) else { return Ok(()) };
            let now = Instant::now();
            if now >= deadline {
                return Err(NotReady::Busy(busy));
            }
            tokio::select! {
                _ = notified => {}
                _ = tokio::time::sleep(deadline - now) => {}
                _ = cancel.cancelled() => return Err(NotReady::Cancelled),
                _ = self.exited.cancelled() => return Err(NotReady::Exited),
            }
        }
    }
}

#[cfg(test)]
mod not_ready_tests {
    use super::*;

    #[test]
    fn a_server_that_exited_or_a_cancelled_wait_is_not_called_busy() {
        let waited = Duration::from_secs(15);
        let busy = NotReady::Busy("indexing (40%)".into()).into_error("symbols", "python", waited);
        assert_eq!(
            busy.to_string(),
            "symbols: not ready: the python server is indexing (40%) (waited 15 s). An answer now could miss results; try again shortly"
        );
        let exited = NotReady::Exited.into_error("symbols", "python", waited).to_string();
        assert!(exited.contains("the python server exited while this call waited"), "{exited}");
        assert!(!exited.contains("is the server"), "{exited}");
        let cancelled = NotReady::Cancelled.into_error("symbols", "python", waited).to_string();
        assert!(!cancelled.contains("not ready") && cancelled.contains("cancelled"), "{cancelled}");
    }
}
