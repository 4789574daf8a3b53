//! `debug` through `agent-tools mcp`, driven by the official Python MCP client: debugpy, lldb-dap
//! (C) and delve for real, Dart through the scripted fake adapter; no adapter or program survives
//! `terminate` or the end of the connection.

use std::{
    path::{Path, PathBuf},
    process::Command,
    time::Duration,
};

use serde_json::{Value, json};

use crate::support::{
    McpScript, TempProject, assert_no_survivors, host_binary, python_venv_project, require,
    require_debugpy, test_python, text_of, tool_names,
};

fn fixture(path: &str) -> String {
    crate::support::debug_fixture(path)
}

fn debug(args: Value) -> (String, Value) {
    ("debug".to_string(), args)
}

/// Serves `project` and runs `calls`; returns the call results (index 0 is the first call).
fn check(project: &TempProject, python: &Path, calls: Vec<(String, Value)>) -> Vec<Value> {
    let mut script = McpScript::new(&project.root, &[]).list_tools();
    for (tool, args) in calls {
        script = script.call(&tool, args);
    }
    let marker = script.marker().to_string();
    let out = script.run(python);
    assert_no_survivors(&marker, Duration::from_secs(15));
    let results = out["results"].as_array().cloned().unwrap_or_default();
    let names = tool_names(&results[1]);
    assert!(names.contains(&"debug"), "the debug tool is served: {names:?}");
    results[2..].to_vec()
}

fn mcp_python() -> Option<PathBuf> {
    let python = test_python();
    require("python venv with the `mcp` SDK", python.is_some(), "run `cargo xtask setup`")
        .then(|| python.unwrap())
}

fn ok(result: &Value) -> &str {
    assert_eq!(result["isError"], false, "{}", text_of(result));
    text_of(result)
}

fn on_path(names: &[String]) -> bool {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).any(|dir| names.iter().any(|n| dir.join(n).is_file()))
}

#[test]
fn debugpy_over_mcp_stops_inspects_and_runs_to_the_exit() {
    let Some(python) = mcp_python() else { return };
    if !require_debugpy(&python) {
        return;
    }
    let project = python_venv_project(
        &python,
        &[
            ("pyproject.toml", "[project]\nname = \"buggy\"\n"),
            ("buggy.py", &fixture("python/buggy.py")),
        ],
    );
    let results = check(
        &project,
        &python,
        vec![
            debug(json!({"operation": "adapters"})),
            debug(json!({"operation": "breakpoints", "file": "buggy.py", "lines": [11]})),
            debug(json!({"operation": "launch", "program": "buggy.py", "wait_seconds": 120})),
            debug(json!({"operation": "evaluate", "expression": "total / count"})),
            debug(json!({"operation": "launch", "program": "buggy.py"})),
            debug(json!({"operation": "continue", "wait_seconds": 120})),
            debug(json!({"operation": "terminate"})),
        ],
    );
    assert!(ok(&results[0]).contains("debugpy: usable"), "{}", text_of(&results[0]));
    assert!(ok(&results[1]).contains("pending"), "{}", text_of(&results[1]));
    let launched = ok(&results[2]);
    assert!(
        launched.contains("Stopped (stop 1): breakpoint in average at buggy.py:11"),
        "{launched}"
    );
    assert!(launched.contains("total: int = 12"), "{launched}");
    assert_eq!(results[2]["structured"]["kind"], "started");
    assert!(ok(&results[3]).contains("= 6.0"), "{}", text_of(&results[3]));
    assert_eq!(results[4]["isError"], true);
    assert!(text_of(&results[4]).contains("already running"), "{}", text_of(&results[4]));
    let done = ok(&results[5]);
    assert!(
        done.contains("The program exited with code 3.") && done.contains("average=6.0"),
        "{done}"
    );
    assert!(
        ok(&results[6]).contains("Ended the session of buggy.py (terminate)"),
        "{}",
        text_of(&results[6])
    );
}

#[test]
fn lldb_over_mcp_debugs_a_c_program() {
    let Some(python) = mcp_python() else { return };
    let mut names: Vec<String> = vec!["lldb-dap".into()];
    names.extend((13..=30).map(|v| format!("lldb-dap-{v}")));
    if !require("lldb-dap", on_path(&names), "`apt-get install lldb-19` (or `cargo xtask setup`)") {
        return;
    }
    let Some(project) = crate::support::built_c_project() else { return };
    let results = check(
        &project,
        &python,
        vec![
            debug(json!({"operation": "breakpoints", "file": "buggy.c", "lines": [11]})),
            debug(json!({"operation": "launch", "program": "buggy", "wait_seconds": 120})),
            debug(json!({"operation": "step_over"})),
            debug(json!({"operation": "continue", "wait_seconds": 120})),
            debug(json!({"operation": "terminate"})),
        ],
    );
    let launched = ok(&results[1]);
    assert!(
        launched.contains("breakpoint") && launched.contains("in average at buggy.c:11"),
        "{launched}"
    );
    assert!(launched.contains("count: int = 2"), "{launched}");
    assert!(ok(&results[2]).contains("Stopped (stop 2): step"), "{}", text_of(&results[2]));
    assert!(
        ok(&results[3]).contains("The program exited with code 3."),
        "{}",
        text_of(&results[3])
    );
    assert!(
        ok(&results[4]).contains("not an error"),
        "lldb-dap's SIGABRT is explained: {}",
        text_of(&results[4])
    );
}

#[test]
fn delve_over_mcp_debugs_a_go_module() {
    let Some(python) = mcp_python() else { return };
    if !require(
        "delve and Go",
        on_path(&["dlv".into()]) && on_path(&["go".into()]),
        "`apt-get install delve golang-go`",
    ) {
        return;
    }
    let project =
        TempProject::new(&[("go.mod", &fixture("go/go.mod")), ("main.go", &fixture("go/main.go"))]);
    let results = check(
        &project,
        &python,
        vec![
            debug(json!({"operation": "breakpoints", "file": "main.go", "lines": [15]})),
            debug(json!({"operation": "launch", "program": ".", "wait_seconds": 300})),
            debug(json!({"operation": "evaluate", "expression": "total * 2"})),
            debug(json!({"operation": "continue", "wait_seconds": 120})),
            debug(json!({"operation": "terminate"})),
        ],
    );
    let launched = ok(&results[1]);
    assert!(launched.contains("in main.average at main.go:15"), "{launched}");
    assert!(ok(&results[2]).contains("= 24"), "{}", text_of(&results[2]));
    let done = ok(&results[3]);
    assert!(
        done.contains("The program exited with code 3.") && done.contains("average=6"),
        "{done}"
    );
    ok(&results[4]);
}

/// The fake adapter binary, built beside the host by a workspace build.
fn fake_adapter() -> Option<PathBuf> {
    let path = host_binary().with_file_name("agent-tools-fake-dap");
    if !path.exists()
        && let Ok(cargo) = std::env::var("CARGO")
    {
        let _ = Command::new(cargo)
            .args(["build", "--quiet", "-p", "agent-tools-debug", "--bin", "agent-tools-fake-dap"])
            .status();
    }
    path.exists().then_some(path)
}

#[test]
fn dart_over_mcp_through_the_fake_adapter_and_the_run_end_cleans_up() {
    let Some(python) = mcp_python() else { return };
    let fake = fake_adapter();
    if !require("the fake DAP adapter binary", fake.is_some(), "`cargo build -p agent-tools-debug`")
    {
        return;
    }
    let script = json!({
        "source": "bin/main.dart",
        "trace": [
            {"line": 2, "locals": {"total": "0"}},
            {"line": 6, "locals": {"total": "12"}, "output": "total=12\n"},
            {"line": 8, "locals": {"total": "12", "count": "2"}},
        ],
        "exception": {"at": 2, "id": "IntegerDivisionByZeroException", "description": "Division by zero"},
        "quirks": {"spawn_debuggee": true},
    });
    let project = TempProject::new(&[
        ("pubspec.yaml", "name: buggy\n"),
        ("bin/main.dart", "void main() {\n}\n"),
        ("fake.json", &script.to_string()),
    ]);
    let config = format!(
        "[debug]\nttl_seconds = 600\n[debug.commands]\ndart = [{:?}, \"debug_adapter\", {:?}]\n",
        fake.unwrap().display().to_string(),
        project.root.join("fake.json").display().to_string()
    );
    std::fs::write(project.root.join("agent-tools.toml"), config).unwrap();
    // No `terminate`: the end of the MCP connection must end the session and its processes.
    let results = check(
        &project,
        &python,
        vec![
            debug(json!({"operation": "launch", "program": "bin/main.dart"})),
            debug(json!({"operation": "status"})),
        ],
    );
    let launched = ok(&results[0]);
    assert!(launched.contains("with dart (Dart SDK version: 3.4.0"), "{launched}");
    assert!(
        launched.contains("exception IntegerDivisionByZeroException: Division by zero (unhandled)"),
        "{launched}"
    );
    // `status` shows the stop in full.
    let status = ok(&results[1]);
    assert!(
        status.contains("Stopped (stop 1): exception IntegerDivisionByZeroException")
            && status.contains("total: int = 12"),
        "{status}"
    );
}

/// Runs raw driver `steps` (with `cancel_after` and `progress`, which `McpScript::call` does not
/// set) against `root`; returns the results after `initialize`, and proves nothing survives.
fn run_steps(root: &Path, python: &Path, steps: Vec<Value>) -> Vec<Value> {
    let marker = McpScript::new(root, &[]).marker().to_string();
    let host = host_binary().display().to_string();
    let server = json!([host, "mcp", "--root", root.display().to_string(), "--trust-project"]);
    let script = json!({
        "server": server,
        "env": {"AGENT_TOOLS_E2E_MARKER": marker, "RUST_LOG": "warn"},
        "steps": steps,
        "elicitation": null,
    });
    let file = root.join(".e2e-script.json");
    std::fs::write(&file, script.to_string()).expect("write the script");
    let driver = Path::new(env!("CARGO_MANIFEST_DIR")).join("py").join("mcp_driver.py");
    let output = Command::new(python).arg(driver).arg(&file).output().expect("run the driver");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert_no_survivors(&marker, Duration::from_secs(15));
    let out: Value = serde_json::from_slice(&output.stdout).expect("driver JSON");
    out["results"].as_array().cloned().unwrap_or_default()[1..].to_vec()
}

#[test]
fn a_cancelled_wait_returns_and_leaves_the_session_usable_with_progress_and_structured_content() {
    let Some(python) = mcp_python() else { return };
    if !require_debugpy(&python) {
        return;
    }
    let project = python_venv_project(
        &python,
        &[
            ("pyproject.toml", "[project]\nname = \"looping\"\n"),
            ("loop.py", &fixture("python/loop.py")),
        ],
    );
    let call = |args: Value| json!({"op": "call", "tool": "debug", "args": args});
    let results = run_steps(
        &project.root,
        &python,
        vec![
            // The program never stops: the client gives up after 4 s and cancels.
            json!({"op": "call", "tool": "debug", "cancel_after": 4, "progress": true,
                   "args": {"operation": "launch", "program": "loop.py", "wait_seconds": 300}}),
            call(json!({"operation": "status"})),
            json!({"op": "call", "tool": "debug", "progress": true,
                   "args": {"operation": "continue", "wait_seconds": 3}}),
            call(json!({"operation": "pause"})),
            call(json!({"operation": "terminate"})),
        ],
    );
    assert_eq!(results[0]["cancelled"]["answered"], false, "{:?}", results[0]);
    // The session survived the cancel: it runs, a wait reports progress, pause stops it.
    let status = ok(&results[1]);
    assert!(status.contains("The program is running."), "{status}");
    assert_eq!(results[1]["structured"]["kind"], "status");
    assert_eq!(results[1]["structured"]["state"], "running");
    let waited = ok(&results[2]);
    assert!(waited.contains("still running after"), "{waited}");
    let progress = results[2]["progress"].as_array().cloned().unwrap_or_default();
    assert!(
        progress.iter().any(|p| p["message"] == "waiting for the program to stop"),
        "progress while waiting: {progress:?}"
    );
    let paused = ok(&results[3]);
    assert!(paused.contains("Stopped (stop 1): pause"), "{paused}");
    // The structured content is the same outcome as data.
    assert_eq!(results[3]["structured"]["kind"], "run");
    assert_eq!(results[3]["structured"]["state"], "stopped");
    assert_eq!(results[3]["structured"]["reason"], "pause");
    ok(&results[4]);
}
