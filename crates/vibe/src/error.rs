//! The error of every roster call.

/// Why a roster call did nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RosterError {
    UnknownWorker {
        id: String,
        known: Vec<String>,
    },
    /// The request is not usable; the text says what to change.
    Invalid(String),
    /// The worker may not run under the caller's ceiling, or nothing is configured to run it.
    Refused(String),
    /// The run is ending; no worker starts any more.
    Closed,
    /// The call was abandoned.
    Cancelled,
}

impl std::fmt::Display for RosterError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RosterError::UnknownWorker { id, known } if known.is_empty() => {
                write!(f, "no worker `{id}`: no worker has been spawned in this run")
            }
            RosterError::UnknownWorker { id, known } => {
                write!(f, "no worker `{id}`; the workers of this run are {}", known.join(", "))
            }
            RosterError::Invalid(message) | RosterError::Refused(message) => f.write_str(message),
            RosterError::Closed => f.write_str("the run is ending; no worker starts any more"),
            RosterError::Cancelled => f.write_str("cancelled"),
        }
    }
}

impl std::error::Error for RosterError {}
