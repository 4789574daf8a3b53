//! What keeps the HTTP host answering under load: bounds on the time a client may take to send
//! its headers and its body, a bound on connections that have not yet sent a whole request
//! (when it is reached, or when the process runs out of descriptors, the oldest of them is
//! closed, so a client that talks gets through while slow ones are held), and a back-off
//! instead of a busy loop when accepting fails for lack of descriptors or memory.

use std::{
    collections::VecDeque,
    io,
    sync::{
        Mutex, PoisonError,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use tokio_util::sync::CancellationToken;

/// How long a connection may take to send the headers of a request.
pub(super) const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a request may take to send its body.
pub(super) const BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// Connections that have not yet sent a whole request's headers, at most.
const MAX_UNPROVEN: usize = 64;
/// The longest pause of the accept loop when descriptors run out.
const MAX_BACK_OFF: Duration = Duration::from_secs(1);

/// Connections that have not yet sent a whole request's headers, oldest first.
#[derive(Default)]
pub(super) struct Unproven {
    next: AtomicU64,
    waiting: Mutex<VecDeque<(u64, CancellationToken)>>,
}

impl Unproven {
    /// Takes note of a new connection; `close` ends it if it is shed. Over the bound, the
    /// oldest connection still waiting is closed.
    pub(super) fn admit(&self, close: CancellationToken) -> u64 {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        waiting.push_back((id, close));
        while waiting.len() > MAX_UNPROVEN {
            if let Some((_, oldest)) = waiting.pop_front() {
                oldest.cancel();
            }
        }
        id
    }

    /// The connection sent a whole request's headers (or ended): it is no longer shed.
    pub(super) fn proven(&self, id: u64) {
        let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        waiting.retain(|(other, _)| *other != id);
    }

    /// Closes the oldest waiting connection, freeing its descriptor; false when none waits.
    pub(super) fn shed_oldest(&self) -> bool {
        let oldest = self.waiting.lock().unwrap_or_else(PoisonError::into_inner).pop_front();
        oldest.map(|(_, close)| close.cancel()).is_some()
    }
}

/// Whether `e` from `accept` means the process (or system) is out of descriptors or memory:
/// retrying at once would only fail again.
pub(super) fn is_exhaustion(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM))
}

/// The pause after the `streak`-th exhaustion in a row: 10 ms, doubling, at most a second.
pub(super) fn back_off(streak: u32) -> Duration {
    Duration::from_millis(10u64.saturating_mul(1 << streak.min(7))).min(MAX_BACK_OFF)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn past_the_bound_the_oldest_waiting_connection_is_closed_and_a_proven_one_never() {
        let unproven = Unproven::default();
        let first = CancellationToken::new();
        let talked = CancellationToken::new();
        unproven.admit(first.clone());
        let id = unproven.admit(talked.clone());
        unproven.proven(id);
        let rest: Vec<CancellationToken> = (0..MAX_UNPROVEN)
            .map(|_| {
                let t = CancellationToken::new();
                unproven.admit(t.clone());
                t
            })
            .collect();
        assert!(first.is_cancelled(), "the oldest waiting connection is shed");
        assert!(!talked.is_cancelled(), "a connection that sent its request stays");
        assert!(rest.iter().all(|t| !t.is_cancelled()));
        assert!(unproven.shed_oldest());
        assert!(rest[0].is_cancelled());
    }

    #[test]
    fn the_back_off_grows_and_is_bounded() {
        assert_eq!(back_off(0), Duration::from_millis(10));
        assert_eq!(back_off(3), Duration::from_millis(80));
        assert_eq!(back_off(30), MAX_BACK_OFF);
        let emfile = io::Error::from_raw_os_error(libc::EMFILE);
        assert!(is_exhaustion(&emfile));
        assert!(!is_exhaustion(&io::Error::from_raw_os_error(libc::ECONNABORTED)));
    }
}
