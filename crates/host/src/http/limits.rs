//! What keeps the HTTP host answering under load: bounds on the time a client may take to send
//! its headers and its body; bounds on the connections held, all peers together and per peer
//! address for connections that have sent a request; a bound on connections that have not yet
//! sent a whole request (when it is reached, when all connections together reach theirs, or
//! when the process runs out of descriptors, the oldest of them is closed, so a client that
//! talks gets through while slow ones are held); and a back-off instead of a busy loop when
//! accepting fails for lack of descriptors or memory.

use std::{
    collections::{HashMap, VecDeque},
    io,
    net::IpAddr,
    sync::{Mutex, PoisonError},
    time::Duration,
};

use tokio_util::sync::CancellationToken;

/// How long a connection may take to send the headers of a request (`[mcp]
/// header_timeout_seconds`).
pub(super) const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a request may take to send its body (`[mcp] body_timeout_seconds`).
pub(super) const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// Connections held at once (`[mcp] max_connections`).
pub(super) const DEFAULT_MAX_CONNECTIONS: usize = 256;
/// Connections that have sent a request, per peer address (`[mcp] max_connections_per_peer`).
pub(super) const DEFAULT_MAX_PER_PEER: usize = 64;
/// Connections that have not yet sent a whole request's headers, at most.
const MAX_UNPROVEN: usize = 64;
/// The longest pause of the accept loop when descriptors run out.
const MAX_BACK_OFF: Duration = Duration::from_secs(1);

/// The bounds on connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ConnectionLimits {
    /// All connections, whatever they have sent.
    pub(super) total: usize,
    /// Connections that have sent a request, per peer address.
    pub(super) per_peer: usize,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        ConnectionLimits { total: DEFAULT_MAX_CONNECTIONS, per_peer: DEFAULT_MAX_PER_PEER }
    }
}

/// One connection held: its peer, whether it has sent a request, and how to close it.
struct Held {
    peer: IpAddr,
    talking: bool,
    close: CancellationToken,
}

#[derive(Default)]
struct Table {
    next: u64,
    held: HashMap<u64, Held>,
    /// Connections that have sent no whole request yet, oldest first.
    unproven: VecDeque<u64>,
    /// Connections that have sent a request, per peer.
    talking: HashMap<IpAddr, usize>,
}

impl Table {
    /// Forgets `id`; its close token is cancelled when `close` is set.
    fn remove(&mut self, id: u64, close: bool) {
        let Some(held) = self.held.remove(&id) else { return };
        if close {
            held.close.cancel();
        }
        if held.talking {
            if let Some(count) = self.talking.get_mut(&held.peer) {
                *count = count.saturating_sub(1);
                if *count == 0 {
                    self.talking.remove(&held.peer);
                }
            }
        } else {
            self.unproven.retain(|other| *other != id);
        }
    }

    /// Closes the oldest connection that has sent no request; false when there is none.
    fn shed_oldest(&mut self) -> bool {
        match self.unproven.front().copied() {
            Some(oldest) => {
                self.remove(oldest, true);
                true
            }
            None => false,
        }
    }
}

/// Why a connection is not served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Refused {
    /// All connections together are at their bound, and every one of them has sent a request.
    Full { limit: usize },
    /// This peer's connections that have sent a request are at their bound.
    PeerFull { peer: IpAddr, limit: usize },
}

impl Refused {
    /// What the client is told (HTTP 503).
    pub(super) fn message(&self) -> String {
        match self {
            Refused::Full { limit } => format!(
                "the server holds {limit} connections already ([mcp] max_connections), each busy \
                 with a request; retry once one of yours has ended"
            ),
            Refused::PeerFull { peer, limit } => format!(
                "{peer} holds {limit} connections with requests already ([mcp] \
                 max_connections_per_peer); reuse a connection or close one, then retry"
            ),
        }
    }
}

/// Every connection the host holds, with the bounds on them.
pub(super) struct Connections {
    limits: ConnectionLimits,
    table: Mutex<Table>,
}

impl Connections {
    pub(super) fn new(limits: ConnectionLimits) -> Connections {
        Connections { limits, table: Mutex::default() }
    }

    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes note of a new connection from `peer`; `close` ends it if it is shed. Over a
    /// bound, the oldest connection that has sent no request is closed; when every connection
    /// has sent one, the new connection is refused.
    pub(super) fn admit(&self, peer: IpAddr, close: CancellationToken) -> Result<u64, Refused> {
        let mut table = self.table();
        if table.held.len() >= self.limits.total && !table.shed_oldest() {
            return Err(Refused::Full { limit: self.limits.total });
        }
        let id = table.next;
        table.next += 1;
        table.held.insert(id, Held { peer, talking: false, close });
        table.unproven.push_back(id);
        while table.unproven.len() > MAX_UNPROVEN {
            table.shed_oldest();
        }
        Ok(id)
    }

    /// The connection `id` sent a whole request's headers: it is no longer shed, and counts
    /// against its peer's bound from now on. Refused when its peer is at that bound.
    pub(super) fn talked(&self, id: u64) -> Result<(), Refused> {
        let mut table = self.table();
        let Some(held) = table.held.get(&id) else { return Ok(()) };
        if held.talking {
            return Ok(());
        }
        let peer = held.peer;
        let talking = table.talking.get(&peer).copied().unwrap_or(0);
        if talking >= self.limits.per_peer {
            return Err(Refused::PeerFull { peer, limit: self.limits.per_peer });
        }
        table.unproven.retain(|other| *other != id);
        if let Some(held) = table.held.get_mut(&id) {
            held.talking = true;
        }
        *table.talking.entry(peer).or_default() += 1;
        Ok(())
    }

    /// The connection `id` ended.
    pub(super) fn ended(&self, id: u64) {
        self.table().remove(id, false);
    }

    /// Closes the oldest connection that has sent no request, freeing its descriptor; false
    /// when there is none.
    pub(super) fn shed_oldest(&self) -> bool {
        self.table().shed_oldest()
    }
}

/// `total` lowered to half the process's descriptor limit (at least 16), so that connections
/// leave descriptors for what the runs start (language servers, kernels, their pipes).
pub(super) fn within_descriptors(total: usize) -> usize {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes into the struct it is given and reads nothing else.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return total;
    }
    let half = usize::try_from(limit.rlim_cur / 2).unwrap_or(usize::MAX);
    total.min(half.max(16))
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

    const LOCAL: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);
    const OTHER: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 7));

    fn admit(connections: &Connections, peer: IpAddr) -> (u64, CancellationToken) {
        let token = CancellationToken::new();
        let id = connections.admit(peer, token.clone()).expect("admitted");
        (id, token)
    }

    #[test]
    fn past_the_bound_the_oldest_waiting_connection_is_closed_and_a_proven_one_never() {
        let connections = Connections::new(ConnectionLimits::default());
        let (_, first) = admit(&connections, LOCAL);
        let (id, talked) = admit(&connections, LOCAL);
        connections.talked(id).unwrap();
        let rest: Vec<CancellationToken> =
            (0..MAX_UNPROVEN).map(|_| admit(&connections, LOCAL).1).collect();
        assert!(first.is_cancelled(), "the oldest waiting connection is shed");
        assert!(!talked.is_cancelled(), "a connection that sent its request stays");
        assert!(rest.iter().all(|t| !t.is_cancelled()));
        assert!(connections.shed_oldest());
        assert!(rest[0].is_cancelled());
    }

    #[test]
    fn a_peer_at_its_bound_is_refused_while_others_and_silent_connections_are_not() {
        let connections = Connections::new(ConnectionLimits { total: 8, per_peer: 2 });
        let busy: Vec<u64> = (0..2).map(|_| admit(&connections, LOCAL).0).collect();
        for id in &busy {
            connections.talked(*id).unwrap();
        }
        let (third, _) = admit(&connections, LOCAL);
        let refused = connections.talked(third).expect_err("a third busy connection");
        assert_eq!(refused, Refused::PeerFull { peer: LOCAL, limit: 2 });
        assert!(refused.message().contains("max_connections_per_peer"), "{}", refused.message());
        let (other, _) = admit(&connections, OTHER);
        connections.talked(other).expect("another peer has its own bound");
        connections.ended(busy[0]);
        let (again, _) = admit(&connections, LOCAL);
        connections.talked(again).expect("a slot freed by an ended connection");
    }

    #[test]
    fn all_connections_together_shed_silent_ones_first_and_then_refuse() {
        let connections = Connections::new(ConnectionLimits { total: 3, per_peer: 3 });
        let (silent, silent_token) = admit(&connections, OTHER);
        let busy: Vec<u64> = (0..2).map(|_| admit(&connections, LOCAL).0).collect();
        for id in &busy {
            connections.talked(*id).unwrap();
        }
        let (next, _) = admit(&connections, LOCAL);
        assert!(silent_token.is_cancelled(), "the silent connection made room");
        connections.ended(silent);
        connections.talked(next).unwrap();
        let full = connections.admit(LOCAL, CancellationToken::new()).expect_err("all busy");
        assert_eq!(full, Refused::Full { limit: 3 });
        connections.ended(next);
        admit(&connections, LOCAL);
    }

    #[test]
    fn the_bound_on_all_connections_leaves_descriptors_for_the_runs() {
        let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        // SAFETY: as in `within_descriptors`.
        assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) }, 0);
        let half = usize::try_from(limit.rlim_cur / 2).unwrap_or(usize::MAX).max(16);
        assert_eq!(within_descriptors(usize::MAX), half);
        assert_eq!(within_descriptors(3), 3);
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
