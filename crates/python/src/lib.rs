//! Python bindings of the agent-tools registry: the `agent_tools._native` extension module.
#![doc = include_str!("../README.md")]
//!
//! The layer is thin on purpose: a run is assembled by the facade's run assembly
//! (`agent_tools::run::prepare_run` and `RunSetup::assemble`, as the `agent-tools` binary does),
//! JSON crosses the boundary as text, and the Python package (`python/agent_tools`) turns it
//! into dataclasses, async variants and a context manager.

mod command;
mod errors;
mod module;
mod questions;
mod run;
mod runtime;
