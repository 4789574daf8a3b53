//! Structural search (ast_grep), staged rewrite (ast_edit) and resolve on tree-sitter.
//!
//! This crate is not built yet: its issue in the tracker says what it will hold.
//! It exists so the workspace has its final shape; it exports nothing.
