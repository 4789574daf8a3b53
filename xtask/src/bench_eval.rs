//! `cargo xtask bench eval`: our kernels against ipykernel driven by jupyter_client, in one run.
//!
//! Two figures per kernel: start to first result (a fresh kernel runs `1+1`; median of
//! `--starts` runs, default 10) and the round trip of `1+1` over `--cells` cells in one kernel
//! (default 1000; median and mean). Ours runs through the crate's `eval_bench` example (release
//! build, the test venv's Python); ipykernel runs in the same venv through jupyter_client's
//! `KernelManager` and `execute_interactive`. Needs `cargo xtask setup` (ipykernel, jupyter_client).

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::process::Command;

use anyhow::{Context, Result, bail};

const IPYKERNEL: &str = r#"
import statistics, sys, time
from jupyter_client import KernelManager

starts, cells = int(sys.argv[1]), int(sys.argv[2])
quiet = lambda msg: None

def start():
    t = time.perf_counter()
    km = KernelManager(kernel_name="python3")
    km.start_kernel()
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=120)
    reply = kc.execute_interactive("1+1", timeout=120, output_hook=quiet)
    assert reply["content"]["status"] == "ok", reply
    return time.perf_counter() - t, km, kc

start_times = []
for _ in range(starts):
    elapsed, km, kc = start()
    start_times.append(elapsed * 1000)
    kc.stop_channels()
    km.shutdown_kernel(now=True)

_, km, kc = start()
trips = []
t_all = time.perf_counter()
for _ in range(cells):
    t = time.perf_counter()
    kc.execute_interactive("1+1", timeout=60, output_hook=quiet)
    trips.append((time.perf_counter() - t) * 1000)
total = (time.perf_counter() - t_all) * 1000
kc.stop_channels()
km.shutdown_kernel(now=True)
print(f"kernel=ipykernel start_ms_median={statistics.median(start_times)} "
      f"round_trip_ms_median={statistics.median(trips)} round_trip_ms_mean={total / cells}")
"#;

fn arg(args: &[String], name: &str, default: usize) -> usize {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// One result line: `kernel=NAME key=value ...`.
struct Row(Vec<(String, String)>);

impl Row {
    fn get(&self, key: &str) -> &str {
        self.0.iter().find(|(k, _)| k == key).map_or("?", |(_, v)| v.as_str())
    }

    fn ms(&self, key: &str) -> f64 {
        self.get(key).parse().unwrap_or(f64::NAN)
    }
}

fn row_of(out: std::process::Output, what: &str) -> Result<Row> {
    if !out.status.success() {
        bail!("{what} failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .rfind(|l| l.starts_with("kernel="))
        .with_context(|| format!("{what} printed no result: {text}"))?;
    Ok(Row(line
        .split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()))
}

pub(crate) fn run(args: &[String]) -> Result<()> {
    let starts = arg(args, "--starts", 10);
    let cells = arg(args, "--cells", 1000);
    let python = crate::setup::venv().join("bin").join("python");
    if !python.exists() {
        bail!("the benchmark venv is missing: run `cargo xtask setup`");
    }
    crate::run(Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into())).args([
        "build",
        "--release",
        "-q",
        "-p",
        "agent-tools-eval",
        "--example",
        "eval_bench",
    ]))?;
    let bench = crate::project_root().join("target/release/examples/eval_bench");
    let mut rows = Vec::new();
    // Python plain, Python whose first cell engages IPython (`%pwd`), Node.js, QuickJS.
    let variants: [&[&str]; 4] = [
        &["--language", "python"],
        &["--language", "python", "--code", "%pwd"],
        &["--language", "javascript", "--engine", "node"],
        &["--language", "javascript", "--engine", "quickjs"],
    ];
    for variant in variants {
        let out = Command::new(&bench)
            .args(variant)
            .arg("--python")
            .arg(&python)
            .args(["--starts", &starts.to_string(), "--cells", &cells.to_string()])
            .output()
            .context("run eval_bench")?;
        rows.push(row_of(out, &format!("eval_bench ({})", variant.join(" ")))?);
    }
    let out = Command::new(&python)
        .args(["-c", IPYKERNEL, &starts.to_string(), &cells.to_string()])
        .output()
        .context("run the ipykernel benchmark")?;
    rows.push(row_of(out, "ipykernel via jupyter_client")?);
    println!(
        "| kernel | start to first result (median of {starts}) | 1+1 round trip, median | mean over {cells} cells |"
    );
    println!("|---|---|---|---|");
    for row in &rows {
        println!(
            "| {} | {:.1} ms | {:.3} ms | {:.3} ms |",
            row.get("kernel"),
            row.ms("start_ms_median"),
            row.ms("round_trip_ms_median"),
            row.ms("round_trip_ms_mean"),
        );
    }
    let ours = &rows[0];
    let theirs = &rows[4];
    let ratio = |key: &str| theirs.ms(key) / ours.ms(key);
    println!(
        "\nPython, ours vs ipykernel: start {:.1}x faster, round trip {:.1}x faster (median), {:.1}x (mean)",
        ratio("start_ms_median"),
        ratio("round_trip_ms_median"),
        ratio("round_trip_ms_mean")
    );
    println!(
        "Python with IPython engaged: start {:.2}x of ipykernel's; Node.js: start {:.2}x, round trip {:.2}x of ipykernel's (median)",
        rows[1].ms("start_ms_median") / theirs.ms("start_ms_median"),
        rows[2].ms("start_ms_median") / theirs.ms("start_ms_median"),
        rows[2].ms("round_trip_ms_median") / theirs.ms("round_trip_ms_median"),
    );
    Ok(())
}
