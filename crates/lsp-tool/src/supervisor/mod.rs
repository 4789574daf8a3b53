//! The supervisor: one run's view of its language servers. This file holds its state and
//! accessors; which server serves a file is in `target.rs`, starting, restarting, reloading
//! and releasing servers in `lifecycle.rs`, `status` in `status.rs`, and the documents synced
//! for diagnostics on write in `documents.rs`.

mod documents;
mod lifecycle;
mod status;
mod target;

use agent_tools_support::capsule::{Capsule, OnHost};
use std::{
    collections::HashMap,
    path::{Path, PathBuf},
    sync::Arc,
    time::Duration,
};

use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

pub(crate) use self::target::Target;
pub use self::{
    documents::{DocHandle, SyncOutcome},
    status::{RootStatus, ServerState},
};
use crate::{
    config::{LspConfig, ServerDef},
    diagnostics::Ledger,
    error::LspError,
    pool::{ServerPool, Slot},
    server::{RunId, Server, Timeouts},
    settled::SettledReport,
};

struct Inner {
    root: PathBuf,
    config: LspConfig,
    defs: Result<Vec<Arc<ServerDef>>, String>,
    extra_paths: Vec<PathBuf>,
    /// Where the servers live, shared with other runs or private to this one.
    pool: ServerPool,
    /// This run as a holder of leases and open documents in the pool.
    run: RunId,
    /// The slots this run leased, by (server id, root).
    slots: Mutex<HashMap<(String, PathBuf), Arc<Slot>>>,
    /// The run is ending (or the pool is): no server starts for it any more.
    closing: CancellationToken,
    /// A run-private folder outside the tree for what checkers would otherwise leave in the
    /// project (tsc's build info); removed with the supervisor. Servers use the pool's.
    private_dir: Option<tempfile::TempDir>,
    /// The run's diagnostics ledger (diagnostics on write, `lsp_rename`); locked only to read
    /// or update it, never across a wait.
    ledger: Mutex<Ledger>,
    /// How long each file's diagnostics took after its last write (for adaptive deadlines).
    measured: Mutex<HashMap<PathBuf, Duration>>,
    /// How long each server (by pid) took for its slowest recent file, decaying: a server
    /// that has not answered yet in this run gets the start-up wait for its first analysis.
    measured_servers: Mutex<HashMap<u32, Duration>>,
    /// Where project checks run (`cargo check` runs build scripts): the run's capsule.
    /// Servers are shared through the pool across runs, so they stay on the host.
    checker_capsule: Arc<dyn Capsule>,
    /// The background check of the files over a write's bound, while it runs.
    settling: Mutex<Option<CancellationToken>>,
    /// What those checks found, for the head of the run's next result.
    settled: Mutex<Vec<SettledReport>>,
}

/// The language-server supervisor of one run. Cheap to clone.
#[derive(Clone)]
pub struct Supervisor {
    inner: Arc<Inner>,
}

pub(crate) fn server_label(server: &Server) -> String {
    if let Some(name) = &server.server_name {
        let name = name.trim_end_matches(" language server").trim_end_matches("-language-server");
        return name.to_string();
    }
    server
        .command
        .program
        .file_name()
        .map(|n| n.to_string_lossy().trim_end_matches("-langserver").to_string())
        .unwrap_or_else(|| server.def.id.clone())
}

impl Supervisor {
    /// A supervisor for the run rooted at `root` (made canonical) with servers of its own. A
    /// broken `[lsp]` section is reported by every call instead of failing the run.
    pub fn new(root: impl Into<PathBuf>, config: LspConfig) -> Supervisor {
        Supervisor::with_pool(root, config, ServerPool::new())
    }

    /// A supervisor whose servers come from `pool`, shared with the other supervisors of the
    /// pool that want the same server for the same root with the same launch. Its ledger,
    /// measured durations, open documents and results stay its own; [`Supervisor::shutdown`]
    /// gives its leases back (the last one stops the server).
    pub fn with_pool(root: impl Into<PathBuf>, config: LspConfig, pool: ServerPool) -> Supervisor {
        Supervisor::in_capsule(root, config, pool, Arc::new(OnHost))
    }

    /// [`Supervisor::with_pool`] whose project checks run in `capsule`, the run's.
    pub fn in_capsule(
        root: impl Into<PathBuf>,
        config: LspConfig,
        pool: ServerPool,
        capsule: Arc<dyn Capsule>,
    ) -> Supervisor {
        let root = root.into();
        let root = std::fs::canonicalize(&root).unwrap_or(root);
        let defs = config.servers().map(|d| d.into_iter().map(Arc::new).collect());
        let extra_paths = config.extra_paths.iter().map(|p| expand_home(p)).collect();
        Supervisor {
            inner: Arc::new(Inner {
                root,
                config,
                defs,
                extra_paths,
                run: pool.next_run(),
                closing: pool.closing().child_token(),
                pool,
                slots: Mutex::new(HashMap::new()),
                private_dir: tempfile::Builder::new().prefix("agent-tools-lsp-").tempdir().ok(),
                ledger: Mutex::new(Ledger::new()),
                measured: Mutex::new(HashMap::new()),
                measured_servers: Mutex::new(HashMap::new()),
                checker_capsule: capsule,
                settling: Mutex::new(None),
                settled: Mutex::new(Vec::new()),
            }),
        }
    }

    pub fn root(&self) -> &Path {
        &self.inner.root
    }

    /// The pool this supervisor's servers come from.
    pub fn pool(&self) -> &ServerPool {
        &self.inner.pool
    }

    /// This run as a holder of open documents on its servers.
    pub(crate) fn run_id(&self) -> RunId {
        self.inner.run
    }

    /// Where this run's project checks start.
    pub(crate) fn checker_capsule(&self) -> &dyn Capsule {
        self.inner.checker_capsule.as_ref()
    }

    pub(crate) fn extra_paths(&self) -> &[PathBuf] {
        &self.inner.extra_paths
    }

    /// Whether code the project controls may run (project-local binaries, build scripts, the
    /// project's interpreter).
    pub fn allow_project_code(&self) -> bool {
        self.inner.config.allow_project_code
    }

    /// The run's diagnostics ledger.
    pub fn ledger(&self) -> &Mutex<Ledger> {
        &self.inner.ledger
    }

    pub(crate) fn measured(&self, path: &Path) -> Option<Duration> {
        self.inner.measured.lock().get(path).copied()
    }

    pub(crate) fn record_measured(&self, path: &Path, server: u32, took: Duration) {
        self.inner.measured.lock().insert(path.to_path_buf(), took);
        let mut servers = self.inner.measured_servers.lock();
        let typical = servers.entry(server).or_insert(took);
        // The slowest recent answer, decaying by a quarter per answer.
        *typical = took.max(*typical * 3 / 4);
    }

    /// The server's typical time for a file's diagnostics in this run (`None`: none yet).
    pub(crate) fn measured_server(&self, server: u32) -> Option<Duration> {
        self.inner.measured_servers.lock().get(&server).copied()
    }

    /// The run-private folder outside the tree, if it could be made.
    pub(crate) fn private_dir(&self) -> Option<&Path> {
        self.inner.private_dir.as_ref().map(|d| d.path())
    }

    /// Cancelled when the run ends.
    pub(crate) fn closing_token(&self) -> &CancellationToken {
        &self.inner.closing
    }

    /// Sets the running background check, returning the one it replaces.
    pub(crate) fn replace_settling(
        &self,
        token: Option<CancellationToken>,
    ) -> Option<CancellationToken> {
        std::mem::replace(&mut *self.inner.settling.lock(), token)
    }

    pub(crate) fn push_settled(&self, report: SettledReport) {
        self.inner.settled.lock().push(report);
    }

    /// What the background checks of the files over a write's bound found since the last
    /// call, oldest first; a harness puts it at the head of the run's next result.
    pub fn take_settled(&self) -> Vec<SettledReport> {
        std::mem::take(&mut *self.inner.settled.lock())
    }

    pub fn config(&self) -> &LspConfig {
        &self.inner.config
    }

    pub(crate) fn defs(&self) -> Result<&[Arc<ServerDef>], LspError> {
        self.inner.defs.as_deref().map_err(|e| LspError::Invalid(format!("configuration: {e}")))
    }

    pub(crate) fn timeouts(&self) -> Timeouts {
        Timeouts {
            request: Duration::from_millis(self.inner.config.request_timeout_ms),
            startup: Duration::from_millis(self.inner.config.startup_timeout_ms),
        }
    }
}

fn expand_home(p: &str) -> PathBuf {
    match p.strip_prefix("~/") {
        Some(rest) => std::env::var_os("HOME").map(PathBuf::from).unwrap_or_default().join(rest),
        None => PathBuf::from(p),
    }
}
