//! Language-server supervisor, the `lsp` tool and `lsp_rename`, usable without the facade.
//!
//! - [`Supervisor`]: one per run. Finds the server and root of a file (root marker ∧ binary),
//!   starts one process per (server, root) lazily under a spawn lock, answers every server
//!   request, tracks readiness, restarts crashed servers with a cap, and shuts everything down.
//! - [`Supervisor::call`] runs the ten actions of `lsp` ([`LspArgs`]); [`Supervisor::rename`]
//!   runs `lsp_rename` ([`RenameArgs`]). Both return model-facing text plus structured data.
//! - For diagnostics on write: [`Supervisor::sync_document`], [`Supervisor::document_diagnostics`]
//!   (pull where offered, push otherwise, for exactly the synced version) and the [`Ledger`].
//!
//! Columns are converted in one place ([`encoding::convert_column`]); UTF-8 is offered first.

mod actions;
pub mod check;
mod config;
pub mod diagnostics;
pub mod discover;
pub mod encoding;
mod error;
pub mod paths;
mod rename;
mod server;
mod spawn;
mod supervisor;
#[doc(hidden)]
pub mod testing;
mod transport;

pub use lsp_types;

pub use crate::{
    actions::{
        Action, Located, LspArgs, LspOutput, MAX_DIAGNOSTICS, MAX_DOCUMENT_SYMBOLS, MAX_REFERENCES,
        MAX_WORKSPACE_SYMBOLS, locate,
    },
    config::{LspConfig, OnWriteConfig, ServerDef, ServerOverride, builtin_servers},
    diagnostics::{Diagnostic, Ledger, LedgerDelta, Severity},
    error::LspError,
    rename::{
        EditOp, EditPlan, RenameArgs, apply_text_edits, parse_workspace_edit, plan_edit, write_plan,
    },
    server::{DiagnosticMode, DiagnosticsWait, Progress, join_all, process_group_alive},
    supervisor::{DocHandle, RootStatus, ServerState, Supervisor, SyncOutcome},
};

/// The `lsp` tool's description for a model.
pub const LSP_DESCRIPTION: &str = "Ask the language server about code. Address a symbol by `line` (1-based) plus `symbol` \
(text on that line naming it); columns are never guessed. Actions: definition, type_definition, implementation, \
references (≤50), hover, code_actions (listed, not applied) need file+line+symbol; diagnostics needs file (or \"*\" \
for the project's checker); symbols takes query (workspace, ≤100) or file (outline, ≤200); status says which servers \
run and what is missing; reload restarts a server.";

/// The `lsp_rename` tool's description for a model.
pub const RENAME_DESCRIPTION: &str = "Rename a symbol across the project through the language server: give file, \
line (1-based), symbol (text on that line) and new_name. All or nothing: every file is checked and written \
atomically, or none is. Lists the files and edits changed.";
