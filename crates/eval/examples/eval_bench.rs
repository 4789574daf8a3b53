//! Benchmark driver for `cargo xtask bench eval`: one command a line on stdin, one answer a
//! line on stdout, so the xtask interleaves our kernels, ipykernel and bare interpreters round
//! by round (a noisy machine then slows every side alike).
//!
//! Usage: `eval_bench [--python PATH] [--node PATH]`, then commands:
//! - `start KIND`: a fresh kernel of KIND runs its first cell (`1+1`; `%pwd` for
//!   `python-ipython`, so IPython is imported and its shell built) and the result is back;
//!   answers `ms=F`. KIND is `python`, `python-ipython`, `node`, `quickjs`, or `bare-python` /
//!   `bare-node`: the interpreter run as a child that prints `1+1` (spawn to the printed `2`);
//!   `python-bwrap` and `node-bwrap` are `python` and `node` in a bubblewrap capsule,
//!   `python-landlock` and `node-landlock` in a Landlock one (each made once, as a run's is,
//!   and not timed).
//! - `trips KIND N`: N cells of `1+1` in one kernel of KIND kept between commands (started
//!   untimed at its first use); answers `ms=F,F,…`, one time per cell.
//! - `quit`.

#![allow(clippy::print_stdout)]
// Tests, examples and test programs start and signal programs directly, on purpose.
#![allow(clippy::disallowed_methods)]

use std::{
    collections::HashMap,
    io::BufRead,
    path::{Path, PathBuf},
    process::Stdio,
    sync::Arc,
    time::Instant,
};

use agent_tools_eval::{
    CallScope, Capsule, CellStatus, EvalConfig, EvalRequest, JsEngine, Kernels, Language, NoBridge,
    render,
};
use agent_tools_support::capsule::{Bwrap, CapsuleOptions, Landlock};
use tokio::io::AsyncReadExt;
use tokio_util::sync::CancellationToken;

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1).cloned())
}

struct Bench {
    python: PathBuf,
    node: PathBuf,
    root: PathBuf,
    cancel: CancellationToken,
    /// Kernels kept for `trips`, by kind.
    kept: HashMap<String, Kernels>,
    /// The capsules of the `-bwrap` and `-landlock` kinds, made at their first use.
    capsules: HashMap<&'static str, Arc<dyn Capsule>>,
}

impl Bench {
    fn config(&self, kind: &str) -> Result<(EvalConfig, Language, &'static str), String> {
        let base = EvalConfig {
            python: Some(self.python.clone()),
            node: Some(self.node.clone()),
            ..EvalConfig::default()
        };
        let bare = kind.strip_suffix("-bwrap").or_else(|| kind.strip_suffix("-landlock"));
        Ok(match bare.unwrap_or(kind) {
            "python" => (base, Language::Python, "1+1"),
            "python-ipython" => (base, Language::Python, "%pwd"),
            "node" => (
                EvalConfig { javascript: Some(JsEngine::Node), ..base },
                Language::Javascript,
                "1+1",
            ),
            "quickjs" => (
                EvalConfig { javascript: Some(JsEngine::Quickjs), ..base },
                Language::Javascript,
                "1+1",
            ),
            other => return Err(format!("unknown kernel kind {other:?}")),
        })
    }

    async fn cell(&self, kernels: &Kernels, language: Language, code: &str) -> Result<(), String> {
        let request = EvalRequest {
            code: code.into(),
            description: "bench".into(),
            language: Some(language),
            reset: None,
            ..Default::default()
        };
        let report = kernels
            .eval(
                "bench",
                &self.root,
                request,
                Arc::new(NoBridge),
                CallScope::new(self.cancel.clone()),
            )
            .await
            .map_err(|e| e.to_string())?;
        if report.status != CellStatus::Ok {
            return Err(render(&report).replace('\n', " | "));
        }
        Ok(())
    }

    async fn start(&mut self, kind: &str) -> Result<f64, String> {
        match kind {
            "bare-python" => {
                let code = "import sys; sys.stdout.write(str(1+1)); sys.stdout.flush()";
                return bare(&self.python, &["-c", code]).await;
            }
            "bare-node" => {
                return bare(&self.node, &["-e", "process.stdout.write(String(1+1))"]).await;
            }
            _ => {}
        }
        let (config, language, first) = self.config(kind)?;
        let kernels = self.kernels(kind, config)?;
        let t = Instant::now();
        let outcome = self.cell(&kernels, language, first).await;
        let ms = t.elapsed().as_secs_f64() * 1000.0;
        kernels.shutdown().await;
        outcome.map(|()| ms)
    }

    /// Kernels for `kind`: in the bubblewrap capsule for a `-bwrap` kind, in the Landlock one
    /// for a `-landlock` kind, else on the host.
    fn kernels(&mut self, kind: &str, config: EvalConfig) -> Result<Kernels, String> {
        let backend = if kind.ends_with("-bwrap") {
            "bwrap"
        } else if kind.ends_with("-landlock") {
            "landlock"
        } else {
            return Ok(Kernels::new(config));
        };
        if !self.capsules.contains_key(backend) {
            // The interpreters are the run's programs: the private home shows their prefixes.
            let options = CapsuleOptions {
                project: self.root.clone(),
                programs: vec![self.python.clone(), self.node.clone()],
                ..CapsuleOptions::default()
            };
            let capsule: Arc<dyn Capsule> = if backend == "bwrap" {
                Arc::new(Bwrap::start(options).map_err(|e| e.to_string())?)
            } else {
                Arc::new(Landlock::start(options).map_err(|e| e.to_string())?)
            };
            self.capsules.insert(backend, capsule);
        }
        Ok(Kernels::new(config).with_capsule(self.capsules[backend].clone()))
    }

    async fn trips(&mut self, kind: &str, n: usize) -> Result<Vec<f64>, String> {
        let (config, language, _) = self.config(kind)?;
        if !self.kept.contains_key(kind) {
            let kernels = self.kernels(kind, config)?;
            self.cell(&kernels, language, "1+1").await?;
            self.kept.insert(kind.to_string(), kernels);
        }
        let kernels = &self.kept[kind];
        let mut times = Vec::with_capacity(n);
        for _ in 0..n {
            let t = Instant::now();
            self.cell(kernels, language, "1+1").await?;
            times.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        Ok(times)
    }
}

/// Spawn to the child's printed `2` (the child is then reaped, untimed).
async fn bare(program: &Path, args: &[&str]) -> Result<f64, String> {
    let t = Instant::now();
    let mut child = tokio::process::Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", program.display()))?;
    let mut stdout = child.stdout.take().ok_or("no stdout")?;
    let mut buf = [0u8; 16];
    let n = stdout.read(&mut buf).await.map_err(|e| e.to_string())?;
    let ms = t.elapsed().as_secs_f64() * 1000.0;
    let _ = child.wait().await;
    if &buf[..n] != b"2" {
        return Err(format!("{} printed {:?}", program.display(), &buf[..n]));
    }
    Ok(ms)
}

/// A folder of the benchmark's own as the kernels' project (and the capsule's).
fn bench_root() -> PathBuf {
    let root = std::env::temp_dir().join(format!("agent-tools-eval-bench-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&root);
    root
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mut bench = Bench {
        python: arg(&args, "--python").unwrap_or_else(|| "python3".into()).into(),
        node: arg(&args, "--node").unwrap_or_else(|| "node".into()).into(),
        root: bench_root(),
        cancel: CancellationToken::new(),
        kept: HashMap::new(),
        capsules: HashMap::new(),
    };
    let stdin = std::io::stdin();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let words: Vec<&str> = line.split_whitespace().collect();
        let answer = match words.as_slice() {
            ["start", kind] => bench.start(kind).await.map(|ms| format!("ms={ms}")),
            ["trips", kind, n] => match n.parse() {
                Ok(n) => bench.trips(kind, n).await.map(|times| {
                    let times: Vec<String> = times.iter().map(f64::to_string).collect();
                    format!("ms={}", times.join(","))
                }),
                Err(_) => Err(format!("not a count: {n}")),
            },
            ["quit"] => break,
            _ => Err(format!("unknown command {line:?}")),
        };
        match answer {
            Ok(answer) => println!("{answer}"),
            Err(e) => println!("error={}", e.replace('\n', " ")),
        }
    }
    for (_, kernels) in bench.kept.drain() {
        kernels.shutdown().await;
    }
    bench.capsules.clear();
    let _ = std::fs::remove_dir_all(&bench.root);
}
