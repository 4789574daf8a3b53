//! The newest releases of Claude Code and Codex, not only the pinned ones: each is looked up on
//! the npm registry when the test runs (`npm view PACKAGE@latest version`), installed into a
//! scratch folder, and put through the same checks as the pinned release: a 3,519-line read, a
//! 500-match search and a figure reach the model (Claude Code) or its client (Codex) cut once,
//! alike in text and payload. A new release that changes how a client handles results fails
//! here, in CI too; a registry that cannot be reached is said in so many words (and fails in CI,
//! where the releases must be checked).

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use super::cli::run_cli;
use crate::support::{TempProject, in_ci};

/// False, after saying why, when the registry could not be asked: a failure in CI, a loud skip
/// elsewhere.
fn registry_answered(ok: bool, what: &str, detail: &str) -> bool {
    if ok {
        return true;
    }
    let why = format!(
        "the npm registry could not be reached to {what} ({}), so the newest release is not \
         checked; this says nothing about agent-tools",
        detail.trim()
    );
    assert!(!in_ci(), "{why}");
    eprintln!("\n!!! SKIPPED: {why} !!!\n");
    false
}

/// The newest release of `package`, installed in `scratch`; the path of its `bin`, or `None`
/// after [`registry_answered`] said why.
fn newest(package: &str, bin: &str, scratch: &Path) -> Option<(String, PathBuf)> {
    let mut view = Command::new("npm");
    view.args(["view", &format!("{package}@latest"), "version"]).current_dir(scratch);
    let viewed = run_cli(view);
    let version = String::from_utf8_lossy(&viewed.stdout).trim().to_string();
    let stderr = String::from_utf8_lossy(&viewed.stderr).into_owned();
    if !registry_answered(viewed.status.success() && !version.is_empty(), "look up", &stderr) {
        return None;
    }
    let mut install = Command::new("npm");
    install
        .args(["install", "--no-audit", "--no-fund", "--prefix"])
        .arg(scratch)
        .arg(format!("{package}@{version}"))
        .current_dir(scratch);
    let installed = run_cli(install);
    let stderr = String::from_utf8_lossy(&installed.stderr).into_owned();
    let what = format!("install {package}@{version}");
    if !registry_answered(installed.status.success(), &what, &stderr) {
        return None;
    }
    let path = scratch.join("node_modules/.bin").join(bin);
    assert!(path.is_file(), "{package}@{version} installed no `{bin}` at {}", path.display());
    eprintln!("the newest {package} is {version}");
    Some((version, path))
}

#[test]
fn the_newest_claude_code_still_gets_a_long_read_a_large_search_and_a_figure_cut_alike() {
    let scratch = TempProject::new(&[]);
    let Some((_, claude)) = newest("@anthropic-ai/claude-code", "claude", &scratch.root) else {
        return;
    };
    super::claude_code::long_read_large_search_and_figure(&claude);
}

#[test]
fn the_newest_codex_still_gets_a_long_read_a_large_search_and_a_figure_cut_alike() {
    let scratch = TempProject::new(&[]);
    let Some((_, codex)) = newest("@openai/codex", "codex", &scratch.root) else { return };
    super::codex::figure_long_read_and_large_search(&codex);
}
