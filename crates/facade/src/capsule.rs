//! `[capsule]`: the run's sandbox, made by the host when the run starts (decision D11).
//!
//! Only the user's file (or `--capsule`, or a project the user trusts) chooses it: a project's
//! own file could otherwise turn its sandbox off. Every exec-tier process of the run (kernels,
//! debug adapters and debuggees, workers) starts in it; a capsule that was asked for and cannot
//! be made is never replaced by the host: its processes then refuse to start, saying why.

use std::{
    ffi::{OsStr, OsString},
    path::{Path, PathBuf},
    process::Command,
    sync::Arc,
};

use agent_tools_support::capsule::{
    Bwrap, Capsule, CapsuleOptions, Landlock, Network, OnHost, Prefix, WorkerLogin,
};
use serde::Deserialize;

/// Which capsule a run gets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CapsuleKind {
    /// Processes run on the host with the user's rights, unconfined.
    None,
    /// bubblewrap: the project writable, the system read-only, the home private, no network.
    Bwrap,
    /// Landlock and a seccomp filter, for hosts where bubblewrap cannot make namespaces.
    Landlock,
    /// bubblewrap where it can make its namespaces, else Landlock, else nothing of the exec
    /// tier starts (never unconfined). The default.
    #[default]
    Auto,
    /// A command prefix the user gives (`prefix = ["docker", "exec", "-i", "box"]`).
    Prefix,
}

impl std::str::FromStr for CapsuleKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "none" => Ok(CapsuleKind::None),
            "bwrap" => Ok(CapsuleKind::Bwrap),
            "landlock" => Ok(CapsuleKind::Landlock),
            "auto" => Ok(CapsuleKind::Auto),
            "prefix" => Ok(CapsuleKind::Prefix),
            other => Err(format!(
                "unknown capsule `{other}`; use `auto` (bubblewrap, else Landlock), `bwrap` (a \
                 bubblewrap sandbox), `landlock` (Landlock and seccomp), `prefix` (the [capsule] \
                 prefix of agent-tools.toml) or `none`"
            )),
        }
    }
}

/// `[capsule]` in agent-tools.toml.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct CapsuleConfig {
    /// `auto` (default), `bwrap`, `landlock`, `prefix` or `none`; `--capsule` overrides it.
    pub kind: CapsuleKind,
    /// For `prefix`: the words put before every command; they must pass fds 3 and 4 through.
    pub prefix: Vec<String>,
    /// For `bwrap` and `landlock`: `none` (default) or `host`.
    pub network: Network,
    /// For `bwrap`: the `bwrap` program (default: /usr/bin/bwrap, /usr/local/bin/bwrap,
    /// /bin/bwrap, then PATH outside the project).
    pub bwrap: Option<PathBuf>,
    /// For `bwrap` and `landlock`: more folders writable inside (`~/` is the home folder).
    pub read_write: Vec<PathBuf>,
    /// For `bwrap` and `landlock`: more paths hidden, besides the usual secret locations.
    pub hide: Vec<PathBuf>,
    /// For `bwrap` and `landlock`: paths of the private home the capsule shows (read-only),
    /// secret locations included (`~/.claude` for a worker that is Claude Code).
    pub expose: Vec<PathBuf>,
    /// For `bwrap` and `landlock`: project paths read-only inside (default `.git` and `agent-tools.toml`).
    pub protect: Option<Vec<PathBuf>>,
    /// For `bwrap` and `landlock`: environment variables passed in besides the allow-list (an API key a worker
    /// needs, for example).
    pub env: Vec<String>,
}

/// The capsule of a run at `root` as `config` asks for it.
/// `programs` are those the run was configured with (an interpreter, `node`): the capsule shows
/// their prefixes where they lie in the private home.
pub fn make(
    root: &Path,
    config: &CapsuleConfig,
    programs: &[PathBuf],
) -> Result<Arc<dyn Capsule>, String> {
    let options = || options(root, config, programs);
    match config.kind {
        CapsuleKind::None => Ok(Arc::new(OnHost)),
        CapsuleKind::Prefix => Prefix::new(config.prefix.clone())
            .map(|p| Arc::new(p) as Arc<dyn Capsule>)
            .map_err(|e| format!("capsule.prefix: {e}")),
        CapsuleKind::Bwrap => Bwrap::start(options())
            .map(|b| Arc::new(b) as Arc<dyn Capsule>)
            .map_err(|e| e.to_string()),
        CapsuleKind::Landlock => Landlock::start(options())
            .map(|l| Arc::new(l) as Arc<dyn Capsule>)
            .map_err(|e| e.to_string()),
        CapsuleKind::Auto => auto(options),
    }
}

/// The capsule workers start in: the run's kind with public addresses through an egress proxy
/// of its own (a worker calls its model's API; the host's own services stay out of reach), or
/// the host's network where the user gave the run's capsule `network = "host"`; of the home,
/// besides what the run's capsule shows, exactly the login and configuration paths of the agent
/// CLIs their commands name (read-only) and those CLIs' key variables. A run without a local capsule (`none`, `prefix`) gives workers its own.
pub fn for_workers(
    root: &Path,
    config: &CapsuleConfig,
    programs: &[PathBuf],
    clis: &[&'static WorkerLogin],
    run_capsule: &Arc<dyn Capsule>,
) -> Arc<dyn Capsule> {
    if matches!(config.kind, CapsuleKind::None | CapsuleKind::Prefix) {
        return run_capsule.clone();
    }
    let mut config = config.clone();
    config.network = match config.network {
        Network::Host => Network::Host,
        Network::None | Network::Internet => Network::Internet,
    };
    config.env.extend(clis.iter().flat_map(|cli| cli.env.iter().map(|v| (*v).to_string())));
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let logins: Vec<(PathBuf, String)> =
        home.iter().flat_map(|home| clis.iter().flat_map(|cli| cli.paths(home))).collect();
    let options = || CapsuleOptions { logins: logins.clone(), ..options(root, &config, programs) };
    let made = match config.kind {
        CapsuleKind::Bwrap => Bwrap::start(options())
            .map(|b| Arc::new(b) as Arc<dyn Capsule>)
            .map_err(|e| e.to_string()),
        CapsuleKind::Landlock => Landlock::start(options())
            .map(|l| Arc::new(l) as Arc<dyn Capsule>)
            .map_err(|e| e.to_string()),
        _ => auto(options),
    };
    let names: Vec<&str> = clis.iter().map(|cli| cli.program).collect();
    let why = match names.as_slice() {
        [] => "for workers: the network as above; no known agent CLI named in the worker \
               commands, so no login is shown (expose it)"
            .to_string(),
        names => format!(
            "for workers: the network as above, the logins of {} read-only",
            names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
        ),
    };
    match made {
        Ok(inner) => Arc::new(Chosen { inner, why }),
        Err(why) => Arc::new(Unmade { why }),
    }
}

/// bubblewrap if it can make its namespaces here, else Landlock, else an error with both
/// reasons; `status` says which one and why.
fn auto(options: impl Fn() -> CapsuleOptions) -> Result<Arc<dyn Capsule>, String> {
    let bwrap_failed = match Bwrap::start(options()) {
        Ok(capsule) => {
            let why = "auto: bubblewrap can make its namespaces here".to_string();
            return Ok(Arc::new(Chosen { inner: Arc::new(capsule), why }));
        }
        Err(e) => e.to_string(),
    };
    match Landlock::start(options()) {
        Ok(capsule) => {
            let why = format!("auto: Landlock, as bubblewrap cannot run here ({bwrap_failed})");
            Ok(Arc::new(Chosen { inner: Arc::new(capsule), why }))
        }
        Err(landlock_failed) => Err(format!(
            "no capsule can be made on this machine: bubblewrap: {bwrap_failed}; Landlock: \
             {landlock_failed}; kernels, debuggers and workers stay off (set [capsule] kind = \
             \"none\" in the user's agent-tools.toml to run them unconfined)"
        )),
    }
}

/// The local backends' options from the user's `[capsule]`.
fn options(root: &Path, config: &CapsuleConfig, programs: &[PathBuf]) -> CapsuleOptions {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let expand = |paths: &[PathBuf]| -> Vec<PathBuf> {
        paths.iter().map(|p| expand_home(p, home.as_deref())).collect()
    };
    CapsuleOptions {
        program: config.bwrap.as_deref().map(|p| expand_home(p, home.as_deref())),
        project: root.to_path_buf(),
        network: config.network,
        read_write: expand(&config.read_write),
        hide: expand(&config.hide),
        expose: expand(&config.expose),
        protect: config.protect.clone(),
        pass_env: config.env.clone(),
        programs: programs.to_vec(),
        home,
        logins: Vec::new(),
    }
}

/// The capsule of a run, or one that refuses every start with `why` when it cannot be made:
/// asked-for confinement is never silently dropped.
pub fn make_or_refuse(
    root: &Path,
    config: &CapsuleConfig,
    programs: &[PathBuf],
) -> Arc<dyn Capsule> {
    make(root, config, programs).unwrap_or_else(|why| Arc::new(Unmade { why }))
}

/// The programs a run at `root` resolves, for [`make`]: the configured interpreter and `node`,
/// and the project's virtual environment's interpreter (its base interpreter often lives in
/// the home: pyenv, uv).
pub fn configured_programs(root: &Path, config: &crate::Config) -> Vec<PathBuf> {
    let _ = config;
    let venvs = [".venv/bin/python", "venv/bin/python"].map(|p| root.join(p));
    #[allow(unused_mut, reason = "each family built in adds its programs")]
    let mut configured: Vec<PathBuf> = Vec::new();
    #[cfg(feature = "eval")]
    configured.extend(config.eval.python.iter().chain(&config.eval.node).cloned());
    #[cfg(feature = "debug")]
    {
        let adapters = &config.debug.commands;
        configured.extend(
            [&adapters.dart, &adapters.debugpy, &adapters.lldb, &adapters.delve]
                .into_iter()
                .flatten()
                .filter_map(|argv| argv.first().map(PathBuf::from)),
        );
    }
    #[cfg(feature = "vibe")]
    configured.extend(worker_programs(&config.vibe));
    configured.into_iter().chain(venvs.into_iter().filter(|p| p.exists())).collect()
}

/// The programs the workers' commands name by path: an argv's first word, and every word of
/// a shell line that is the path of a file.
#[cfg(feature = "vibe")]
fn worker_programs(vibe: &agent_tools_vibe::VibeConfig) -> Vec<PathBuf> {
    use agent_tools_vibe::CommandLine;
    [&vibe.fast, &vibe.good]
        .into_iter()
        .flat_map(|tier| [&tier.command, &tier.read_only_command])
        .flatten()
        .flat_map(|command| match command {
            CommandLine::Argv(argv) => argv.first().map(PathBuf::from).into_iter().collect(),
            CommandLine::Shell(line) => line
                .split_whitespace()
                .map(PathBuf::from)
                .filter(|word| word.is_absolute() && word.is_file())
                .collect::<Vec<_>>(),
        })
        .collect()
}

fn expand_home(path: &Path, home: Option<&Path>) -> PathBuf {
    match (path.strip_prefix("~"), home) {
        (Ok(rest), Some(home)) => home.join(rest),
        _ => path.to_path_buf(),
    }
}

/// The capsule `auto` chose, saying which and why.
#[derive(Debug)]
struct Chosen {
    inner: Arc<dyn Capsule>,
    why: String,
}

impl Capsule for Chosen {
    fn command(&self, program: &OsStr, args: &[OsString]) -> Command {
        self.inner.command(program, args)
    }

    fn describe(&self) -> String {
        format!("{} ({})", self.inner.describe(), self.why)
    }

    fn signals_reach_the_program(&self) -> bool {
        self.inner.signals_reach_the_program()
    }

    fn sees_host_files(&self) -> bool {
        self.inner.sees_host_files()
    }

    fn temp_dir(&self) -> PathBuf {
        self.inner.temp_dir()
    }

    fn connect_loopback(
        &self,
        pid: u32,
        port: u16,
        within: std::time::Duration,
    ) -> std::io::Result<std::net::TcpStream> {
        self.inner.connect_loopback(pid, port, within)
    }

    fn host_pid(&self, inside: u32, under: u32) -> Option<u32> {
        self.inner.host_pid(inside, under)
    }

    fn explain(&self, output: &str) -> Option<String> {
        self.inner.explain(output)
    }

    fn exit_statuses(&self) -> agent_tools_support::capsule::ExitStatuses {
        self.inner.exit_statuses()
    }

    fn loopback_tcp(&self) -> agent_tools_support::capsule::LoopbackTcp {
        self.inner.loopback_tcp()
    }

    fn command_with_ports(&self, program: &OsStr, args: &[OsString], ports: &[u16]) -> Command {
        self.inner.command_with_ports(program, args, ports)
    }
}

/// A capsule that was asked for and could not be made.
#[derive(Debug)]
struct Unmade {
    why: String,
}

impl Capsule for Unmade {
    fn command(&self, _program: &OsStr, _args: &[OsString]) -> Command {
        // A program that cannot exist: the start fails, and `describe` says why.
        Command::new(format!("/nonexistent/agent-tools-capsule-unavailable: {}", self.why))
    }

    fn describe(&self) -> String {
        format!("unavailable: {}; nothing of this run's exec tier starts", self.why)
    }

    fn signals_reach_the_program(&self) -> bool {
        false
    }
}
