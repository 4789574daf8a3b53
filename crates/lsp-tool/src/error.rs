//! The crate's error: what went wrong in words a model can act on.

use serde::Serialize;

/// Why an `lsp` or `lsp_rename` call produced no answer.
#[derive(Debug, Clone, PartialEq, Serialize, thiserror::Error)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LspError {
    /// No server can serve this here (the intersection rule failed, or none is configured).
    #[error("{0}")]
    Unavailable(#[from] agent_tools_support::Unavailable),
    /// The arguments do not address anything (a line past the end, a symbol not on the line).
    #[error("{0}")]
    Invalid(String),
    /// The server is still indexing; an empty answer now would look like "none".
    #[error("{0}")]
    NotReady(String),
    /// The server failed, timed out or crashed.
    #[error("{0}")]
    Failed(String),
}
