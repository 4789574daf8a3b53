//! The support crate's one error type: confinement, file access and group commits.

use std::{io, path::PathBuf};

/// What failed in confined file access or a group commit. Messages say what, where, and what
/// would work; `arg` is the tool argument that named the path, so the model knows what to fix.
#[derive(Debug, thiserror::Error)]
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
    #[error("argument `{arg}`: {path} is a symlink to a missing target; refusing to follow it")]
    DanglingSymlink { arg: String, path: String },
    #[error("argument `{arg}`: {path} does not exist")]
    NotFound { arg: String, path: String },
    #[error("argument `{arg}`: {path} is a directory, not a file")]
    IsDirectory { arg: String, path: String },
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
        source: io::Error,
    },
    #[error("write journal {}: {message}", dir.display())]
    Journal { dir: PathBuf, message: String },
}

impl Error {
    pub(crate) fn io(
        what: &'static str,
        path: impl Into<String>,
        source: impl Into<io::Error>,
    ) -> Self {
        Error::Io { what, path: path.into(), source: source.into() }
    }
}
