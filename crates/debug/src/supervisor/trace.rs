//! The `trace` operation: one call launches the program (or test) with a function
//! breakpoint, follows every call of the function and ends the session.

use std::{path::Path, sync::Arc, time::Duration};

use agent_tools_support::progress::CallScope;
use tokio::time::Instant;

use super::{DebugSupervisor, Slot, SlotInner};
use crate::{error::DebugError, request::DebugArgs, response::*};

impl DebugSupervisor {
    pub(super) async fn trace(
        &self,
        slot: &Arc<Slot>,
        inner: &mut SlotInner,
        root: &Path,
        args: &DebugArgs,
        wait: Duration,
        cancel: &CallScope,
    ) -> Result<DebugOutcome, DebugError> {
        let Some(function) = args.name.clone().filter(|n| !n.trim().is_empty()) else {
            return Err(DebugError::usage(
                "trace needs `name`: the function whose calls to follow (`fib`; Go: `main.fib` \
                 or `fib` in package main), and what to run (`program`, `module` or `test`)",
            ));
        };
        let deadline = Instant::now() + wait;
        let DebugOutcome::Started(started) =
            self.start(slot, inner, root, args, wait, cancel).await?
        else {
            return Err(DebugError::adapter("trace: the program did not start"));
        };
        let Some(session) = inner.session.as_mut() else {
            return Err(DebugError::adapter("trace: the session ended as it started"));
        };
        let mut view = session.trace(&function, started.state, deadline, cancel).await;
        if let Some(bp) = started.breakpoints.iter().find(|b| !b.verified) {
            view.ended.push_str(&format!(
                " (breakpoint at {}:{} not verified{})",
                bp.file,
                bp.requested,
                bp.message.as_ref().map(|m| format!(": {m}")).unwrap_or_default()
            ));
        }
        if let Some(mut session) = inner.session.take() {
            let report = session.teardown("trace finished").await;
            inner.last_end =
                Some(format!("the session of {} ended with its trace", report.program));
            *slot.cancel.lock() = None;
        }
        Ok(DebugOutcome::Trace(view))
    }
}
