//! `cargo xtask wheel [--release] [--no-test]`: the Python package `builtin-agent-tools`
//! (maturin), and its pytest suite run against it installed into a fresh venv.
//!
//! The package is one copy of the toolset: the `agent_tools` extension module, whose `main`
//! the `agent-tools` console command calls (no bundled binary). `--release` builds the wheel
//! users get, linked by zig against glibc 2.28 so that it installs on any `manylinux_2_28`
//! system, and checks its tag and glibc symbols with auditwheel; without it, the dev profile
//! (reusing what the tests built) with the machine's own tag. `--no-test` only builds: no test
//! tools are set up and no pytest runs. `cargo xtask ci` instead installs the checkout itself
//! with pip (a PEP 517 build, maturin the backend), as a user of the source does.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context, Result, bail};

use crate::{run, setup, step};

/// What builds a wheel (not what tests it): maturin, the zig that links the release wheel
/// against an old glibc, and auditwheel to check the result. In a venv of their own, so that
/// `--no-test` installs nothing the tests need.
const BUILD_PIP: &[&str] = &["maturin==1.16.*", "ziglang==0.15.*", "auditwheel==6.*"];

/// The oldest glibc the release wheel supports (RHEL 8 and 9, Debian 10+, Ubuntu 18.10+,
/// Amazon Linux 2023).
const MANYLINUX: &str = "manylinux_2_28";

const USAGE: &str = "cargo xtask wheel [--release] [--no-test]";

/// `cargo xtask wheel` with its flags.
pub(crate) fn run_command(args: &[String]) -> Result<()> {
    let mut release = false;
    let mut no_test = false;
    for arg in args {
        match arg.as_str() {
            "--release" => release = true,
            "--no-test" => no_test = true,
            other => bail!("wheel: unknown flag {other:?}; usage: {USAGE}"),
        }
    }
    if !no_test {
        setup::run()?;
    }
    let wheel = build(release)?;
    if no_test {
        step(&format!("wheel: {}", wheel.display()));
        return Ok(());
    }
    test(Install::Wheel(&wheel))
}

/// Builds the wheel (`release`: the users' one, `manylinux_2_28`) and returns its path.
fn build(release: bool) -> Result<PathBuf> {
    let tools = build_tools()?;
    let wheels = target_dir().join("wheels");
    let _ = std::fs::remove_dir_all(&wheels);
    let mut maturin = Command::new(tools.join("maturin"));
    maturin.args(["build", "--locked", "--out"]).arg(&wheels);
    maturin.arg("--interpreter").arg(tools.join("python"));
    if release {
        step(&format!("maturin build --release --zig ({MANYLINUX})"));
        maturin.args(["--release", "--zig", "--compatibility", MANYLINUX]);
        // maturin finds zig as `python -m ziglang` of the first python on PATH.
        maturin.env("PATH", path_with(&tools, &std::env::var_os("PATH").unwrap_or_default())?);
    } else {
        step("maturin build (dev profile)");
        maturin.args(["--profile", "dev"]);
    }
    run(maturin.env("CARGO_TARGET_DIR", target_dir()))?;
    let wheel = std::fs::read_dir(&wheels)?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "whl"));
    let Some(wheel) = wheel else { bail!("maturin left no wheel in {}", wheels.display()) };
    if release {
        check_manylinux(&tools, &wheel)?;
    }
    Ok(wheel)
}

/// The wheel is tagged `manylinux_2_28` and auditwheel agrees: no glibc symbol newer than 2.28
/// and no library outside the manylinux policy.
fn check_manylinux(tools: &Path, wheel: &Path) -> Result<()> {
    let tag = format!("{MANYLINUX}_{}", std::env::consts::ARCH);
    step(&format!("auditwheel show {}", wheel.display()));
    let shown = Command::new(tools.join("auditwheel"))
        .arg("show")
        .arg(wheel)
        .output()
        .context("cannot run auditwheel")?;
    let report = String::from_utf8_lossy(&shown.stdout);
    #[allow(clippy::print_stderr)]
    {
        eprintln!("{report}");
    }
    let name = wheel.file_name().unwrap_or_default().to_string_lossy();
    if !shown.status.success() || !name.contains(&tag) || !report.contains(&format!("\"{tag}\"")) {
        bail!("{name} is not a {tag} wheel (auditwheel: {})", report.trim());
    }
    Ok(())
}

/// The venv holding `BUILD_PIP`, created or brought up to date; returns its `bin` folder.
fn build_tools() -> Result<PathBuf> {
    let venv = target_dir().join("wheel-build-venv");
    let bin = venv.join("bin");
    let stamp = venv.join("agent-tools-build.stamp");
    let wanted = BUILD_PIP.join("\n");
    if std::fs::read_to_string(&stamp).is_ok_and(|s| s == wanted) && bin.join("maturin").exists() {
        return Ok(bin);
    }
    step(&format!("build venv {} ({})", venv.display(), BUILD_PIP.join(" ")));
    if !bin.join("python").exists() {
        run(Command::new("python3").arg("-m").arg("venv").arg(&venv))?;
    }
    run(Command::new(bin.join("python"))
        .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check"])
        .args(BUILD_PIP))?;
    std::fs::write(&stamp, wanted)?;
    Ok(bin)
}

/// What the test venv gets the package from.
pub(crate) enum Install<'a> {
    /// A built wheel.
    Wheel(&'a Path),
    /// This checkout, built by pip through maturin's PEP 517 backend (dev profile, so that it
    /// reuses what the tests built).
    Checkout,
}

/// Installs the package into a new venv and runs its pytest suite with it.
pub(crate) fn test(install: Install<'_>) -> Result<()> {
    // The old route copied a binary into the package's source folder; a checkout that built
    // with it would ship that stale copy beside the extension.
    let _ =
        std::fs::remove_dir_all(crate::project_root().join("crates/python/python/agent_tools/bin"));
    let venv = target_dir().join("wheel-test-venv");
    let _ = std::fs::remove_dir_all(&venv);
    run(Command::new("python3").arg("-m").arg("venv").arg(&venv))?;
    let python = venv.join("bin").join("python");
    let mut pip = Command::new(&python);
    pip.args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check"]);
    match install {
        Install::Wheel(wheel) => {
            step(&format!("fresh venv {} with {}", venv.display(), wheel.display()));
            pip.arg(wheel);
        }
        Install::Checkout => {
            step(&format!("fresh venv {}: pip install . (PEP 517, dev profile)", venv.display()));
            pip.arg(".")
                .env("MATURIN_PEP517_ARGS", "--profile dev --locked")
                .env("CARGO_TARGET_DIR", target_dir());
        }
    }
    run(&mut pip)?;
    run(Command::new(&python)
        .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check"])
        .args(setup::WHEEL_TEST_PIP))?;
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
    pytest.env("PATH", path_with(&venv.join("bin"), &tools_path)?);
    run(&mut pytest)
}

/// The search path `rest` with `first` in front.
fn path_with(first: &Path, rest: &std::ffi::OsStr) -> Result<std::ffi::OsString> {
    let paths = std::iter::once(first.to_path_buf()).chain(std::env::split_paths(rest));
    Ok(std::env::join_paths(paths)?)
}

/// The target folder, absolute: the tests' tools resolve the venv's commands from other
/// working directories.
pub(crate) fn target_dir() -> PathBuf {
    let dir =
        std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| "target".into());
    std::path::absolute(&dir).unwrap_or(dir)
}
