//! Mechanisms every agent-tools family needs once: process lifetime, confined file access by
//! handle, capsules (sandboxes for a run's processes), crash-atomic group commits, Content-Length framing, the tier, the unavailable shape,
//! file-change watches and the wording of durations and counts.
//!
//! This crate is a leaf: it holds mechanisms, never family logic, and depends on no other
//! crate of the workspace. Family crates and the facade depend on it; they never copy it.

pub mod capsule;
pub mod duration;
mod error;
pub mod framing;
pub mod fs;
pub mod journal;
pub mod process;
mod tier;
mod unavailable;
pub mod watch;
pub mod words;

pub use crate::{error::Error, tier::Tier, unavailable::Unavailable};
