//! What a call waits with, in every family: the caller's cancellation, and the port through
//! which a long wait (a cell, a stop, a server indexing) says it is still going.

use tokio_util::sync::{CancellationToken, WaitForCancellationFuture};

/// Receives "still going" reports of a long call: elapsed seconds and a short message. An MCP
/// host turns them into progress notifications and rate-limits what it sends.
pub trait Progress: Send + Sync {
    fn report(&self, elapsed_seconds: f64, message: &str);
}

/// Progress nobody listens to.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoProgress;

impl Progress for NoProgress {
    fn report(&self, _elapsed_seconds: f64, _message: &str) {}
}

/// One call's cancellation and progress port.
#[derive(Clone, Copy)]
pub struct CallScope<'a> {
    /// The caller cancelled the call (MCP `notifications/cancelled`) or the run is ending:
    /// stop the work.
    pub cancel: &'a CancellationToken,
    pub progress: &'a dyn Progress,
    /// The caller's connection went away while the run goes on: nobody reads this call's
    /// answer. Work that can outlive its call (a kernel's cell) stops waiting and keeps
    /// running; everything else may ignore it. `None`: the host never cuts.
    pub cut: Option<&'a CancellationToken>,
}

impl<'a> CallScope<'a> {
    /// A scope that only cancels: its progress goes nowhere.
    pub fn new(cancel: &'a CancellationToken) -> Self {
        CallScope { cancel, progress: &NoProgress, cut: None }
    }

    /// A scope that cancels with `cancel` and reports to `progress`.
    pub fn with_progress(cancel: &'a CancellationToken, progress: &'a dyn Progress) -> Self {
        CallScope { cancel, progress, cut: None }
    }

    /// The same scope, told by `cut` when the caller's connection went away.
    pub fn with_cut(self, cut: &'a CancellationToken) -> Self {
        CallScope { cut: Some(cut), ..self }
    }

    pub fn cancelled(&self) -> WaitForCancellationFuture<'a> {
        self.cancel.cancelled()
    }

    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    pub fn report(&self, elapsed_seconds: f64, message: &str) {
        self.progress.report(elapsed_seconds, message);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    struct Seen(Mutex<Vec<String>>);

    impl Progress for Seen {
        fn report(&self, elapsed_seconds: f64, message: &str) {
            self.0.lock().unwrap().push(format!("{elapsed_seconds}: {message}"));
        }
    }

    #[test]
    fn a_scope_reports_to_its_port_and_a_bare_scope_reports_nowhere() {
        let cancel = CancellationToken::new();
        let seen = Seen(Mutex::default());
        CallScope::with_progress(&cancel, &seen).report(1.0, "indexing");
        CallScope::new(&cancel).report(2.0, "lost");
        assert_eq!(*seen.0.lock().unwrap(), vec!["1: indexing".to_string()]);
        cancel.cancel();
        assert!(CallScope::new(&cancel).is_cancelled());
    }
}
