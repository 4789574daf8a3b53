//! The failing test is the stop however the tests are launched: `module: "pytest"` (pytest
//! catches the AssertionError, so `uncaught` alone never fires), a pytest console script,
//! `python -m unittest` or a unittest file, a Go `_test.go` file and a cargo test binary as
//! `program`. Passing tests (a `pytest.raises`, a caught KeyError, `assertRaises`) do not stop.

use crate::support;

use std::process::Command;

use agent_tools_debug::{DebugOutcome, RunState, StopSnapshot};
use serde_json::json;
use support::*;

/// The pytest project, or `None` (skipped loudly) without debugpy and pytest.
fn pytest_project() -> Option<(Project, Harness)> {
    let found = python_with_debugpy().is_some_and(|p| {
        Command::new(p).args(["-c", "import pytest"]).status().is_ok_and(|s| s.success())
    });
    if !require("debugpy and pytest (in the test venv)", found, "run `cargo xtask setup`") {
        return None;
    }
    debugpy_harness("pytest_project", config())
}

/// Asserts the stop is the failing assertion of `test` at `line` of `file`, an AssertionError.
fn at_failing_assertion<'a>(
    outcome: &'a DebugOutcome,
    test: &str,
    file: &str,
    line: u32,
) -> &'a StopSnapshot {
    let text = agent_tools_debug::render(outcome);
    let stop = stopped(outcome);
    assert_eq!(stop.reason, "exception", "{text}");
    assert_eq!(
        stop.exception.as_ref().and_then(|e| e.id.as_deref()),
        Some("AssertionError"),
        "{text}"
    );
    let frame = stop.frame.clone().expect("the test's frame");
    assert_eq!(
        (frame.name.as_str(), frame.path.as_deref(), frame.line),
        (test, Some(file), Some(line)),
        "{text}"
    );
    stop
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn module_pytest_stops_at_each_failing_assertion_and_passes_over_passing_tests() {
    let Some((_project, h)) = pytest_project() else { return };
    let launched = h.ok(json!({"operation": "launch", "module": "pytest"})).await;
    let procs = session_processes(&launched);
    let DebugOutcome::Started(started) = &launched else { panic!() };
    assert_eq!(started.exception_filters, ["uncaught"]);
    let stop = at_failing_assertion(
        &launched,
        "test_a_word_that_fills_the_width_stays_on_the_line",
        "tests/test_formatting.py",
        34,
    );
    assert_eq!(local(stop, "lines").as_deref(), Some("['aaaa bbbb cccc', 'dddd eeee']"));
    assert_eq!(local(stop, "text").as_deref(), Some("'aaaa bbbb cccc dddd eeee'"));
    // The passing tests before it ran (pytest's dots), none of them stopped.
    assert_eq!(stop.stop, 1, "{}", agent_tools_debug::render(&launched));

    let next = h.ok(json!({"operation": "continue"})).await;
    let stop =
        at_failing_assertion(&next, "test_paragraph_is_indented", "tests/test_formatting.py", 40);
    assert_eq!(local(stop, "value").as_deref(), Some("'  one two three\\n  four five six\\n'"));
    let next = h.ok(json!({"operation": "continue"})).await;
    // pytest also runs the unittest-style file: its failure is the third stop.
    at_failing_assertion(&next, "test_fills_the_width", "tests/test_unit_style.py", 18);
    assert_eq!(h.continue_to_exit().await, Some(1));
    h.ok(json!({"operation": "terminate"})).await;
    assert_gone(&procs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pytest_console_script_as_program_stops_at_the_failing_assertion() {
    let Some((project, h)) = pytest_project() else { return };
    // The project's environment has pytest as a console script, as a venv made by pip has.
    let script = project.write(
        ".venv/bin/pytest",
        "#!/usr/bin/env python\nimport sys\nfrom pytest import console_main\nsys.exit(console_main())\n",
    );
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let launched = h
        .ok(json!({"operation": "launch", "program": "pytest", "args": ["tests/test_formatting.py::test_paragraph_is_indented"]}))
        .await;
    let procs = session_processes(&launched);
    at_failing_assertion(&launched, "test_paragraph_is_indented", "tests/test_formatting.py", 40);
    h.ok(json!({"operation": "terminate"})).await;
    assert_gone(&procs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn module_unittest_stops_at_the_failing_assert_equal() {
    let Some((_project, h)) = pytest_project() else { return };
    let launched = h
        .ok(json!({
            "operation": "launch", "module": "unittest",
            "args": ["tests/test_unit_style.py"], "env": {"PYTHONPATH": "src"}
        }))
        .await;
    let procs = session_processes(&launched);
    let text = agent_tools_debug::render(&launched);
    assert!(text.contains("python -m unittest"), "{text}");
    let stop =
        at_failing_assertion(&launched, "test_fills_the_width", "tests/test_unit_style.py", 18);
    assert_eq!(local(stop, "lines").as_deref(), Some("['aaaa bbbb cccc', 'dddd eeee']"), "{text}");
    assert_eq!(stop.stop, 1, "{text}");
    assert_eq!(h.continue_to_exit().await, Some(1));
    h.ok(json!({"operation": "terminate"})).await;
    assert_gone(&procs);

    // The test file as the program (`unittest.main()` under `if __name__ == "__main__"`).
    let launched = h
        .ok(json!({
            "operation": "launch", "program": "tests/test_unit_style.py",
            "env": {"PYTHONPATH": "src"}
        }))
        .await;
    let procs = session_processes(&launched);
    at_failing_assertion(&launched, "test_fills_the_width", "tests/test_unit_style.py", 18);
    h.ok(json!({"operation": "terminate"})).await;
    assert_gone(&procs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caught_exception_in_a_program_that_runs_no_tests_does_not_stop() {
    let Some((_project, h)) = pytest_project() else { return };
    let project_script = h.root.join("run.py");
    std::fs::write(
        &project_script,
        "from textfmt import wrap_text\ntry:\n    wrap_text('x', width=0)\nexcept ValueError:\n    pass\nprint('done')\n",
    )
    .unwrap();
    let launched = h
        .ok(json!({"operation": "launch", "program": "run.py", "env": {"PYTHONPATH": "src"}}))
        .await;
    let DebugOutcome::Started(started) = &launched else { panic!() };
    assert_eq!(started.exception_filters, ["uncaught"]);
    assert!(
        matches!(run_state(&launched), RunState::Exited { exit_code: Some(0), .. }),
        "{}",
        agent_tools_debug::render(&launched)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_debugpy_without_trigger_exception_handler_still_stops_at_the_failure() {
    let Some((project, h)) = pytest_project() else { return };
    // As with a debugpy older than that API: the hook falls back on pydevd's own stop.
    let conftest = std::fs::read_to_string(project.root.join("tests/conftest.py")).unwrap();
    project.write(
        "tests/conftest.py",
        &format!("import debugpy\n\ndel debugpy.trigger_exception_handler\n\n{conftest}"),
    );
    let launched = h
        .ok(json!({"operation": "launch", "module": "pytest", "args": ["tests/test_formatting.py"]}))
        .await;
    let procs = session_processes(&launched);
    let stop = at_failing_assertion(
        &launched,
        "test_a_word_that_fills_the_width_stays_on_the_line",
        "tests/test_formatting.py",
        34,
    );
    assert_eq!(local(stop, "lines").as_deref(), Some("['aaaa bbbb cccc', 'dddd eeee']"));
    h.ok(json!({"operation": "terminate"})).await;
    assert_gone(&procs);
}
