//! `cargo xtask bench http`: many Streamable HTTP sessions on one checkout at once, each running
//! mixed calls (`read`, `ast_grep`, `lsp hover`, `eval`): latency per call (p50/p99), peak memory
//! of the host and everything it started, language servers started, and what is left after the
//! host is stopped.
//!
//! Arguments: `--sessions N` (default 20), `--rounds N` (default 3), `--release` (time the release
//! binary instead of the dev one). Needs `cargo xtask setup` (the SDK and basedpyright in the venv).

use std::{
    collections::BTreeSet,
    io::{BufRead, BufReader},
    path::{Path, PathBuf},
    process::{Command, Stdio},
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use anyhow::{Context, Result, bail};
use serde_json::Value;

const MARKER_VAR: &str = "AGENT_TOOLS_E2E_MARKER";

pub(crate) fn run(args: &[String]) -> Result<()> {
    let flag = |name: &str, default: usize| -> Result<usize> {
        match args.iter().position(|a| a == name) {
            Some(i) => args
                .get(i + 1)
                .context("a number after the flag")?
                .parse()
                .context(name.to_string()),
            None => Ok(default),
        }
    };
    let (sessions, rounds) = (flag("--sessions", 20)?, flag("--rounds", 3)?);
    let release = args.iter().any(|a| a == "--release");
    let profile = if release { "release" } else { "debug" };
    let mut build = crate::cargo();
    build.args(["build", "--quiet", "-p", "agent-tools-host"]);
    if release {
        build.arg("--release");
    }
    crate::run(&mut build)?;
    let binary = crate::project_root().join("target").join(profile).join("agent-tools");

    let project = tempfile::tempdir()?;
    write_project(project.path())?;
    let marker = format!("bench-http-{}", std::process::id());
    let mut host = crate::setup::with_test_env(&mut Command::new(&binary))
        .args(["mcp", "--http", "127.0.0.1:0", "--root"])
        .arg(project.path())
        .env(MARKER_VAR, &marker)
        .stderr(Stdio::piped())
        .spawn()
        .context("start the host")?;
    let url = read_url(&mut host)?;

    let stop = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (stop, marker) = (stop.clone(), marker.clone());
        std::thread::spawn(move || sample(&marker, &stop))
    };
    let python = crate::setup::venv().join("bin").join("python");
    let script = crate::project_root().join("tests/py/http_load.py");
    let output = crate::setup::with_test_env(&mut Command::new(python))
        .arg(script)
        .args([url.as_str(), &sessions.to_string(), &rounds.to_string()])
        .output()
        .context("run the load client")?;
    stop.store(true, Ordering::Relaxed);
    let samples = sampler.join().map_err(|_| anyhow::anyhow!("the sampler panicked"))?;
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(host.id() as i32, libc::SIGTERM) };
    let _ = host.wait();
    std::thread::sleep(Duration::from_secs(2));
    let survivors = tree(&marker).len();

    if !output.status.success() {
        bail!("the load client failed: {}", String::from_utf8_lossy(&output.stderr));
    }
    let report: Value = serde_json::from_slice(&output.stdout).context("the client's report")?;
    report_figures(&report, &samples, sessions, rounds, profile, survivors);
    Ok(())
}

fn write_project(root: &Path) -> Result<()> {
    std::fs::write(
        root.join("pyproject.toml"),
        "[project]\nname = \"load\"\nversion = \"0.1.0\"\n",
    )?;
    std::fs::create_dir_all(root.join("app"))?;
    let mut shapes = String::from("def area(side: float) -> float:\n    return side * side\n");
    for i in 0..200 {
        shapes.push_str(&format!("\n\ndef helper_{i}(x: int) -> int:\n    return area(x) + {i}\n"));
    }
    std::fs::write(root.join("app/shapes.py"), shapes)?;
    std::fs::write(root.join("app/main.py"), "from app.shapes import area\n\nprint(area(2.0))\n")?;
    Ok(())
}

/// The URL the host prints on stderr once it listens; the rest of stderr is drained.
fn read_url(host: &mut std::process::Child) -> Result<String> {
    let stderr = host.stderr.take().context("the host's stderr")?;
    let mut lines = BufReader::new(stderr).lines();
    for line in lines.by_ref() {
        let line = line?;
        if let Some(at) = line.find("http://") {
            let url = line[at..].split_whitespace().next().unwrap_or_default().to_string();
            std::thread::spawn(move || for _ in lines {});
            return Ok(url);
        }
    }
    bail!("the host exited before it listened")
}

/// One sample of the host's process tree.
struct Sample {
    rss_kb: u64,
    processes: usize,
    servers: BTreeSet<u32>,
}

fn sample(marker: &str, stop: &AtomicBool) -> Vec<Sample> {
    let mut out = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        let pids = tree(marker);
        let rss_kb = pids.iter().map(|p| rss_of(*p)).sum();
        let servers = pids
            .iter()
            .copied()
            .filter(|p| {
                std::fs::read(format!("/proc/{p}/cmdline"))
                    .is_ok_and(|c| String::from_utf8_lossy(&c).contains("basedpyright-langserver"))
            })
            .collect();
        out.push(Sample { rss_kb, processes: pids.len(), servers });
        std::thread::sleep(Duration::from_millis(250));
    }
    out
}

/// Processes whose environment carries the marker (the host and all it started).
fn tree(marker: &str) -> Vec<u32> {
    let needle = format!("{MARKER_VAR}={marker}");
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let environ: PathBuf = entry.path().join("environ");
        if std::fs::read(environ)
            .is_ok_and(|e| e.split(|b| *b == 0).any(|v| v == needle.as_bytes()))
        {
            found.push(pid);
        }
    }
    found
}

fn rss_of(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

#[allow(clippy::print_stdout)]
fn report_figures(
    report: &Value,
    samples: &[Sample],
    sessions: usize,
    rounds: usize,
    profile: &str,
    survivors: usize,
) {
    let errors = report["errors"].as_array().cloned().unwrap_or_default();
    println!(
        "{sessions} sessions x {rounds} rounds ({} calls, {} errors) against the {profile} binary, {:.1} s wall",
        report["calls"],
        errors.len(),
        report["wall_s"].as_f64().unwrap_or(0.0)
    );
    for error in errors.iter().take(5) {
        println!("  error: {error}");
    }
    println!("| call | n | p50 | p99 |\n|---|---|---|---|");
    let mut all = Vec::new();
    if let Some(map) = report["latencies_ms"].as_object() {
        for (tool, values) in map {
            let mut v: Vec<f64> =
                values.as_array().into_iter().flatten().filter_map(Value::as_f64).collect();
            v.sort_by(f64::total_cmp);
            println!(
                "| {tool} | {} | {:.0} ms | {:.0} ms |",
                v.len(),
                percentile(&v, 0.5),
                percentile(&v, 0.99)
            );
            all.extend(v);
        }
    }
    all.sort_by(f64::total_cmp);
    println!(
        "| all | {} | {:.0} ms | {:.0} ms |",
        all.len(),
        percentile(&all, 0.5),
        percentile(&all, 0.99)
    );
    let peak_rss = samples.iter().map(|s| s.rss_kb).max().unwrap_or(0);
    let peak_processes = samples.iter().map(|s| s.processes).max().unwrap_or(0);
    let servers: BTreeSet<u32> = samples.iter().flat_map(|s| s.servers.iter().copied()).collect();
    println!(
        "peak memory of the host and its children: {:.0} MB in {peak_processes} processes; \
         basedpyright servers started: {}; processes left after SIGTERM: {survivors}",
        peak_rss as f64 / 1024.0,
        servers.len()
    );
}
