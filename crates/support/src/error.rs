//! The support crate's one error type: confinement, file access, group commits and framed
//! streams.

use std::{io, path::PathBuf, sync::Arc, time::Duration};

use crate::duration::human;

/// What failed in confined file access, a group commit or a framed stream. Messages say what,
/// where, and what would work; `arg` is the tool argument that named the path, so the model
/// knows what to fix. Clone, so every handle of a stopped frame writer reports the same reason.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    #[error("argument `{arg}` is empty; give a path relative to the root {}", root.display())]
    EmptyPath { arg: String, root: PathBuf },
    #[error(
        "argument `{arg}`: {path} is outside the run's root {}; use a path inside it \
         (relative paths are resolved from the root)",
        root.display()
    )]
    Outside { arg: String, path: String, root: PathBuf },
    #[error(
        "argument `{arg}`: {path} resolves through a symlink that leaves the run's root {}; \
         use a path inside the root",
        root.display()
    )]
    Escapes { arg: String, path: String, root: PathBuf },
    #[error(
        "argument `{arg}`: {path} resolves through a symlink loop (or more than 40 symlinks); \
         point the links at a real file"
    )]
    SymlinkLoop { arg: String, path: String },
    #[error("argument `{arg}`: {path} is a symlink to a missing target; refusing to follow it")]
    DanglingSymlink { arg: String, path: String },
    #[error("argument `{arg}`: {path} does not exist")]
    NotFound { arg: String, path: String },
    #[error("argument `{arg}`: {path} is a directory, not a file")]
    IsDirectory { arg: String, path: String },
    #[error(
        "argument `{arg}`: {path} is {kind}, not a regular file; these tools read and write \
         regular files only"
    )]
    NotRegular { arg: String, path: String, kind: &'static str },
    #[error(
        "{path} changed since it was read ({why}); nothing was written: read it again and retry"
    )]
    Changed { path: String, why: String },
    #[error("{path} appears twice in one group of changes; merge them into one")]
    Duplicate { path: String },
    #[error("cannot {what} {path}: {source}")]
    Io {
        what: &'static str,
        path: String,
        #[source]
        source: Arc<io::Error>,
    },
    #[error(
        "cannot write {path}: another process has held the write lock of its folder for {}; \
         retry once it is done",
        human(*waited)
    )]
    Busy { path: String, waited: Duration },
    #[error("write journal {}: {message}", dir.display())]
    Journal { dir: PathBuf, message: String },

    // Framed streams (`framing`).
    #[error("a message of {size} bytes is larger than the limit of {limit} bytes; it was skipped")]
    TooLarge { size: usize, limit: usize },
    #[error("a message header has no Content-Length header (it had: {headers})")]
    MissingLength { headers: String },
    #[error("a message header has Content-Length `{value}`, which is not a byte count")]
    BadLength { value: String },
    #[error("a message header is longer than {limit} bytes without its closing blank line")]
    HeaderTooLong { limit: usize },
    #[error("the stream ended inside a message ({0})")]
    Truncated(String),
    #[error("a message body is not JSON: {0}")]
    NotJson(String),
    #[error(
        "the peer did not read its input for {} (the write deadline); the connection was closed",
        human(*.0)
    )]
    WriteDeadline(Duration),
    #[error("the writer's queue is full ({0} messages wait): the peer is not reading")]
    QueueFull(usize),
    #[error("the connection is closed: {0}")]
    Closed(String),
    #[error("the stream failed: {0}")]
    Stream(String),
    #[error("the run's capsule cannot be made: {message}")]
    Capsule { message: String },
}

impl Error {
    /// A framed stream's read failed.
    pub(crate) fn stream(e: io::Error) -> Self {
        Error::Stream(e.to_string())
    }

    pub(crate) fn io(
        what: &'static str,
        path: impl Into<String>,
        source: impl Into<io::Error>,
    ) -> Self {
        Error::Io { what, path: path.into(), source: Arc::new(source.into()) }
    }
}

/// Two errors are equal when they are the same kind and say the same (an I/O source compares
/// by its message, as `io::Error` has no equality of its own).
impl PartialEq for Error {
    fn eq(&self, other: &Self) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(other)
            && self.to_string() == other.to_string()
    }
}
