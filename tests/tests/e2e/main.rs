//! End-to-end tests: the `agent-tools` host driven by the official Python MCP client.

#![allow(clippy::print_stderr, unreachable_pub)]

mod cli;
mod files_over_mcp;
mod support;
