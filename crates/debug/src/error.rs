//! Errors of the debug family: each says what failed and what would work.

/// Why an operation could not be done.
#[derive(Debug, Clone, thiserror::Error)]
pub enum DebugError {
    /// An adapter cannot be used here: which, why (facts), and how to fix it.
    #[error("{0}")]
    Unavailable(#[from] agent_tools_support::Unavailable),
    /// The call itself is wrong (a missing argument, a path outside the root, no session).
    #[error("{0}")]
    Usage(String),
    /// A frame id or variable reference from an earlier stop.
    #[error("{0}")]
    Stale(String),
    /// The adapter refused or failed.
    #[error("{0}")]
    Adapter(String),
}

impl DebugError {
    pub fn usage(message: impl Into<String>) -> Self {
        DebugError::Usage(message.into())
    }

    pub fn adapter(message: impl Into<String>) -> Self {
        DebugError::Adapter(message.into())
    }
}

impl From<crate::protocol::DapError> for DebugError {
    fn from(e: crate::protocol::DapError) -> Self {
        DebugError::Adapter(e.to_string())
    }
}
