//! A Debug Adapter Protocol client and the `debug` tool's domain API.
//!
//! [`DebugSupervisor`] keeps one debug session per conversation: it starts an adapter (debugpy,
//! lldb-dap, delve or dart), runs the handshake in the order every one of them accepts, answers
//! each operation of the `debug` tool within its limits, returns stop snapshots (reason, thread,
//! top user frame with source lines, locals, new output) from the calls that let the program
//! run, and ends sessions deterministically: on `terminate`, when the time limit passes, and at
//! [`DebugSupervisor::shutdown`].
//!
//! ```no_run
//! # async fn demo() -> Result<(), agent_tools_debug::DebugError> {
//! use agent_tools_debug::{DebugArgs, DebugConfig, DebugSupervisor, Operation, render};
//! use tokio_util::sync::CancellationToken;
//!
//! let debug = DebugSupervisor::new(DebugConfig::default());
//! let root = std::path::Path::new("/work/project");
//! let cancel = CancellationToken::new();
//! let mut bp = DebugArgs::op(Operation::Breakpoints);
//! bp.file = Some("app.py".into());
//! bp.lines = Some(vec![12]);
//! debug.call("conversation-1", root, bp, &cancel).await?;
//! let mut launch = DebugArgs::op(Operation::Launch);
//! launch.program = Some("app.py".into());
//! let outcome = debug.call("conversation-1", root, launch, &cancel).await?;
//! println!("{}", render(&outcome));
//! debug.shutdown().await;
//! # Ok(()) }
//! ```

pub mod adapters;
mod config;
pub mod dap_types;
mod error;
mod launch;
pub mod output;
pub mod process;
pub mod progress;
pub mod protocol;
mod render;
mod request;
mod response;
mod schema;
mod session;
mod supervisor;

pub use crate::{
    adapters::{AdapterKind, AdapterReport, ExceptionMode, SearchEnv},
    config::{AdapterCommands, DebugConfig},
    error::DebugError,
    output::{OutputChunk, OutputEntry},
    progress::{CallScope, ProgressPort},
    render::render,
    request::{DebugArgs, Operation},
    response::*,
    supervisor::{DebugSupervisor, adapter_reports},
};

/// The one duration wording (support's), kept here for callers that word the debug limits.
pub use agent_tools_support::duration::human_seconds;

/// The tool's name.
pub const TOOL_NAME: &str = "debug";

/// The tool's description for the model: when to use it, and each operation once.
pub const TOOL_DESCRIPTION: &str = "Debug a program (debugpy: Python, lldb-dap: C/C++/Rust, \
delve: Go, dart) to see why it fails: the state at the failing line. One session per \
conversation; ids hold for the stop that gave them. Operations: adapters; status; breakpoints \
(file, lines: each its own condition, hit_condition, log_message; remove; no file: list); launch (program|module|test) returns the first stop: source, locals, stack, \
output (uncaught exceptions stop); attach (port|pid); continue, step_over, step_in, step_out, \
pause return the next stop; threads; stack; scopes; variables (reference); evaluate \
(expression); set_variable (reference, name, expression); output (newest; since pages back); \
input (stdin); terminate.";
