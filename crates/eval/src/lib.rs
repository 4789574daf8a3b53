//! Persistent Python and JavaScript kernels for the eval tool.
#![doc = include_str!("../README.md")]

mod bridge;
mod cell;
mod child;
pub mod family;
mod html;
mod js;
mod kernels;
mod launcher;
mod node;
mod payload;
mod python;
mod render;
mod running;
mod slot;
mod svg;
mod types;
mod worker;

pub use crate::{
    bridge::{NoBridge, ToolBridge},
    kernels::{EvalError, Kernels, resolve_python},
    launcher::resolve_python_on_host,
    payload::{CellPayload, PayloadOutput, Shown, payload},
    render::{images, render},
    types::{
        Bundle, CellError, CellImage, CellReport, CellStatus, DEFAULT_WAIT_SECONDS, EvalConfig,
        EvalRequest, InterruptReason, JsEngine, KernelNote, Language, MAX_WAIT_SECONDS, Output,
        StreamName,
    },
};
/// The tier a kernel's `tool()` calls may reach ([`ToolBridge::call`]'s `ceiling`).
pub use agent_tools_support::Tier;
/// Where kernels run: the run's capsule (support's contract), on the host by default.
pub use agent_tools_support::capsule::{Capsule, OnHost, Prefix};
/// A call's cancellation and progress port (support's, the same for every family).
pub use agent_tools_support::progress::{CallScope, Progress};

/// The name of the tool over this crate's kernels.
pub const TOOL_NAME: &str = "eval";

/// What the `eval` tool says it does, for every host that registers it.
pub const TOOL_DESCRIPTION: &str = "Run a cell in this conversation's persistent kernel: variables and \
imports persist, and the last expression's value is returned, as in a notebook. Python \
(default) is the project's interpreter with IPython idioms (%pip, !cmd, %%bash, %time, obj?), \
display(), DataFrames as tables and figures as images. JavaScript runs on Node.js (require, \
import, top-level await) or embedded QuickJS. tool(name, args) calls this harness's other \
tools (JavaScript: await it). A cell still running after wait_s runs on as cell N. 5 min of \
silence interrupts a cell, state kept.";

/// The Python runner shipped in this crate (stdlib only), for inspection and tests.
pub const PYTHON_RUNNER: &str = python::RUNNER;

/// The Node.js runner shipped in this crate, for inspection and tests.
pub const NODE_RUNNER: &str = node::RUNNER;
