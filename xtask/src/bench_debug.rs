//! `cargo xtask bench debug`: time from `launch` to the first stop snapshot, ours against a
//! minimal raw DAP client driving the same adapter (debugpy, lldb-dap, delve) in the same run.
//!
//! Runs the crate's `bench_launch` example (release build) with the test environment (the
//! venv's debugpy). Arguments after `debug` go to it: `--iterations N` (default 9),
//! `--adapters debugpy,lldb,delve`. Needs `cargo xtask setup` (debugpy, lldb-19, delve, Go).

use std::process::Command;

use anyhow::Result;

pub(crate) fn run(args: &[String]) -> Result<()> {
    let mut forwarded: Vec<String> = args.to_vec();
    if !forwarded.iter().any(|a| a == "--iterations") {
        forwarded.extend(["--iterations".into(), "9".into()]);
    }
    let python = crate::setup::venv().join("bin").join("python");
    forwarded.extend(["--python".into(), python.display().to_string()]);
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.args([
        "run",
        "--release",
        "--quiet",
        "-p",
        "agent-tools-debug",
        "--example",
        "bench_launch",
        "--",
    ])
    .args(&forwarded);
    crate::run(crate::setup::with_test_env(&mut cmd))
}
