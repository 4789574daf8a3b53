//! A Debug Adapter Protocol client and the `debug` tool's domain API.
#![doc = include_str!("../README.md")]

pub mod adapters;
mod config;
pub mod dap_types;
mod error;
pub mod family;
mod launch;
pub mod output;
pub mod process;
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
    render::render,
    request::{DebugArgs, Operation},
    response::*,
    supervisor::{DebugSupervisor, adapter_reports},
};

/// The one duration wording (support's), kept here for callers that word the debug limits.
pub use agent_tools_support::duration::human_seconds;
/// A call's cancellation and progress port (support's, the same for every family).
pub use agent_tools_support::progress::{CallScope, Progress};

/// The tool's name.
pub const TOOL_NAME: &str = "debug";

/// The tool's description for the model: when to use it, and each operation once.
pub const TOOL_DESCRIPTION: &str = "Debug a program (Python, C/C++/Rust, Go, Dart) to see \
the state where it fails. One session per conversation; ids are per stop. Operations: \
adapters; status; breakpoints (file, lines, condition, hit_condition, log_message, remove; no \
file: lists); launch (program|module|test) returns the first stop: source, locals, stack, \
output (failures stop); attach (port|pid); continue, step_over, step_in, step_out, pause \
return the next stop; threads; stack; scopes; variables (reference); evaluate (expression); \
set_variable (reference, name, expression); output (since); input (stdin); watch: run until \
file+lines(+condition) hit, expression changes, exceptions:all raise or pattern printed; trace \
(name, launch fields): each call's args, caller, return; terminate.";
