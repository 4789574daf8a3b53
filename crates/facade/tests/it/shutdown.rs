//! The end of a run: every resource is stopped, all at once.

use std::{sync::Arc, time::Duration};

use agent_tools::{RegistryBuilder, RunResource};
use async_trait::async_trait;
use tokio::sync::Barrier;

/// A resource whose shutdown finishes only once every other one has started its own.
struct WaitsForTheOthers(Arc<Barrier>);

#[async_trait]
impl RunResource for WaitsForTheOthers {
    async fn shutdown(&self) {
        self.0.wait().await;
    }
}

#[tokio::test]
async fn a_resource_slow_to_stop_does_not_hold_up_the_others() {
    let barrier = Arc::new(Barrier::new(3));
    let registry = (0..3)
        .fold(RegistryBuilder::new(), |builder, _| {
            builder.with_resource(Arc::new(WaitsForTheOthers(barrier.clone())))
        })
        .build();
    // One after another, the first would wait for the others forever; the bound only ends a hang.
    let ended = tokio::time::timeout(Duration::from_secs(60), registry.shutdown()).await;
    assert!(ended.is_ok(), "the resources were stopped one after another");
}
