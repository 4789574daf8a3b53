//! Persistent Python and JavaScript kernels for the eval tool.
#![doc = include_str!("../README.md")]

mod bridge;
mod cell;
mod child;
mod html;
mod js;
mod kernels;
mod launcher;
mod node;
mod payload;
mod python;
mod render;
mod svg;
mod types;

pub use crate::{
    bridge::{NoBridge, ToolBridge},
    cell::{CellProgress, NoProgress},
    kernels::{EvalError, Kernels, resolve_python},
    launcher::resolve_python_on_host,
    payload::{CellPayload, PayloadOutput, Shown, payload},
    render::{images, render},
    types::{
        Bundle, CellError, CellImage, CellReport, CellStatus, EvalConfig, EvalRequest,
        InterruptReason, JsEngine, KernelNote, Language, Output, StreamName,
    },
};
/// Where kernels run: the run's capsule (support's contract), on the host by default.
pub use agent_tools_support::capsule::{Capsule, OnHost, Prefix};

/// The Python runner shipped in this crate (stdlib only), for inspection and tests.
pub const PYTHON_RUNNER: &str = python::RUNNER;

/// The Node.js runner shipped in this crate, for inspection and tests.
pub const NODE_RUNNER: &str = node::RUNNER;
