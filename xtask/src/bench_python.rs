//! `cargo xtask bench python`: start of the Python package's `agent-tools` command (a console
//! script calling the extension module) beside the bare `agent-tools` binary, with the
//! interpreter's own start and the extension's import as the parts it is made of.
//!
//! Arguments: `--wheel FILE` (default the newest wheel in the target folder's `wheels`), which
//! goes alone into a fresh venv (packages beside it, with their `.pth` files, would slow the
//! interpreter's start), or `--venv DIR` (a venv that has the package already); `--binary FILE`
//! (default the release binary in the target folder); `--runs N` (default 20). Each command
//! runs `--version`, alternately, N times.

use std::{
    path::PathBuf,
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::{Context, Result, bail};

pub(crate) fn run(args: &[String]) -> Result<()> {
    let target = crate::wheel::target_dir();
    let mut venv = None;
    let mut wheel = None;
    let mut binary = target.join("release").join("agent-tools");
    let mut runs = 20usize;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let mut value = || args.next().with_context(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--venv" => venv = Some(PathBuf::from(value()?)),
            "--wheel" => wheel = Some(PathBuf::from(value()?)),
            "--binary" => binary = PathBuf::from(value()?),
            "--runs" => runs = value()?.parse().context("--runs: give a number of runs")?,
            other => {
                bail!(
                    "bench python: unknown argument {other:?} (--wheel, --venv, --binary, --runs)"
                )
            }
        }
    }
    let venv = match venv {
        Some(venv) => venv,
        None => fresh_venv(&target, wheel)?,
    };
    let python = venv.join("bin").join("python");
    let command = venv.join("bin").join("agent-tools");
    for (path, what) in [
        (&command, "cargo xtask wheel --release"),
        (&binary, "cargo build --release -p agent-tools-host"),
    ] {
        if !path.exists() {
            bail!(
                "{} is missing; make it with `{what}` or name another with --venv/--binary",
                path.display()
            );
        }
    }
    let rows: Vec<(&str, Vec<String>)> = vec![
        (
            "bare binary `agent-tools --version`",
            vec![binary.display().to_string(), "--version".into()],
        ),
        (
            "package command `agent-tools --version`",
            vec![command.display().to_string(), "--version".into()],
        ),
        (
            "`python -c pass` (the interpreter alone)",
            vec![python.display().to_string(), "-c".into(), "pass".into()],
        ),
        (
            "`python -c 'import agent_tools._native'`",
            vec![python.display().to_string(), "-c".into(), "import agent_tools._native".into()],
        ),
    ];
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); rows.len()];
    for _ in 0..runs {
        for (i, (_, argv)) in rows.iter().enumerate() {
            times[i].push(time_once(argv)?);
        }
    }
    let best_binary = best(&times[0]);
    #[allow(clippy::print_stdout)]
    {
        println!("| what | best | median | best vs the binary |");
        println!("| --- | --- | --- | --- |");
        for ((what, _), t) in rows.iter().zip(&times) {
            println!(
                "| {what} | {:.1} ms | {:.1} ms | {:.1}× |",
                ms(best(t)),
                ms(median(t)),
                ms(best(t)) / ms(best_binary)
            );
        }
    }
    Ok(())
}

/// A new venv holding only the package, from `wheel` or the newest one `cargo xtask wheel` wrote.
fn fresh_venv(target: &std::path::Path, wheel: Option<PathBuf>) -> Result<PathBuf> {
    let wheel = match wheel {
        Some(wheel) => wheel,
        None => std::fs::read_dir(target.join("wheels"))
            .context("no wheels folder; run `cargo xtask wheel --release` or give --wheel")?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "whl"))
            .max_by_key(|p| p.metadata().and_then(|m| m.modified()).ok())
            .context("no wheel in the wheels folder; run `cargo xtask wheel --release`")?,
    };
    let venv = target.join("bench-python-venv");
    let _ = std::fs::remove_dir_all(&venv);
    crate::run(Command::new("python3").arg("-m").arg("venv").arg(&venv))?;
    crate::run(
        Command::new(venv.join("bin").join("python"))
            .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check"])
            .arg(&wheel),
    )?;
    Ok(venv)
}

fn time_once(argv: &[String]) -> Result<Duration> {
    let start = Instant::now();
    let status = Command::new(&argv[0])
        .args(&argv[1..])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .with_context(|| format!("cannot run {}", argv[0]))?;
    let elapsed = start.elapsed();
    if !status.success() {
        bail!("{argv:?} failed with {status}");
    }
    Ok(elapsed)
}

fn best(times: &[Duration]) -> Duration {
    times.iter().copied().min().unwrap_or_default()
}

fn median(times: &[Duration]) -> Duration {
    let mut sorted = times.to_vec();
    sorted.sort();
    sorted.get(sorted.len() / 2).copied().unwrap_or_default()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
