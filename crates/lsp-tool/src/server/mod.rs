//! One language-server process: requests and a bounded shutdown here; the start and
//! `initialize` in `start.rs`, the server's own messages in `handler.rs`, and document sync,
//! diagnostics and readiness in the submodules of the same names.
//!
//! The process is started through `agent-tools-support`'s process lifetime: its own process
//! group (so SIGTERM/SIGKILL reach the helpers it starts, such as tsserver or `go list`), death
//! with the host, a watchdog for its descendants; its stderr is drained into tracing and a
//! small ring kept for crash reports.

mod capabilities;
mod diagnostics;
mod documents;
mod handler;
mod messages;
mod readiness;
mod start;
mod watched;

pub(crate) use documents::RunId;
pub use documents::Save;
pub(crate) use readiness::Scope;

use std::{
    collections::{HashMap, VecDeque},
    path::PathBuf,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant, SystemTime},
};

use agent_tools_support::process::ProcessGroup;
use parking_lot::Mutex;
use serde::Serialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub(crate) use self::capabilities::{Capabilities, Feature};
use self::handler::Shared;
use crate::{
    config::ServerDef,
    discover::ResolvedCommand,
    encoding::ColumnUnit,
    transport::{RequestError, Rpc},
};

/// Bytes of stderr kept for crash reports.
const STDERR_TAIL_BYTES: usize = 8 * 1024;
/// After a versionless push, how long to wait for a follow-up push before taking it.
const VERSIONLESS_SETTLE: Duration = Duration::from_millis(150);

/// Timeouts a server works with.
#[derive(Debug, Clone)]
pub(crate) struct Timeouts {
    pub request: Duration,
    pub startup: Duration,
}

/// Work the server reported with `$/progress` (or a server-specific status).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub(crate) struct WorkDone {
    pub title: String,
    pub message: Option<String>,
    pub percentage: Option<u32>,
}

/// A document as the server last saw it.
#[derive(Debug, Clone)]
struct Doc {
    version: i32,
    text: String,
    mtime: Option<SystemTime>,
    len: u64,
    /// `push_seq` just before the last didOpen/didChange.
    sent_seq: u64,
    /// The runs that opened it (runs of a pool share the server); closed when the last lets go.
    holders: std::collections::BTreeSet<RunId>,
    /// The server's content-change count right after this document's last didOpen/didChange:
    /// a smaller count than the server's now means another file changed since, and a push
    /// for this version may predate that change.
    changes_at: u64,
}

/// A document after a sync: the version the server now has.
#[derive(Debug, Clone)]
pub(crate) struct SyncedDoc {
    pub path: PathBuf,
    pub version: i32,
    pub text: String,
    sent_seq: u64,
    /// A push counts only if it arrived after this sequence number (0: any push of the
    /// version); set when re-checking an unchanged open file after another file changed.
    min_seq: u64,
    /// The same text sent again after another file changed: a push server may publish this
    /// version first from what it had, then again once the change reached it, so the pushes
    /// are taken once they go quiet.
    settle: bool,
    /// Only a push carrying a version counts (a file opened to be checked, see
    /// [`Server::diagnostics`]).
    pub versioned_only: bool,
}

/// Why the diagnostics of a version could not be had.
#[derive(Debug, Clone, PartialEq)]
pub enum DiagnosticsWait {
    /// The deadline passed; `indexing` says what the server was busy with.
    Timeout {
        waited: Duration,
        indexing: Option<String>,
    },
    Cancelled,
    /// The server exited.
    Closed,
    Failed(String),
}

impl std::fmt::Display for DiagnosticsWait {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DiagnosticsWait::Timeout { indexing: Some(what), .. } => write!(f, "server {what}"),
            DiagnosticsWait::Timeout { waited, .. } => {
                write!(f, "no diagnostics for this version within {} ms", waited.as_millis())
            }
            DiagnosticsWait::Cancelled => write!(f, "cancelled"),
            DiagnosticsWait::Closed => write!(f, "server exited"),
            DiagnosticsWait::Failed(e) => write!(f, "{e}"),
        }
    }
}

/// How a server delivers diagnostics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DiagnosticMode {
    Pull,
    Push,
}

impl DiagnosticMode {
    pub fn as_str(self) -> &'static str {
        match self {
            DiagnosticMode::Pull => "pull",
            DiagnosticMode::Push => "push",
        }
    }
}

/// A running server.
pub(crate) struct Server {
    pub def: Arc<ServerDef>,
    pub root: PathBuf,
    pub command: ResolvedCommand,
    pub pid: u32,
    pub encoding: ColumnUnit,
    pub capabilities: Capabilities,
    pub server_name: Option<String>,
    pub server_version: Option<String>,
    /// When the process was started.
    pub started: Instant,
    timeouts: Timeouts,
    rpc: Arc<Rpc>,
    shared: Arc<Shared>,
    docs: tokio::sync::Mutex<HashMap<PathBuf, Doc>>,
    /// The last version of each closed document, so that a reopened one never repeats a
    /// version (servers skip re-publishing a version they published).
    closed_versions: Mutex<HashMap<PathBuf, i32>>,
    /// Files the run had open and closed, with their size and modification time then: when
    /// one changes on disk (an outside tool, a `git checkout`), the server is told before the
    /// next answer (servers cache what they read of files that are not open).
    closed_seen: Mutex<HashMap<PathBuf, (Option<SystemTime>, u64)>>,
    /// Files changed on disk under the root, drained before answers (see [`watched`]).
    disk_watch: Option<agent_tools_support::watch::FolderWatch>,
    /// Content notifications sent (didOpen, didChange, didClose, watched-file events).
    content_changes: std::sync::atomic::AtomicU64,
    /// When the first document was opened (the start of the warm-up).
    first_open: Mutex<Option<Instant>>,
    exited: CancellationToken,
    exit_status: Arc<Mutex<Option<String>>>,
    stderr_tail: Arc<Mutex<VecDeque<u8>>>,
    shutting_down: AtomicBool,
    /// The server's process tree (support's process lifetime).
    group: ProcessGroup,
}

impl Server {
    /// True once the process exited or its connection closed.
    pub(crate) fn is_dead(&self) -> bool {
        self.exited.is_cancelled() || self.rpc.closed().is_cancelled()
    }

    pub(crate) fn exit_status(&self) -> Option<String> {
        self.exit_status.lock().clone()
    }

    /// The last lines the server wrote to stderr.
    pub(crate) fn stderr_tail(&self) -> String {
        let bytes: Vec<u8> = self.stderr_tail.lock().iter().copied().collect();
        let text = String::from_utf8_lossy(&bytes).trim().to_string();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(8)..].join("\n")
    }

    /// Whether the server offers `feature`.
    pub(crate) fn offers(&self, feature: Feature) -> bool {
        self.capabilities.offers(feature)
    }

    /// A request with the configured timeout; `ContentModified`/`ServerCancelled` are retried
    /// with a short backoff while the timeout lasts.
    pub(crate) async fn request_until(
        &self,
        method: &str,
        params: Value,
        deadline: Instant,
        cancel: &CancellationToken,
    ) -> Result<Value, RequestError> {
        let mut backoff = Duration::from_millis(50);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(RequestError::Timeout(self.timeouts.request));
            }
            match self.rpc.request(method, params.clone(), left, cancel).await {
                Err(RequestError::Server { code: -32801 | -32802, .. })
                    if Instant::now() + backoff < deadline =>
                {
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_millis(800));
                }
                other => return other,
            }
        }
    }

    /// A typed request ([`lsp_types::request::Request`]): its parameters and its result
    /// through the protocol's types, parsed once here.
    /// A typed request within the request timeout.
    pub(crate) async fn call<R: lsp_types::request::Request>(
        &self,
        params: R::Params,
        cancel: &CancellationToken,
    ) -> Result<R::Result, RequestError> {
        match self.call_until::<R>(params, Instant::now() + self.timeouts.request, cancel).await {
            Err(RequestError::Timeout(_)) => Err(RequestError::Timeout(self.timeouts.request)),
            other => other,
        }
    }

    pub(crate) async fn call_until<R: lsp_types::request::Request>(
        &self,
        params: R::Params,
        deadline: Instant,
        cancel: &CancellationToken,
    ) -> Result<R::Result, RequestError> {
        let shape =
            |e: serde_json::Error| RequestError::Shape { method: R::METHOD, detail: e.to_string() };
        let params = serde_json::to_value(params).map_err(shape)?;
        let answer = self.request_until(R::METHOD, params, deadline, cancel).await?;
        serde_json::from_value(answer).map_err(shape)
    }

    /// A typed notification.
    pub(crate) async fn notify<N: lsp_types::notification::Notification>(&self, params: N::Params) {
        match serde_json::to_value(params) {
            Ok(params) => {
                let _ = self.rpc.notify(N::METHOD, params).await;
            }
            Err(e) => tracing::warn!(server = %self.def.id, "{}: not sent: {e}", N::METHOD),
        }
    }

    /// Ends the server: `shutdown` → `exit` → SIGTERM → SIGKILL of its process group, each step
    /// bounded; returns once no process of the group is left (or after the last step).
    pub(crate) async fn shutdown(&self) {
        self.shutting_down.store(true, Ordering::SeqCst);
        let never = CancellationToken::new();
        if !self.is_dead() {
            let _ = self.rpc.request("shutdown", Value::Null, Duration::from_secs(2), &never).await;
            let _ = self.rpc.notify("exit", Value::Null).await;
            let _ = tokio::time::timeout(Duration::from_secs(1), self.exited.cancelled()).await;
        }
        // SIGTERM, a grace period, SIGKILL to the group and every descendant that left it.
        let teardown = self.group.terminate(Duration::from_secs(2)).await;
        tracing::debug!(server = %self.def.id, "server ended: {teardown}");
        // The leader is reaped by its exit task and orphans by the subreaper; until then they
        // are zombies of the group. Return once the group is empty (bounded).
        let _ = tokio::time::timeout(Duration::from_secs(2), self.exited.cancelled()).await;
        // Orphans of the tree re-parented to the host (the subreaper) are reaped meanwhile.
        self.group.wait_empty(Duration::from_secs(2)).await;
        self.rpc.closed().cancel();
    }

    /// Kills the process group at once (tests; a server that must not linger).
    #[allow(dead_code)]
    pub(crate) fn kill_now(&self) {
        let _ = self.group.signal(libc::SIGKILL);
    }

    pub(crate) fn is_shutting_down(&self) -> bool {
        self.shutting_down.load(Ordering::SeqCst)
    }
}
