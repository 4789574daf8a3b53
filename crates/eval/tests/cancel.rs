//! Cancelling a call never corrupts a kernel: the running cell is interrupted (or its kernel
//! killed), the next cells answer correctly, and the next result says whether state survived.

mod common;

use agent_tools_eval::{CellStatus, EvalConfig, InterruptReason, Language};
use common::{Session, short_budget, test_python};

fn python(config: EvalConfig) -> Session {
    let python = config.python.clone().or_else(test_python);
    Session::new(Language::Python, EvalConfig { python, ..config })
}

/// The embedded engine (Node has its own tests below).
fn javascript() -> Session {
    let config = EvalConfig {
        javascript: Some(agent_tools_eval::JsEngine::Quickjs),
        ..EvalConfig::default()
    };
    Session::new(Language::Javascript, config)
}

/// Three cells in a row answer with their own values, and the state from before is there.
async fn three_cells_answer(s: &Session, setup_name: &str, setup_value: &str) {
    for i in 1..=3 {
        let code = format!("{setup_name} + {i}");
        let (r, text) = s.run(&code).await;
        assert_eq!(r.status, CellStatus::Ok, "cell {i} after the cancel: {text}");
        let expected: i64 = setup_value.parse::<i64>().expect("number") + i;
        assert!(text.ends_with(&format!(": {expected}")), "cell {i} after the cancel: {text}");
        assert!(!text.contains("agent-tools-end"), "no end marker leaks: {text}");
    }
}

#[tokio::test]
async fn a_cancelled_ten_second_python_cell_is_interrupted_and_the_next_cells_answer() {
    let s = python(EvalConfig::default());
    s.run("kept = 40").await;
    let (r, text) = s.run_cancelled("import time\nprint('working')\ntime.sleep(10)\n'late'").await;
    assert_eq!(r.status, CellStatus::Interrupted, "{text}");
    assert_eq!(r.interrupt, Some(InterruptReason::Cancelled));
    assert!(r.kernel.state_preserved);
    assert!(text.contains("working"), "{text}");
    let (r, text) = s.run("kept + 0").await;
    assert_eq!(r.status, CellStatus::Ok, "{text}");
    assert!(
        text.contains("was cancelled by the client and interrupted; the kernel's state"),
        "the next result says the state survived: {text}"
    );
    assert!(text.ends_with(": 40"), "{text}");
    three_cells_answer(&s, "kept", "40").await;
    s.kernels.shutdown().await;
}

#[tokio::test]
async fn an_abandoned_python_cell_is_wound_down_before_the_next_cell_runs() {
    let s = python(EvalConfig::default());
    s.run("kept = 10").await;
    // The call's future is dropped while the cell runs; the cell would print and end later.
    s.run_abandoned("import time\ntime.sleep(3)\nprint('late output of the old cell')\n'old'")
        .await;
    let (r, text) = s.run("kept + 0").await;
    assert_eq!(r.status, CellStatus::Ok, "{text}");
    assert!(!text.contains("late output"), "the old cell's output is not this cell's: {text}");
    assert!(!text.contains("'old'"), "the old cell's value is not this cell's: {text}");
    assert!(text.contains("was abandoned by its call and interrupted"), "{text}");
    assert!(text.ends_with(": 10"), "{text}");
    three_cells_answer(&s, "kept", "10").await;
    s.kernels.shutdown().await;
}

#[tokio::test]
async fn a_cancelled_cell_that_ignores_interrupts_is_killed_and_the_next_call_says_state_is_lost() {
    let s = python(short_budget(300.0, 1.0));
    s.run("kept = 1").await;
    let stubborn = "import time\nwhile True:\n    try:\n        time.sleep(0.2)\n    except KeyboardInterrupt:\n        pass";
    let (r, text) = s.run_cancelled(stubborn).await;
    assert_eq!(r.status, CellStatus::Killed, "{text}");
    assert!(!r.kernel.state_preserved);
    let (r, text) = s.run("'kept' in globals()").await;
    assert!(r.kernel.started, "{text}");
    assert!(text.contains("killed after a cancelled cell did not stop"), "{text}");
    assert!(text.ends_with(": False"), "{text}");
    s.run("kept = 7").await;
    three_cells_answer(&s, "kept", "7").await;
    s.kernels.shutdown().await;
}

#[tokio::test]
async fn a_cancelled_javascript_busy_loop_stops_and_the_kernel_keeps_its_state() {
    let s = javascript();
    s.run("var kept = 20").await;
    let (r, text) = s.run_cancelled("console.log('spinning'); while (true) {}").await;
    assert_eq!(r.status, CellStatus::Interrupted, "{text}");
    assert_eq!(r.interrupt, Some(InterruptReason::Cancelled));
    assert!(r.kernel.state_preserved, "{text}");
    // The engine runs one cell at a time: these answer only if the loop stopped.
    let (r, text) = s.run("kept").await;
    assert_eq!(r.status, CellStatus::Ok, "{text}");
    assert!(text.contains("was cancelled by the client and interrupted"), "{text}");
    three_cells_answer(&s, "kept", "20").await;
    s.kernels.shutdown().await;
}

#[tokio::test]
async fn an_abandoned_javascript_busy_loop_is_stopped_before_the_next_cell() {
    let s = javascript();
    s.run("var kept = 5").await;
    s.run_abandoned("while (true) {}").await;
    let (r, text) = s.run("kept").await;
    assert_eq!(r.status, CellStatus::Ok, "{text}");
    assert!(text.contains("was abandoned by its call and interrupted"), "{text}");
    three_cells_answer(&s, "kept", "5").await;
    s.kernels.shutdown().await;
}

#[tokio::test]
async fn a_cancelled_cell_under_ipython_is_interrupted_and_the_next_cells_answer() {
    let s = python(EvalConfig::default());
    // `%time` engages IPython's machinery (the test venv has IPython); later cells go through it.
    let (_, text) = s.run("%time kept = 30").await;
    assert!(text.contains("Wall time"), "{text}");
    let (r, text) = s.run_cancelled("import time\ntime.sleep(10)").await;
    assert_eq!(r.status, CellStatus::Interrupted, "{text}");
    assert!(r.kernel.state_preserved, "{text}");
    three_cells_answer(&s, "kept", "30").await;
    let (_, text) = s.run("await __import__('asyncio').sleep(0, 'awaited')").await;
    assert!(text.ends_with("'awaited'"), "top-level await under IPython: {text}");
    s.kernels.shutdown().await;
}

fn node() -> Option<Session> {
    let found = std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !common::require("node", found, "install Node.js") {
        return None;
    }
    let config =
        EvalConfig { javascript: Some(agent_tools_eval::JsEngine::Node), ..EvalConfig::default() };
    Some(Session::new(Language::Javascript, config))
}

#[tokio::test]
async fn a_cancelled_node_busy_loop_stops_and_the_kernel_keeps_its_state() {
    let Some(s) = node() else { return };
    s.run("var kept = 20").await;
    let (r, text) = s.run_cancelled("console.log('spinning'); while (true) {}").await;
    assert_eq!(r.status, CellStatus::Interrupted, "{text}");
    assert_eq!(r.interrupt, Some(InterruptReason::Cancelled));
    three_cells_answer(&s, "kept", "20").await;
    s.run_abandoned("while (true) {}").await;
    let (_, text) = s.run("kept").await;
    assert!(text.contains("was abandoned by its call and interrupted"), "{text}");
    three_cells_answer(&s, "kept", "20").await;
    s.kernels.shutdown().await;
}
