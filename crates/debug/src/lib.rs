//! A Debug Adapter Protocol client and the debug tool.
//!
//! This crate is not built yet: its issue in the tracker says what it will hold.
//! It exists so the workspace has its final shape; it exports nothing.
