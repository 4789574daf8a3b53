//! The facade's error type and the uniform "unavailable" shape every family uses.

use std::path::PathBuf;

/// Errors of the facade's own API (configuration, dispatch, paths).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("config {file}: {message}")]
    Config { file: PathBuf, message: String },
    #[error("{0}")]
    Path(String),
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

pub use agent_tools_support::Unavailable;
