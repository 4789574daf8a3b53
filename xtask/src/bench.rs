//! `cargo xtask bench [NAME]`: benchmarks that run us and the reference tool side by side.
//!
//! Each family adds an entry to `BENCHES`; results go into `BENCHMARKS.md` by hand.

use anyhow::{Result, bail};

#[path = "bench_astgrep.rs"]
mod bench_astgrep;
#[path = "bench_debug.rs"]
mod bench_debug;
#[path = "bench_diagnostics.rs"]
mod bench_diagnostics;
#[path = "bench_economy.rs"]
mod bench_economy;
#[path = "bench_eval.rs"]
mod bench_eval;
#[path = "bench_files.rs"]
mod bench_files;
#[path = "bench_http.rs"]
mod bench_http;
#[path = "bench_python.rs"]
mod bench_python;

type Bench = fn(&[String]) -> Result<()>;

/// Name, what it compares, and the function that runs it.
const BENCHES: &[(&str, &str, Bench)] = &[
    ("astgrep", "structural search vs the ast-grep CLI", bench_astgrep::run),
    ("debug", "launch to the first stop snapshot vs a raw DAP client", bench_debug::run),
    (
        "economy",
        "calls and characters of reading and editing by symbol vs by lines and text (click)",
        bench_economy::run,
    ),
    (
        "eval",
        "Python/JavaScript kernels vs ipykernel and bare python/node, interleaved",
        bench_eval::run,
    ),
    (
        "diagnostics",
        "diagnostics on write: wrapped write vs a minimal client (basedpyright, clangd)",
        bench_diagnostics::run,
    ),
    (
        "files",
        "a 2 GiB sparse read and 100,000-line ast_edit rewrites vs head and the ast-grep CLI",
        bench_files::run,
    ),
    (
        "http",
        "20 Streamable HTTP sessions of mixed calls on one checkout: latency, memory, servers",
        bench_http::run,
    ),
    ("python", "start of the Python package's command vs the bare binary", bench_python::run),
];

pub(crate) fn run(args: &[String]) -> Result<()> {
    let wanted = args.first().map(String::as_str);
    let selected: Vec<_> =
        BENCHES.iter().filter(|(name, _, _)| wanted.is_none_or(|w| w == *name)).collect();
    if selected.is_empty() {
        let names: Vec<&str> = BENCHES.iter().map(|(n, _, _)| *n).collect();
        bail!(
            "no benchmark named {:?}; available: {}",
            wanted.unwrap_or(""),
            if names.is_empty() { "none yet".to_string() } else { names.join(", ") }
        );
    }
    for (name, what, bench) in selected {
        crate::step(&format!("bench {name}: {what}"));
        bench(&args[1.min(args.len())..])?;
    }
    Ok(())
}
