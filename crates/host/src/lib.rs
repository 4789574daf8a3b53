//! agent-tools-host: the `agent-tools` binary and the MCP server it runs.
#![doc = include_str!("../README.md")]

mod cli;
#[cfg(feature = "ask")]
mod elicitation;
mod entry;
mod envelope;
mod http;
mod mcp;
#[cfg(feature = "ask")]
mod mrtr;
mod order;
#[cfg(feature = "ask")]
mod ports;
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
