//! The eval crate's integration tests, one binary: each file is a module (one link, not eight).
// Tests, examples and test programs start and signal programs directly, on purpose.
#![allow(clippy::disallowed_methods)]

mod common;

mod cancel;
mod capsule;
mod idioms;
mod javascript;
mod long_cells;
mod node;
mod node_lifecycle;
mod python;
mod svg;
