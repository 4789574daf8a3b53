//! The debug crate's integration tests, one binary: each file is a module (one link, not six).

mod support;

mod capsule;
mod debugpy;
mod debugpy_processes;
mod delve;
mod fake;
mod lldb;
