//! The narrow port back into the host's tool registry: what a cell's `tool(name, args)` calls.

use std::sync::Arc;

use agent_tools_support::Tier;
use async_trait::async_trait;
use serde_json::Value;

/// Dispatches a cell's `tool(name, args)` call.
///
/// A host implements it over its registry, with the same guards, approvals and wrappers as a
/// model's call, and with the effective tier lowered to `ceiling`: the kernel's, which the
/// kernel keeps from its start to its end (a later call from a wider surface does not raise it).
/// `Ok` carries the tool's structured result when it has one, else its text as a JSON string;
/// `Err` carries the error message the cell's exception will show.
#[async_trait]
pub trait ToolBridge: Send + Sync {
    async fn call(&self, name: &str, args: Value, ceiling: Tier) -> Result<Value, String>;

    /// The highest tier the caller may reach (its surface's ceiling). A kernel started by this
    /// call keeps the lower of this and the configured `bridge_tier` as its ceiling.
    fn ceiling(&self) -> Tier {
        Tier::Exec
    }
}

/// A call's bridge at the ceiling of the kernel it serves.
pub(crate) struct KernelBridge {
    pub(crate) bridge: Arc<dyn ToolBridge>,
    pub(crate) ceiling: Tier,
}

impl KernelBridge {
    pub(crate) async fn call(&self, name: &str, args: Value) -> Result<Value, String> {
        self.bridge.call(name, args, self.ceiling).await
    }
}

/// A bridge that refuses every call: for hosts without a registry (and for tests).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoBridge;

#[async_trait]
impl ToolBridge for NoBridge {
    async fn call(&self, name: &str, _args: Value, _ceiling: Tier) -> Result<Value, String> {
        Err(format!("tool(\"{name}\"): this kernel has no tool bridge; no tools can be called"))
    }
}
