//! What a call waits with, in every family: the caller's cancellation, and the port through
//! which a long wait (a cell, a stop, a server indexing, a search) says it is still going.

use std::sync::Arc;

use tokio_util::sync::{CancellationToken, WaitForCancellationFuture};

/// Receives "still going" reports of a long call: elapsed seconds and a short message. An MCP
/// host turns them into progress notifications and rate-limits what it sends.
pub trait Progress: Send + Sync {
    fn report(&self, elapsed_seconds: f64, message: &str);
}

/// One call's cancellation and progress port, owned and cheap to clone (two reference counts),
/// so a call can hand it to the tasks it spawns.
#[derive(Clone, Default)]
pub struct CallScope {
    cancel: CancellationToken,
    progress: Option<Arc<dyn Progress>>,
    cut: Option<CancellationToken>,
}

impl std::fmt::Debug for CallScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallScope")
            .field("cancelled", &self.cancel.is_cancelled())
            .field("reports", &self.progress.is_some())
            .field("cut", &self.cut.as_ref().map(CancellationToken::is_cancelled))
            .finish()
    }
}

impl CallScope {
    /// A scope that only cancels: its progress goes nowhere.
    pub fn new(cancel: CancellationToken) -> Self {
        CallScope { cancel, progress: None, cut: None }
    }

    /// The same scope, reporting to `progress`.
    pub fn with_progress(self, progress: Arc<dyn Progress>) -> Self {
        CallScope { progress: Some(progress), ..self }
    }

    /// The same scope, told by `cut` when the caller's connection went away while the run goes
    /// on: nobody reads this call's answer. Work that can outlive its call (a kernel's cell)
    /// stops waiting and keeps running; everything else may ignore it.
    pub fn with_cut(self, cut: CancellationToken) -> Self {
        CallScope { cut: Some(cut), ..self }
    }

    /// A scope for part of this call: cancelled with it (or alone), reporting to the same port.
    pub fn child(&self) -> Self {
        CallScope { cancel: self.cancel.child_token(), ..self.clone() }
    }

    /// The caller cancelled the call (MCP `notifications/cancelled`) or the run is ending.
    pub fn token(&self) -> &CancellationToken {
        &self.cancel
    }

    /// Set when the caller's connection went away; `None`: the host never cuts.
    pub fn cut(&self) -> Option<&CancellationToken> {
        self.cut.as_ref()
    }

    pub fn cancelled(&self) -> WaitForCancellationFuture<'_> {
        self.cancel.cancelled()
    }

    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Whether anyone listens to this scope's reports (work that costs something to describe
    /// can skip it when nobody does).
    pub fn reports(&self) -> bool {
        self.progress.is_some()
    }

    pub fn report(&self, elapsed_seconds: f64, message: &str) {
        if let Some(progress) = &self.progress {
            progress.report(elapsed_seconds, message);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    #[derive(Default)]
    struct Seen(Mutex<Vec<String>>);

    impl Progress for Seen {
        fn report(&self, elapsed_seconds: f64, message: &str) {
            self.0.lock().unwrap().push(format!("{elapsed_seconds}: {message}"));
        }
    }

    #[test]
    fn a_scope_reports_to_its_port_and_a_bare_scope_reports_nowhere() {
        let cancel = CancellationToken::new();
        let seen = Arc::new(Seen::default());
        CallScope::new(cancel.clone()).with_progress(seen.clone()).report(1.0, "indexing");
        CallScope::new(cancel.clone()).report(2.0, "lost");
        assert_eq!(*seen.0.lock().unwrap(), vec!["1: indexing".to_string()]);
        cancel.cancel();
        assert!(CallScope::new(cancel).is_cancelled());
    }

    #[test]
    fn a_child_scope_stops_with_its_parent_and_reports_to_the_same_port() {
        let seen = Arc::new(Seen::default());
        let parent = CallScope::new(CancellationToken::new()).with_progress(seen.clone());
        let child = parent.child();
        child.report(3.0, "walking");
        child.token().cancel();
        assert!(!parent.is_cancelled(), "a child's stop is its own");
        let second = parent.child();
        parent.token().cancel();
        assert!(second.is_cancelled());
        assert_eq!(*seen.0.lock().unwrap(), vec!["3: walking".to_string()]);
    }
}
