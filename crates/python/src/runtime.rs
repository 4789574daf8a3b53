//! The one tokio runtime of the process that every run's resources and calls live on.

use std::sync::OnceLock;

use pyo3::PyResult;

use crate::errors::AgentToolsError;

static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();

/// The shared runtime, started on first use.
pub(crate) fn runtime() -> PyResult<&'static tokio::runtime::Runtime> {
    if let Some(rt) = RUNTIME.get() {
        return Ok(rt);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("agent-tools")
        .build()
        .map_err(|e| AgentToolsError::new_err(format!("cannot start the async runtime: {e}")))?;
    // Two threads racing here: the loser's runtime is dropped unused.
    Ok(RUNTIME.get_or_init(|| rt))
}
