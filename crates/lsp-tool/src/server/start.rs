//! Starting a server: the process through support's process lifetime (its own group, death
//! with the host, a watchdog), stderr drained into tracing and a tail, `initialize` with the
//! client's capabilities, `initialized`, and the watch of the root.

use std::{
    collections::{HashMap, VecDeque},
    path::{Path, PathBuf},
    process::Stdio,
    sync::{Arc, atomic::AtomicBool},
    time::{Duration, Instant},
};

use agent_tools_support::process::{self, Spawned};
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::{io::AsyncBufReadExt, sync::Notify};
use tokio_util::sync::CancellationToken;

use super::{
    STDERR_TAIL_BYTES, Server, Timeouts,
    handler::{Shared, SharedState},
    watched,
};
use crate::{
    config::ServerDef,
    discover::ResolvedCommand,
    encoding::ColumnUnit,
    paths::uri_from_path,
    transport::{RequestError, Rpc},
};

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
            "callHierarchy": {},
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

/// The last stderr lines a server printed, kept for crash reports.
type StderrTail = Arc<Mutex<VecDeque<u8>>>;

/// Set once the server process exited, with how it ended.
struct ExitWatch {
    exited: CancellationToken,
    status: Arc<Mutex<Option<String>>>,
}

impl Server {
    /// Starts the process and completes `initialize`.
    pub(crate) async fn start(
        def: Arc<ServerDef>,
        root: PathBuf,
        command: ResolvedCommand,
        timeouts: Timeouts,
        activity: tokio::sync::watch::Sender<u64>,
        cancel: &CancellationToken,
    ) -> Result<Arc<Server>, StartError> {
        let started = Instant::now();
        let Spawned { mut child, group } = spawn_process(&def, &command, &root).await?;
        let pid = group.pid();
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(spawn_error(&def, &command, "its pipes could not be opened"));
        };
        let name = format!("{}@{}", def.id, root.display());
        let stderr_tail = keep_stderr_tail(stderr, name.clone());
        let exit = watch_exit(child);
        let shared = Arc::new(Shared {
            name: name.clone(),
            root: root.clone(),
            settings: def.settings.clone(),
            ready_message: def.ready_message.clone(),
            state: Mutex::new(SharedState::default()),
            changed: Notify::new(),
            activity,
        });
        let rpc = Rpc::start(stdout, stdin, shared.clone(), &name);
        let params = initialize_params(&def, &root);
        let init = tokio::select! {
            r = rpc.request("initialize", params, timeouts.startup, cancel) => r,
            _ = exit.exited.cancelled() => Err(RequestError::Closed),
        };
        let init = match init {
            Ok(v) => v,
            Err(e) => {
                let what = initialize_failure(&e, &exit, &group, &stderr_tail).await;
                return Err(spawn_error(&def, &command, &what));
            }
        };
        let capabilities =
            super::Capabilities::read(init.get("capabilities").unwrap_or(&Value::Null));
        if !capabilities.unreadable.is_empty() {
            tracing::warn!(
                server = %def.id,
                entries = ?capabilities.unreadable,
                "capabilities left out: lsp-types cannot read them"
            );
        }
        let encoding = ColumnUnit::from_lsp(capabilities.position_encoding());
        let server_name =
            init.pointer("/serverInfo/name").and_then(Value::as_str).map(str::to_string);
        let server_version =
            init.pointer("/serverInfo/version").and_then(Value::as_str).map(str::to_string);
        let watched_root = root.clone();
        let disk_watch = tokio::task::spawn_blocking(move || watched::watch_root(&watched_root))
            .await
            .ok()
            .flatten();
        let initialized = serde_json::to_value(lsp_types::InitializedParams {}).unwrap_or_default();
        let _ = rpc.notify("initialized", initialized).await;
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
            exited: exit.exited,
            exit_status: exit.status,
            stderr_tail,
            shutting_down: AtomicBool::new(false),
            group,
        }))
    }
}

/// Starts the server's process with piped stdio in `root`.
async fn spawn_process(
    def: &ServerDef,
    command: &ResolvedCommand,
    root: &Path,
) -> Result<Spawned, StartError> {
    let mut cmd = tokio::process::Command::new(&command.program);
    cmd.args(&command.args)
        .envs(command.env.iter().map(|(k, v)| (k, v)))
        .current_dir(root)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    // Forked on the spawner thread: the server is killed when the host process dies.
    // Its own group, death with the host, a watchdog for what it starts; until
    // `initialize` succeeds, a dropped (cancelled) start drops the group, which kills it.
    process::spawn(cmd).await.map_err(|e| spawn_error(def, command, &e.to_string()))
}

/// Logs the server's stderr and keeps its last bytes for crash reports.
fn keep_stderr_tail(stderr: tokio::process::ChildStderr, name: String) -> StderrTail {
    let stderr_tail = Arc::new(Mutex::new(VecDeque::with_capacity(STDERR_TAIL_BYTES)));
    let tail = stderr_tail.clone();
    tokio::spawn(async move {
        let mut lines = tokio::io::BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            tracing::debug!(target: "agent_tools_lsp::stderr", server = %name, "{line}");
            let mut tail = tail.lock();
            tail.extend(line.bytes().chain(std::iter::once(b'\n')));
            while tail.len() > STDERR_TAIL_BYTES {
                tail.pop_front();
            }
        }
    });
    stderr_tail
}

/// Waits for the process in the background and records how it ended.
fn watch_exit(mut child: tokio::process::Child) -> ExitWatch {
    let exit = ExitWatch { exited: CancellationToken::new(), status: Arc::new(Mutex::new(None)) };
    let (exited, status) = (exit.exited.clone(), exit.status.clone());
    tokio::spawn(async move {
        let ended = child.wait().await;
        *status.lock() = Some(match ended {
            Ok(s) => s.to_string(),
            Err(e) => format!("unknown ({e})"),
        });
        exited.cancel();
    });
    exit
}

/// `initialize`'s parameters for a server of `def` on `root`.
fn initialize_params(def: &ServerDef, root: &Path) -> Value {
    #[allow(deprecated, reason = "older servers still read rootUri and rootPath")]
    let initialize = lsp_types::InitializeParams {
        process_id: Some(std::process::id()),
        client_info: Some(lsp_types::ClientInfo {
            name: "agent-tools".into(),
            version: Some(env!("CARGO_PKG_VERSION").into()),
        }),
        root_uri: uri_from_path(root),
        root_path: Some(root.display().to_string()),
        workspace_folders: Some(super::handler::workspace_folders(root)),
        initialization_options: def.initialization_options.clone(),
        ..Default::default()
    };
    let mut params = serde_json::to_value(initialize).unwrap_or_default();
    // The capabilities stay data: lsp-types names `workspace.diagnostics` `diagnostic`, so
    // typed capabilities would hide `refreshSupport` from the servers that read it.
    params["capabilities"] = client_capabilities();
    params
}

/// Why `initialize` failed, with the exit status and the last stderr lines; the process is
/// killed.
async fn initialize_failure(
    error: &RequestError,
    exit: &ExitWatch,
    group: &process::ProcessGroup,
    stderr_tail: &StderrTail,
) -> String {
    // Let the exit status and the last stderr lines arrive.
    let _ = tokio::time::timeout(Duration::from_millis(300), exit.exited.cancelled()).await;
    let _ = group.signal(libc::SIGKILL);
    let status = exit.status.lock().clone();
    let mut what = match (error, status) {
        (RequestError::Closed, Some(status)) => format!("it exited during initialize ({status})"),
        _ => format!("initialize failed: {error}"),
    };
    let bytes: Vec<u8> = stderr_tail.lock().iter().copied().collect();
    let text = String::from_utf8_lossy(&bytes).trim().to_string();
    let lines: Vec<&str> = text.lines().collect();
    let tail = lines[lines.len().saturating_sub(8)..].join("\n");
    if !tail.is_empty() {
        what.push_str(&format!("; its stderr ends with:\n{tail}"));
    }
    what
}
