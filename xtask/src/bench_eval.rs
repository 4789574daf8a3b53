//! `cargo xtask bench eval`: our kernels against ipykernel (driven by jupyter_client) and bare
//! `python` / `node` children, interleaved round by round in one run.
//!
//! Starts: `--starts` rounds (default 15, at least 10); each round starts every kernel once, in
//! an order shuffled per round, with `--settle-ms` (default 500) of quiet before each: the
//! teardown of the kernel before (for ours, the support crate's sweep of the tree) would
//! otherwise overlap the next start. So load on a shared machine falls on every side alike. A
//! start is spawn to the first cell's result (`1+1`; `%pwd` for the IPython-engaged row); a bare
//! child prints `1+1` and the time is spawn to the printed `2`. Round trips: `--cells` cells of
//! `1+1` (default 1000) per kernel in one kept kernel, in 10 interleaved blocks. Each figure is a
//! median with its spread (interquartile range, and min–max for starts); the ratios are of
//! medians, and for starts also the median of each round's own ratio.
//!
//! Ours runs through the crate's `eval_bench` example (release build, the test venv's Python);
//! ipykernel runs in the same venv. Needs `cargo xtask setup` (ipykernel, jupyter_client).

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::{
    io::{BufRead, BufReader, Write},
    path::PathBuf,
    process::{Child, ChildStdin, ChildStdout, Command, Stdio},
};

use anyhow::{Context, Result, bail};

/// The ipykernel side, over the same line protocol as `eval_bench`: `start`, `trips N`.
const IPYKERNEL: &str = r#"
import sys, time
from jupyter_client import KernelManager

quiet = lambda msg: None
kept = None

def start():
    km = KernelManager(kernel_name="python3")
    km.start_kernel()
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=120)
    reply = kc.execute_interactive("1+1", timeout=120, output_hook=quiet)
    assert reply["content"]["status"] == "ok", reply
    return km, kc

for line in sys.stdin:
    words = line.split()
    if words[0] == "start":
        t = time.perf_counter()
        km, kc = start()
        ms = (time.perf_counter() - t) * 1000
        kc.stop_channels()
        km.shutdown_kernel(now=True)
        print(f"ms={ms}", flush=True)
    elif words[0] == "trips":
        if kept is None:
            kept = start()
        times = []
        for _ in range(int(words[1])):
            t = time.perf_counter()
            kept[1].execute_interactive("1+1", timeout=60, output_hook=quiet)
            times.append((time.perf_counter() - t) * 1000)
        print("ms=" + ",".join(map(str, times)), flush=True)
    else:
        break
if kept is not None:
    kept[1].stop_channels()
    kept[0].shutdown_kernel(now=True)
"#;

fn arg(args: &[String], name: &str, default: usize) -> usize {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// A benchmark process answering one line per command.
struct Driver {
    name: &'static str,
    /// Where its stderr goes (ipykernel's warnings would drown the tables), for errors.
    log: PathBuf,
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Driver {
    fn spawn(name: &'static str, log: PathBuf, command: &mut Command) -> Result<Self> {
        let stderr =
            std::fs::File::create(&log).with_context(|| format!("create {}", log.display()))?;
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .with_context(|| format!("start the {name} driver"))?;
        let stdin = child.stdin.take().context("driver stdin")?;
        let stdout = BufReader::new(child.stdout.take().context("driver stdout")?);
        Ok(Driver { name, log, child, stdin, stdout })
    }

    /// Sends `command`; the times (ms) it answers.
    fn ask(&mut self, command: &str) -> Result<Vec<f64>> {
        writeln!(self.stdin, "{command}")?;
        self.stdin.flush()?;
        let mut line = String::new();
        if self.stdout.read_line(&mut line)? == 0 {
            bail!(
                "the {} driver ended at {command:?} (its stderr: {})",
                self.name,
                self.log.display()
            );
        }
        let Some(times) = line.trim().strip_prefix("ms=") else {
            bail!(
                "{} driver, {command:?}: {} (its stderr: {})",
                self.name,
                line.trim(),
                self.log.display()
            );
        };
        times.split(',').map(|t| t.parse().context("a time")).collect()
    }

    fn quit(mut self) {
        let _ = writeln!(self.stdin, "quit");
        drop(self.stdin);
        let _ = self.child.wait();
    }
}

/// One row of the tables: who runs it and the command word for that driver.
#[derive(Clone, Copy)]
struct Kernel {
    label: &'static str,
    /// `None`: ipykernel's driver; else the `eval_bench` kind.
    kind: Option<&'static str>,
    trips: bool,
}

const KERNELS: [Kernel; 11] = [
    Kernel { label: "ours, Python", kind: Some("python"), trips: true },
    Kernel {
        label: "ours, Python, first cell `%pwd` (IPython)",
        kind: Some("python-ipython"),
        trips: false,
    },
    Kernel { label: "ours, Node.js", kind: Some("node"), trips: true },
    Kernel { label: "ours, QuickJS", kind: Some("quickjs"), trips: true },
    Kernel { label: "ipykernel", kind: None, trips: true },
    Kernel { label: "bare `python` child", kind: Some("bare-python"), trips: false },
    Kernel { label: "bare `node` child", kind: Some("bare-node"), trips: false },
    Kernel { label: "ours, Python in bubblewrap", kind: Some("python-bwrap"), trips: true },
    Kernel { label: "ours, Node.js in bubblewrap", kind: Some("node-bwrap"), trips: true },
    Kernel { label: "ours, Python in Landlock", kind: Some("python-landlock"), trips: true },
    Kernel { label: "ours, Node.js in Landlock", kind: Some("node-landlock"), trips: true },
];

const IPYKERNEL_ROW: usize = 4;
const BARE_PYTHON_ROW: usize = 5;
const BARE_NODE_ROW: usize = 6;
const PYTHON_BWRAP_ROW: usize = 7;
const NODE_BWRAP_ROW: usize = 8;
const PYTHON_LANDLOCK_ROW: usize = 9;
const NODE_LANDLOCK_ROW: usize = 10;

/// Median, quartiles, min and max of a sample.
struct Spread {
    median: f64,
    p25: f64,
    p75: f64,
    min: f64,
    max: f64,
}

fn spread(values: &[f64]) -> Spread {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let at = |q: f64| {
        if v.is_empty() {
            return f64::NAN;
        }
        // Linear interpolation between the closest ranks.
        let pos = q * (v.len() - 1) as f64;
        let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
        v[lo] + (v[hi] - v[lo]) * (pos - lo as f64)
    };
    Spread {
        median: at(0.5),
        p25: at(0.25),
        p75: at(0.75),
        min: v.first().copied().unwrap_or(f64::NAN),
        max: v.last().copied().unwrap_or(f64::NAN),
    }
}

fn ms(v: f64) -> String {
    if v < 10.0 { format!("{v:.3}") } else { format!("{v:.1}") }
}

pub(crate) fn run(args: &[String]) -> Result<()> {
    let rounds = arg(args, "--starts", 15).max(10);
    let settle = std::time::Duration::from_millis(arg(args, "--settle-ms", 500) as u64);
    let cells = arg(args, "--cells", 1000).max(10);
    let python = crate::setup::venv().join("bin").join("python");
    if !python.exists() {
        bail!("the benchmark venv is missing: run `cargo xtask setup`");
    }
    let node = which("node").context("`node` is not on PATH")?;
    crate::run(crate::cargo().args([
        "build",
        "--release",
        "-q",
        "-p",
        "agent-tools-eval",
        "--example",
        "eval_bench",
    ]))?;
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| crate::project_root().join("target"));
    let bench = target.join("release").join("examples").join("eval_bench");
    let mut ours = Driver::spawn(
        "eval_bench",
        target.join("eval-bench-ours.log"),
        Command::new(&bench).arg("--python").arg(&python).arg("--node").arg(&node),
    )?;
    let mut ipykernel = Driver::spawn(
        "ipykernel",
        target.join("eval-bench-ipykernel.log"),
        Command::new(&python).args(["-c", IPYKERNEL]),
    )?;
    let mut ask = |k: Kernel, verb: &str, count: Option<usize>| -> Result<Vec<f64>> {
        let count = count.map_or(String::new(), |n| format!(" {n}"));
        match k.kind {
            Some(kind) => ours.ask(&format!("{verb} {kind}{count}")),
            None => ipykernel.ask(&format!("{verb}{count}")),
        }
    };
    let versions = format!(
        "{}; node {}",
        output(Command::new(&python).args([
            "-c",
            "import sys, ipykernel, jupyter_client; print(f'CPython {sys.version.split()[0]}, \
             ipykernel {ipykernel.__version__}, jupyter_client {jupyter_client.__version__}')"
        ]))?,
        output(Command::new(&node).arg("--version"))?
    );
    println!(
        "eval bench: {versions}; {rounds} interleaved rounds of starts, {cells} cells each; \
         load average {}",
        load_average()
    );
    // One untimed start of each: page cache, pyc files, the first cgroup.
    for k in KERNELS {
        ask(k, "start", None)?;
    }
    let mut starts: Vec<Vec<f64>> = vec![Vec::new(); KERNELS.len()];
    let mut order: Vec<usize> = (0..KERNELS.len()).collect();
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    for _ in 0..rounds {
        shuffle(&mut order, &mut seed);
        for &row in &order {
            std::thread::sleep(settle);
            starts[row].extend(ask(KERNELS[row], "start", None)?);
        }
    }
    let blocks = 10;
    let mut trips: Vec<Vec<f64>> = vec![Vec::new(); KERNELS.len()];
    for block in 0..blocks {
        let n = cells / blocks;
        for i in 0..KERNELS.len() {
            let row = (i + block) % KERNELS.len();
            let k = KERNELS[row];
            if k.trips {
                trips[row].extend(ask(k, "trips", Some(n))?);
            }
        }
    }
    ours.quit();
    ipykernel.quit();
    println!("load average at the end: {}", load_average());

    println!(
        "\n| kernel | start to first result: median (IQR; min–max) of {rounds} | `1+1` round trip: median (IQR) of {} |",
        cells / blocks * blocks
    );
    println!("|---|---|---|");
    let start_spread: Vec<Spread> = starts.iter().map(|s| spread(s)).collect();
    let trip_spread: Vec<Spread> = trips.iter().map(|s| spread(s)).collect();
    for (i, k) in KERNELS.iter().enumerate() {
        let s = &start_spread[i];
        let t = &trip_spread[i];
        let trip = if k.trips {
            format!("{} ms ({}–{})", ms(t.median), ms(t.p25), ms(t.p75))
        } else {
            "–".to_string()
        };
        println!(
            "| {} | {} ms ({}–{}; {}–{}) | {trip} |",
            k.label,
            ms(s.median),
            ms(s.p25),
            ms(s.p75),
            ms(s.min),
            ms(s.max)
        );
    }
    // Each round's own ratio: the two starts ran next to each other, under the same load.
    let paired = |a: usize, b: usize| {
        let r: Vec<f64> = starts[a].iter().zip(&starts[b]).map(|(x, y)| x / y).collect();
        spread(&r)
    };
    let verdict = |ratio: f64, goal: f64| if ratio <= goal { "goal met" } else { "GOAL MISSED" };
    println!();
    let ratio_line = |what: &str, ours: usize, theirs: usize, goal: Option<f64>| {
        let of_medians = start_spread[ours].median / start_spread[theirs].median;
        let per_round = paired(ours, theirs);
        let goal =
            goal.map_or(String::new(), |g| format!(" (goal ≤ {g}×: {})", verdict(of_medians, g)));
        println!(
            "{what}: start {of_medians:.3}× (per round: median {:.3}×, IQR {:.3}–{:.3}×){goal}",
            per_round.median, per_round.p25, per_round.p75
        );
    };
    ratio_line("Python vs ipykernel", 0, IPYKERNEL_ROW, Some(0.1));
    ratio_line("Python vs a bare python child", 0, BARE_PYTHON_ROW, None);
    ratio_line("Python, first cell %pwd (IPython) vs ipykernel", 1, IPYKERNEL_ROW, None);
    ratio_line("Node.js vs a bare node child", 2, BARE_NODE_ROW, Some(1.2));
    ratio_line("Node.js vs ipykernel", 2, IPYKERNEL_ROW, None);
    // What a capsule adds to a kernel's start, per round (the starts ran side by side).
    for (what, inside, host) in [
        ("Python in bubblewrap", PYTHON_BWRAP_ROW, 0),
        ("Node.js in bubblewrap", NODE_BWRAP_ROW, 2),
        ("Python in Landlock", PYTHON_LANDLOCK_ROW, 0),
        ("Node.js in Landlock", NODE_LANDLOCK_ROW, 2),
    ] {
        let added: Vec<f64> =
            starts[inside].iter().zip(&starts[host]).map(|(b, h)| b - h).collect();
        let added = spread(&added);
        println!(
            "{what}: start {:+.1} ms against the host (per round: median, IQR {:+.1} to {:+.1} ms; goal < +20 ms: {}), round trip {} vs {} ms",
            added.median,
            added.p25,
            added.p75,
            if added.median < 20.0 { "goal met" } else { "GOAL MISSED" },
            ms(trip_spread[inside].median),
            ms(trip_spread[host].median),
        );
    }
    let trip_ratio = trip_spread[0].median / trip_spread[IPYKERNEL_ROW].median;
    println!(
        "Python vs ipykernel: round trip {trip_ratio:.3}× (goal ≤ 0.15×: {}); Node.js {:.3}×",
        verdict(trip_ratio, 0.15),
        trip_spread[2].median / trip_spread[IPYKERNEL_ROW].median
    );
    Ok(())
}

/// Fisher-Yates with xorshift64: a fixed sequence of orders, the same in every run.
fn shuffle(order: &mut [usize], seed: &mut u64) {
    for i in (1..order.len()).rev() {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        order.swap(i, (*seed % (i as u64 + 1)) as usize);
    }
}

/// The 1-, 5- and 15-minute load averages, for the context of the figures.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|dir| PathBuf::from(dir).join(name))
        .find(|p| p.is_file())
}

fn output(command: &mut Command) -> Result<String> {
    let out = command.output().context("run a version probe")?;
    if !out.status.success() {
        bail!("{command:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}
