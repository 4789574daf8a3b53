//! Calls of one connection handed to their tools in the order they arrived.
//!
//! rmcp runs each request in a task of its own, so two `tools/call` messages sent back to back
//! could reach a kernel (or a debug session, a file) in either order. The transport numbers each
//! `tools/call` as it reads it ([`Arrival`], in the request's extensions), and a call waits for
//! its turn ([`Sequencer::turn`]) until every call that arrived before it has been handed to its
//! tool: the tool's task has run up to where it first waits, which is where it queues for its
//! resource (a kernel's lock is fair, so the queue keeps that order), or the call has ended, or
//! it is waiting for the operator's answer to an approval card (later calls do not wait for a
//! person). A number that never comes to its turn (a request rmcp refused before the handler)
//! holds the calls after it for [`GAP_WAIT`] at most.

use std::{
    collections::BTreeSet,
    sync::{Arc, Mutex, PoisonError},
    time::Duration,
};

use tokio::sync::Notify;

use agent_tools::Dispatched;

/// The arrival number of a `tools/call` on its connection (or session): 1, 2, 3, …
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Arrival(pub(super) u64);

/// How long a call waits for an earlier number that never came to its turn.
const GAP_WAIT: Duration = Duration::from_secs(2);

/// The numbers a run has seen, and those already handed on.
#[derive(Default)]
pub(super) struct Sequencer {
    state: Mutex<State>,
    changed: Notify,
}

#[derive(Default)]
struct State {
    /// Every number below this one has been handed on (or given up as a gap).
    done_below: u64,
    /// Handed on, above `done_below`.
    done: BTreeSet<u64>,
    /// Taken by a call that waits for its turn or runs towards its tool.
    registered: BTreeSet<u64>,
}

impl State {
    fn finish(&mut self, n: u64) {
        self.registered.remove(&n);
        if n >= self.done_below {
            self.done.insert(n);
        }
        while self.done.remove(&self.done_below) {
            self.done_below += 1;
        }
    }
}

impl Sequencer {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits until every call that arrived before `arrival` has been handed to its tool, and
    /// returns the signal that hands this one on (fired by the surface once its tool runs, and
    /// at the latest when the last clone is dropped).
    pub(super) async fn turn(self: &Arc<Self>, arrival: Arrival) -> Dispatched {
        let n = arrival.0;
        {
            let mut state = self.state();
            if state.done_below == 0 {
                // Numbers start at 1: nothing comes before the first.
                state.done_below = 1;
            }
            state.registered.insert(n);
        }
        let mut gap_since: Option<tokio::time::Instant> = None;
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let waiting_for = {
                let mut state = self.state();
                match state.done_below {
                    below if below >= n => None,
                    below if state.registered.contains(&below) => {
                        gap_since = None;
                        Some(below)
                    }
                    // The next number has not registered: it comes soon, or never.
                    below => {
                        let since = *gap_since.get_or_insert_with(tokio::time::Instant::now);
                        if since.elapsed() >= GAP_WAIT {
                            tracing::debug!("call {below} never came to its turn; going on");
                            state.finish(below);
                            gap_since = None;
                            continue;
                        }
                        Some(below)
                    }
                }
            };
            if waiting_for.is_none() {
                break;
            }
            let _ = tokio::time::timeout(GAP_WAIT / 8, changed).await;
        }
        let sequencer = self.clone();
        Dispatched::new(move || {
            sequencer.state().finish(n);
            sequencer.changed.notify_waiters();
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::{Arrival, Sequencer};

    #[tokio::test]
    async fn calls_are_handed_on_in_arrival_order_whatever_order_their_tasks_start_in() {
        let sequencer = Arc::new(Sequencer::default());
        let order = Arc::new(std::sync::Mutex::new(Vec::new()));
        // Tasks started last-first: each still goes in its turn.
        let tasks: Vec<_> = (1..=5u64)
            .rev()
            .map(|n| {
                let (sequencer, order) = (sequencer.clone(), order.clone());
                tokio::spawn(async move {
                    let dispatched = sequencer.turn(Arrival(n)).await;
                    order.lock().unwrap().push(n);
                    dispatched.fire();
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        assert_eq!(*order.lock().unwrap(), [1, 2, 3, 4, 5]);
    }

    #[tokio::test]
    async fn a_number_that_never_comes_holds_the_next_call_only_for_a_while() {
        let sequencer = Arc::new(Sequencer::default());
        let first = sequencer.turn(Arrival(1)).await;
        drop(first); // dropped without firing: handed on all the same
        // 2 never registers; 3 goes after the gap wait.
        let third = tokio::time::timeout(std::time::Duration::from_secs(30), async {
            sequencer.turn(Arrival(3)).await
        })
        .await
        .expect("the gap is given up");
        third.fire();
        let fourth = sequencer.turn(Arrival(4)).await;
        fourth.fire();
    }
}
