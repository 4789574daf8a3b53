//! `cargo xtask wheel`: the `agent-tools` Python wheel (maturin), and its pytest suite run
//! against the wheel installed into a fresh venv.
//!
//! The wheel carries the `agent_tools` extension module and the `agent-tools` binary, which
//! the package's console command runs in its place (as ruff's wheel does).

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context, Result, bail};

use crate::{cargo, run, setup, step};

/// pytest for the fresh venv the wheel is tested in.
const PYTEST: &str = "pytest==9.*";

/// Builds the wheel in cargo profile `profile` (`dev` reuses what the tests built; `release`
/// is what users get) and returns its path.
pub(crate) fn build(profile: &str) -> Result<PathBuf> {
    step(&format!("agent-tools binary ({profile} profile) for the wheel"));
    run(cargo()
        .args(["build", "-p", "agent-tools", "--bin", "agent-tools", "--locked"])
        .args(["--profile", profile]))?;
    let out_dir = if profile == "dev" { "debug" } else { profile };
    let binary = target_dir().join(out_dir).join("agent-tools");
    let bundled = Path::new("crates/python/python/agent_tools/bin");
    std::fs::create_dir_all(bundled)?;
    std::fs::copy(&binary, bundled.join("agent-tools"))
        .with_context(|| format!("cannot copy {} into {}", binary.display(), bundled.display()))?;

    step(&format!("maturin build ({profile} profile)"));
    let wheels = target_dir().join("wheels");
    let _ = std::fs::remove_dir_all(&wheels);
    run(Command::new(setup::venv().join("bin").join("maturin"))
        .args(["build", "--locked", "--profile", profile, "--out"])
        .arg(&wheels)
        .arg("--interpreter")
        .arg(setup::venv().join("bin").join("python")))?;
    let wheel = std::fs::read_dir(&wheels)?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "whl"));
    match wheel {
        Some(wheel) => Ok(wheel),
        None => bail!("maturin left no wheel in {}", wheels.display()),
    }
}

/// Installs `wheel` into a new venv and runs the package's pytest suite with it.
pub(crate) fn test(wheel: &Path) -> Result<()> {
    let venv = target_dir().join("wheel-test-venv");
    step(&format!("fresh venv {} with {}", venv.display(), wheel.display()));
    let _ = std::fs::remove_dir_all(&venv);
    run(Command::new("python3").arg("-m").arg("venv").arg(&venv))?;
    let python = venv.join("bin").join("python");
    run(Command::new(&python)
        .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", PYTEST])
        .arg(wheel))?;
    step("pytest crates/python/tests");
    let mut pytest = Command::new(&python);
    pytest.args(["-m", "pytest", "crates/python/tests", "-p", "no:cacheprovider", "-q"]);
    // The fresh venv's `agent-tools` command first on PATH, then the test tools.
    setup::with_test_env(&mut pytest);
    let tools_path = pytest
        .get_envs()
        .find(|(key, _)| *key == "PATH")
        .and_then(|(_, value)| value.map(|v| v.to_os_string()))
        .unwrap_or_default();
    let paths = std::iter::once(venv.join("bin")).chain(std::env::split_paths(&tools_path));
    pytest.env("PATH", std::env::join_paths(paths)?);
    run(&mut pytest)
}

/// The target folder, absolute: the tests' tools resolve the venv's commands from other
/// working directories.
fn target_dir() -> PathBuf {
    let dir =
        std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| "target".into());
    std::path::absolute(&dir).unwrap_or(dir)
}
