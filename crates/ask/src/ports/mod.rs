//! Ports provided with the crate: an in-process channel (harnesses, tests) and a terminal.

pub mod channel;
pub mod terminal;
