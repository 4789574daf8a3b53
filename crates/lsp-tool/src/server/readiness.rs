//! Readiness: what a server is busy with (`$/progress`, rust-analyzer's serverStatus, Dart's
//! analyzer status) and a bounded wait for it, after the warm-up of lazily loading servers.

use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::{Progress, Server};

impl Server {
    /// What the server is busy with, if anything: `indexing (45%): Indexing files`.
    pub(crate) fn busy(&self) -> Option<String> {
        let state = self.shared.state.lock();
        let describe = |p: &Progress| {
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
        if let Some(p) = state.progress.values().next() {
            return Some(describe(p));
        }
        if state.quiescent == Some(false) {
            return Some("indexing (not quiescent)".into());
        }
        None
    }

    /// Waits until the server is not busy, at most until `deadline`; the error says what it
    /// was still busy with.
    pub(crate) async fn wait_ready(
        &self,
        deadline: Instant,
        cancel: &CancellationToken,
    ) -> Result<(), String> {
        // Servers that load their project lazily announce it a moment after the first open;
        // an answer before that would come from a half-loaded project.
        let warmup_end =
            self.first_open.lock().map(|t| t + Duration::from_millis(self.def.warmup_ms));
        while let Some(end) = warmup_end {
            let notified = self.shared.changed.notified();
            let now = Instant::now();
            if self.shared.state.lock().warmed_up || now >= end || now >= deadline {
                break;
            }
            tokio::select! {
                _ = notified => {}
                _ = tokio::time::sleep(end.min(deadline) - now) => {}
                _ = cancel.cancelled() => return Err("cancelled".into()),
                _ = self.exited.cancelled() => return Err("the server exited".into()),
            }
        }
        loop {
            let notified = self.shared.changed.notified();
            let Some(busy) = self.busy() else { return Ok(()) };
            let now = Instant::now();
            if now >= deadline {
                return Err(busy);
            }
            tokio::select! {
                _ = notified => {}
                _ = tokio::time::sleep(deadline - now) => {}
                _ = cancel.cancelled() => return Err("cancelled".into()),
                _ = self.exited.cancelled() => return Err("the server exited".into()),
            }
        }
    }
}
