//! The uniform shape of "this resource is not usable here": which, why, and what would fix it.

use std::fmt;

use serde::Serialize;

/// A resource a tool needs is not usable here: which, why, and what would fix it.
///
/// Rendered as `lsp: no server for root /x: marker pyproject.toml found, binary
/// basedpyright-langserver not on PATH; install with pip install basedpyright`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unavailable {
    /// The family or resource, for example `lsp` or `debug adapter debugpy`.
    pub resource: String,
    /// Why it cannot be used, in facts (what was found, what was not).
    pub reason: String,
    /// What would make it usable, for example an install command.
    pub fix: String,
}

impl Unavailable {
    pub fn new(
        resource: impl Into<String>,
        reason: impl Into<String>,
        fix: impl Into<String>,
    ) -> Self {
        Unavailable { resource: resource.into(), reason: reason.into(), fix: fix.into() }
    }
}

impl fmt::Display for Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.resource, self.reason)?;
        if !self.fix.is_empty() {
            write!(f, "; {}", self.fix)?;
        }
        Ok(())
    }
}

impl std::error::Error for Unavailable {}
