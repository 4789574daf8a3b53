//! ProgressReport of a long call as MCP `notifications/progress`, rate-limited and monotonic.
//!
//! A tool may report as often as it likes; the client gets at most one notification per
//! [`MIN_INTERVAL`] (the newest report of the window), progress values only ever grow, and
//! nothing is sent once the call has answered.

use std::time::Duration;

use rmcp::{
    Peer, RoleServer,
    model::{ProgressNotificationParam, ProgressToken},
};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use agent_tools::{ProgressReport, ProgressSink};

/// At most two notifications a second.
pub(super) const MIN_INTERVAL: Duration = Duration::from_millis(500);

/// Where a call's progress goes, and how to stop forwarding it.
pub(super) struct ProgressForwarder {
    pub(super) sink: ProgressSink,
    done: CancellationToken,
}

impl ProgressForwarder {
    /// Starts forwarding to `peer` under `token`.
    pub(super) fn start(peer: Peer<RoleServer>, token: ProgressToken) -> Self {
        let (tx, rx) = mpsc::unbounded_channel::<ProgressReport>();
        let done = CancellationToken::new();
        tokio::spawn(forward(rx, done.clone(), move |p: ProgressReport| {
            let peer = peer.clone();
            let mut param = ProgressNotificationParam::new(token.clone(), p.progress);
            param.total = p.total;
            param.message = (!p.message.is_empty()).then_some(p.message);
            async move {
                if let Err(e) = peer.notify_progress(param).await {
                    tracing::debug!("progress not sent: {e}");
                }
            }
        }));
        let sink = ProgressSink::new(move |p| {
            let _ = tx.send(p);
        });
        ProgressForwarder { sink, done }
    }
}

impl Drop for ProgressForwarder {
    /// The call answered: whatever is still queued is dropped.
    fn drop(&mut self) {
        self.done.cancel();
    }
}

/// Sends the newest report of each window, skipping reports that do not advance.
async fn forward<F, Fut>(
    mut rx: mpsc::UnboundedReceiver<ProgressReport>,
    done: CancellationToken,
    send: F,
) where
    F: Fn(ProgressReport) -> Fut,
    Fut: Future<Output = ()>,
{
    let mut last_sent: Option<f64> = None;
    let mut next_allowed = tokio::time::Instant::now();
    loop {
        let first = tokio::select! {
            biased;
            () = done.cancelled() => return,
            p = rx.recv() => match p { Some(p) => p, None => return },
        };
        let mut newest = first;
        // Inside the window: wait it out, keeping only the newest report.
        let wait = tokio::time::sleep_until(next_allowed);
        tokio::pin!(wait);
        while tokio::time::Instant::now() < next_allowed {
            tokio::select! {
                biased;
                () = done.cancelled() => return,
                () = &mut wait => break,
                p = rx.recv() => match p { Some(p) => newest = p, None => break },
            }
        }
        if last_sent.is_some_and(|last| newest.progress <= last) {
            continue;
        }
        last_sent = Some(newest.progress);
        next_allowed = tokio::time::Instant::now() + MIN_INTERVAL;
        send(newest).await;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use tokio::sync::mpsc;
    use tokio_util::sync::CancellationToken;

    use super::{MIN_INTERVAL, forward};
    use agent_tools::ProgressReport;

    fn report(progress: f64) -> ProgressReport {
        ProgressReport { progress, total: None, message: format!("{progress}") }
    }

    // A current-thread runtime: the burst below is queued without the forwarder running in
    // between, so the outcome does not depend on the machine's speed.
    #[tokio::test]
    async fn bursts_are_thinned_to_the_newest_and_progress_never_goes_back() {
        let (tx, rx) = mpsc::unbounded_channel();
        let sent = Arc::new(Mutex::new(Vec::new()));
        let seen = sent.clone();
        let done = CancellationToken::new();
        let task = tokio::spawn(forward(rx, done.clone(), move |p: ProgressReport| {
            seen.lock().unwrap().push(p.progress);
            async {}
        }));
        tx.send(report(1.0)).unwrap();
        tokio::task::yield_now().await;
        for i in 2..=50 {
            tx.send(report(f64::from(i))).unwrap();
        }
        tokio::time::sleep(MIN_INTERVAL * 2).await;
        tx.send(report(10.0)).unwrap(); // goes back: dropped
        tokio::time::sleep(MIN_INTERVAL * 2).await;
        done.cancel();
        task.await.unwrap();
        assert_eq!(*sent.lock().unwrap(), [1.0, 50.0]);
    }
}
