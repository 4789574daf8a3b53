//! `cargo xtask bench diagnostics`: diagnostics on write with real servers.
//!
//! First the lsp crate's ignored `bench_on_write` tests: p50/p90 per language on a file of about
//! 3,000 lines (basedpyright, typescript-language-server, clangd, gopls), and on a project of
//! about click's size a signature change that breaks 20 files the session never opened (the
//! impact set, files checked per write) beside a single-file body change; then the facade's ignored `bench_diagnostics_on_write` test (basedpyright and
//! clangd): the same sequence of writes (`--writes`, default 100; an error at a moving line,
//! then clean) goes through a minimal client (sync + wait for that version's diagnostics: the
//! server's own time) and through the wrapped `write` (end of the write to the result). Prints
//! p50/p90 of both and the overhead. Needs `cargo xtask setup`.

#![allow(clippy::print_stdout)]

use std::process::Command;

use anyhow::Result;

pub(crate) fn run(args: &[String]) -> Result<()> {
    let writes = args
        .iter()
        .position(|a| a == "--writes")
        .and_then(|i| args.get(i + 1))
        .cloned()
        .unwrap_or_else(|| "100".into());
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut large = Command::new(&cargo);
    large
        .args([
            "test",
            "-p",
            "agent-tools-lsp",
            "--test",
            "it",
            "--",
            "bench_on_write::",
            "--ignored",
            "--nocapture",
        ])
        .env("AGENT_TOOLS_BENCH_WRITES", &writes);
    crate::run(crate::setup::with_test_env(&mut large))?;
    let mut cmd = Command::new(cargo);
    cmd.args([
        "test",
        "-p",
        "builtin-agent-tools",
        "--lib",
        "--",
        "families::diagnostics::tests::bench_diagnostics_on_write",
        "--ignored",
        "--exact",
        "--nocapture",
    ])
    .env("AGENT_TOOLS_BENCH_WRITES", &writes);
    crate::run(crate::setup::with_test_env(&mut cmd))?;
    println!(
        "(overhead = wrapper time from the end of the write to the result minus the server's own time)"
    );
    Ok(())
}
