//! The lsp crate's integration tests, one binary: each file is a module (one link, not five).
// Tests, examples and test programs start and signal programs directly, on purpose.
#![allow(clippy::disallowed_methods)]

mod bench_on_write;
mod by_symbol;
mod checker_capsule;
mod fake;
mod real;
mod shared_pool;
