//! Where a kernel's interpreter resolves, and short helper commands run through the capsule.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use agent_tools_support::capsule::Capsule;

/// The Python interpreter for a project at `root` in `capsule`: `configured` if given, else the
/// project's `.venv/bin/python`, then `venv/bin/python`, then `python3` on PATH. A capsule that
/// does not see the host's files (a prefix into a container) resolves `python3` inside.
pub(crate) fn resolve_python(
    capsule: &dyn Capsule,
    root: &Path,
    configured: Option<&Path>,
) -> Result<PathBuf, String> {
    if capsule.sees_host_files() {
        return resolve_python_on_host(root, configured);
    }
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
