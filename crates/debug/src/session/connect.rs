//! Starting a session: the adapter process in its own process group (stdio, or delve's TCP
//! port), or a direct TCP connection to a debug server, and the client and event pump on it.

use std::{
    path::{Path, PathBuf},
    sync::Arc,
    time::Duration,
};

use agent_tools_support::process::{CgroupJoin, SpawnOptions, Spawned};
use tokio::{
    io::{AsyncBufReadExt, BufReader},
    task::JoinHandle,
    time::Instant,
};
use tokio_util::sync::CancellationToken;

use super::{
    handles::Handles,
    state::{Shared, forward_lines, pump},
    *,
};
use crate::{
    adapters::{self, AdapterKind},
    dap_types::Capabilities,
    error::DebugError,
    protocol::{BoxRead, BoxWrite, DapClient},
};

/// The adapter process we started, in its own process group.
pub(crate) struct AdapterProcess {
    pub(super) child: tokio::process::Child,
    pub(super) pid: i32,
    /// The adapter's tree (its group and every process carrying its lineage mark, the
    /// program and what the program started included); dropping it kills the tree, so
    /// nothing of ours outlives a panic or a dropped supervisor.
    pub(super) group: agent_tools_support::process::ProcessGroup,
}

impl Session {
    /// Spawns the adapter (or connects to a debug server) and starts the client and event pump.
    pub(super) async fn connect(opts: &StartOptions<'_>) -> Result<Session, DebugError> {
        tracing::trace!("start: connecting");
        let kind = opts.command.kind;
        let shared = Shared::in_capsule(opts.capsule.clone());
        let mut tasks = Vec::new();
        let mut notes = opts.command.notes.clone();
        let temp = tempfile::Builder::new()
            .prefix("agent-tools-debug-")
            .tempdir_in(opts.capsule.temp_dir())
            .map_err(|e| DebugError::adapter(format!("cannot create a temp folder: {e}")))?;
        let (request, program, cwd) = describe_target(opts);
        // delve's build starts beside dlv: the build is most of a Go launch.
        let build = async {
            let (Target::Launch(spec), AdapterKind::Delve) = (&opts.target, kind) else {
                return Ok(None);
            };
            let output = temp.path().join("__debug_bin");
            let Some(argv) = go_build::build_command(spec, &output) else { return Ok(None) };
            let dir = delve_dir(opts);
            go_build::start(shared.capsule.clone(), argv, &dir, temp.path(), spec, output)
                .await
                .map(Some)
        };
        let transport = open_transport(opts, &cwd, temp.path(), &shared, &mut tasks, &mut notes);
        let (go_build, transport) = tokio::join!(build, transport);
        let (read, write, process, command) = transport?;
        let go_build = go_build?;
        if let Some(process) = &process {
            shared.adapter_pid.store(process.group.pid(), std::sync::atomic::Ordering::SeqCst);
        }
        if let Some(text) = &opts.stdin {
            shared.update(|s| s.pending_stdin = Some(text.clone()));
        }
        let (client, incoming) = DapClient::start(read, write);
        tasks.push(tokio::spawn(pump(incoming, shared.clone(), client.clone(), kind)));
        Ok(Session {
            id: opts.id,
            kind,
            request,
            program,
            command,
            version: opts.command.version.clone(),
            notes,
            client,
            shared,
            process,
            capabilities: Capabilities::default(),
            temp: Some(temp),
            deadline: Instant::now() + opts.config.ttl(),
            owns_debuggee: matches!(opts.target, Target::Launch(_)),
            handles: Handles::default(),
            cancel: CancellationToken::new(),
            tasks,
            root: opts.root.to_path_buf(),
            config: opts.config.clone(),
            exceptions: opts.exceptions,
            default_frame: None,
            last_place: None,
            shown_frame: None,
            watching: None,
            reported_stop: 0,
            just_my_code: false,
            placed: BTreeMap::new(),
            early_threads: None,
            go_build,
            torn_down: false,
        })
    }
}

/// Where dlv (and so its build) runs: the program's Go module.
fn delve_dir(opts: &StartOptions<'_>) -> PathBuf {
    match &opts.target {
        Target::Launch(spec) => {
            adapters::go_module_dir(&spec.program, opts.root).unwrap_or_else(|| spec.cwd.clone())
        }
        Target::Attach { cwd, .. } => cwd.clone(),
    }
}

/// The start request (`launch` or `attach`), the program as named in the session, and the
/// working folder.
fn describe_target(opts: &StartOptions<'_>) -> (&'static str, String, PathBuf) {
    match &opts.target {
        Target::Launch(spec) => (
            "launch",
            opts.name.clone().unwrap_or_else(|| spec.program.display().to_string()),
            spec.cwd.clone(),
        ),
        Target::Attach { how, program, cwd } => (
            "attach",
            program.as_ref().map_or_else(
                || match how {
                    AttachTo::Port(port) => format!("port {port}"),
                    AttachTo::Pid(pid) => format!("pid {pid}"),
                },
                |p| p.display().to_string(),
            ),
            cwd.clone(),
        ),
    }
}

/// The adapter's two ends, the process we started for it (none for a direct connection) and
/// the command line it runs: delve over the TCP port it prints, a debug server's port
/// directly, any other adapter over stdio.
async fn open_transport(
    opts: &StartOptions<'_>,
    cwd: &Path,
    temp: &Path,
    shared: &Arc<Shared>,
    tasks: &mut Vec<JoinHandle<()>>,
    notes: &mut Vec<String>,
) -> Result<Transport, DebugError> {
    let kind = opts.command.kind;
    Ok(match (&opts.target, kind) {
        (Target::Attach { how: AttachTo::Port(port), .. }, k) if adapters::attach_is_direct(k) => {
            let stream = connect_tcp(*port, Duration::from_secs(5)).await.map_err(|e| {
                DebugError::Adapter(format!(
                    "nothing accepts a debug connection on 127.0.0.1:{port} ({e}). {}",
                    attach_recipe(k, *port)
                ))
            })?;
            let (r, w) = stream.into_split();
            (Box::new(r), Box::new(w), None, vec![format!("tcp 127.0.0.1:{port}")])
        }
        (_, AdapterKind::Delve) => {
            let module_dir = delve_dir(opts);
            let mut argv = opts.command.argv.clone();
            argv.extend(["dap", "-l", "127.0.0.1:0"].map(String::from));
            let inherit_stdin = matches!(
                &opts.target,
                Target::Launch(spec) if spec.stdin == adapters::StdinSource::Inherited
            );
            let (stream, process) =
                spawn_delve(&argv, &module_dir, temp, shared, tasks, opts, inherit_stdin).await?;
            let (r, w) = stream.into_split();
            notes.push(format!("dlv runs in {}", module_dir.display()));
            (Box::new(r), Box::new(w), Some(process), argv)
        }
        _ => {
            let (argv, ports) = loopback_ports(kind, &opts.command.argv, &*shared.capsule)?;
            if !ports.is_empty() {
                notes.push(format!(
                    "debugpy's adapter and the program talk on loopback ports {}, the only \
                     ones the run's capsule lets them use",
                    ports.iter().map(u16::to_string).collect::<Vec<_>>().join(", ")
                ));
            }
            let (r, w, process) = spawn_stdio(&argv, &ports, cwd, temp, shared, tasks).await?;
            (r, w, Some(process), argv)
        }
    })
}

/// What [`open_transport`] gives: the reading and writing ends, the adapter process and its
/// command line.
type Transport = (BoxRead, BoxWrite, Option<AdapterProcess>, Vec<String>);

/// The variable that gives debugpy's adapter its loopback ports (see [`DEBUGPY_ON_PORTS`]).
const DEBUGPY_PORTS: &str = "AGENT_TOOLS_DEBUGPY_PORTS";

/// Runs `debugpy.adapter` with every listener it opens on port 0 (for the debuggee and its
/// launcher) opened on the next of the given ports instead.
const DEBUGPY_ON_PORTS: &str = "\
import os, runpy, sys
from debugpy.common import sockets
ports = [int(p) for p in os.environ.pop('AGENT_TOOLS_DEBUGPY_PORTS', '').split(',') if p]
create_server = sockets.create_server
def on_a_given_port(host, port=0, *args, **kwargs):
    if not port and ports:
        port = ports.pop(0)
    return create_server(host, port, *args, **kwargs)
sockets.create_server = on_a_given_port
sys.argv[0] = 'debugpy.adapter'
runpy.run_module('debugpy.adapter', run_name='__main__', alter_sys=True)
";

/// How many loopback ports debugpy's adapter gets: one for the debuggee's connection, one for
/// its launcher's, and spares for a relaunch.
const DEBUGPY_PORT_COUNT: usize = 4;

/// The adapter command and the loopback ports its processes may use: where the run's capsule
/// allows TCP between its processes only on given ports (Landlock without network), debugpy
/// (whose adapter and debuggee talk over TCP) gets ports picked here and listens on them.
fn loopback_ports(
    kind: AdapterKind,
    argv: &[String],
    capsule: &dyn agent_tools_support::capsule::Capsule,
) -> Result<(Vec<String>, Vec<u16>), DebugError> {
    use agent_tools_support::capsule::{LoopbackTcp, free_loopback_ports};
    let module = argv.iter().position(|a| a == "debugpy.adapter");
    let (AdapterKind::Debugpy, LoopbackTcp::GivenPorts, Some(at)) =
        (kind, capsule.loopback_tcp(), module)
    else {
        return Ok((argv.to_vec(), Vec::new()));
    };
    if at == 0 || argv[at - 1] != "-m" {
        return Ok((argv.to_vec(), Vec::new()));
    }
    let ports = free_loopback_ports(DEBUGPY_PORT_COUNT).map_err(|e| {
        DebugError::adapter(format!("cannot pick loopback ports for debugpy's adapter: {e}"))
    })?;
    let mut wrapped: Vec<String> = argv[..at - 1].to_vec();
    wrapped.extend(["-c".to_string(), DEBUGPY_ON_PORTS.to_string()]);
    wrapped.extend(argv[at + 1..].iter().cloned());
    Ok((wrapped, ports))
}

/// Starts the adapter `argv` in `cwd`, in its own process group, with stdout and stderr piped.
pub(super) async fn start_adapter(
    capsule: &dyn agent_tools_support::capsule::Capsule,
    argv: &[String],
    ports: &[u16],
    cwd: &Path,
    stdin: std::process::Stdio,
    configure: impl FnOnce(&mut tokio::process::Command),
) -> Result<AdapterProcess, DebugError> {
    if argv.first().is_none_or(String::is_empty) {
        return Err(DebugError::adapter("the adapter command is empty"));
    }
    let rest: Vec<std::ffi::OsString> = argv[1..].iter().map(Into::into).collect();
    // In the run's capsule: the adapter, and so the debuggee it starts.
    let mut command =
        tokio::process::Command::from(capsule.command_with_ports(argv[0].as_ref(), &rest, ports));
    command
        .current_dir(cwd)
        .stdin(stdin)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    configure(&mut command);
    // Own process group, death with the host, a lineage mark its descendants inherit. An
    // adapter started directly starts nothing before its `launch`, so it joins its cgroup
    // while it boots and answers `initialize` (the join waits for the kernel: 1–15 ms), and
    // the handshake waits for the join before `launch`; a wrapper forks at once, so it joins
    // before its exec.
    let join = if capsule.signals_reach_the_program() {
        CgroupJoin::WhileStarting
    } else {
        CgroupJoin::BeforeExec
    };
    let Spawned { child, group } = SpawnOptions::new()
        .cgroup_join(join)
        .spawn(command)
        .await
        .map_err(|e| DebugError::adapter(format!("cannot start `{}`: {e}", argv.join(" "))))?;
    let pid = i32::try_from(group.pid()).unwrap_or(0);
    Ok(AdapterProcess { child, pid, group })
}

/// The adapter's (and so its debuggee's) `TMPDIR`, `TMP` and `TEMP`: the session's own temp
/// folder, removed with the session, so that what a killed adapter could not remove (lldb-dap's
/// `symbolizer-*` files when it aborts) is not left behind.
pub(super) fn private_temp(command: &mut tokio::process::Command, temp: &Path) {
    for name in ["TMPDIR", "TMP", "TEMP"] {
        command.env(name, temp);
    }
}

pub(super) async fn spawn_stdio(
    argv: &[String],
    ports: &[u16],
    cwd: &Path,
    temp: &Path,
    shared: &Arc<Shared>,
    tasks: &mut Vec<JoinHandle<()>>,
) -> Result<(BoxRead, BoxWrite, AdapterProcess), DebugError> {
    let capsule = shared.capsule.clone();
    let mut process =
        start_adapter(&*capsule, argv, ports, cwd, std::process::Stdio::piped(), |command| {
            command.env("PYDEVD_DISABLE_FILE_VALIDATION", "1");
            private_temp(command, temp);
            if !ports.is_empty() {
                let list: Vec<String> = ports.iter().map(u16::to_string).collect();
                command.env(DEBUGPY_PORTS, list.join(","));
            }
        })
        .await?;
    let (Some(stdin), Some(stdout)) = (process.child.stdin.take(), process.child.stdout.take())
    else {
        return Err(DebugError::adapter("the adapter has no stdio pipes"));
    };
    if let Some(stderr) = process.child.stderr.take() {
        tasks.push(forward_lines(shared.clone(), stderr, "stderr", true));
    }
    Ok((Box::new(stdout), Box::new(stdin), process))
}

/// Starts `dlv dap -l 127.0.0.1:0`, reads the port it prints, and connects.
pub(super) async fn spawn_delve(
    argv: &[String],
    cwd: &Path,
    temp: &Path,
    shared: &Arc<Shared>,
    tasks: &mut Vec<JoinHandle<()>>,
    opts: &StartOptions<'_>,
    inherit_stdin: bool,
) -> Result<(tokio::net::TcpStream, AdapterProcess), DebugError> {
    // The program inherits dlv's stdin: a pipe we keep the writing end of, or nothing.
    let stdin = if inherit_stdin {
        let (reader, writer) = std::io::pipe()
            .map_err(|e| DebugError::adapter(format!("cannot make a stdin pipe: {e}")))?;
        shared.update(|s| s.set_stdin(std::fs::File::from(std::os::fd::OwnedFd::from(writer))));
        std::process::Stdio::from(reader)
    } else {
        std::process::Stdio::null()
    };
    let capsule = shared.capsule.clone();
    let mut process =
        start_adapter(&*capsule, argv, &[], cwd, stdin, |command| private_temp(command, temp))
            .await?;
    let (Some(stdout), Some(stderr)) = (process.child.stdout.take(), process.child.stderr.take())
    else {
        return Err(DebugError::adapter("dlv has no stdio pipes"));
    };
    // The program's stderr goes to dlv's stderr.
    tasks.push(forward_lines(shared.clone(), stderr, "stderr", false));
    let mut reader = BufReader::new(stdout);
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    tracing::trace!("dlv: waiting for its address");
    let address = loop {
        let mut line = String::new();
        let read = tokio::select! {
            r = reader.read_line(&mut line) => r,
            _ = tokio::time::sleep_until(deadline) => {
                return Err(DebugError::adapter(format!(
                    "dlv did not say where it listens within 20 s; it printed: {}", seen.join(" | ")
                )));
            }
            _ = opts.cancel.cancelled() => return Err(DebugError::adapter("starting dlv was cancelled")),
        };
        match read {
            Ok(0) | Err(_) => {
                let status = process.child.try_wait().ok().flatten();
                return Err(DebugError::adapter(format!(
                    "dlv exited before listening ({}); it printed: {}",
                    status.map_or_else(
                        || "still running".into(),
                        |s| crate::process::describe_end(capsule.ended(s))
                    ),
                    seen.join(" | ")
                )));
            }
            Ok(_) => {
                if let Some(addr) = line.trim().strip_prefix("DAP server listening at:") {
                    break addr.trim().to_string();
                }
                seen.push(line.trim().to_string());
            }
        }
    };
    // After the address, dlv's stdout carries the program's stdout.
    tasks.push(forward_lines(shared.clone(), reader, "stdout", false));
    let port: u16 = address.rsplit(':').next().and_then(|p| p.parse().ok()).ok_or_else(|| {
        DebugError::adapter(format!("cannot read a port in dlv's address `{address}`"))
    })?;
    tracing::trace!(port, "dlv: listening");
    // Through the capsule: without network, dlv's 127.0.0.1 is the capsule's own loopback.
    let pid = process.group.pid();
    let stream = tokio::task::spawn_blocking(move || {
        let stream = capsule.connect_loopback(pid, port, Duration::from_secs(5))?;
        stream.set_nonblocking(true)?;
        let _ = stream.set_nodelay(true);
        tokio::net::TcpStream::from_std(stream)
    })
    .await
    .map_err(|e| DebugError::adapter(format!("connecting to dlv failed: {e}")))?
    .map_err(|e| DebugError::adapter(format!("cannot connect to dlv at {address}: {e}")))?;
    tracing::trace!("dlv: connected");
    Ok((stream, process))
}

pub(super) async fn connect_tcp(
    port: u16,
    within: Duration,
) -> std::io::Result<tokio::net::TcpStream> {
    let deadline = Instant::now() + within;
    loop {
        match tokio::net::TcpStream::connect(("127.0.0.1", port)).await {
            Ok(stream) => {
                let _ = stream.set_nodelay(true);
                return Ok(stream);
            }
            Err(e) if Instant::now() >= deadline => return Err(e),
            Err(e)
                if e.kind() == std::io::ErrorKind::ConnectionRefused
                    && within > Duration::from_secs(1) =>
            {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => return Err(e),
        }
    }
}

/// How to start a program so that `attach` with `port` can reach it.
pub(crate) fn attach_recipe(kind: AdapterKind, port: u16) -> String {
    match kind {
        AdapterKind::Debugpy => format!(
            "Start the program with `python -m debugpy --listen 127.0.0.1:{port} --wait-for-client \
             your_script.py` (the project's Python, with debugpy installed), then attach"
        ),
        AdapterKind::Delve => format!(
            "Start the program with `dlv debug --headless --listen 127.0.0.1:{port} --api-version 2 \
             --accept-multiclient` in its module folder, then attach"
        ),
        AdapterKind::Lldb => format!(
            "Start the program with `lldb-server gdbserver 127.0.0.1:{port} ./program`, then attach \
             (pass `program` for symbols)"
        ),
        AdapterKind::Dart => format!(
            "Start the program with `dart run --enable-vm-service={port} \
             --disable-service-auth-codes bin/main.dart`, then attach"
        ),
    }
}
