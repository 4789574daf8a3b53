//! Benchmark driver for `cargo xtask bench eval`: kernel start to first result, and the round
//! trip of a trivial cell over many cells, for one language. Prints one line of `key=value` pairs.
//!
//! Usage: `eval_bench [--language python|javascript] [--engine node|quickjs] [--python PATH]
//! [--code CELL] [--starts N] [--cells N]`; `--code` is the first cell of each start (default
//! `1+1`; `%pwd` measures a start that engages IPython).

#![allow(clippy::print_stdout)]

use std::{sync::Arc, time::Instant};

use agent_tools_eval::{
    CellStatus, EvalConfig, EvalRequest, JsEngine, Kernels, Language, NoBridge, NoProgress,
};
use tokio_util::sync::CancellationToken;

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1).cloned())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() { 0.0 } else { v[v.len() / 2] }
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let language = match arg(&args, "--language").as_deref() {
        Some("javascript") => Language::Javascript,
        _ => Language::Python,
    };
    let python = arg(&args, "--python").map(Into::into);
    let starts: usize = arg(&args, "--starts").and_then(|s| s.parse().ok()).unwrap_or(10);
    let cells: usize = arg(&args, "--cells").and_then(|s| s.parse().ok()).unwrap_or(1000);
    let engine = match arg(&args, "--engine").as_deref() {
        Some("quickjs") => Some(JsEngine::Quickjs),
        Some("node") => Some(JsEngine::Node),
        _ => None,
    };
    let first = arg(&args, "--code").unwrap_or_else(|| "1+1".into());
    let config = EvalConfig { python, javascript: engine, ..EvalConfig::default() };
    let root = std::env::temp_dir();
    let cancel = CancellationToken::new();
    let request_of = |code: &str| EvalRequest {
        code: code.into(),
        description: "bench".into(),
        language: Some(language),
        reset: None,
    };
    let request = || request_of("1+1");
    let mut start_times = Vec::new();
    for i in 0..starts {
        let kernels = Kernels::new(config.clone());
        let t = Instant::now();
        let report = kernels
            .eval(
                &format!("s{i}"),
                &root,
                request_of(&first),
                Arc::new(NoBridge),
                &cancel,
                &NoProgress,
            )
            .await
            .expect("eval");
        start_times.push(t.elapsed().as_secs_f64() * 1000.0);
        assert_eq!(report.status, CellStatus::Ok, "{}", agent_tools_eval::render(&report));
        kernels.shutdown().await;
    }
    let kernels = Kernels::new(config);
    kernels
        .eval("rt", &root, request(), Arc::new(NoBridge), &cancel, &NoProgress)
        .await
        .expect("warm-up");
    let mut trips = Vec::with_capacity(cells);
    let t_all = Instant::now();
    for _ in 0..cells {
        let t = Instant::now();
        let report = kernels
            .eval("rt", &root, request(), Arc::new(NoBridge), &cancel, &NoProgress)
            .await
            .expect("eval");
        trips.push(t.elapsed().as_secs_f64() * 1000.0);
        assert_eq!(report.status, CellStatus::Ok);
    }
    let total = t_all.elapsed().as_secs_f64() * 1000.0;
    kernels.shutdown().await;
    let label = match (language, engine) {
        (Language::Python, _) if first != "1+1" => "ours-python-ipython".to_string(),
        (Language::Javascript, Some(JsEngine::Quickjs)) => "ours-quickjs".to_string(),
        (Language::Javascript, _) => "ours-node".to_string(),
        _ => format!("ours-{}", language.as_str()),
    };
    println!(
        "kernel={label} start_ms_median={} round_trip_ms_median={} round_trip_ms_mean={}",
        median(start_times),
        median(trips),
        total / cells as f64,
    );
}
