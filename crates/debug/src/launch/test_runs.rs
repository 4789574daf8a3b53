//! Tests to debug: pytest through debugpy, a Go test through delve's test mode, a Rust test
//! binary that cargo builds for lldb.

use std::{
    path::{Path, PathBuf},
    process::Command,
    time::Duration,
};

use agent_tools_support::capsule::Capsule;

use crate::{
    adapters::{AdapterKind, SearchEnv},
    error::DebugError,
};

/// A test to debug, as the adapter runs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TestPlan {
    /// debugpy: the module to run; otherwise `None`.
    pub module: Option<String>,
    /// The program to launch (Go: the package folder; Rust: the test binary).
    pub program: Option<PathBuf>,
    pub args: Vec<String>,
    pub go_test: bool,
}

/// Which adapter runs `test` when none was named: a pytest id or `.py` path is Python, a Go
/// module is Go, a Cargo project is Rust.
pub(crate) fn adapter_for_test(test: &str, root: &Path) -> Option<AdapterKind> {
    let file = test.split("::").next().unwrap_or_default();
    if file.ends_with(".py") || test.contains("::") && !root.join("Cargo.toml").is_file() {
        return Some(AdapterKind::Debugpy);
    }
    if root.join("go.mod").is_file() {
        return Some(AdapterKind::Delve);
    }
    if root.join("Cargo.toml").is_file() {
        return Some(AdapterKind::Lldb);
    }
    None
}

/// How `kind` debugs `test`, with the user's extra `args` after the runner's own.
pub(crate) fn plan_test(
    kind: AdapterKind,
    test: &str,
    program: Option<&Path>,
    root: &Path,
    args: &[String],
    env: &SearchEnv,
    capsule: &dyn Capsule,
) -> Result<TestPlan, DebugError> {
    match kind {
        AdapterKind::Debugpy => {
            // No cache folder in the project; `-x`: the first failure is the one to look at.
            let mut all =
                vec![test.to_string(), "-x".into(), "-p".into(), "no:cacheprovider".into()];
            all.extend(args.iter().cloned());
            Ok(TestPlan { module: Some("pytest".into()), program: None, args: all, go_test: false })
        }
        AdapterKind::Delve => {
            let package = program.map_or_else(|| root.to_path_buf(), Path::to_path_buf);
            let package = if package.is_file() {
                package.parent().map_or_else(|| root.to_path_buf(), Path::to_path_buf)
            } else {
                package
            };
            let mut all = vec!["-test.run".to_string(), format!("^{test}$")];
            all.extend(args.iter().cloned());
            Ok(TestPlan { module: None, program: Some(package), args: all, go_test: true })
        }
        AdapterKind::Lldb => {
            let binary = cargo_test_binary(root, test, env, capsule)?;
            let mut all = vec![
                test.to_string(),
                "--exact".into(),
                "--nocapture".into(),
                "--test-threads=1".into(),
            ];
            all.extend(args.iter().cloned());
            Ok(TestPlan { module: None, program: Some(binary), args: all, go_test: false })
        }
        AdapterKind::Dart => Err(DebugError::usage(
            "`test` works with debugpy (pytest), delve (go test) and lldb (cargo test); for Dart \
             launch the test file as `program`",
        )),
    }
}

/// Builds the project's test binaries (`cargo test --no-run`) and returns the one that lists
/// `test`.
/// Both run the project's code (build scripts, the test binary), so in the run's capsule.
fn cargo_test_binary(
    root: &Path,
    test: &str,
    env: &SearchEnv,
    capsule: &dyn Capsule,
) -> Result<PathBuf, DebugError> {
    let cargo = env.which("cargo").ok_or_else(|| {
        DebugError::usage("`test` for Rust needs `cargo` on PATH to build the test binaries")
    })?;
    let out = run_bounded(
        capsule,
        Command::new(&cargo)
            .args(["test", "--no-run", "--message-format=json-render-diagnostics"])
            .current_dir(root),
        Duration::from_secs(600),
    )?;
    if !out.status.success() {
        return Err(DebugError::adapter(format!(
            "`cargo test --no-run` failed: {}",
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .rev()
                .take(15)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect::<Vec<_>>()
                .join("\n")
        )));
    }
    let binaries: Vec<PathBuf> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["profile"]["test"] == true)
        .filter_map(|m| m["executable"].as_str().map(PathBuf::from))
        .collect();
    for binary in &binaries {
        let listed = run_bounded(
            capsule,
            Command::new(binary).args(["--list", "--format", "terse"]).current_dir(root),
            Duration::from_secs(30),
        )?;
        let wanted = format!("{test}: test");
        if String::from_utf8_lossy(&listed.stdout).lines().any(|l| l == wanted) {
            return Ok(binary.clone());
        }
    }
    Err(DebugError::usage(format!(
        "no test binary of this project has a test named exactly `{test}` ({} binaries looked \
         at); pass the full path, as `cargo test -- --list` prints it",
        binaries.len()
    )))
}

fn run_bounded(
    capsule: &dyn Capsule,
    command: &mut Command,
    within: Duration,
) -> Result<std::process::Output, DebugError> {
    let shown = format!("{:?}", command);
    let args: Vec<std::ffi::OsString> = command.get_args().map(Into::into).collect();
    let mut owned = capsule.command(command.get_program(), &args);
    if let Some(dir) = command.get_current_dir() {
        owned.current_dir(dir);
    }
    owned
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let agent_tools_support::process::SpawnedStd { child, group } =
        agent_tools_support::process::spawn_std(owned)
            .map_err(|e| DebugError::adapter(format!("cannot run {shown}: {e}")))?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let result = match rx.recv_timeout(within) {
        Ok(Ok(out)) => Ok(out),
        Ok(Err(e)) => Err(DebugError::adapter(format!("{shown} failed: {e}"))),
        Err(_) => Err(DebugError::adapter(format!(
            "{shown} did not finish within {} s",
            within.as_secs()
        ))),
    };
    // What it started (cargo's build scripts, rustc) ends with it.
    group.terminate_blocking(Duration::from_millis(200));
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_test_is_run_the_way_each_runner_expects() {
        let root = Path::new("/p");
        let env = SearchEnv::default();
        let py = plan_test(
            AdapterKind::Debugpy,
            "tests/t.py::test_x",
            None,
            root,
            &[],
            &env,
            &agent_tools_support::capsule::OnHost,
        )
        .unwrap();
        assert_eq!(py.module.as_deref(), Some("pytest"));
        assert_eq!(py.args[..2], ["tests/t.py::test_x".to_string(), "-x".into()]);
        let go = plan_test(
            AdapterKind::Delve,
            "TestSum",
            None,
            root,
            &[],
            &env,
            &agent_tools_support::capsule::OnHost,
        )
        .unwrap();
        assert!(go.go_test);
        assert_eq!(go.args, ["-test.run", "^TestSum$"]);
        assert_eq!(
            adapter_for_test("tests/test_x.py::test_y", Path::new("/nonexistent")),
            Some(AdapterKind::Debugpy)
        );
    }
}
