//! The support crate's integration tests, one binary: each file is a module (one link, not five).
// Tests, examples and test programs start and signal programs directly, on purpose.
#![allow(clippy::disallowed_methods)]

mod capsule;
mod confined_writes;
mod crash_atomic;
mod framing;
mod process;

/// The harness's name of test `test` in the module `module_path` (`module_path!()` there), for a
/// test that runs one test of this binary in a child process.
fn harness_name(module_path: &str, test: &str) -> String {
    let module = module_path.split_once("::").map_or("", |(_, m)| m);
    format!("{module}::{test}")
}
