//! The error of every roster call.

/// Why a roster call did nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RosterError {
    #[error("{}", unknown_worker(id, known))]
    UnknownWorker { id: String, known: Vec<String> },
    /// The request is not usable; the text says what to change.
    #[error("{0}")]
    Invalid(String),
    /// The worker may not run under the caller's ceiling, or nothing is configured to run it.
    #[error("{0}")]
    Refused(String),
    /// The run is ending; no worker starts any more.
    #[error("the run is ending; no worker starts any more")]
    Closed,
    /// The call was abandoned.
    #[error("cancelled")]
    Cancelled,
}

/// "no worker `id`", and which workers there are.
fn unknown_worker(id: &str, known: &[String]) -> String {
    if known.is_empty() {
        format!("no worker `{id}`: no worker has been spawned in this run")
    } else {
        format!("no worker `{id}`; the workers of this run are {}", known.join(", "))
    }
}
