//! One language-server process: start, `initialize`, requests and a bounded shutdown; document
//! sync, diagnostics and readiness are in the submodules of the same names.
//!
//! The process is started through `agent-tools-support`'s process lifetime: its own process
//! group (so SIGTERM/SIGKILL reach the helpers it starts, such as tsserver or `go list`), death
//! with the host, a watchdog for its descendants; its stderr is drained into tracing and a
//! small ring kept for crash reports.

mod diagnostics;
mod documents;
mod messages;
mod readiness;
mod watched;

pub(crate) use documents::RunId;
pub(crate) use readiness::Scope;

use std::{
    collections::{HashMap, VecDeque},
    path::PathBuf,
    process::Stdio,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant, SystemTime},
};

use agent_tools_support::process::{self, ProcessGroup, Spawned};
use parking_lot::Mutex;
use serde::Serialize;
use serde_json::{Value, json};
use tokio::{io::AsyncBufReadExt, sync::Notify};
use tokio_util::sync::CancellationToken;

use crate::{
    config::ServerDef,
    discover::ResolvedCommand,
    encoding::ColumnUnit,
    paths::{path_from_uri, uri_from_path},
    transport::{Handler, RequestError, Rpc},
};

use messages::{ServerNotification, ServerRequest};

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

/// Progress the server reported with `$/progress` (or a server-specific status).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Progress {
    pub title: String,
    pub message: Option<String>,
    pub percentage: Option<u32>,
}

#[derive(Debug, Clone)]
struct PushEntry {
    version: Option<i32>,
    items: Vec<lsp_types::Diagnostic>,
    seq: u64,
}

#[derive(Default)]
struct SharedState {
    /// Active progress by token (begun, not ended).
    progress: HashMap<String, Progress>,
    /// Whether the server signalled that its project is loaded or loading (progress began, or
    /// it logged its ready message).
    warmed_up: bool,
    /// rust-analyzer's `experimental/serverStatus`.
    quiescent: Option<bool>,
    push: HashMap<PathBuf, PushEntry>,
    /// Incremented on every publishDiagnostics.
    push_seq: u64,
    /// Dynamic registrations of `textDocument/diagnostic`: registration id → identifier.
    pull_registrations: Vec<(String, Option<String>)>,
    /// The files the server asked to hear about (`workspace/didChangeWatchedFiles`).
    file_watchers: Vec<watched::WatchedPattern>,
}

/// The part of a server the reader task touches.
struct Shared {
    name: String,
    root: PathBuf,
    settings: Value,
    ready_message: Option<String>,
    state: Mutex<SharedState>,
    changed: Notify,
}

/// Looks up a dotted section (`python.analysis`) in the settings.
fn lookup_section(settings: &Value, section: Option<&str>) -> Value {
    let Some(section) = section.filter(|s| !s.is_empty()) else { return settings.clone() };
    let mut current = settings;
    for part in section.split('.') {
        match current.get(part) {
            Some(next) => current = next,
            None => return Value::Null,
        }
    }
    current.clone()
}

impl Handler for Shared {
    fn notification(&self, method: &str, params: Value) {
        tracing::trace!(server = %self.name, "<- {method} {params}");
        let message = match ServerNotification::parse(method, params) {
            Ok(message) => message,
            Err(e) => {
                tracing::debug!(server = %self.name, "ignored a malformed notification: {e}");
                return;
            }
        };
        match message {
            ServerNotification::PublishDiagnostics(p) => {
                let Some(path) = path_from_uri(&p.uri) else { return };
                let mut state = self.state.lock();
                state.push_seq += 1;
                let seq = state.push_seq;
                state
                    .push
                    .insert(path, PushEntry { version: p.version, items: p.diagnostics, seq });
            }
            ServerNotification::Progress(p) => {
                let token = match p.token {
                    lsp_types::NumberOrString::Number(n) => n.to_string(),
                    lsp_types::NumberOrString::String(s) => s,
                };
                let lsp_types::ProgressParamsValue::WorkDone(value) = p.value;
                let mut state = self.state.lock();
                match value {
                    lsp_types::WorkDoneProgress::Begin(begin) => {
                        state.warmed_up = true;
                        state.progress.insert(
                            token,
                            Progress {
                                title: begin.title,
                                message: begin.message,
                                percentage: begin.percentage,
                            },
                        );
                    }
                    lsp_types::WorkDoneProgress::Report(report) => {
                        if let Some(p) = state.progress.get_mut(&token) {
                            if report.message.is_some() {
                                p.message = report.message;
                            }
                            if report.percentage.is_some() {
                                p.percentage = report.percentage;
                            }
                        }
                    }
                    lsp_types::WorkDoneProgress::End(_) => {
                        state.progress.remove(&token);
                    }
                }
            }
            ServerNotification::ServerStatus(status) => {
                self.state.lock().quiescent = status.quiescent;
            }
            ServerNotification::AnalyzerStatus(status) => {
                let mut state = self.state.lock();
                if status.is_analyzing {
                    state.progress.insert(
                        "$/analyzerStatus".into(),
                        Progress { title: "analyzing".into(), ..Default::default() },
                    );
                } else {
                    state.progress.remove("$/analyzerStatus");
                }
            }
            ServerNotification::Message(message) => {
                tracing::debug!(server = %self.name, "{method}: {message}");
                match &self.ready_message {
                    Some(ready) if message.contains(ready.as_str()) => {
                        self.state.lock().warmed_up = true;
                    }
                    _ => return,
                }
            }
            ServerNotification::Other => {
                tracing::trace!(server = %self.name, "notification {method}");
                return;
            }
        }
        self.changed.notify_waiters();
    }

    fn request(&self, method: &str, params: Value) -> Result<Value, (i64, String)> {
        tracing::trace!(server = %self.name, "<- request {method} {params}");
        let request = ServerRequest::parse(method, params).map_err(|e| (-32602, e))?;
        let reply = match request {
            ServerRequest::Configuration(p) => Ok(Value::Array(
                p.items
                    .iter()
                    .map(|item| lookup_section(&self.settings, item.section.as_deref()))
                    .collect(),
            )),
            ServerRequest::RegisterCapability(p) => {
                let mut state = self.state.lock();
                for reg in p.registrations {
                    state.register(&self.root, reg);
                }
                Ok(Value::Null)
            }
            ServerRequest::UnregisterCapability(p) => {
                let mut state = self.state.lock();
                for reg in p.unregisterations {
                    state.pull_registrations.retain(|(r, _)| *r != reg.id);
                    state.file_watchers.retain(|w| w.registration != reg.id);
                }
                Ok(Value::Null)
            }
            ServerRequest::Acknowledge => Ok(Value::Null),
            ServerRequest::ShowDocument => Ok(json!({"success": false})),
            ServerRequest::WorkspaceFolders => Ok(json!([{
                "uri": uri_from_path(&self.root).map(|u| u.as_str().to_string()),
                "name": self.root.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default(),
            }])),
            ServerRequest::ApplyEdit => Ok(json!({
                "applied": false,
                "failureReason": "this client applies edits only through its lsp_rename tool",
            })),
            ServerRequest::Unsupported => {
                Err((-32601, format!("method not supported by this client: {method}")))
            }
        };
        self.changed.notify_waiters();
        reply
    }
}

impl SharedState {
    /// Takes note of a dynamic registration the client acts on: pull diagnostics and watched
    /// files.
    fn register(&mut self, root: &std::path::Path, reg: lsp_types::Registration) {
        let options = reg.register_options.unwrap_or(Value::Null);
        if reg.method == <lsp_types::request::DocumentDiagnosticRequest as lsp_types::request::Request>::METHOD {
            // Only the identifier counts; servers leave out fields lsp-types requires.
            #[derive(serde::Deserialize)]
            struct Identifier {
                identifier: Option<String>,
            }
            let identifier =
                serde_json::from_value::<Identifier>(options).ok().and_then(|o| o.identifier);
            self.pull_registrations.push((reg.id, identifier));
        } else if reg.method == <lsp_types::notification::DidChangeWatchedFiles as lsp_types::notification::Notification>::METHOD {
            match serde_json::from_value::<lsp_types::DidChangeWatchedFilesRegistrationOptions>(options) {
                Ok(o) => self.file_watchers.extend(watched::patterns(root, &reg.id, &o.watchers)),
                Err(e) => tracing::debug!("ignored a malformed file watcher registration: {e}"),
            }
        }
    }
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
    pub capabilities: Value,
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

/// Why a server did not start.
#[derive(Debug, Clone)]
pub(crate) struct StartError {
    pub message: String,
}

fn client_capabilities() -> Value {
    json!({
        "general": {"positionEncodings": ["utf-8", "utf-16"]},
        "window": {"workDoneProgress": true, "showDocument": {"support": false}},
        "workspace": {
            "applyEdit": true,
            "configuration": true,
            "workspaceFolders": true,
            "didChangeConfiguration": {"dynamicRegistration": true},
            "symbol": {"dynamicRegistration": false},
            "diagnostics": {"refreshSupport": true},
            "workspaceEdit": {
                "documentChanges": true,
                "resourceOperations": ["create", "rename", "delete"],
                "failureHandling": "abort",
                "normalizesLineEndings": false
            },
            "fileOperations": {"didRename": true, "didCreate": true, "didDelete": true},
            "didChangeWatchedFiles": {"dynamicRegistration": true, "relativePatternSupport": false}
        },
        "textDocument": {
            "synchronization": {"dynamicRegistration": false, "didSave": true, "willSave": false},
            "publishDiagnostics": {
                "relatedInformation": true,
                "versionSupport": true,
                "tagSupport": {"valueSet": [1, 2]},
                "codeDescriptionSupport": true,
                "dataSupport": true
            },
            "diagnostic": {"dynamicRegistration": true, "relatedDocumentSupport": true},
            "definition": {"linkSupport": true},
            "typeDefinition": {"linkSupport": true},
            "implementation": {"linkSupport": true},
            "declaration": {"linkSupport": true},
            "references": {},
            "hover": {"contentFormat": ["markdown", "plaintext"]},
            "documentSymbol": {"hierarchicalDocumentSymbolSupport": true},
            "codeAction": {
                "codeActionLiteralSupport": {"codeActionKind": {"valueSet": [
                    "", "quickfix", "refactor", "refactor.extract", "refactor.inline",
                    "refactor.rewrite", "source", "source.organizeImports", "source.fixAll"
                ]}},
                "isPreferredSupport": true,
                "disabledSupport": true,
                "dataSupport": true
            },
            "rename": {"prepareSupport": true}
        },
        "experimental": {"serverStatusNotification": true}
    })
}

fn spawn_error(def: &ServerDef, command: &ResolvedCommand, what: &str) -> StartError {
    StartError {
        message: format!(
            "{} server `{}` could not start: {what}",
            def.display_languages(),
            command.program.display()
        ),
    }
}

impl Server {
    /// Starts the process and completes `initialize`.
    pub(crate) async fn start(
        def: Arc<ServerDef>,
        root: PathBuf,
        command: ResolvedCommand,
        timeouts: Timeouts,
        cancel: &CancellationToken,
    ) -> Result<Arc<Server>, StartError> {
        let started = Instant::now();
        let mut cmd = tokio::process::Command::new(&command.program);
        cmd.args(&command.args)
            .envs(command.env.iter().map(|(k, v)| (k, v)))
            .current_dir(&root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        // Forked on the spawner thread: the server is killed when the host process dies.
        // Its own group, death with the host, a watchdog for what it starts; until
        // `initialize` succeeds, a dropped (cancelled) start drops the group, which kills it.
        let Spawned { mut child, group } =
            process::spawn(cmd).await.map_err(|e| spawn_error(&def, &command, &e.to_string()))?;
        let pid = group.pid();
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(spawn_error(&def, &command, "its pipes could not be opened"));
        };
        let name = format!("{}@{}", def.id, root.display());

        let stderr_tail = Arc::new(Mutex::new(VecDeque::with_capacity(STDERR_TAIL_BYTES)));
        let tail = stderr_tail.clone();
        let stderr_name = name.clone();
        tokio::spawn(async move {
            let mut lines = tokio::io::BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                tracing::debug!(target: "agent_tools_lsp::stderr", server = %stderr_name, "{line}");
                let mut tail = tail.lock();
                tail.extend(line.bytes().chain(std::iter::once(b'\n')));
                while tail.len() > STDERR_TAIL_BYTES {
                    tail.pop_front();
                }
            }
        });

        let exited = CancellationToken::new();
        let exit_status = Arc::new(Mutex::new(None));
        let (exited2, status2) = (exited.clone(), exit_status.clone());
        tokio::spawn(async move {
            let status = child.wait().await;
            *status2.lock() = Some(match status {
                Ok(s) => s.to_string(),
                Err(e) => format!("unknown ({e})"),
            });
            exited2.cancel();
        });

        let shared = Arc::new(Shared {
            name: name.clone(),
            root: root.clone(),
            settings: def.settings.clone(),
            ready_message: def.ready_message.clone(),
            state: Mutex::new(SharedState::default()),
            changed: Notify::new(),
        });
        let rpc = Rpc::start(stdout, stdin, shared.clone(), &name);

        let root_uri = uri_from_path(&root).map(|u| u.as_str().to_string());
        let mut params = json!({
            "processId": std::process::id(),
            "clientInfo": {"name": "agent-tools", "version": env!("CARGO_PKG_VERSION")},
            "rootUri": root_uri,
            "rootPath": root.display().to_string(),
            "workspaceFolders": [{
                "uri": root_uri,
                "name": root.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default(),
            }],
            "capabilities": client_capabilities(),
        });
        if let Some(options) = &def.initialization_options {
            params["initializationOptions"] = options.clone();
        }
        let tail_text = |tail: &Arc<Mutex<VecDeque<u8>>>| {
            let bytes: Vec<u8> = tail.lock().iter().copied().collect();
            let text = String::from_utf8_lossy(&bytes).trim().to_string();
            let lines: Vec<&str> = text.lines().collect();
            lines[lines.len().saturating_sub(8)..].join("\n")
        };
        let init = tokio::select! {
            r = rpc.request("initialize", params, timeouts.startup, cancel) => r,
            _ = exited.cancelled() => Err(RequestError::Closed),
        };
        let init = match init {
            Ok(v) => v,
            Err(e) => {
                // Let the exit status and the last stderr lines arrive.
                let _ = tokio::time::timeout(Duration::from_millis(300), exited.cancelled()).await;
                let _ = group.signal(libc::SIGKILL);
                let status = exit_status.lock().clone();
                let mut what = match (&e, status) {
                    (RequestError::Closed, Some(status)) => {
                        format!("it exited during initialize ({status})")
                    }
                    _ => format!("initialize failed: {e}"),
                };
                let tail = tail_text(&stderr_tail);
                if !tail.is_empty() {
                    what.push_str(&format!("; its stderr ends with:\n{tail}"));
                }
                return Err(spawn_error(&def, &command, &what));
            }
        };
        let capabilities = init.get("capabilities").cloned().unwrap_or(Value::Null);
        let encoding =
            ColumnUnit::from_lsp(capabilities.get("positionEncoding").and_then(Value::as_str));
        let server_name =
            init.pointer("/serverInfo/name").and_then(Value::as_str).map(str::to_string);
        let server_version =
            init.pointer("/serverInfo/version").and_then(Value::as_str).map(str::to_string);
        let watched_root = root.clone();
        let disk_watch = tokio::task::spawn_blocking(move || watched::watch_root(&watched_root))
            .await
            .ok()
            .flatten();
        let _ = rpc.notify("initialized", json!({})).await;
        Ok(Arc::new(Server {
            def,
            root,
            command,
            pid,
            encoding,
            capabilities,
            server_name,
            server_version,
            started,
            timeouts,
            rpc,
            shared,
            docs: tokio::sync::Mutex::new(HashMap::new()),
            closed_versions: Mutex::new(HashMap::new()),
            closed_seen: Mutex::new(HashMap::new()),
            disk_watch,
            content_changes: std::sync::atomic::AtomicU64::new(0),
            first_open: Mutex::new(None),
            exited,
            exit_status,
            stderr_tail,
            shutting_down: AtomicBool::new(false),
            group,
        }))
    }

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

    /// Whether the server offers a capability (`definitionProvider`, …).
    pub(crate) fn supports(&self, capability: &str) -> bool {
        match self.capabilities.get(capability) {
            None | Some(Value::Null) | Some(Value::Bool(false)) => false,
            Some(_) => true,
        }
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
        let until = Instant::now() + Duration::from_secs(2);
        while process_group_alive(self.pid) && Instant::now() < until {
            if self.exited.is_cancelled() {
                // Orphans of the tree are re-parented to this process (the subreaper) and
                // would stay zombies of the group: reap them. The leader was reaped already.
                // SAFETY: waitpid with WNOHANG on our own children has no preconditions.
                while unsafe {
                    libc::waitpid(-(self.pid as libc::pid_t), std::ptr::null_mut(), libc::WNOHANG)
                } > 0
                {}
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
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

fn libc_killpg(pid: u32, signal: i32) -> i32 {
    if pid == 0 {
        return -1;
    }
    // SAFETY: killpg has no memory-safety preconditions.
    unsafe { libc::killpg(pid as libc::pid_t, signal) }
}

/// Whether a process group still has members (for tests of orphan freedom).
pub fn process_group_alive(pgid: u32) -> bool {
    libc_killpg(pgid, 0) == 0
}

/// Runs futures concurrently and collects their outputs in order (no extra dependency).
pub async fn join_all<F: std::future::Future>(
    futures: impl IntoIterator<Item = F>,
) -> Vec<F::Output> {
    let mut set = Vec::new();
    for f in futures {
        set.push(Box::pin(f));
    }
    let mut out: Vec<Option<F::Output>> = (0..set.len()).map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (i, f) in set.iter_mut().enumerate() {
            if out[i].is_none() {
                match f.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => out[i] = Some(v),
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending { std::task::Poll::Pending } else { std::task::Poll::Ready(()) }
    })
    .await;
    out.into_iter().flatten().collect()
}
