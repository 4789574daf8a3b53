//! What a call waits with: the caller's cancellation, and the port through which a long wait
//! (for a stop, for the adapter) says it is still waiting.

use tokio_util::sync::{CancellationToken, WaitForCancellationFuture};

/// Receives "still waiting" reports of a long call (an MCP host turns them into progress
/// notifications). Reports come about once a second while a call waits.
pub trait ProgressPort: Send + Sync {
    fn report(&self, elapsed_seconds: f64, message: &str);
}

/// One call's cancellation and progress port.
#[derive(Clone, Copy)]
pub struct CallScope<'a> {
    pub cancel: &'a CancellationToken,
    pub progress: Option<&'a dyn ProgressPort>,
}

impl<'a> CallScope<'a> {
    /// A scope that only cancels.
    pub fn new(cancel: &'a CancellationToken) -> Self {
        CallScope { cancel, progress: None }
    }

    pub fn cancelled(&self) -> WaitForCancellationFuture<'a> {
        self.cancel.cancelled()
    }

    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    pub fn report(&self, elapsed_seconds: f64, message: &str) {
        if let Some(progress) = self.progress {
            progress.report(elapsed_seconds, message);
        }
    }
}
