//! What a `launch` means before any adapter starts: the program (in the root, or a console
//! script of the project's environment), a Python module, a test (pytest through debugpy, a Go
//! test through delve's test mode, a Rust test binary that cargo builds for lldb), and the
//! read-only library folders the program's environment adds (stdlib, site-packages, GOROOT, the
//! module cache, the Rust sources) where breakpoints may go too.

use std::{
    path::{Path, PathBuf},
    process::Command,
    time::Duration,
};

use crate::{
    adapters::{self, AdapterKind, Probes, SearchEnv},
    error::DebugError,
};

/// `path` (relative to `root`, or absolute) as a canonical path inside `root`.
pub(crate) fn resolve_in_root(root: &Path, path: &str, what: &str) -> Result<PathBuf, DebugError> {
    let candidate =
        if Path::new(path).is_absolute() { PathBuf::from(path) } else { root.join(path) };
    let canonical = std::fs::canonicalize(&candidate).map_err(|e| {
        DebugError::usage(format!("{what} `{path}`: {e} (looked at {})", candidate.display()))
    })?;
    if !canonical.starts_with(root) {
        return Err(DebugError::usage(format!(
            "{what} `{path}` is outside the project root {}; debug works only inside it",
            root.display()
        )));
    }
    Ok(canonical)
}

/// The folders of the project's Python environment holding its console scripts.
fn environment_bins(root: &Path, env: &SearchEnv) -> Vec<PathBuf> {
    let mut bins = vec![root.join(".venv/bin"), root.join("venv/bin")];
    if let Some(venv) = &env.virtual_env {
        bins.push(venv.join("bin"));
    }
    bins
}

/// The program to launch: a path inside the root, or the name (or path) of a console script in
/// the project's environment (`.venv/bin/pytest`, `$VIRTUAL_ENV/bin/x`), read-only.
pub(crate) fn resolve_program(
    root: &Path,
    program: &str,
    env: &SearchEnv,
) -> Result<PathBuf, DebugError> {
    let inside = resolve_in_root(root, program, "program");
    if inside.is_ok() {
        return inside;
    }
    let bins = environment_bins(root, env);
    let name = Path::new(program).file_name().map(PathBuf::from).unwrap_or_default();
    for bin in &bins {
        // Not canonicalised: the interpreter in a venv is a symlink that leaves the root, while
        // the console script itself is what we run.
        let candidate = bin.join(&name);
        let named_here = Path::new(program).is_absolute() && Path::new(program) == candidate
            || !program.contains('/')
            || program.starts_with(".venv/")
            || program.starts_with("venv/");
        if named_here && adapters::is_executable(&candidate) {
            return Ok(candidate);
        }
    }
    inside.map_err(|e| {
        DebugError::usage(format!(
            "{e}; console scripts are also looked up in {}",
            bins.iter().map(|b| b.display().to_string()).collect::<Vec<_>>().join(", ")
        ))
    })
}

/// The folders outside the root that belong to the program's environment: breakpoints may be
/// set there (read-only) and stepping reaches them.
pub(crate) fn library_roots(
    kind: AdapterKind,
    python: Option<&Path>,
    probes: &Probes,
    env: &SearchEnv,
) -> Vec<PathBuf> {
    let lines = |argv: &[String]| -> Vec<PathBuf> {
        probes
            .run(argv)
            .map(|out| out.lines().filter(|l| !l.trim().is_empty()).map(PathBuf::from).collect())
            .unwrap_or_default()
    };
    let mut roots = match kind {
        AdapterKind::Debugpy => python
            .map(|python| {
                lines(&[
                    python.display().to_string(),
                    "-c".into(),
                    "import sys, sysconfig\nfor k in ('stdlib', 'platstdlib', 'purelib', \
                     'platlib'):\n    print(sysconfig.get_paths()[k])\nprint(sys.base_prefix)"
                        .into(),
                ])
            })
            .unwrap_or_default(),
        AdapterKind::Delve => env
            .which("go")
            .map(|go| {
                lines(&[
                    go.display().to_string(),
                    "env".into(),
                    "GOROOT".into(),
                    "GOMODCACHE".into(),
                ])
            })
            .unwrap_or_default(),
        AdapterKind::Lldb => {
            let mut out: Vec<PathBuf> = env
                .which("rustc")
                .map(|rustc| {
                    lines(&[rustc.display().to_string(), "--print".into(), "sysroot".into()])
                })
                .unwrap_or_default();
            if let Some(home) = &env.home {
                out.push(home.join(".cargo/registry"));
                out.push(home.join(".cargo/git"));
            }
            out.push("/usr/include".into());
            out
        }
        AdapterKind::Dart => Vec::new(),
    };
    roots.retain(|r| r.is_dir() && r != Path::new("/"));
    roots.iter_mut().for_each(|r| *r = std::fs::canonicalize(&*r).unwrap_or_else(|_| r.clone()));
    roots.sort();
    roots.dedup();
    roots
}

/// A breakpoint file: inside the root, or an absolute path under one of `libraries`.
pub(crate) fn resolve_source(
    root: &Path,
    file: &str,
    libraries: &[PathBuf],
) -> Result<(PathBuf, bool), DebugError> {
    match resolve_in_root(root, file, "file") {
        Ok(path) => Ok((path, false)),
        Err(inside) => {
            if Path::new(file).is_absolute()
                && let Ok(path) = std::fs::canonicalize(file)
                && libraries.iter().any(|l| path.starts_with(l))
            {
                return Ok((path, true));
            }
            Err(DebugError::usage(format!(
                "{inside}, and not in the program's libraries{}",
                if libraries.is_empty() {
                    String::new()
                } else {
                    format!(
                        " ({})",
                        libraries
                            .iter()
                            .map(|l| l.display().to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                }
            )))
        }
    }
}

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
            let binary = cargo_test_binary(root, test, env)?;
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
fn cargo_test_binary(root: &Path, test: &str, env: &SearchEnv) -> Result<PathBuf, DebugError> {
    let cargo = env.which("cargo").ok_or_else(|| {
        DebugError::usage("`test` for Rust needs `cargo` on PATH to build the test binaries")
    })?;
    let out = run_bounded(
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
    command: &mut Command,
    within: Duration,
) -> Result<std::process::Output, DebugError> {
    let shown = format!("{:?}", command);
    let mut owned = Command::new(command.get_program());
    owned.args(command.get_args());
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
        let py =
            plan_test(AdapterKind::Debugpy, "tests/t.py::test_x", None, root, &[], &env).unwrap();
        assert_eq!(py.module.as_deref(), Some("pytest"));
        assert_eq!(py.args[..2], ["tests/t.py::test_x".to_string(), "-x".into()]);
        let go = plan_test(AdapterKind::Delve, "TestSum", None, root, &[], &env).unwrap();
        assert!(go.go_test);
        assert_eq!(go.args, ["-test.run", "^TestSum$"]);
        assert_eq!(
            adapter_for_test("tests/test_x.py::test_y", Path::new("/nonexistent")),
            Some(AdapterKind::Debugpy)
        );
    }
}
