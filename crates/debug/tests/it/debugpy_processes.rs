//! debugpy for real: what a program leaves behind is gone (a forked child that outlives it, a
//! setsid daemon with a cleared environment) after terminate and at the run's end, and a death
//! by signal reads as the signal.

use crate::support;

use agent_tools_debug::{DebugOutcome, RunState};
use serde_json::json;
use support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forked_child_that_outlives_the_program_is_gone_after_terminate() {
    let Some((_project, h)) = debugpy_harness("python", config()) else { return };
    let (launched, child) = h.launch_forker("forker.py").await;
    let text = agent_tools_debug::render(&launched);
    // The parent's exit is seen (or noticed) even though the child keeps running.
    let status = h.ok(json!({"operation": "status"})).await;
    let DebugOutcome::Status(status) = status else { panic!() };
    assert_eq!(status.state, "exited", "{text}");
    h.ok(json!({"operation": "terminate"})).await;
    assert_gone(&[child]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_death_by_signal_reads_as_the_signal_not_an_exit_code() {
    let Some((_project, h)) = debugpy_harness("python", config()) else { return };
    let launched = h.ok(json!({"operation": "launch", "program": "die.py"})).await;
    let procs = session_processes(&launched);
    let text = agent_tools_debug::render(&launched);
    let RunState::Exited { exit_code, ended_by, .. } = run_state(&launched) else {
        panic!("{text}")
    };
    assert_eq!(*exit_code, None, "{text}");
    assert!(ended_by.as_deref().is_some_and(|e| e.starts_with("killed by SIGSEGV")), "{text}");
    // One account of the end, whichever operation tells it.
    let again = h.err(json!({"operation": "continue"})).await;
    assert!(again.contains("killed by SIGSEGV") && !again.contains("with code"), "{again}");
    let output = agent_tools_debug::render(&h.ok(json!({"operation": "output"})).await);
    assert!(output.contains("The program ended: killed by SIGSEGV"), "{output}");
    let ended = h.ok(json!({"operation": "terminate"})).await;
    let DebugOutcome::Terminated(report) = &ended else { panic!() };
    assert_eq!(report.exit_code, None, "{report:?}");
    assert!(report.ended_by.as_deref().is_some_and(|e| e.starts_with("killed by SIGSEGV")));
    assert_gone(&procs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forked_child_is_gone_at_the_end_of_the_run() {
    let Some((_project, h)) = debugpy_harness("python", config()) else { return };
    let (_launched, child) = h.launch_forker("forker.py").await;
    h.debug.shutdown().await;
    assert_gone(&[child]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_setsid_daemon_with_a_cleared_environment_is_gone_after_terminate() {
    let Some((_project, h)) = debugpy_harness("python", config()) else { return };
    if !cgroup_available() {
        return;
    }
    let (_launched, daemon) = h.launch_forker("daemon.py").await;
    h.ok(json!({"operation": "terminate"})).await;
    assert_gone(&[daemon]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_setsid_daemon_with_a_cleared_environment_is_gone_at_the_end_of_the_run() {
    let Some((_project, h)) = debugpy_harness("python", config()) else { return };
    if !cgroup_available() {
        return;
    }
    let (_launched, daemon) = h.launch_forker("daemon.py").await;
    h.debug.shutdown().await;
    assert_gone(&[daemon]);
}
