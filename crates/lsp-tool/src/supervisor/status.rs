//! `status`: every language present in the run's root and every server started, with what
//! serves it, its state, and why nothing starts where the intersection rule fails; and the
//! run's activity for progress reports.

use std::sync::Arc;

use agent_tools_support::progress::CallScope;

/// Between pushed changes, how often a waiting call says it still waits.
const STILL_WAITING_EVERY: std::time::Duration = std::time::Duration::from_secs(2);
use serde::Serialize;

use super::{Supervisor, server_label, target::missing_half};
use crate::{
    config::ServerDef,
    discover::{self, RootMatch},
    error::LspError,
    paths::display_relative,
    pool::Slot,
    server::DiagnosticMode,
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

impl Supervisor {
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
                rows.push(self.status_without_root(def, &presence));
            }
            for root in roots {
                rows.push(self.status_of_root(def, &presence, &root, &slots));
            }
        }
        Ok(rows)
    }

    /// The row of a language present without a root marker: what it would take to serve it.
    fn status_without_root(&self, def: &ServerDef, presence: &discover::Presence) -> RootStatus {
        let example = presence.example.clone().unwrap_or_else(|| self.inner.root.clone());
        let command = discover::resolve_command(
            def,
            &self.inner.extra_paths,
            &self.inner.root,
            &self.inner.root,
            self.allow_project_code(),
        );
        RootStatus {
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
        }
    }

    /// The row of one project root of `def`: its server's state, or what is missing.
    fn status_of_root(
        &self,
        def: &ServerDef,
        presence: &discover::Presence,
        root: &RootMatch,
        slots: &[Arc<Slot>],
    ) -> RootStatus {
        let command = discover::resolve_command(
            def,
            &self.inner.extra_paths,
            &root.root,
            &self.inner.root,
            self.allow_project_code(),
        );
        let slot = slots.iter().find(|s| s.def.id == def.id && s.root.root == root.root);
        let server = slot.and_then(|s| s.current.lock().clone());
        let (starting, crashes, last_crash, stopped) = slot.map_or((false, 0, None, false), |s| {
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
        RootStatus {
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
                        Some(root),
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
        }
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

    /// Runs `call` (an lsp call of this supervisor), telling the scope's progress port what the
    /// servers are doing while it waits: starting, or indexing with the server's own progress
    /// titles. A server's change of state is pushed to the waiting call as it happens; between
    /// changes, a report every few seconds says the call is still waiting.
    pub(crate) async fn reporting<T>(
        &self,
        scope: &CallScope,
        what: &str,
        call: impl std::future::Future<Output = T>,
    ) -> T {
        if !scope.reports() {
            return call.await;
        }
        let started = std::time::Instant::now();
        let mut changes = self.inner.pool.activity().subscribe();
        let mut last: Option<String> = None;
        tokio::pin!(call);
        let mut heartbeat = tokio::time::interval(STILL_WAITING_EVERY);
        heartbeat.tick().await;
        loop {
            let now = tokio::select! {
                out = &mut call => return out,
                Ok(()) = changes.changed() => match self.activity() {
                    doing @ Some(_) if doing != last => doing,
                    _ => continue,
                },
                _ = heartbeat.tick() => self.activity(),
            };
            let waited = started.elapsed().as_secs();
            let doing = now.as_deref().unwrap_or("waiting for the answer");
            scope.report(waited as f64, &format!("lsp {what}: {waited} s; {doing}"));
            last = now;
        }
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
}
