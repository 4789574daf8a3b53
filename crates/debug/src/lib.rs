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
mod error;
pub mod output;
pub mod process;
pub mod protocol;
mod render;
mod request;
mod response;
mod session;
mod supervisor;

pub use crate::{
    adapters::{AdapterKind, AdapterReport, SearchEnv},
    config::{AdapterCommands, DebugConfig, human_seconds},
    error::DebugError,
    output::{OutputChunk, OutputEntry},
    render::render,
    request::{DebugArgs, ExceptionMode, Operation},
    response::*,
    supervisor::{DebugSupervisor, adapter_reports},
};

/// The tool's name.
pub const TOOL_NAME: &str = "debug";

/// The tool's description for the model.
pub const TOOL_DESCRIPTION: &str = "Drive a debugger (Debug Adapter Protocol: debugpy for Python, \
lldb-dap for C/C++/Rust, delve for Go, dart). One session per conversation. Typical use: \
`breakpoints` (file, lines) at the suspect lines → `launch` (program) returns where it stopped, \
with the source around the line, the locals and the program's output → inspect with `evaluate` \
(expression), `variables` (reference), `stack`, `scopes` (frame_id) → `step_over`/`step_in`/\
`step_out`/`continue`, each returning the next stop → `terminate`. Uncaught exceptions and \
panics stop the program by default. Frame ids and references are valid only for the stop that \
returned them. `adapters` says which debuggers are usable here and how to install the others; \
`attach` (port) connects to a program already running under a debug server.";
