//! Shared helpers for the debug tests: fixtures copied into temp projects, a supervisor driven
//! with JSON arguments, skip-loudly-unless-CI, and the check that no process survives.

#![allow(dead_code, unreachable_pub, clippy::print_stderr)]

use std::{
    path::{Path, PathBuf},
    process::Command,
    sync::Arc,
    time::Duration,
};

use agent_tools_debug::{
    DebugArgs, DebugConfig, DebugError, DebugOutcome, DebugSupervisor, RunState, SearchEnv,
    StopSnapshot, VariableView,
};
use agent_tools_support::process::{KnownProcess, descendants};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// True in CI, where a missing adapter fails instead of skipping.
pub fn in_ci() -> bool {
    std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "false")
}

/// Fails in CI, skips loudly elsewhere. Returns whether the test may go on.
pub fn require(what: &str, found: bool, how: &str) -> bool {
    if found {
        return true;
    }
    assert!(!in_ci(), "{what} is missing in CI; the setup step should have installed it ({how})");
    eprintln!("\n!!! SKIPPED: {what} is not installed; {how} !!!\n");
    false
}

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// A copy of a fixture folder in a temp dir, removed on drop.
pub struct Project {
    pub dir: tempfile::TempDir,
    pub root: PathBuf,
}

impl Project {
    pub fn copy(fixture: &str) -> Project {
        let dir =
            tempfile::Builder::new().prefix("agent-tools-debug-test-").tempdir().expect("temp dir");
        let root = std::fs::canonicalize(dir.path()).expect("canonical");
        copy_dir(&fixtures().join(fixture), &root);
        Project { dir, root }
    }

    pub fn empty() -> Project {
        let dir =
            tempfile::Builder::new().prefix("agent-tools-debug-test-").tempdir().expect("temp dir");
        let root = std::fs::canonicalize(dir.path()).expect("canonical");
        Project { dir, root }
    }

    pub fn write(&self, path: &str, text: &str) -> PathBuf {
        let p = self.root.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
        p
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// A supervisor and the conversation the test speaks in.
pub struct Harness {
    pub debug: Arc<DebugSupervisor>,
    pub root: PathBuf,
    pub conversation: String,
    pub cancel: CancellationToken,
}

impl Harness {
    pub fn new(root: &Path, config: DebugConfig) -> Harness {
        Self::with_env(root, config, SearchEnv::from_process())
    }

    pub fn with_env(root: &Path, config: DebugConfig, env: SearchEnv) -> Harness {
        Harness {
            debug: DebugSupervisor::with_env(config, env),
            root: root.to_path_buf(),
            conversation: "conversation-1".into(),
            cancel: CancellationToken::new(),
        }
    }

    /// Calls the tool with JSON arguments, as the facade would after schema validation.
    pub async fn call(&self, args: Value) -> Result<DebugOutcome, DebugError> {
        let args: DebugArgs = serde_json::from_value(args).expect("arguments match the schema");
        self.debug.call(&self.conversation, &self.root, args, &self.cancel).await
    }

    /// Like `call`, failing the test on an error.
    pub async fn ok(&self, args: Value) -> DebugOutcome {
        let shown = args.to_string();
        match self.call(args).await {
            Ok(outcome) => outcome,
            Err(e) => panic!("{shown} failed: {e}"),
        }
    }

    /// Like `call`, expecting an error; returns its text.
    pub async fn err(&self, args: Value) -> String {
        let shown = args.to_string();
        match self.call(args).await {
            Ok(outcome) => {
                panic!("{shown} should have failed, got:\n{}", agent_tools_debug::render(&outcome))
            }
            Err(e) => e.to_string(),
        }
    }

    /// The children of variable `reference` (first page).
    pub async fn variables(&self, reference: u64) -> Vec<VariableView> {
        match self.ok(json!({"operation": "variables", "reference": reference})).await {
            DebugOutcome::Variables(vars) => vars.variables,
            other => panic!("expected variables, got {other:?}"),
        }
    }

    /// The value `expression` evaluates to in the current frame.
    pub async fn evaluate(&self, expression: &str) -> String {
        match self.ok(json!({"operation": "evaluate", "expression": expression})).await {
            DebugOutcome::Evaluate(eval) => eval.result.value,
            other => panic!("expected an evaluation, got {other:?}"),
        }
    }

    /// Continues a stopped program to its end; its exit code.
    pub async fn continue_to_exit(&self) -> Option<i64> {
        let done = self.ok(json!({"operation": "continue"})).await;
        let RunState::Exited { exit_code, .. } = run_state(&done) else {
            panic!("expected the exit: {}", agent_tools_debug::render(&done))
        };
        *exit_code
    }

    /// All the program's output since the session began.
    pub async fn all_output(&self) -> String {
        output_text(&self.ok(json!({"operation": "output", "since": 0})).await)
    }

    /// Launches a fixture that starts a child which outlives it and prints `child pid N`: the
    /// launch's outcome and the running child.
    pub async fn launch_forker(&self, program: &str) -> (DebugOutcome, KnownProcess) {
        let launched = self.ok(json!({"operation": "launch", "program": program})).await;
        let text = agent_tools_debug::render(&launched);
        let all = self.all_output().await;
        let child = child_pid(&all).unwrap_or_else(|| panic!("no child pid in {all:?}\n{text}"));
        let child = KnownProcess::of(child).expect("the child runs");
        (launched, child)
    }

    /// Polls `status` until the session is gone (for a minute at most); how it ended.
    pub async fn wait_until_ended(&self) -> Option<String> {
        for _ in 0..600 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let DebugOutcome::Status(s) = self.ok(json!({"operation": "status"})).await else {
                panic!()
            };
            if s.session.is_none() {
                return s.last_end;
            }
        }
        None
    }
}

/// The run state of a launch/attach/continue/step/pause outcome.
pub fn run_state(outcome: &DebugOutcome) -> &RunState {
    match outcome {
        DebugOutcome::Started(s) => &s.state,
        DebugOutcome::Run(r) => r,
        other => panic!("not a run outcome: {other:?}"),
    }
}

/// The stop snapshot of an outcome that must have stopped.
pub fn stopped(outcome: &DebugOutcome) -> &StopSnapshot {
    match run_state(outcome) {
        RunState::Stopped(s) => s,
        other => panic!("expected a stop, got {other:?}\n{}", agent_tools_debug::render(outcome)),
    }
}

/// The stop of a launch that verified its first breakpoint and stopped there, in `function`
/// at `path`:`line`.
pub fn stopped_at_breakpoint<'a>(
    launched: &'a DebugOutcome,
    function: &str,
    path: &str,
    line: u32,
) -> &'a StopSnapshot {
    let DebugOutcome::Started(started) = launched else { panic!("not a start: {launched:?}") };
    assert!(started.breakpoints[0].verified, "{:?}", started.breakpoints);
    let stop = stopped(launched);
    assert_eq!(stop.reason, "breakpoint");
    let frame = stop.frame.clone().expect("a user frame");
    assert_eq!(
        (frame.name.as_str(), frame.path.as_deref(), frame.line),
        (function, Some(path), Some(line))
    );
    stop
}

/// The value of the local variable `name` at a stop.
pub fn local(stop: &StopSnapshot, name: &str) -> Option<String> {
    stop.locals.iter().find(|v| v.name == name).map(|v| v.value.clone())
}

/// The adapter's and the program's processes, and everything below the adapter, right now.
pub fn session_processes(outcome: &DebugOutcome) -> Vec<KnownProcess> {
    let DebugOutcome::Started(s) = outcome else { panic!("not a start: {outcome:?}") };
    let mut procs = Vec::new();
    if let Some(pid) = s.session.adapter_pid {
        procs.extend(KnownProcess::of(pid));
        procs.extend(descendants(pid));
    }
    if let Some(pid) = s.session.debuggee_pid {
        procs.extend(KnownProcess::of(pid));
    }
    assert!(!procs.is_empty(), "the session has no processes to watch: {outcome:?}");
    procs
}

/// Asserts every process in `procs` is gone (zombies count as gone).
pub fn assert_gone(procs: &[KnownProcess]) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let alive: Vec<&KnownProcess> = procs.iter().filter(|p| p.alive()).collect();
        if alive.is_empty() {
            return;
        }
        if std::time::Instant::now() > deadline {
            let shown: Vec<String> = alive
                .iter()
                .map(|p| {
                    let cmd = std::fs::read(format!("/proc/{}/cmdline", p.pid)).unwrap_or_default();
                    format!("{} {}", p.pid, String::from_utf8_lossy(&cmd).replace('\0', " "))
                })
                .collect();
            panic!("processes survived the session: {shown:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A Python with debugpy: the test venv's, as `cargo xtask setup` makes it.
pub fn python_with_debugpy() -> Option<PathBuf> {
    let candidate =
        std::env::var_os("AGENT_TOOLS_TEST_PYTHON").map(PathBuf::from).unwrap_or_else(|| {
            let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_default();
            home.join(".cache/agent-tools-test/venv/bin/python")
        });
    let ok = Command::new(&candidate)
        .args(["-c", "import debugpy"])
        .output()
        .is_ok_and(|o| o.status.success());
    ok.then_some(candidate)
}

/// The harness for `fixture` with the test venv's debugpy as the adapter, or `None` (skipped).
pub fn debugpy_harness(fixture: &str, config: DebugConfig) -> Option<(Project, Harness)> {
    let python = python_with_debugpy();
    if !require("debugpy (in the test venv)", python.is_some(), "run `cargo xtask setup`") {
        return None;
    }
    let python = python.unwrap();
    let project = Project::copy(fixture);
    // The project's own interpreter has debugpy: the adapter and the program both run on it.
    make_venv_python(&project, &python);
    let harness = Harness::new(&project.root, config);
    Some((project, harness))
}

/// A project `.venv/bin/python` that runs `python` (a wrapper script, so `sys.executable` is the
/// real interpreter and its site-packages apply).
pub fn make_venv_python(project: &Project, python: &Path) {
    let wrapper = project
        .write(".venv/bin/python", &format!("#!/bin/sh\nexec {} \"$@\"\n", python.display()));
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Whether process trees get a cgroup of their own here: only then is a daemon that left the
/// group, cleared its environment and lost its parent within reach. Fails in CI without it.
pub fn cgroup_available() -> bool {
    require(
        "a writable cgroup v2 hierarchy",
        agent_tools_support::process::cgroup_available(),
        "run as root, or in a delegated cgroup v2 subtree",
    )
}

/// A free loopback port (bound, then released).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// All the output an outcome carries.
pub fn output_text(outcome: &DebugOutcome) -> String {
    match outcome {
        DebugOutcome::Started(s) => output_text(&DebugOutcome::Run(s.state.clone())),
        DebugOutcome::Run(RunState::Stopped(s)) => s.output.text(),
        DebugOutcome::Run(RunState::Exited { output, .. })
        | DebugOutcome::Run(RunState::Running { output, .. })
        | DebugOutcome::Run(RunState::AdapterGone { output, .. }) => output.text(),
        DebugOutcome::Output(o) => o.output.text(),
        DebugOutcome::Terminated(t) => t.output.text(),
        _ => String::new(),
    }
}

/// A config for tests: generous waits (the machine is shared), everything else default.
pub fn config() -> DebugConfig {
    DebugConfig { stop_wait_seconds: 60, ..DebugConfig::default() }
}

/// The pid a fixture printed as `child pid N`.
pub fn child_pid(output: &str) -> Option<i32> {
    output.lines().find_map(|l| l.trim().strip_prefix("child pid ")?.trim().parse().ok())
}

/// The source file of `json.decoder` in the interpreter that has debugpy: a standard-library
/// module the tests set breakpoints in.
pub fn json_decoder_source() -> String {
    let python = python_with_debugpy().expect("a python with debugpy");
    let out = std::process::Command::new(&python)
        .args(["-c", "import json.decoder; print(json.decoder.__file__)"])
        .output()
        .expect("python runs");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}
