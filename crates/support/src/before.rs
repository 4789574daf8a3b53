//! What a file held before a call changed it, as the writer knows it: the baseline of
//! diagnostics on write and of any wrapper that compares before and after.

use std::sync::Arc;

/// A changed file's contents before the call.
#[derive(Debug, Clone, PartialEq)]
pub enum Before {
    /// The writer did not record it (then what is there now is the baseline).
    Unknown,
    /// The file did not exist (the call created it).
    Absent,
    Contents(Arc<[u8]>),
}
