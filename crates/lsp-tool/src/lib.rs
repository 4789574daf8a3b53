//! Language-server supervisor, the `lsp` tool, `lsp_rename`, `lsp_code_action` and
//! diagnostics on write, usable without the facade.
#![doc = include_str!("../README.md")]

mod actions;
mod args_schema;
pub mod check;
mod code_action;
mod config;
pub mod diagnostics;
pub mod discover;
mod encoding;
mod entries;
mod error;
pub mod family;
pub mod names;
mod on_write;
mod paths;
mod pool;
mod rename;
mod scan;
mod server;
mod settled;
mod supervisor;
/// Helpers for tests that run real servers (the `testing` feature).
#[cfg(any(test, feature = "testing"))]
pub mod testing;
mod toolchain;
mod transport;
mod trust;
mod workspace_edit;

pub use lsp_types;

pub use crate::{
    actions::{Action, LspArgs, LspOutput, LspResult},
    code_action::{CODE_ACTION_DESCRIPTION, CodeActionArgs, CodeActionReport},
    config::{LspConfig, OnWriteConfig, ServerDef, ServerOverride, builtin_servers},
    error::LspError,
    on_write::{ProposedFile, WrittenFile, report::WriteDiagnostics},
    pool::ServerPool,
    rename::{RenameArgs, RenameReport},
    server::Save,
    settled::SettledReport,
    supervisor::{DocHandle, Supervisor, SyncOutcome},
};
pub use agent_tools_support::{
    Before,
    progress::{CallScope, Progress},
};

/// What the calls answer, as data: the rows of each action's [`LspResult`], the status of the
/// servers, the counts of a write's report. Serialised as the tools' structured content.
pub mod results {
    pub use crate::{
        actions::{
            Answer, CallRow, Calls, CheckRunReport, CodeActionItem, CodeActionList,
            DiagnosticsAnswer, FileDiagnostics, HoverAnswer, Located, Locations, MAX_DIAGNOSTICS,
            MAX_DOCUMENT_SYMBOLS, MAX_REFERENCES, MAX_WORKSPACE_SYMBOLS, Outline, OutlineRow,
            ProjectCheckReport, ReloadAnswer, Reloaded, ShownLocation, StatusAnswer, SymbolsAnswer,
            WorkspaceSymbolRow, WorkspaceSymbols,
        },
        on_write::report::{FileCount, Mode as WriteMode},
        rename::RenamedFile,
        server::{DiagnosticMode, DiagnosticsWait},
        supervisor::{RootStatus, ServerState},
    };
}

/// The `lsp` tool's description for a model.
pub const LSP_DESCRIPTION: &str = "Ask the language server about code. Address a symbol by file \
plus line (1-based) and symbol (text on it; `a.b` means b), or plus symbol alone as a name path \
(Class/method); no column is guessed. definition, type_definition, implementation, references, \
hover, code_actions, incoming_calls, outgoing_calls need one. diagnostics: file, or \"*\" for \
the project's checker. symbols: query or file (outline). Lists page with offset. status: \
servers, roots, what is missing. reload: restart a server.";

/// The `lsp_rename` tool's description for a model.
pub const RENAME_DESCRIPTION: &str = "Rename a symbol across the project: file, line \
(1-based), symbol (text on that line), new_name. All or nothing; refused if new_name is no \
identifier or taken, or a file changed since the server read it. Lists the changed files and the \
new diagnostics.";
