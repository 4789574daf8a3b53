//! The vibe crate's integration tests, one binary: each file is a module (one link, not two).
// Tests write their fixtures by path and start programs directly, on purpose.
#![allow(clippy::disallowed_methods)]

mod roster;
mod worker_lifetime;
