//! Persistent Python and JavaScript kernels for the eval tool.
//!
//! A cell's variables, imports and loaded data persist between calls; the value of its last
//! expression is returned as in a notebook; `display()`, pandas tables and matplotlib figures
//! come back as rich output; `tool(name, args)` calls back into the host's tool registry through
//! the narrow [`ToolBridge`] port, over the kernel's own pipe (no port, no socket, no token).
//!
//! - Python runs as a child process of the project's own interpreter (`.venv/bin/python`,
//!   `venv/bin/python`, `python3` on PATH) with a stdlib-only runner shipped in this crate.
//! - JavaScript runs on Node.js (a child process of `node`) when it resolves, else on QuickJS-NG
//!   (rquickjs), embedded, on a thread of its own.
//! - The cell timeout is an inactivity budget, suspended while a bridged call is pending.
//!
//! ```no_run
//! # async fn demo() {
//! use std::sync::Arc;
//! use agent_tools_eval::{EvalConfig, EvalRequest, Kernels, NoBridge, NoProgress, render};
//!
//! let kernels = Kernels::new(EvalConfig::default());
//! let request = EvalRequest {
//!     code: "x = 21\nx * 2".into(),
//!     description: "double a number".into(),
//!     language: None,
//!     reset: None,
//! };
//! let cancel = tokio_util::sync::CancellationToken::new();
//! let report = kernels
//!     .eval("conversation-1", std::path::Path::new("."), request, Arc::new(NoBridge), &cancel, &NoProgress)
//!     .await
//!     .unwrap();
//! assert!(render(&report).ends_with("Out[1]: 42"));   // after a `[started Python 3.x …]` line
//! kernels.shutdown().await;
//! # }
//! ```

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
