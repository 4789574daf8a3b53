//! The debug crate's integration tests, one binary: each file is a module (one link, not six).
// Tests, examples and test programs start and signal programs directly, on purpose.
#![allow(clippy::disallowed_methods)]

mod support;

mod capsule;
mod debugpy;
mod debugpy_breakpoints;
mod debugpy_processes;
mod delve;
mod fake;
mod lldb;
mod test_runners;
mod trace;
mod watch;
