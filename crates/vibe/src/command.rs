//! The command backend: each worker is an external agent command configured per tier, run in
//! the run's root with the briefing on stdin and its id, tier and ceiling in the environment.
//!
//! Every attempt runs in a process tree of its own (`agent-tools-support`'s `process`: own group,
//! a lineage mark inherited by descendants, death with the host, a watchdog), so a stop reaches
//! everything it started, even what left the group; when an attempt ends, whatever it left
//! behind is ended too.

use std::{path::PathBuf, process::Stdio, sync::Arc, time::Duration};

use agent_tools_support::{
    capsule::{Capsule, OnHost, ProcessEnd},
    process::{self, ProcessGroup, Spawned},
};
use async_trait::async_trait;
use tokio::{
    io::{AsyncRead, AsyncReadExt, AsyncWriteExt},
    process::Command,
    sync::watch,
};

use crate::{
    backend::{
        ExitReport, StartRequest, StopReport, Stream, Tier, WorkerBackend, WorkerEvents,
        WorkerHandle, WorkerTier,
    },
    buffer::Utf8Carry,
    config::{CommandLine, VibeConfig},
};

/// Environment variables a worker command receives.
pub const ENV_WORKER_ID: &str = "AGENT_TOOLS_VIBE_WORKER_ID";
pub const ENV_LABEL: &str = "AGENT_TOOLS_VIBE_LABEL";
pub const ENV_TIER: &str = "AGENT_TOOLS_VIBE_TIER";
pub const ENV_CEILING: &str = "AGENT_TOOLS_VIBE_CEILING";
pub const ENV_REVISION: &str = "AGENT_TOOLS_VIBE_REVISION";
pub const ENV_ATTEMPT: &str = "AGENT_TOOLS_VIBE_ATTEMPT";

/// How long to wait for an exit after SIGKILL, and for output to drain after an exit.
const AFTER_KILL: Duration = Duration::from_secs(3);

/// Runs workers as the commands of `[vibe.fast]` and `[vibe.good]`.
#[derive(Debug, Clone)]
pub struct CommandBackend {
    root: PathBuf,
    config: Arc<VibeConfig>,
    capsule: Arc<dyn Capsule>,
}

impl CommandBackend {
    /// Workers run in `root` with the commands of `config`, on the host.
    pub fn new(root: impl Into<PathBuf>, config: VibeConfig) -> Self {
        CommandBackend { root: root.into(), config: Arc::new(config), capsule: Arc::new(OnHost) }
    }

    /// Workers start in `capsule`, the run's (a backend never boots one itself).
    pub fn in_capsule(mut self, capsule: Arc<dyn Capsule>) -> Self {
        self.capsule = capsule;
        self
    }

    fn command_for(&self, tier: WorkerTier, ceiling: Tier) -> Result<&CommandLine, String> {
        let commands = self.config.tier(tier);
        let (command, setting) = if ceiling >= Tier::Exec {
            (commands.command.as_ref(), "command")
        } else {
            (commands.read_only_command.as_ref(), "read_only_command")
        };
        command.ok_or_else(|| format!("vibe.{}.{setting} is not set", tier.as_str()))
    }
}

#[async_trait]
impl WorkerBackend for CommandBackend {
    fn plan(&self, tier: WorkerTier, caller: Tier) -> Result<Tier, String> {
        let name = tier.as_str();
        let commands = self.config.tier(tier);
        if caller >= Tier::Exec {
            return match &commands.command {
                Some(_) => Ok(Tier::Exec),
                None => Err(format!(
                    "no command is configured for {name} workers: set `vibe.{name}.command` in \
                     agent-tools.toml (the agent command that reads its briefing on stdin, for \
                     example a coding-agent CLI in non-interactive mode)"
                )),
            };
        }
        match (&commands.read_only_command, &commands.command) {
            (Some(_), _) => Ok(Tier::Read),
            (None, Some(command)) => Err(format!(
                "this surface is limited to {}-tier tools, and a {name} worker runs `{}`, which \
                 may change files or run commands; starting it would delegate around that limit. \
                 Set `vibe.{name}.read_only_command` in agent-tools.toml to a command that cannot \
                 write (for example the agent CLI in its read-only mode), or spawn from a surface \
                 that allows exec-tier tools",
                caller.as_str(),
                command.display()
            )),
            (None, None) => Err(format!(
                "no command is configured for {name} workers, and this surface is limited to \
                 {}-tier tools: set `vibe.{name}.read_only_command` in agent-tools.toml to a \
                 command that cannot write",
                caller.as_str()
            )),
        }
    }

    async fn start(
        &self,
        request: StartRequest,
        events: WorkerEvents,
    ) -> Result<Box<dyn WorkerHandle>, String> {
        let command = self.command_for(request.tier, request.ceiling)?;
        let (program, args) = command.argv().map_err(|e| {
            format!("vibe.{}: {e}; give the agent command to run", request.tier.as_str())
        })?;
        let args: Vec<std::ffi::OsString> = args.into_iter().map(Into::into).collect();
        let mut cmd = Command::from(self.capsule.command(program.as_ref(), &args));
        cmd.current_dir(&self.root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .env(ENV_WORKER_ID, &request.worker_id)
            .env(ENV_LABEL, &request.label)
            .env(ENV_TIER, request.tier.as_str())
            .env(ENV_CEILING, request.ceiling.as_str())
            .env(ENV_REVISION, request.revision.to_string())
            .env(ENV_ATTEMPT, request.attempt.to_string())
            .envs(request.nesting.worker_env())
            .kill_on_drop(true);
        let Spawned { mut child, group } = process::spawn(cmd).await.map_err(|e| {
            format!("cannot start `{}` in {}: {e}", command.display(), self.root.display())
        })?;

        if let Some(mut stdin) = child.stdin.take() {
            let briefing = request.briefing.clone();
            tokio::spawn(async move {
                // A worker that does not read its stdin is its own business; never block on it.
                let _ = stdin.write_all(briefing.as_bytes()).await;
                let _ = stdin.shutdown().await;
            });
        }
        let readers: Vec<_> = [
            child
                .stdout
                .take()
                .map(|s| (Stream::Stdout, Box::new(s) as Box<dyn AsyncRead + Send + Unpin>)),
            child
                .stderr
                .take()
                .map(|s| (Stream::Stderr, Box::new(s) as Box<dyn AsyncRead + Send + Unpin>)),
        ]
        .into_iter()
        .flatten()
        .map(|(stream, reader)| tokio::spawn(forward(reader, stream, events.clone())))
        .collect();

        let (exited_tx, exited_rx) = watch::channel(false);
        let tree = group.clone();
        let capsule = self.capsule.clone();
        tokio::spawn(async move {
            // Dropped with this task if the runtime shuts down under it: the tree dies with it.
            let tree = tree;
            let status = child.wait().await;
            // The leader is gone; whatever it left behind goes with it.
            tree.terminate(Duration::ZERO).await;
            let mut tails = String::new();
            for reader in readers {
                if let Ok(Ok(tail)) = tokio::time::timeout(AFTER_KILL, reader).await {
                    tails.push_str(&tail);
                }
            }
            // A worker that ran into the capsule's walls: say so where the model reads it.
            if let Some(why) = capsule.explain(&tails) {
                events.output(Stream::Stderr, format!("\n[agent-tools] {why}\n"));
            }
            events.exited(exit_report(status.map(|s| capsule.ended(s))));
            let _ = exited_tx.send(true);
        });
        Ok(Box::new(CommandHandle { group, exited: exited_rx }))
    }

    fn describe(&self) -> Vec<String> {
        [WorkerTier::Fast, WorkerTier::Good]
            .into_iter()
            .map(|tier| {
                let name = tier.as_str();
                let commands = self.config.tier(tier);
                let full = commands.command.as_ref().map_or_else(
                    || format!("not set (set vibe.{name}.command)"),
                    |c| format!("`{}`", c.display()),
                );
                let read_only = commands.read_only_command.as_ref().map_or_else(
                    || "not set (spawning from a read-only surface is refused)".to_string(),
                    |c| format!("`{}`", c.display()),
                );
                format!("{name} workers: command {full}; read-only command {read_only}")
            })
            .chain([format!("workers run in: {}", self.capsule.describe())])
            .collect()
    }
}

/// Forwards what `reader` carries as output events; returns its last few kilobytes.
async fn forward(
    mut reader: Box<dyn AsyncRead + Send + Unpin>,
    stream: Stream,
    events: WorkerEvents,
) -> String {
    let mut carry = Utf8Carry::default();
    let mut buf = vec![0u8; 8192];
    let mut tail = String::new();
    let mut keep = |text: &str| {
        tail.push_str(text);
        if tail.len() > TAIL_BYTES * 2 {
            let mut cut = tail.len() - TAIL_BYTES;
            while !tail.is_char_boundary(cut) {
                cut += 1;
            }
            tail.drain(..cut);
        }
    };
    loop {
        match reader.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let text = carry.decode(&buf[..n]);
                if !text.is_empty() {
                    keep(&text);
                    events.output(stream, text);
                }
            }
        }
    }
    let rest = carry.finish();
    if !rest.is_empty() {
        keep(&rest);
        events.output(stream, rest);
    }
    tail
}

/// How much of a worker's last output is kept to recognise the capsule's walls in.
const TAIL_BYTES: usize = 4096;

/// The report of a worker that ended as `end` says (a capsule's wrapper reports a signal as
/// 128+N; [`Capsule::ended`] reads it as the signal).
fn exit_report(end: std::io::Result<ProcessEnd>) -> ExitReport {
    match end {
        Ok(end) => {
            let detail = match end {
                ProcessEnd::Code(code) => format!("exit code {code}"),
                ProcessEnd::Signal(signal) => format!("killed by signal {signal}"),
            };
            ExitReport { success: end.success(), code: end.code(), signal: end.signal(), detail }
        }
        Err(e) => ExitReport {
            success: false,
            code: None,
            signal: None,
            detail: format!("its exit could not be observed: {e}"),
        },
    }
}

struct CommandHandle {
    group: ProcessGroup,
    exited: watch::Receiver<bool>,
}

impl CommandHandle {
    async fn exited_within(&self, within: Duration) -> bool {
        let mut exited = self.exited.clone();
        tokio::time::timeout(within, exited.wait_for(|e| *e)).await.is_ok_and(|r| r.is_ok())
    }
}

#[async_trait]
impl WorkerHandle for CommandHandle {
    async fn stop(&self, grace: Duration) -> StopReport {
        if *self.exited.borrow() {
            return StopReport { forced: false, detail: "it had already exited".into() };
        }
        let _ = self.group.signal(libc::SIGTERM);
        if self.exited_within(grace).await {
            return StopReport { forced: false, detail: "stopped by SIGTERM".into() };
        }
        self.group.terminate(Duration::ZERO).await;
        let detail = if self.exited_within(AFTER_KILL).await {
            format!(
                "it did not stop within {} of SIGTERM, so it was killed with SIGKILL",
                crate::render::seconds(grace)
            )
        } else {
            "it was killed with SIGKILL, but its exit was not observed in time".to_string()
        };
        StopReport { forced: true, detail }
    }
}
