//! The narrow port back into the host's tool registry: what a cell's `tool(name, args)` calls.

use async_trait::async_trait;
use serde_json::Value;

/// Dispatches a cell's `tool(name, args)` call.
///
/// A host implements it over its registry, with the same guards, approvals and wrappers as a
/// model's call, and with the effective tier lowered to the kernel's ceiling. `Ok` carries the
/// tool's structured result when it has one, else its text as a JSON string; `Err` carries the
/// error message the cell's exception will show.
#[async_trait]
pub trait ToolBridge: Send + Sync {
    async fn call(&self, name: &str, args: Value) -> Result<Value, String>;
}

/// A bridge that refuses every call: for hosts without a registry (and for tests).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoBridge;

#[async_trait]
impl ToolBridge for NoBridge {
    async fn call(&self, name: &str, _args: Value) -> Result<Value, String> {
        Err(format!("tool(\"{name}\"): this kernel has no tool bridge; no tools can be called"))
    }
}
