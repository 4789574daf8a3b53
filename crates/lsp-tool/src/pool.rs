//! The server pool: one process per (server, root, launch) shared by every supervisor that
//! leases it, stopped when the last lease goes or the pool shuts down.
//!
//! A host serving many runs on one checkout (the HTTP host) gives every run's supervisor the
//! same pool, so twenty runs over one Python project talk to one basedpyright. What stays per
//! run lives in the [`Supervisor`](crate::Supervisor): the ledger, measured durations, the
//! documents the run opened (each server document records its holders) and its results.

use std::{
    collections::{BTreeSet, HashMap},
    hash::{Hash, Hasher},
    path::{Path, PathBuf},
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use crate::{
    config::ServerDef,
    discover::{ResolvedCommand, RootMatch},
    server::{RunId, Server},
};

/// What makes two requests for a server the same process: server id, project root, and a
/// digest of everything the launch depends on (definition, command, trust rule, timeouts), so
/// runs whose configurations differ never share.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct SlotKey {
    server: String,
    root: PathBuf,
    launch: u64,
}

impl SlotKey {
    pub(crate) fn new(
        def: &ServerDef,
        root: &Path,
        command: &ResolvedCommand,
        allow_project_code: bool,
        timeouts: (u64, u64),
    ) -> SlotKey {
        // Debug output covers every field, settings included; the hasher is keyed the same
        // way for the whole process, which is all a map key needs.
        let mut hasher = std::hash::DefaultHasher::new();
        format!("{def:?}|{command:?}|{allow_project_code}|{timeouts:?}").hash(&mut hasher);
        SlotKey { server: def.id.clone(), root: root.to_path_buf(), launch: hasher.finish() }
    }
}

#[derive(Debug, Default)]
pub(crate) struct SlotRecord {
    pub starting: bool,
    pub crashes: u32,
    /// Starts that followed a crash, for the per-minute cap.
    pub restarts: Vec<Instant>,
    pub last_crash: Option<String>,
    pub stopped: bool,
}

/// One (server, root, launch) of the pool.
pub(crate) struct Slot {
    pub def: Arc<ServerDef>,
    pub root: RootMatch,
    /// The spawn lock: held while the server starts, so concurrent calls do not start two.
    pub server: tokio::sync::Mutex<Option<Arc<Server>>>,
    /// The running server, readable without the spawn lock (for status while starting).
    pub current: Mutex<Option<Arc<Server>>>,
    pub record: Mutex<SlotRecord>,
    /// The supervisors holding a lease; the server stops when the last one releases it.
    leases: Mutex<BTreeSet<RunId>>,
}

impl Slot {
    /// How many supervisors hold a lease on this slot.
    pub(crate) fn lessees(&self) -> usize {
        self.leases.lock().len()
    }

    /// Stops the server (bounded wait for an in-flight start) and marks the slot stopped.
    async fn stop(&self) {
        let server = match tokio::time::timeout(Duration::from_secs(5), self.server.lock()).await {
            Ok(mut guard) => guard.take(),
            Err(_) => self.current.lock().clone(),
        };
        if let Some(server) = server {
            server.shutdown().await;
        }
        *self.current.lock() = None;
        self.record.lock().stopped = true;
    }
}

struct PoolInner {
    slots: Mutex<HashMap<SlotKey, Arc<Slot>>>,
    /// Cancelled by [`ServerPool::shutdown`]; every supervisor's own token is a child of it.
    closing: CancellationToken,
    next_run: AtomicU64,
    /// `--version` of each program probed, or why it does not run: one probe per host.
    versions: Mutex<HashMap<PathBuf, Result<Option<String>, String>>>,
    /// A folder outside every tree for what servers would otherwise leave in the project
    /// (clangd's compilation database copy); it lives as long as the servers may.
    private_dir: Option<tempfile::TempDir>,
    /// Bumped whenever a server of the pool starts, stops starting, or reports progress: the
    /// calls waiting on the pool's servers wake and tell their callers.
    activity: tokio::sync::watch::Sender<u64>,
}

/// Language-server processes shared by the supervisors given it. Cheap to clone.
///
/// [`Supervisor::new`](crate::Supervisor::new) makes a private pool per supervisor (the
/// behaviour of a stdio host or a library user); [`Supervisor::with_pool`](crate::Supervisor::with_pool)
/// joins a shared one. A server stops when the last supervisor using it shuts down;
/// [`ServerPool::shutdown`] stops everything still running.
#[derive(Clone)]
pub struct ServerPool {
    inner: Arc<PoolInner>,
}

impl Default for ServerPool {
    fn default() -> Self {
        ServerPool::new()
    }
}

impl std::fmt::Debug for ServerPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerPool").field("servers", &self.server_pids().len()).finish()
    }
}

impl ServerPool {
    pub fn new() -> ServerPool {
        ServerPool {
            inner: Arc::new(PoolInner {
                slots: Mutex::new(HashMap::new()),
                closing: CancellationToken::new(),
                next_run: AtomicU64::new(1),
                versions: Mutex::new(HashMap::new()),
                private_dir: tempfile::Builder::new().prefix("agent-tools-lsp-").tempdir().ok(),
                activity: tokio::sync::watch::Sender::new(0),
            }),
        }
    }

    pub(crate) fn next_run(&self) -> RunId {
        RunId(self.inner.next_run.fetch_add(1, Ordering::Relaxed))
    }

    /// A token cancelled when the pool shuts down, for a supervisor to derive its own from.
    pub(crate) fn closing(&self) -> &CancellationToken {
        &self.inner.closing
    }

    /// The sender a server bumps when what it is busy with changes.
    pub(crate) fn activity(&self) -> &tokio::sync::watch::Sender<u64> {
        &self.inner.activity
    }

    pub(crate) fn private_dir(&self) -> Option<&Path> {
        self.inner.private_dir.as_ref().map(|d| d.path())
    }

    /// `TMPDIR`, `TMP` and `TEMP` for the pool's servers: a folder inside the pool's private
    /// one, so that what a killed server could not remove (clangd's `preamble-*.pch`) goes with
    /// the pool. Empty when the private folder could not be made.
    pub(crate) fn server_temp_env(&self) -> Vec<(String, String)> {
        let Some(dir) = self.private_dir().map(|d| d.join("tmp")) else { return Vec::new() };
        #[allow(clippy::disallowed_methods, reason = "a private folder outside the project")]
        if std::fs::create_dir_all(&dir).is_err() {
            return Vec::new();
        }
        let dir = dir.display().to_string();
        ["TMPDIR", "TMP", "TEMP"].into_iter().map(|k| (k.to_string(), dir.clone())).collect()
    }

    /// The program's version (`Ok(None)` when it prints none), or why it does not run;
    /// probed once per pool.
    pub(crate) fn probe(&self, program: &Path, args: &[String]) -> Result<Option<String>, String> {
        if let Some(v) = self.inner.versions.lock().get(program) {
            return v.clone();
        }
        let v = crate::discover::probe_version(program, args);
        self.inner.versions.lock().insert(program.to_path_buf(), v.clone());
        v
    }

    /// The slot for `key`, made if needed, with a lease for `run`; `None` once the pool is
    /// shutting down.
    pub(crate) fn lease(
        &self,
        key: SlotKey,
        def: &Arc<ServerDef>,
        root: &RootMatch,
        run: RunId,
    ) -> Option<Arc<Slot>> {
        let mut slots = self.inner.slots.lock();
        if self.inner.closing.is_cancelled() {
            return None;
        }
        let slot = slots
            .entry(key)
            .or_insert_with(|| {
                Arc::new(Slot {
                    def: def.clone(),
                    root: root.clone(),
                    server: tokio::sync::Mutex::new(None),
                    current: Mutex::new(None),
                    record: Mutex::new(SlotRecord::default()),
                    leases: Mutex::new(BTreeSet::new()),
                })
            })
            .clone();
        slot.leases.lock().insert(run);
        Some(slot)
    }

    /// Gives `run`'s lease on `slot` back: the last lease stops the server; otherwise the
    /// documents only `run` held are closed on it and the server goes on for the others.
    pub(crate) async fn release(&self, slot: &Arc<Slot>, run: RunId) {
        let last = {
            let mut slots = self.inner.slots.lock();
            let mut leases = slot.leases.lock();
            if !leases.remove(&run) {
                return;
            }
            let last = leases.is_empty();
            if last {
                slots.retain(|_, s| !Arc::ptr_eq(s, slot));
            }
            last
        };
        if last {
            slot.stop().await;
        } else {
            let server = slot.current.lock().clone();
            if let Some(server) = server.filter(|s| !s.is_dead()) {
                server.release_documents(run).await;
            }
        }
    }

    /// Pids (process-group ids) of every server of the pool started and not yet reaped.
    pub fn server_pids(&self) -> Vec<u32> {
        let slots: Vec<Arc<Slot>> = self.inner.slots.lock().values().cloned().collect();
        slots.iter().filter_map(|s| s.current.lock().as_ref().map(|s| s.pid)).collect()
    }

    /// Stops every server of the pool, in parallel and bounded (see
    /// [`Supervisor::shutdown`](crate::Supervisor::shutdown)); supervisors still attached get
    /// an error from their next call.
    pub async fn shutdown(&self) {
        let slots: Vec<Arc<Slot>> = {
            let mut slots = self.inner.slots.lock();
            self.inner.closing.cancel();
            slots.drain().map(|(_, s)| s).collect()
        };
        futures_util::future::join_all(slots.iter().map(|slot| slot.stop())).await;
    }
}
