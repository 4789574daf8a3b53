//! The eval crate's integration tests, one binary: each file is a module (one link, not eight).

mod common;

mod cancel;
mod capsule;
mod idioms;
mod javascript;
mod node;
mod node_lifecycle;
mod python;
mod svg;
