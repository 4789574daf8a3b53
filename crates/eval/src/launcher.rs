//! Where a kernel process runs: the narrow launcher trait, the host default and the capsule prefix.

use std::{
    ffi::OsString,
    path::{Path, PathBuf},
    process::Command,
};

/// Builds the command line that starts an interpreter, and says where interpreters resolve.
///
/// A launcher never boots a capsule: it only wraps the command for one that is already there.
pub trait Launcher: Send + Sync + std::fmt::Debug {
    /// The command that runs `program args...`; the caller adds cwd, environment and pipes.
    fn command(&self, program: &Path, args: &[OsString]) -> Command;

    /// A short description for status and notes, for example `host` or `capsule (bwrap ...)`.
    fn describe(&self) -> String;

    /// Whether the process [`Launcher::command`] starts is the interpreter itself, so that a
    /// signal sent to its pid reaches it (false for a wrapping prefix).
    fn signals_reach_the_interpreter(&self) -> bool {
        true
    }

    /// The Python interpreter for a project at `root`: `configured` if given, else the project's
    /// `.venv/bin/python`, then `venv/bin/python`, then `python3` on PATH.
    fn resolve_python(&self, root: &Path, configured: Option<&Path>) -> Result<PathBuf, String> {
        resolve_python_on_host(root, configured)
    }
}

/// Runs kernels as plain child processes on this machine.
#[derive(Debug, Clone, Copy, Default)]
pub struct HostLauncher;

impl Launcher for HostLauncher {
    fn command(&self, program: &Path, args: &[OsString]) -> Command {
        let mut cmd = Command::new(program);
        cmd.args(args);
        cmd
    }

    fn describe(&self) -> String {
        "host".to_string()
    }
}

/// Wraps the kernel command in a configured prefix (`bwrap ...`, `docker exec -i NAME`, ...).
///
/// The prefix must keep file descriptors 3 and 4 open for the kernel (the protocol pipes).
#[derive(Debug, Clone)]
pub struct CapsuleLauncher {
    prefix: Vec<String>,
}

impl CapsuleLauncher {
    /// `prefix` must not be empty; its first word is the program.
    pub fn new(prefix: Vec<String>) -> Result<Self, String> {
        if prefix.first().is_none_or(|p| p.trim().is_empty()) {
            return Err(
                "the capsule launcher needs a command prefix, for example [\"bwrap\", ...]".into(),
            );
        }
        Ok(CapsuleLauncher { prefix })
    }
}

impl Launcher for CapsuleLauncher {
    fn command(&self, program: &Path, args: &[OsString]) -> Command {
        let mut cmd = Command::new(&self.prefix[0]);
        cmd.args(&self.prefix[1..]).arg(program).args(args);
        cmd
    }

    fn describe(&self) -> String {
        format!("capsule ({})", self.prefix.join(" "))
    }

    fn signals_reach_the_interpreter(&self) -> bool {
        false
    }

    /// Inside a capsule the project is expected at the same path; `python3` resolves there.
    fn resolve_python(&self, root: &Path, configured: Option<&Path>) -> Result<PathBuf, String> {
        if let Some(path) = configured {
            return Ok(path.to_path_buf());
        }
        for candidate in [".venv/bin/python", "venv/bin/python"] {
            let path = root.join(candidate);
            if path.exists() {
                return Ok(path);
            }
        }
        Ok(PathBuf::from("python3"))
    }
}

/// The host's resolution order: configured, `.venv/bin/python`, `venv/bin/python`, `python3` on PATH.
pub fn resolve_python_on_host(root: &Path, configured: Option<&Path>) -> Result<PathBuf, String> {
    if let Some(path) = configured {
        if path.components().count() == 1 {
            return which(&path.to_string_lossy()).ok_or_else(|| {
                format!("the configured python `{}` is not on PATH", path.display())
            });
        }
        if path.exists() {
            return Ok(path.to_path_buf());
        }
        return Err(format!("the configured python {} does not exist", path.display()));
    }
    for candidate in [".venv/bin/python", "venv/bin/python"] {
        let path = root.join(candidate);
        if path.exists() {
            return Ok(path);
        }
    }
    which("python3").ok_or_else(|| {
        "no Python found: the project has no .venv/bin/python or venv/bin/python, and python3 is \
         not on PATH; install Python 3 or set [eval] python in agent-tools.toml"
            .to_string()
    })
}

pub(crate) fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(name)).find(|p| is_executable(p))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Runs a short helper command (a version probe) to its end through the support crate's
/// spawn, so it dies with the host like every other process of a run.
pub(crate) fn output_of(mut command: Command) -> std::io::Result<std::process::Output> {
    use std::process::Stdio;
    command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let spawned =
        agent_tools_support::process::SpawnOptions::new().watchdog(false).spawn_std(command)?;
    spawned.child.wait_with_output()
}
