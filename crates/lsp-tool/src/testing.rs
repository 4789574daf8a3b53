//! Helpers for tests that run real language servers, here and in a host's tests: where
//! `cargo xtask setup` installs them, and the rule for one that is missing (fail in CI, skip
//! loudly elsewhere).

use std::path::PathBuf;

/// Where `cargo xtask setup` puts the test tools (`AGENT_TOOLS_TEST_HOME` overrides it).
pub fn tools_home() -> PathBuf {
    if let Some(dir) = std::env::var_os("AGENT_TOOLS_TEST_HOME") {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_default();
    home.join(".cache/agent-tools-test")
}

/// The directories `cargo xtask setup` installs language servers into (its venv and npm
/// prefix), as `extra_paths` of an [`LspConfig`](crate::LspConfig) wants them.
pub fn setup_paths() -> Vec<String> {
    let home = tools_home();
    vec![
        home.join("venv/bin").display().to_string(),
        home.join("npm/node_modules/.bin").display().to_string(),
    ]
}

/// Whether the `CI` environment variable says this is a CI run.
pub fn in_ci() -> bool {
    std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "false")
}

/// Whether one of `programs` is in `extra` or on `PATH`. When none is, this panics in CI and
/// elsewhere prints a loud `!!! SKIPPED !!!` line; both name the first program and `how` to
/// install it.
pub fn require_program(programs: &[&str], extra: &[String], how: &str) -> bool {
    let mut dirs: Vec<PathBuf> = extra.iter().map(PathBuf::from).collect();
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    if programs.iter().any(|program| dirs.iter().any(|d| d.join(program).is_file())) {
        return true;
    }
    let program = programs.first().copied().unwrap_or_default();
    assert!(
        !in_ci(),
        "{program} is missing in CI; the setup step should have installed it ({how})"
    );
    #[allow(clippy::print_stderr, reason = "a skipped test must say so loudly")]
    {
        eprintln!("\n!!! SKIPPED: {program} is not installed; {how} !!!\n");
    }
    false
}

/// Who holds `file` open on the server that covers it for `supervisor`: the number of runs,
/// or `None` when it is not open there (or no server of the supervisor runs for it).
pub async fn holders_of(supervisor: &crate::Supervisor, file: &std::path::Path) -> Option<usize> {
    supervisor.holders_of(file).await
}

/// Whether a process group still has members (for tests of orphan freedom).
pub fn process_group_alive(pgid: u32) -> bool {
    agent_tools_support::process::group_exists(pgid)
}
