//! End-to-end tests: the `agent-tools` host driven by real MCP clients (the official Python and
//! TypeScript SDKs, the Inspector CLI, Claude Code, Codex, the conformance suite).

#![allow(clippy::print_stderr, unreachable_pub)]
// Tests, examples and test programs start and signal programs directly, on purpose.
#![allow(clippy::disallowed_methods)]

mod ask_over_mcp;
mod astgrep_over_mcp;
mod capsule_over_mcp;
mod cli;
mod clients;
mod conformance;
mod debug_over_mcp;
mod eval_over_mcp;
mod files_large;
mod files_over_mcp;
mod files_racing;
mod files_special;
mod host_killed;
mod host_over_mcp;
mod http_host;
mod http_over_mcp;
mod http_protocol;
mod http_shared_lsp;
mod lsp_over_mcp;
mod matrix;
mod output_cap_over_mcp;
mod support;
mod trust_over_mcp;
mod vibe_over_mcp;
