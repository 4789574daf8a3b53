//! agent-tools-host: the `agent-tools` binary and the MCP server it runs.
//!
//! The server speaks MCP over stdio (one connection is one run) and Streamable HTTP (one
//! session is one run, expired when idle), answers 2026-07-28 clients with multi round-trip
//! requests under signed request states, and lists each client the tools it can use. Every
//! run is started by the facade's run assembly (`agent_tools::run`); this crate adds only the
//! transports, the sessions and the command line (`mcp`, `call`, `status`).

mod cli;
#[cfg(feature = "ask")]
mod elicitation;
mod entry;
mod http;
mod mcp;
#[cfg(feature = "ask")]
mod mrtr;
mod order;
mod progress;
#[cfg(feature = "ask")]
mod request_state;
mod status;
mod tool_list;
mod transport;

pub use crate::{
    entry::{exit_status, main, main_with_args},
    http::{HttpOptions, serve_http},
    mcp::serve_stdio,
    status::status_report,
    tool_list::{listed_chars, listed_tokens},
    transport::MAX_MESSAGE_BYTES,
};
