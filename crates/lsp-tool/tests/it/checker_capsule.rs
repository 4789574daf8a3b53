//! Project checks run their command in the run's capsule: a checker that runs project code
//! (`cargo check` runs build scripts) meets the capsule's walls.

#![allow(clippy::print_stderr)] // a skipped test says so loudly

use std::{path::Path, time::Duration};

use agent_tools_lsp::check::run_command;
use agent_tools_support::capsule::{Bwrap, BwrapOptions, OnHost};
use tokio_util::sync::CancellationToken;

const PROBE: &str = "touch /etc/agent-tools-checker-probe && echo escaped || echo refused; \
                     echo inside > made-by-checker.txt";

#[tokio::test]
async fn a_checker_runs_in_the_capsule_it_is_given() {
    if !Path::new("/usr/bin/bwrap").exists() {
        assert!(std::env::var_os("CI").is_none(), "bubblewrap is missing in CI");
        eprintln!("\n!!! SKIPPED: bubblewrap (bwrap) is not installed !!!\n");
        return;
    }
    let project = tempfile::tempdir().unwrap();
    let root = project.path().canonicalize().unwrap();
    let capsule =
        Bwrap::start(BwrapOptions { project: root.clone(), ..BwrapOptions::default() }).unwrap();
    let args = ["-c".to_string(), PROBE.to_string()];
    let (stdout, stderr, status) = run_command(
        &capsule,
        Path::new("sh"),
        &args,
        &root,
        &[("AGENT_TOOLS_PIN".into(), "1".into())],
        Duration::from_secs(30),
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    assert_eq!(status, Some(0), "{stderr}");
    assert!(stdout.contains("refused") && !stdout.contains("escaped"), "{stdout}{stderr}");
    assert!(stderr.contains("Read-only file system"), "{stderr}");
    assert_eq!(std::fs::read_to_string(root.join("made-by-checker.txt")).unwrap(), "inside\n");
    // On the host the same command reaches /etc's permission check, not a read-only system.
    let (_, host_err, _) = run_command(
        &OnHost,
        Path::new("sh"),
        &["-c".to_string(), "echo host".to_string()],
        &root,
        &[],
        Duration::from_secs(30),
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    assert!(!host_err.contains("Read-only file system"), "{host_err}");
}
