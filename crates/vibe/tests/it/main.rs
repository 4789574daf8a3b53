//! The vibe crate's integration tests, one binary: each file is a module (one link, not two).

mod roster;
mod worker_lifetime;
