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

use agent_tools_support::capsule::{Bwrap, BwrapOptions, Capsule, Network, OnHost, Prefix};
use serde::Deserialize;

/// Which capsule a run gets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CapsuleKind {
    /// Processes run on the host with the user's rights.
    #[default]
    None,
    /// bubblewrap: the project writable, the system read-only, secrets hidden, no network.
    Bwrap,
    /// A command prefix the user gives (`prefix = ["docker", "exec", "-i", "box"]`).
    Prefix,
}

impl std::str::FromStr for CapsuleKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "none" => Ok(CapsuleKind::None),
            "bwrap" => Ok(CapsuleKind::Bwrap),
            "prefix" => Ok(CapsuleKind::Prefix),
            other => Err(format!(
                "unknown capsule `{other}`; use `bwrap` (a bubblewrap sandbox), `prefix` (the \
                 [capsule] prefix of agent-tools.toml) or `none`"
            )),
        }
    }
}

/// `[capsule]` in agent-tools.toml.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct CapsuleConfig {
    /// `none` (default), `bwrap` or `prefix`; `--capsule` overrides it.
    pub kind: CapsuleKind,
    /// For `prefix`: the words put before every command; they must pass fds 3 and 4 through.
    pub prefix: Vec<String>,
    /// For `bwrap`: `none` (default: its own loopback only) or `host`.
    pub network: Network,
    /// For `bwrap`: the `bwrap` program (default: /usr/bin/bwrap, /usr/local/bin/bwrap,
    /// /bin/bwrap, then PATH outside the project).
    pub bwrap: Option<PathBuf>,
    /// For `bwrap`: more folders writable inside (`~/` is the home folder).
    pub read_write: Vec<PathBuf>,
    /// For `bwrap`: more paths hidden, besides the usual secret locations.
    pub hide: Vec<PathBuf>,
    /// For `bwrap`: secret locations hidden by default that the capsule may see (`~/.claude`
    /// for a worker that is Claude Code).
    pub expose: Vec<PathBuf>,
    /// For `bwrap`: project paths read-only inside (default `.git` and `agent-tools.toml`).
    pub protect: Option<Vec<PathBuf>>,
    /// For `bwrap`: environment variables passed in besides the allow-list (an API key a worker
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
    match config.kind {
        CapsuleKind::None => Ok(Arc::new(OnHost)),
        CapsuleKind::Prefix => Prefix::new(config.prefix.clone())
            .map(|p| Arc::new(p) as Arc<dyn Capsule>)
            .map_err(|e| format!("capsule.prefix: {e}")),
        CapsuleKind::Bwrap => {
            let home = std::env::var_os("HOME").map(PathBuf::from);
            let expand = |paths: &[PathBuf]| -> Vec<PathBuf> {
                paths.iter().map(|p| expand_home(p, home.as_deref())).collect()
            };
            Bwrap::start(BwrapOptions {
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
            })
            .map(|b| Arc::new(b) as Arc<dyn Capsule>)
            .map_err(|e| e.to_string())
        }
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

/// The programs a run's configuration names (the eval interpreter, `node`), for [`make`].
pub fn configured_programs(config: &crate::Config) -> Vec<PathBuf> {
    let _ = config;
    #[cfg(feature = "eval")]
    {
        config.eval.python.iter().chain(&config.eval.node).cloned().collect()
    }
    #[cfg(not(feature = "eval"))]
    Vec::new()
}

fn expand_home(path: &Path, home: Option<&Path>) -> PathBuf {
    match (path.strip_prefix("~"), home) {
        (Ok(rest), Some(home)) => home.join(rest),
        _ => path.to_path_buf(),
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
