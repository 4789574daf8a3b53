//! Language-server supervisor, the lsp tool and lsp_rename.
//!
//! This crate is not built yet: its issue in the tracker says what it will hold.
//! It exists so the workspace has its final shape; it exports nothing.
