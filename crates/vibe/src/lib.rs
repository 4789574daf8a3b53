//! Background workers: the vibe_* tools over a worker roster.
//!
//! This crate is not built yet: its issue in the tracker says what it will hold.
//! It exists so the workspace has its final shape; it exports nothing.
