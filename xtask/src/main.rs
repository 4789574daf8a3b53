//! Project automation: `cargo xtask setup | ci | test | bench | soak | wheel` (tidy checks are its tests).
// xtask runs the tools it automates directly.
#![allow(clippy::disallowed_methods)]

mod bench;
mod setup;
mod soak;
#[cfg(test)]
mod tidy;
#[cfg(test)]
mod tidy_links;
mod wheel;

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context, Result, bail};

const USAGE: &str = "\
usage: cargo xtask <command>

  setup   install what the tests need that this machine lacks (apt, a venv, npm)
  ci      setup, fmt check, clippy -D warnings, doctests, cargo package, pip install . and its pytest, nextest, a 3-minute soak
  test    nextest with the test environment (PATH with the venv and npm tools), after setup
  bench   run the benchmarks side by side with the reference tools and print ratios
  soak    MCP sessions under random kills and dropped connections (--seconds 180 --seed 38 --sessions 3)
  wheel   the Python wheel and its pytest suite (--release: manylinux_2_28; --no-test: build only)
";

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = project_root();
    std::env::set_current_dir(&root)?;
    match args.first().map(String::as_str) {
        Some("setup") => setup::run(),
        Some("ci") => ci(),
        Some("test") => {
            setup::run()?;
            nextest(&args[1..])
        }
        Some("bench") => bench::run(&args[1..]),
        Some("soak") => soak::run(&args[1..]),
        Some("wheel") => wheel::run_command(&args[1..]),
        _ => {
            #[allow(clippy::print_stderr)]
            {
                eprint!("{USAGE}");
            }
            bail!("unknown or missing command")
        }
    }
}

fn project_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().map(Path::to_path_buf).unwrap_or_default()
}

/// Runs `cmd`, failing with its command line when it fails.
pub(crate) fn run(cmd: &mut Command) -> Result<()> {
    let shown = format!("{cmd:?}");
    let status = cmd.status().with_context(|| format!("cannot start {shown}"))?;
    if !status.success() {
        bail!("{shown} failed with {status}");
    }
    Ok(())
}

fn cargo() -> Command {
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
}

fn ci() -> Result<()> {
    // A CI run builds everything once, from scratch: incremental caches would only take disk
    // (the whole build has to fit on a small runner), so no cargo below keeps them.
    // SAFETY: xtask has started no thread yet; nothing reads the environment concurrently.
    unsafe { std::env::set_var("CARGO_INCREMENTAL", "0") };
    setup::run()?;
    step("cargo fmt --check");
    run(cargo().args(["fmt", "--all", "--check"]))?;
    step("cargo clippy -D warnings");
    run(cargo().args([
        "clippy",
        "--workspace",
        "--all-targets",
        "--locked",
        "--",
        "-D",
        "warnings",
    ]))?;
    // Doctests first, so that the run closes on nextest's summary of every test.
    step("doctests");
    run(setup::with_test_env(cargo().args(["test", "--workspace", "--doc", "--locked"])))?;
    // Seconds: manifests, versions, READMEs and dependencies of every crate we publish.
    step("cargo package --workspace --no-verify");
    run(cargo()
        .args(["package", "--workspace", "--no-verify", "--allow-dirty", "--locked"])
        .args([
            "--exclude",
            "agent-tools-python",
            "--exclude",
            "xtask",
            "--exclude",
            "agent-tools-e2e",
        ]))?;
    // `pip install .` of this checkout in the dev profile: it reuses what clippy built.
    wheel::test(wheel::Install::Checkout)?;
    nextest(&["--profile".into(), "ci".into()])?;
    // Three minutes of chaos with the fixed seed: any broken invariant fails the run.
    step(&format!("cargo xtask soak --seconds 180 --seed {}", soak::DEFAULT_SEED));
    soak::run(&["--seconds".into(), "180".into()])
}

/// nextest over the workspace, or over the packages `extra` names with `-p`.
fn nextest(extra: &[String]) -> Result<()> {
    let scope = if extra.iter().any(|a| a == "-p" || a.starts_with("--package")) {
        None
    } else {
        Some("--workspace")
    };
    step(&format!("cargo nextest run {}", scope.unwrap_or("(the named packages)")));
    run(setup::with_test_env(
        cargo()
            .args(["nextest", "run"])
            .args(scope)
            .args(["--locked", "--no-fail-fast"])
            .args(extra),
    ))
}

#[allow(clippy::print_stderr)]
pub(crate) fn step(what: &str) {
    eprintln!("\n==> {what}");
}
