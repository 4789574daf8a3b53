//! Errors, worded for the model: what went wrong and what would work.

use std::path::PathBuf;

/// Everything that can stop a search, an edit or a resolve.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AstError {
    /// The pattern is empty, malformed or unparsable.
    #[error("pattern error: {0}")]
    Pattern(String),
    /// A `rule` argument is malformed: the message names the key.
    #[error("rule error: {0}")]
    Rule(String),
    /// The rewrite template is malformed.
    #[error("rewrite error: {0}")]
    Rewrite(String),
    /// Unknown language or none inferable.
    #[error("{0}")]
    Language(String),
    /// A path outside the root, missing, or unusable.
    #[error("{0}")]
    Path(String),
    /// A file could not be read or written.
    #[error("{0}")]
    Io(String),
    /// `resolve` with an id that is not staged.
    #[error("{0}")]
    UnknownEdit(String),
    /// `resolve accept` found files changed since staging; nothing was written.
    #[error("{message}")]
    Stale { message: String, files: Vec<PathBuf> },
    /// The call was cancelled.
    #[error("cancelled before the search finished")]
    Cancelled,
}
