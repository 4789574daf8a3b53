//! Cells that outlive their call: a call returns after `wait_s` with the output so far and the
//! cell's number, the cell keeps running with its state, and `cell: N` collects the rest and
//! its result; a cut connection leaves the cell collectable; `interrupt` stops it.

use crate::common;

use agent_tools_eval::{
    CellStatus, EvalConfig, EvalRequest, InterruptReason, Language, Output, StreamName,
};
use common::{Heard, Session, short_budget, test_python};

fn python(config: EvalConfig) -> Session {
    let python = config.python.clone().or_else(test_python);
    Session::new(Language::Python, EvalConfig { python, ..config })
}

/// Everything a report printed on stdout.
fn stdout_of(report: &agent_tools_eval::CellReport) -> String {
    report
        .outputs
        .iter()
        .filter_map(|o| match o {
            Output::Stream { name: StreamName::Stdout, text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// A 90-second cell (cell 2: it prints `step i` each second and adds `i` to `total`) sent with
/// `wait_s` 5: the call returns it still running; a cell sent behind it waits and says so; later
/// calls deliver every line once, in order, then the value; the state is kept throughout.
async fn ninety_seconds(s: &Session, setup: &str, long: &str, behind: &str, check: &str) {
    let (r, text) = s.run(setup).await;
    assert_eq!(r.status, CellStatus::Ok, "{text}");
    let (first, text) = s.run_waiting(long, 5.0).await;
    assert_eq!(first.status, CellStatus::Running, "{text}");
    assert_eq!(first.cell, 2, "{text}");
    assert!(text.contains("still running as cell 2 (for "), "{text}");
    assert!(text.contains("eval with cell: 2 waits again"), "{text}");
    assert!(!first.is_error(), "a running cell is not a failed call");
    let mut printed = stdout_of(&first);

    // A cell sent now waits behind cell 2, and its call says so when it returns first.
    let (queued, text) = s.run_waiting(behind, 1.0).await;
    assert_eq!(queued.status, CellStatus::Running, "{text}");
    assert_eq!(queued.cell, 3, "{text}");
    assert!(text.contains("waiting as cell 3 behind cell 2"), "{text}");

    // Waiting again: progress carries the last line printed; each call returns what came since.
    let heard = std::sync::Arc::new(Heard::default());
    let request = EvalRequest { wait_s: Some(3.0), ..EvalRequest::collect(2) };
    let (again, text) = s.call(request, Some(heard.clone())).await.expect("collect");
    assert_eq!(again.status, CellStatus::Running, "{text}");
    printed.push_str(&stdout_of(&again));
    let messages = heard.0.lock().clone();
    assert!(
        messages.iter().any(|m| m.starts_with("cell 2, ") && m.contains("; last: step ")),
        "progress names the cell and its last line: {messages:?}"
    );
    let end = loop {
        let (r, text) = s.collect(2, 30.0).await;
        printed.push_str(&stdout_of(&r));
        if r.status != CellStatus::Running {
            break (r, text);
        }
        assert!(text.contains("still running as cell 2"), "{text}");
    };
    let (end, text) = end;
    assert_eq!(end.status, CellStatus::Ok, "{text}");
    assert!(text.ends_with(": 4005"), "the value arrives with the end: {text}");
    let expected: String = (0..90).map(|i| format!("step {i}\n")).collect();
    assert_eq!(printed, expected, "every line once, in order, across the calls");

    // The cell that waited behind it ran next, saw the whole loop's state, and says it waited.
    let (queued, text) = s.collect(3, 30.0).await;
    assert_eq!(queued.status, CellStatus::Ok, "{text}");
    assert!(text.contains("waited") && text.contains("behind cell 2 before it started"), "{text}");
    let (r, text) = s.run(check).await;
    assert_eq!(r.status, CellStatus::Ok, "{text}");
    assert!(text.ends_with(": 4005"), "the state is kept: {text}");
}

#[tokio::test]
async fn a_ninety_second_python_cell_outlives_its_call_and_delivers_everything_later() {
    let s = python(EvalConfig::default());
    ninety_seconds(
        &s,
        "import time\ntotal = 0",
        "for i in range(90):\n    total += i\n    print(f'step {i}', flush=True)\n    time.sleep(1)\ntotal",
        "seen = total",
        "seen",
    )
    .await;
    s.kernels.shutdown().await;
}

#[tokio::test]
async fn a_ninety_second_node_cell_outlives_its_call_and_delivers_everything_later() {
    let Some(s) = common::node_session(EvalConfig::default()) else { return };
    ninety_seconds(
        &s,
        "let total = 0",
        "for (let i = 0; i < 90; i++) {\n  total += i;\n  console.log(`step ${i}`);\n  \
         await new Promise(r => setTimeout(r, 1000));\n}\ntotal",
        "var seen = total",
        "seen",
    )
    .await;
    s.kernels.shutdown().await;
}

#[tokio::test]
async fn a_cell_whose_connection_was_cut_runs_on_and_is_collected_by_number() {
    let s = python(EvalConfig::default());
    s.run("kept = 1").await;
    let code =
        "import time\nprint('before', flush=True)\ntime.sleep(3)\nkept = 2\nprint('after')\n'done'";
    // The host cuts the call (its client went away) and, as a disconnect-cancelling transport
    // does, cancels it too: the cut wins, the cell is not interrupted.
    for (cell, also_cancel) in [(2, false), (5, true)] {
        let (r, text) = s.run_cut(code, also_cancel).await;
        assert_eq!(r.status, CellStatus::Running, "{text}");
        assert_eq!(r.cell, cell, "{text}");
        let (r, text) = s.collect(cell, 30.0).await;
        assert_eq!(r.status, CellStatus::Ok, "{text}");
        assert!(text.contains("after") && text.ends_with("'done'"), "{text}");
        // A result lost with a connection can be collected again.
        let (again, text) = s.collect(cell, 1.0).await;
        assert_eq!(again.status, CellStatus::Ok, "{text}");
        assert!(text.contains(&format!("cell {cell} ended earlier; this is its result again")));
        let (r, text) = s.run("kept").await;
        assert!(text.ends_with(": 2"), "the cell ran to its end: {text}");
        assert_eq!(r.status, CellStatus::Ok);
        s.run("kept = 1").await;
    }
    s.kernels.shutdown().await;
}

#[tokio::test]
async fn interrupt_stops_a_running_cell_and_keeps_the_state() {
    let s = python(EvalConfig::default());
    s.run("kept = 7").await;
    let (r, text) = s
        .run_waiting("import time\nprint('spinning', flush=True)\nwhile True: time.sleep(0.1)", 1.0)
        .await;
    assert_eq!(r.status, CellStatus::Running, "{text}");
    let (r, text) = s.interrupt(2).await;
    assert_eq!(r.status, CellStatus::Interrupted, "{text}");
    assert_eq!(r.interrupt, Some(InterruptReason::Requested));
    assert!(text.contains("[interrupted as asked (interrupt: true)"), "{text}");
    assert!(r.kernel.state_preserved);
    let (_, text) = s.run("kept").await;
    assert!(text.ends_with(": 7"), "{text}");
    s.kernels.shutdown().await;
}

#[tokio::test]
async fn the_inactivity_budget_interrupts_a_silent_cell_nobody_waits_for() {
    let s = python(short_budget(2.0, 2.0));
    s.run("kept = 3").await;
    let (r, text) =
        s.run_waiting("import time\nprint('started', flush=True)\ntime.sleep(600)", 0.0).await;
    assert_eq!(r.status, CellStatus::Running, "{text}");
    // Nobody waits; the budget still runs out, and the next call finds the cell interrupted.
    let (r, text) = s.collect(2, 60.0).await;
    assert_eq!(r.status, CellStatus::Interrupted, "{text}");
    assert_eq!(r.interrupt, Some(InterruptReason::Inactivity), "{text}");
    let (_, text) = s.run("kept").await;
    assert!(text.ends_with(": 3"), "{text}");
    s.kernels.shutdown().await;
}

#[tokio::test]
async fn bad_wait_cell_and_interrupt_arguments_say_what_would_work() {
    let s = python(EvalConfig::default());
    let error = |request: EvalRequest| async {
        s.call(request, None).await.expect_err("refused").to_string()
    };
    for wait in [-1.0, 601.0, f64::NAN] {
        let request = EvalRequest { wait_s: Some(wait), ..EvalRequest::new("1", "d") };
        let message = error(request).await;
        assert!(
            message.contains("`wait_s` must be a number of seconds from 0 to 600"),
            "{message}"
        );
    }
    let message = error(EvalRequest::collect(9)).await;
    assert!(message.contains("`cell` 9 is not a cell of this conversation"), "{message}");
    assert!(message.contains("this run has sent no cell yet"), "{message}");
    let message = error(EvalRequest { code: "1".into(), ..EvalRequest::collect(1) }).await;
    assert!(message.contains("give it without `code`"), "{message}");
    let message = error(EvalRequest { interrupt: Some(true), ..EvalRequest::new("1", "d") }).await;
    assert!(message.contains("`interrupt` needs `cell`"), "{message}");
    let message = error(EvalRequest::default()).await;
    assert!(message.contains("`code` is required"), "{message}");
    s.kernels.shutdown().await;
}

#[tokio::test]
async fn kernels_dropped_without_a_shutdown_take_their_idle_kernel_with_them() {
    let s = python(EvalConfig::default());
    let (_, text) = s.run("import os; os.getpid()").await;
    let pid: u32 = text.rsplit("Out[1]: ").next().unwrap_or("").trim().parse().expect("pid");
    assert!(common::alive(pid));
    let common::Session { kernels, .. } = s;
    drop(kernels);
    // The kernel's worker lets go of it with the last handle; its command pipe closes.
    assert!(
        tokio::task::spawn_blocking(move || common::gone_within(
            pid,
            std::time::Duration::from_secs(30)
        ))
        .await
        .unwrap_or(false),
        "kernel {pid} outlived its dropped Kernels"
    );
}
