//! The supervisor: which server serves a file, one process per (server, root) started lazily
//! under a spawn lock, crash restarts with a cap, reload, status, and shutdown of everything.

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
    sync::Arc,
    time::{Duration, Instant},
};

use parking_lot::Mutex;
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::{
    config::{LspConfig, ServerDef},
    diagnostics::{Diagnostic, Ledger},
    discover::{self, ResolvedCommand, RootMatch},
    error::LspError,
    paths::display_relative,
    pool::{RunId, ServerPool, Slot, SlotKey},
    server::{DiagnosticMode, DiagnosticsWait, Server, SyncedDoc, Timeouts, join_all},
};

/// The life stage of one (server, root).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ServerState {
    NotStarted,
    Starting,
    Indexing(String),
    Ready,
    Crashed,
    Stopped,
}

impl ServerState {
    pub fn describe(&self) -> String {
        match self {
            ServerState::NotStarted => "not started".into(),
            ServerState::Starting => "starting".into(),
            ServerState::Indexing(what) => what.clone(),
            ServerState::Ready => "ready".into(),
            ServerState::Crashed => "crashed".into(),
            ServerState::Stopped => "stopped".into(),
        }
    }
}

/// Which server serves a file, and from where.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    pub def: Arc<ServerDef>,
    pub language_id: String,
    pub root: RootMatch,
    pub command: ResolvedCommand,
}

/// One row of `status`: a language present in the run's root and what serves it.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct RootStatus {
    /// Server id, for example `python`.
    pub server: String,
    pub languages: String,
    /// Project root relative to the run's root (`.` for the root itself), if a marker was found.
    pub root: Option<String>,
    pub marker: Option<String>,
    /// Source files of this language seen by the bounded scan.
    pub files: usize,
    pub binary: Option<String>,
    pub version: Option<String>,
    pub state: ServerState,
    pub diagnostics: Option<DiagnosticMode>,
    pub encoding: Option<String>,
    pub pid: Option<u32>,
    pub crashes: u32,
    pub last_crash: Option<String>,
    /// How many runs of the host use this server (1 when it is the run's own).
    pub runs: usize,
    /// Why nothing starts here, and how to fix it, when the intersection rule fails.
    pub missing: Option<String>,
    /// Which trust rule applies: whether code the project controls runs, and what that means
    /// for this server.
    pub project_code: String,
}

impl RootStatus {
    pub fn render(&self) -> String {
        let root = self.root.as_deref().unwrap_or("-");
        let mut line = format!("{} (root {root}", self.languages);
        if let Some(marker) = &self.marker {
            line.push_str(&format!(", marker {marker}"));
        }
        line.push_str("): ");
        match &self.binary {
            Some(binary) => {
                line.push_str(binary);
                if let Some(v) = &self.version {
                    line.push_str(&format!(" ({v})"));
                }
            }
            None => line.push_str("no binary"),
        }
        line.push_str(&format!(" — {}", self.state.describe()));
        if let Some(mode) = self.diagnostics {
            line.push_str(&format!("; diagnostics: {}", mode.as_str()));
        }
        if let Some(enc) = &self.encoding {
            line.push_str(&format!("; encoding: {enc}"));
        }
        if let Some(pid) = self.pid {
            line.push_str(&format!("; pid {pid}"));
        }
        if self.runs > 1 {
            line.push_str(&format!("; shared by {} runs of this host", self.runs));
        }
        if self.crashes > 0 {
            line.push_str(&format!("; crashed {} time(s)", self.crashes));
            if let Some(c) = &self.last_crash {
                line.push_str(&format!(" (last: {})", c.lines().next().unwrap_or("")));
            }
        }
        if let Some(missing) = &self.missing {
            line.push_str(&format!("\n    nothing starts: {missing}"));
        }
        line.push_str(&format!("\n    {}", self.project_code));
        line
    }
}

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
}

/// The language-server supervisor of one run. Cheap to clone.
#[derive(Clone)]
pub struct Supervisor {
    inner: Arc<Inner>,
}

/// A document synced to its server, ready to wait for its diagnostics.
pub struct DocHandle {
    pub(crate) server: Arc<Server>,
    pub(crate) doc: SyncedDoc,
}

impl DocHandle {
    pub fn version(&self) -> i32 {
        self.doc.version
    }

    pub fn path(&self) -> &Path {
        &self.doc.path
    }

    /// The content the server has for this version.
    pub fn text(&self) -> &str {
        &self.doc.text
    }

    /// A short label for the server: `basedpyright`, `clangd`, or the server id.
    pub fn server_label(&self) -> String {
        server_label(&self.server)
    }

    pub fn diagnostic_mode(&self) -> DiagnosticMode {
        self.server.diagnostic_mode()
    }
}

/// What syncing a file for diagnostics found.
pub enum SyncOutcome {
    /// No server covers this file (no server for the language, no marker, or no binary).
    NotCovered,
    /// A server covers it but is not usable now (starting, crashed); the text says why.
    NotReady(String),
    Synced(DocHandle),
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

    /// The push mark of every running server, by pid (see [`Supervisor::other_open_documents`]).
    pub(crate) fn push_marks(&self) -> HashMap<u32, u64> {
        self.running().iter().map(|s| (s.pid, s.push_mark())).collect()
    }

    /// The other open documents of every running server, for a re-check after a write: a
    /// push counts when it came after the server's mark in `since` (taken before the write was
    /// synced), or after now for a server without one.
    pub(crate) async fn other_open_documents(
        &self,
        except: &[PathBuf],
        since: &HashMap<u32, u64>,
    ) -> Vec<(PathBuf, DocHandle)> {
        let mut out = Vec::new();
        for server in self.running() {
            let since = since.get(&server.pid).copied();
            for doc in server.open_documents_except(except, since, self.inner.run).await {
                out.push((doc.path.clone(), DocHandle { server: server.clone(), doc }));
            }
        }
        out
    }

    /// The run-private folder outside the tree, if it could be made.
    pub(crate) fn private_dir(&self) -> Option<&Path> {
        self.inner.private_dir.as_ref().map(|d| d.path())
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

    /// The server definition and language id for a file's extension.
    pub(crate) fn def_for(
        &self,
        path: &Path,
    ) -> Result<Option<(Arc<ServerDef>, String)>, LspError> {
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        Ok(self.defs()?.iter().find_map(|d| d.language_of(ext).map(|l| (d.clone(), l.to_string()))))
    }

    /// Applies the intersection rule for `path`: a marker and a binary, or an `Unavailable`
    /// that says which half is missing.
    pub(crate) fn target_for(&self, path: &Path) -> Result<Target, LspError> {
        let shown = display_relative(&self.inner.root, path);
        let Some((def, language_id)) = self.def_for(path)? else {
            let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
            return Err(LspError::Unavailable {
                resource: "lsp".into(),
                reason: if ext.is_empty() {
                    format!("{shown} has no file extension, so no language server is known for it")
                } else {
                    format!("no language server is configured for .{ext} files ({shown})")
                },
                fix: "add one under [lsp.servers.<id>] in agent-tools.toml".into(),
            });
        };
        let root = discover::find_root(&def, &self.inner.root, path);
        let project_root = root.as_ref().map_or_else(
            || path.parent().unwrap_or(&self.inner.root).to_path_buf(),
            |r| r.root.clone(),
        );
        let command = discover::resolve_command(
            &def,
            &self.inner.extra_paths,
            &project_root,
            &self.inner.root,
            self.allow_project_code(),
        );
        if let Some(c) = &command
            && let Err(failure) = self.probe(c, &def)
        {
            return Err(LspError::Unavailable {
                resource: format!("lsp ({})", def.display_languages()),
                reason: format!(
                    "{} resolves but does not run (`{} {}` says: {failure})",
                    c.program.display(),
                    c.program.display(),
                    def.version_args.as_deref().unwrap_or_default().join(" ")
                ),
                fix: def.install_hint.clone(),
            });
        }
        match (root, command) {
            (Some(root), Some(command)) => Ok(Target { def, language_id, root, command }),
            (root, command) => Err(LspError::Unavailable {
                resource: format!("lsp ({})", def.display_languages()),
                reason: missing_half(
                    self.allow_project_code(),
                    &def,
                    root.as_ref(),
                    command.as_ref(),
                    &self.inner.root,
                    path,
                ),
                fix: if command.is_none() {
                    def.install_hint.clone()
                } else {
                    format!("create one of {} at the project's root", def.root_markers.join(", "))
                },
            }),
        }
    }

    /// This run's lease on the slot of `target`, taken from the pool on first use.
    fn slot(&self, target: &Target) -> Result<Arc<Slot>, LspError> {
        let mut slots = self.inner.slots.lock();
        // Checked under the lock `shutdown` takes after cancelling: no lease after it.
        if self.inner.closing.is_cancelled() {
            return Err(LspError::Failed("the run is ending; no server starts now".into()));
        }
        let name = (target.def.id.clone(), target.root.root.clone());
        if let Some(slot) = slots.get(&name) {
            return Ok(slot.clone());
        }
        let config = &self.inner.config;
        let key = SlotKey::new(
            &target.def,
            &target.root.root,
            &target.command,
            self.allow_project_code(),
            (config.request_timeout_ms, config.startup_timeout_ms),
        );
        let slot =
            self.inner.pool.lease(key, &target.def, &target.root, self.inner.run).ok_or_else(
                || LspError::Failed("the host is stopping; no server starts now".into()),
            )?;
        slots.insert(name, slot.clone());
        Ok(slot)
    }

    /// The running server for `target`, started (or restarted after a crash) if needed.
    pub(crate) async fn server(
        &self,
        target: &Target,
        cancel: &CancellationToken,
    ) -> Result<Arc<Server>, LspError> {
        if self.inner.closing.is_cancelled() {
            return Err(LspError::Failed("the run is ending; no server starts now".into()));
        }
        let slot = self.slot(target)?;
        let mut guard = tokio::select! {
            g = slot.server.lock() => g,
            _ = cancel.cancelled() => return Err(LspError::Failed("cancelled".into())),
            _ = self.inner.closing.cancelled() => return Err(LspError::Failed("the run is ending".into())),
        };
        let mut after_crash = false;
        if let Some(server) = guard.as_ref() {
            if !server.is_dead() {
                return Ok(server.clone());
            }
            let status = server.exit_status().unwrap_or_else(|| "connection closed".into());
            let tail = server.stderr_tail();
            let mut record = slot.record.lock();
            if !server.is_shutting_down() {
                record.crashes += 1;
                record.last_crash = Some(if tail.is_empty() {
                    format!("exited: {status}")
                } else {
                    format!("exited: {status}; stderr: {tail}")
                });
                after_crash = true;
            }
            drop(record);
            // Make sure nothing of the old group lingers before a new one starts.
            server.kill_now();
            *guard = None;
            *slot.current.lock() = None;
        } else if slot.record.lock().crashes > 0 {
            after_crash = true;
        }
        if after_crash {
            let cap = self.inner.config.max_restarts_per_minute as usize;
            let mut record = slot.record.lock();
            record.restarts.retain(|t| t.elapsed() < Duration::from_secs(60));
            if record.restarts.len() >= cap {
                let wait = record
                    .restarts
                    .first()
                    .map_or(60, |t| 60u64.saturating_sub(t.elapsed().as_secs()));
                return Err(LspError::Failed(format!(
                    "the {} server for {} crashed {} time(s) and was restarted {cap} times in the last minute; \
                     not restarting it for another {wait} s (last crash: {}). Call lsp with action `reload` to force a restart",
                    target.def.display_languages(),
                    display_relative(&self.inner.root, &target.root.root),
                    record.crashes,
                    record.last_crash.as_deref().unwrap_or("unknown"),
                )));
            }
            record.restarts.push(Instant::now());
        }
        slot.record.lock().starting = true;
        let (def, command) = crate::trust::prepare(
            &target.def,
            &target.root.root,
            &target.command,
            self.allow_project_code(),
            self.inner.pool.private_dir(),
        );
        let command = self.with_version_flags(&def, command).await;
        let started = tokio::select! {
            s = Server::start(Arc::new(def), target.root.root.clone(), command, self.timeouts(), cancel) => s,
            _ = self.inner.closing.cancelled() => {
                slot.record.lock().starting = false;
                return Err(LspError::Failed("the run is ending".into()));
            }
        };
        let mut record = slot.record.lock();
        record.starting = false;
        record.stopped = false;
        match started {
            Ok(server) => {
                drop(record);
                *guard = Some(server.clone());
                *slot.current.lock() = Some(server.clone());
                Ok(server)
            }
            Err(e) => {
                record.crashes += 1;
                record.last_crash = Some(e.message.clone());
                Err(LspError::Failed(e.message))
            }
        }
    }

    /// Restarts the server of `target` (not counted as a crash; resets the restart cap). The
    /// server may be shared: the second value is how many other runs use it (they get their
    /// documents sent again on their next call, as after a crash).
    pub(crate) async fn reload_target(
        &self,
        target: &Target,
        cancel: &CancellationToken,
    ) -> Result<(Arc<Server>, usize), LspError> {
        let slot = self.slot(target)?;
        {
            let mut guard = slot.server.lock().await;
            if let Some(server) = guard.take() {
                server.shutdown().await;
            }
            *slot.current.lock() = None;
            let mut record = slot.record.lock();
            record.restarts.clear();
            record.crashes = 0;
        }
        let server = self.server(target, cancel).await?;
        Ok((server, slot.lessees().saturating_sub(1)))
    }

    /// Every (server, root) that has a running server.
    pub(crate) fn running(&self) -> Vec<Arc<Server>> {
        self.inner
            .slots
            .lock()
            .values()
            .filter_map(|s| s.current.lock().clone())
            .filter(|s| !s.is_dead())
            .collect()
    }

    /// Targets for every language present in the run's root with both marker and binary.
    pub(crate) fn present_targets(&self) -> Result<Vec<Target>, LspError> {
        let defs = self.defs()?.to_vec();
        let plain: Vec<ServerDef> = defs.iter().map(|d| (**d).clone()).collect();
        let scan = discover::scan(&self.inner.root, &plain);
        let mut out = Vec::new();
        for def in defs {
            let Some(presence) = scan.get(&def.id) else { continue };
            if presence.files == 0 {
                continue;
            }
            for root in &discover::outermost_roots(&def, &self.inner.root, &presence.roots) {
                if let Some(command) = discover::resolve_command(
                    &def,
                    &self.inner.extra_paths,
                    &root.root,
                    &self.inner.root,
                    self.allow_project_code(),
                ) {
                    let language_id = def.languages.keys().next().cloned().unwrap_or_default();
                    out.push(Target { def: def.clone(), language_id, root: root.clone(), command });
                }
            }
        }
        Ok(out)
    }

    /// `command` with the flags its version understands (`flags_since_major`); the version is
    /// probed (once per program) only when a flag is missing from the command.
    async fn with_version_flags(
        &self,
        def: &ServerDef,
        mut command: ResolvedCommand,
    ) -> ResolvedCommand {
        let missing: Vec<(u32, String)> = def
            .flags_since_major
            .iter()
            .filter(|(_, flag)| !command.args.contains(flag))
            .cloned()
            .collect();
        let Some(args) = def.version_args.clone().filter(|_| !missing.is_empty()) else {
            return command;
        };
        let pool = self.inner.pool.clone();
        let program = command.program.clone();
        let version = tokio::task::spawn_blocking(move || pool.probe(&program, &args))
            .await
            .ok()
            .and_then(Result::ok)
            .flatten();
        let Some(major) = version.as_deref().and_then(major_version) else { return command };
        for (since, flag) in missing {
            if major >= since {
                command.args.push(flag);
            }
        }
        command
    }

    /// The program's version (`Ok(None)` when it has no version flag), or why it does not run.
    fn probe(&self, command: &ResolvedCommand, def: &ServerDef) -> Result<Option<String>, String> {
        let Some(args) = def.version_args.as_ref() else { return Ok(None) };
        self.inner.pool.probe(&command.program, args)
    }

    fn version_of(&self, command: &ResolvedCommand, def: &ServerDef) -> Option<String> {
        self.probe(command, def).unwrap_or_else(Some)
    }

    /// Status of every language present in the run's root and of every server started.
    /// Blocking (it may run `--version` probes): call from a blocking context.
    pub fn status_blocking(&self) -> Result<Vec<RootStatus>, LspError> {
        let defs = self.defs()?.to_vec();
        let plain: Vec<ServerDef> = defs.iter().map(|d| (**d).clone()).collect();
        let scan = discover::scan(&self.inner.root, &plain);
        let slots: Vec<Arc<Slot>> = self.inner.slots.lock().values().cloned().collect();
        let mut rows = Vec::new();
        for def in &defs {
            let presence = scan.get(&def.id).cloned().unwrap_or_default();
            let mut roots: Vec<RootMatch> =
                discover::outermost_roots(def, &self.inner.root, &presence.roots);
            for slot in slots.iter().filter(|s| s.def.id == def.id) {
                if !roots.contains(&slot.root) {
                    roots.push(slot.root.clone());
                }
            }
            if presence.files == 0 && slots.iter().all(|s| s.def.id != def.id) {
                // Markers alone (a package.json in a Python project) are not a language present.
                continue;
            }
            if roots.is_empty() {
                let example = presence.example.clone().unwrap_or_else(|| self.inner.root.clone());
                let command = discover::resolve_command(
                    def,
                    &self.inner.extra_paths,
                    &self.inner.root,
                    &self.inner.root,
                    self.allow_project_code(),
                );
                rows.push(RootStatus {
                    server: def.id.clone(),
                    languages: def.display_languages(),
                    root: None,
                    marker: None,
                    files: presence.files,
                    binary: command.as_ref().map(|c| c.program.display().to_string()),
                    version: command.as_ref().and_then(|c| self.version_of(c, def)),
                    state: ServerState::NotStarted,
                    diagnostics: None,
                    encoding: None,
                    pid: None,
                    crashes: 0,
                    last_crash: None,
                    runs: 0,
                    project_code: crate::trust::rule(def, self.allow_project_code()),
                    missing: Some(format!(
                        "{}; {}",
                        missing_half(
                            self.allow_project_code(),
                            def,
                            None,
                            command.as_ref(),
                            &self.inner.root,
                            &example
                        ),
                        if command.is_none() {
                            def.install_hint.clone()
                        } else {
                            format!("create one of {}", def.root_markers.join(", "))
                        }
                    )),
                });
                continue;
            }
            for root in roots {
                let command = discover::resolve_command(
                    def,
                    &self.inner.extra_paths,
                    &root.root,
                    &self.inner.root,
                    self.allow_project_code(),
                );
                let slot = slots.iter().find(|s| s.def.id == def.id && s.root.root == root.root);
                let server = slot.and_then(|s| s.current.lock().clone());
                let (starting, crashes, last_crash, stopped) =
                    slot.map_or((false, 0, None, false), |s| {
                        let r = s.record.lock();
                        (r.starting, r.crashes, r.last_crash.clone(), r.stopped)
                    });
                let state = match &server {
                    _ if starting => ServerState::Starting,
                    Some(s) if s.is_dead() && !s.is_shutting_down() => ServerState::Crashed,
                    Some(s) if s.is_dead() => ServerState::Stopped,
                    Some(s) => s.busy().map_or(ServerState::Ready, ServerState::Indexing),
                    None if stopped => ServerState::Stopped,
                    None if crashes > 0 => ServerState::Crashed,
                    None => ServerState::NotStarted,
                };
                let live = server.as_ref().filter(|s| !s.is_dead());
                let version = match live {
                    Some(s) => s
                        .server_version
                        .clone()
                        .map(|v| format!("{} {v}", server_label(s)))
                        .or_else(|| self.version_of(&s.command, def)),
                    None => command.as_ref().and_then(|c| self.version_of(c, def)),
                };
                rows.push(RootStatus {
                    server: def.id.clone(),
                    languages: def.display_languages(),
                    root: Some(display_relative(&self.inner.root, &root.root)),
                    marker: Some(root.marker.clone()),
                    files: presence.files,
                    binary: live
                        .map(|s| s.command.program.display().to_string())
                        .or_else(|| command.as_ref().map(|c| c.program.display().to_string())),
                    version,
                    state,
                    diagnostics: live.map(|s| s.diagnostic_mode()),
                    encoding: live.map(|s| s.encoding.as_str().to_string()),
                    pid: live.map(|s| s.pid),
                    crashes,
                    last_crash,
                    runs: match live {
                        Some(_) => slot.map_or(0, |s| s.lessees()),
                        None => 0,
                    },
                    project_code: crate::trust::rule(def, self.allow_project_code()),
                    missing: match (&command, live) {
                        (None, None) => Some(format!(
                            "{}; {}",
                            missing_half(
                                self.allow_project_code(),
                                def,
                                Some(&root),
                                None,
                                &self.inner.root,
                                &root.root
                            ),
                            def.install_hint
                        )),
                        (Some(c), None) => self.probe(c, def).err().map(|failure| {
                            format!(
                                "{} does not run ({failure}); {}",
                                c.program.display(),
                                def.install_hint
                            )
                        }),
                        _ => None,
                    },
                });
            }
        }
        Ok(rows)
    }

    /// [`Supervisor::status_blocking`] from async code.
    pub async fn status(&self) -> Result<Vec<RootStatus>, LspError> {
        let this = self.clone();
        tokio::task::spawn_blocking(move || this.status_blocking())
            .await
            .map_err(|e| LspError::Failed(format!("status failed: {e}")))?
    }

    /// What the run's servers are doing now, for progress reports while a call waits:
    /// `python (.): starting`, `typescript (web): indexing (45%): …`; `None` when all are idle.
    pub fn activity(&self) -> Option<String> {
        let slots: Vec<Arc<Slot>> = self.inner.slots.lock().values().cloned().collect();
        let mut parts = Vec::new();
        for slot in slots {
            let root = display_relative(&self.inner.root, &slot.root.root);
            if slot.record.lock().starting {
                parts.push(format!("{} ({root}): starting", slot.def.id));
            } else if let Some(busy) = slot.current.lock().as_ref().and_then(|s| s.busy()) {
                parts.push(format!("{} ({root}): {busy}", slot.def.id));
            }
        }
        parts.sort();
        (!parts.is_empty()).then(|| parts.join("; "))
    }

    /// Pids (process-group ids) of every server process started and not yet reaped.
    pub fn server_pids(&self) -> Vec<u32> {
        self.inner
            .slots
            .lock()
            .values()
            .filter_map(|s| s.current.lock().as_ref().map(|s| s.pid))
            .collect()
    }

    /// Ends the run's use of its servers: in-flight starts are abandoned, each lease goes back
    /// to the pool. A server no other run uses gets `shutdown` → `exit` → SIGTERM → SIGKILL of
    /// its group (all in parallel and bounded); on a shared one the documents only this run
    /// held are closed.
    pub async fn shutdown(&self) {
        let slots: Vec<Arc<Slot>> = {
            let slots = self.inner.slots.lock();
            self.inner.closing.cancel();
            slots.values().cloned().collect()
        };
        let (pool, run) = (&self.inner.pool, self.inner.run);
        join_all(slots.iter().map(|slot| pool.release(slot, run))).await;
    }

    // ------------------------------------------------------------ diagnostics on write

    /// Sends the file's content to the server that covers it (`didOpen`, or `didChange` with a
    /// new version, then `didSave` when `save`). `text` is the content to send; `None` reads
    /// the file. Waits for a server that is still starting at most `startup_wait` (the start
    /// goes on in the background).
    pub async fn sync_document(
        &self,
        path: &Path,
        text: Option<String>,
        save: bool,
        startup_wait: Duration,
        cancel: &CancellationToken,
    ) -> SyncOutcome {
        let Ok(target) = self.target_for(path) else { return SyncOutcome::NotCovered };
        let server = match self.server_within(&target, startup_wait, cancel).await {
            Ok(server) => server,
            Err(reason) => return SyncOutcome::NotReady(reason),
        };
        let synced = match text {
            Some(text) => {
                server.sync_text(path, &target.language_id, text, save, self.inner.run).await
            }
            None => server.sync(path, &target.language_id, save, self.inner.run).await,
        };
        match synced {
            Ok(doc) => SyncOutcome::Synced(DocHandle { server, doc }),
            Err(e) => SyncOutcome::NotReady(e),
        }
    }

    /// The running server of `target`, waiting for a start at most `startup_wait` (the start
    /// goes on in the background); the error says why it is not usable now.
    pub(crate) async fn server_within(
        &self,
        target: &Target,
        startup_wait: Duration,
        cancel: &CancellationToken,
    ) -> Result<Arc<Server>, String> {
        let this = self.clone();
        let start_target = target.clone();
        let run_cancel = self.inner.closing.child_token();
        let start = tokio::spawn(async move { this.server(&start_target, &run_cancel).await });
        let server = tokio::select! {
            r = start => r,
            _ = tokio::time::sleep(startup_wait) => {
                return Err(format!("server still starting after {} ms", startup_wait.as_millis()))
            }
            _ = cancel.cancelled() => return Err("cancelled".into()),
        };
        match server {
            Ok(Ok(s)) => Ok(s),
            Ok(Err(e)) => Err(format!("server unavailable: {}", first_line(&e.to_string()))),
            Err(e) => Err(format!("server unavailable: {e}")),
        }
    }

    /// The diagnostics of exactly the synced version, at most until `deadline`.
    pub async fn document_diagnostics(
        &self,
        handle: &DocHandle,
        deadline: Instant,
        cancel: &CancellationToken,
    ) -> Result<Vec<Diagnostic>, DiagnosticsWait> {
        let items = handle.server.diagnostics(&handle.doc, deadline, cancel).await?;
        Ok(items
            .iter()
            .map(|d| {
                Diagnostic::from_lsp(
                    d,
                    &handle.doc.path,
                    &self.inner.root,
                    &handle.doc.text,
                    handle.server.encoding,
                )
            })
            .collect())
    }

    /// How many runs hold `path` open on its running server (`None`: not open there).
    pub(crate) async fn holders_of(&self, path: &Path) -> Option<usize> {
        let target = self.target_for(path).ok()?;
        let slot =
            self.inner.slots.lock().get(&(target.def.id.clone(), target.root.root)).cloned()?;
        let server = slot.current.lock().clone()?;
        server.holders(path).await.map(|h| h.len())
    }

    /// What the server covering `path` is busy with, if it runs and is busy.
    pub fn busy(&self, handle: &DocHandle) -> Option<String> {
        handle.server.busy()
    }
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

fn expand_home(p: &str) -> PathBuf {
    match p.strip_prefix("~/") {
        Some(rest) => std::env::var_os("HOME").map(PathBuf::from).unwrap_or_default().join(rest),
        None => PathBuf::from(p),
    }
}

/// Says which half of the intersection rule failed.
fn missing_half(
    allow_project_code: bool,
    def: &ServerDef,
    root: Option<&RootMatch>,
    command: Option<&ResolvedCommand>,
    run_root: &Path,
    path: &Path,
) -> String {
    let marker_part = match root {
        Some(r) => format!("marker {} found in {}", r.marker, display_relative(run_root, &r.root)),
        None => format!(
            "no root marker ({}) between {} and the run's root",
            def.root_markers.join(", "),
            display_relative(run_root, path.parent().unwrap_or(run_root))
        ),
    };
    let binary_part = match command {
        Some(c) => format!("binary resolved at {}", c.program.display()),
        None => format!(
            "none of {} resolves (searched {})",
            def.program_names().join(", "),
            if allow_project_code {
                "PATH, .venv/bin, venv/bin, node_modules/.bin"
            } else {
                "PATH; project-local folders are not searched because project code may not run here"
            }
        ),
    };
    format!("{marker_part}, but {binary_part}")
        .replace(", but binary resolved", "; binary resolved")
}

/// The major version in a `--version` line: the first number after the word `version`
/// (`Debian clangd version 16.0.6 (15~deb12u1)` → 16).
fn major_version(line: &str) -> Option<u32> {
    let lower = line.to_lowercase();
    let after = &lower[lower.find("version")? + "version".len()..];
    let digits: String = after
        .trim_start_matches(|c: char| !c.is_ascii_digit())
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

#[cfg(test)]
mod version_tests {
    use super::major_version;

    #[test]
    fn the_major_version_is_read_from_what_servers_print() {
        assert_eq!(major_version("Debian clangd version 16.0.6 (15~deb12u1)"), Some(16));
        assert_eq!(major_version("clangd version 19.1.7"), Some(19));
        assert_eq!(major_version("Ubuntu clangd version 14.0.0-1ubuntu1.1"), Some(14));
        assert_eq!(major_version("clangd: no version here"), None);
    }
}
