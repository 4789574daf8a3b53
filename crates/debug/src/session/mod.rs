//! One debug session: the adapter process (or a direct connection), the handshake in the order
//! every adapter accepts, the operations with their limits, stop snapshots, and teardown.

mod connect;
mod control;
mod go_build;
mod handles;
mod handshake;
mod inspect;
mod preview;
mod snapshot;
pub(crate) mod state;
mod stdin_wait;
mod teardown;
mod trace;
mod tracker;
pub(crate) mod watch;

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    sync::Arc,
    time::Duration,
};

use tokio::{task::JoinHandle, time::Instant};
use tokio_util::sync::CancellationToken;

use agent_tools_support::progress::CallScope;

use self::{handles::Handles, state::Shared};
use crate::{
    adapters::ExceptionMode,
    adapters::{AdapterCommand, AdapterKind, LaunchSpec},
    config::DebugConfig,
    dap_types::{Capabilities, Threads},
    error::DebugError,
    protocol::{DapClient, PendingResponse},
    response::*,
};

use self::connect::AdapterProcess;
pub(crate) use self::{
    connect::attach_recipe,
    control::Motion,
    handshake::{check_hit_condition, pending_view},
    snapshot::is_library_path,
};

/// One breakpoint the user asked for, with its own condition, hit condition and log message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LineBreakpoint {
    pub line: u32,
    pub condition: Option<String>,
    pub hit_condition: Option<String>,
    pub log_message: Option<String>,
}

/// What the user asked breakpoints to be in one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BreakpointRequest {
    /// One per line, sorted by line.
    pub lines: Vec<LineBreakpoint>,
    /// The file is library code (stdlib, site-packages, the project's own `.venv`, …).
    pub library: bool,
}

/// Launch a program, or attach to one already running under a debug server.
#[derive(Debug, Clone)]
pub(crate) enum Target {
    Launch(LaunchSpec),
    Attach { how: AttachTo, program: Option<PathBuf>, cwd: PathBuf },
}

/// What `attach` connects to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AttachTo {
    /// A debug server listening on this local port.
    Port(u16),
    /// A running process, attached to by the adapter (ptrace).
    Pid(u32),
}

/// Everything `Session::start` needs.
pub(crate) struct StartOptions<'a> {
    pub id: u64,
    pub root: &'a Path,
    pub config: &'a DebugConfig,
    pub command: AdapterCommand,
    pub target: Target,
    /// What was launched, when the program's path does not say it (a module, a test, the
    /// package in the root).
    pub name: Option<String>,
    pub breakpoints: &'a BTreeMap<PathBuf, BreakpointRequest>,
    pub exceptions: ExceptionMode,
    pub rust: bool,
    /// Function breakpoints besides the conversation's line breakpoints (`trace`).
    pub functions: Vec<String>,
    /// Text for the program's stdin, which then stays open for `input`.
    pub stdin: Option<String>,
    pub wait: Duration,
    pub cancel: CallScope,
    /// The run's capsule: the adapter and its debuggee start in it.
    pub capsule: &'a Arc<dyn agent_tools_support::capsule::Capsule>,
}

/// A running debug session.
pub(crate) struct Session {
    pub(crate) id: u64,
    pub(crate) kind: AdapterKind,
    pub(crate) request: &'static str,
    pub(crate) program: String,
    command: Vec<String>,
    version: Option<String>,
    notes: Vec<String>,
    client: Arc<DapClient>,
    pub(crate) shared: Arc<Shared>,
    process: Option<AdapterProcess>,
    capabilities: Capabilities,
    temp: Option<tempfile::TempDir>,
    pub(crate) deadline: Instant,
    owns_debuggee: bool,
    handles: Handles,
    pub(crate) cancel: CancellationToken,
    tasks: Vec<JoinHandle<()>>,
    root: PathBuf,
    config: DebugConfig,
    exceptions: ExceptionMode,
    /// The top user frame of the latest snapshot: the default frame of `evaluate`.
    default_frame: Option<u64>,
    /// Where the latest stop was, for `status`.
    last_place: Option<String>,
    /// The shown frame of the latest stop: its file, line and adapter frame id (for `watch`).
    shown_frame: Option<(Option<PathBuf>, u32, Option<i64>)>,
    /// A `watch` waiting for its condition: undone at the next stop or end.
    watching: Option<watch::ActiveWatch>,
    /// Where the adapter placed each file's breakpoints (its later `breakpoint` events apply).
    placed: BTreeMap<PathBuf, Vec<BreakpointView>>,
    /// debugpy's justMyCode of this launch (fixed for the session).
    just_my_code: bool,
    /// The stop number the latest snapshot showed: a later stop was not seen by any call.
    reported_stop: u64,
    /// The thread list asked for as the program starts (debugpy, which answers every request
    /// only after a round trip to the program): the first stop names its thread from it.
    early_threads: Option<PendingResponse<Threads>>,
    /// delve: the program's build, started beside the adapter, awaited before `launch`.
    go_build: Option<go_build::GoBuild>,
    torn_down: bool,
}

impl Session {
    /// Starts the adapter, runs the handshake and waits for the first stop.
    pub(crate) async fn start(
        opts: StartOptions<'_>,
    ) -> Result<(Session, StartedView), DebugError> {
        let mut session = Session::connect(&opts).await?;
        tracing::trace!("start: connected");
        match session.handshake(&opts).await {
            Ok(view) => Ok((session, view)),
            Err(e) => {
                let mut context = session.failure_context();
                if let Target::Attach { how: AttachTo::Pid(_), .. } = &opts.target
                    && session.kind == AdapterKind::Debugpy
                {
                    context.push_str(&format!(
                        "\ndebugpy attaches to a pid by injecting itself with gdb, which failed \
                         here (it needs gdb, ptrace rights and an interpreter it can read). {}",
                        attach_recipe(AdapterKind::Debugpy, 5678)
                    ));
                }
                session.teardown("start failed").await;
                Err(match e {
                    DebugError::Adapter(message) => {
                        DebugError::Adapter(format!("{message}{context}"))
                    }
                    other => other,
                })
            }
        }
    }
}

/// `path` relative to `root` when inside it.
pub(crate) fn display_path(path: &str, root: &Path) -> String {
    match Path::new(path).strip_prefix(root) {
        Ok(p) if p.as_os_str().is_empty() => ".".into(),
        Ok(p) => p.display().to_string(),
        Err(_) => path.to_string(),
    }
}

/// At most `max` characters of `text`, and how many were cut.
pub(crate) fn cut(text: &str, max: usize) -> (String, usize) {
    let total = text.chars().count();
    if total <= max {
        return (text.to_string(), 0);
    }
    (text.chars().take(max).collect(), total - max)
}
