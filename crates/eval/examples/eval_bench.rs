//! Benchmark driver for `cargo xtask bench eval`: kernel start to first result, and the round
//! trip of a trivial cell over many cells, for one language. Prints one line of `key=value` pairs.
//!
//! Usage: `eval_bench [--language python|javascript] [--python PATH] [--starts N] [--cells N]`

#![allow(clippy::print_stdout)]

use std::{sync::Arc, time::Instant};

use agent_tools_eval::{
    CellStatus, EvalConfig, EvalRequest, Kernels, Language, NoBridge, NoProgress,
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
    let config = EvalConfig { python, ..EvalConfig::default() };
    let root = std::env::temp_dir();
    let cancel = CancellationToken::new();
    let request = || EvalRequest {
        code: "1+1".into(),
        description: "bench".into(),
        language: Some(language),
        reset: None,
    };
    let mut start_times = Vec::new();
    for i in 0..starts {
        let kernels = Kernels::new(config.clone());
        let t = Instant::now();
        let report = kernels
            .eval(&format!("s{i}"), &root, request(), Arc::new(NoBridge), &cancel, &NoProgress)
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
    println!(
        "kernel=ours-{} start_ms_median={} round_trip_ms_median={} round_trip_ms_mean={}",
        language.as_str(),
        median(start_times),
        median(trips),
        total / cells as f64,
    );
}
