//! Cancelling a call never corrupts a kernel: the running cell is interrupted (or its kernel
//! killed), the next cells answer correctly, and the next result says whether state survived.

use crate::common;

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
async fn an_abandoned_python_cell_runs_on_and_the_next_cell_waits_behind_it() {
    let s = python(EvalConfig::default());
    s.run("kept = 10").await;
    // The call's future is dropped while the cell runs (cell 2); the cell prints and ends later.
    s.run_abandoned(
        "import time\ntime.sleep(5)\nprint('late output of the old cell')\nkept = 11\n'old'",
    )
    .await;
    let (r, text) = s.run("kept + 0").await;
    assert_eq!(r.status, CellStatus::Ok, "{text}");
    assert!(!text.contains("late output"), "the old cell's output is not this cell's: {text}");
    assert!(text.contains("waited") && text.contains("behind cell 2"), "{text}");
    assert!(text.contains("Out[3]: 11\n"), "the old cell ran to its end first: {text}");
    let (r, text) = s.collect(2, 30.0).await;
    assert_eq!(r.status, CellStatus::Ok, "{text}");
    assert!(text.contains("late output of the old cell"), "{text}");
    assert!(text.ends_with("'old'"), "{text}");
    three_cells_answer(&s, "kept", "11").await;
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
async fn an_abandoned_javascript_busy_loop_runs_on_until_it_is_interrupted() {
    let s = javascript();
    s.run("var kept = 5").await;
    s.run_abandoned("while (true) {}").await;
    let (r, text) = s.interrupt(2).await;
    assert_eq!(r.status, CellStatus::Interrupted, "{text}");
    assert_eq!(r.interrupt, Some(InterruptReason::Requested), "{text}");
    assert!(r.kernel.state_preserved, "{text}");
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
    // Cell 6, abandoned, spins on until it is interrupted; the kernel keeps its state.
    s.run_abandoned("while (true) {}").await;
    let (r, text) = s.interrupt(6).await;
    assert_eq!(r.status, CellStatus::Interrupted, "{text}");
    assert_eq!(r.interrupt, Some(InterruptReason::Requested), "{text}");
    three_cells_answer(&s, "kept", "20").await;
    s.kernels.shutdown().await;
}

/// Six calls sent back to back while the first one runs; the second and fourth are cancelled
/// while they wait. Those two never run and say so; the others run in arrival order. The cells
/// after the first append their number to `order` and add it to `x`; `check` prints both.
async fn queued_cancellation(
    s: &Session,
    first: &str,
    append: impl Fn(usize) -> String,
    check: &str,
    expected: &str,
) {
    let cancels: Vec<tokio_util::sync::CancellationToken> =
        (0..6).map(|_| tokio_util::sync::CancellationToken::new()).collect();
    let codes: Vec<String> =
        (0..6).map(|i| if i == 0 { first.to_string() } else { append(i) }).collect();
    let cancel_two = async {
        // Every call has asked for the kernel by now: they were all polled once, in order.
        tokio::task::yield_now().await;
        cancels[1].cancel();
        cancels[3].cancel();
    };
    let (results, ()) = tokio::join!(
        poll_together(codes.iter().zip(&cancels).map(|(code, cancel)| s.run_under(code, cancel))),
        cancel_two
    );
    for (i, (r, text)) in results.iter().enumerate() {
        if i == 1 || i == 3 {
            assert_eq!(r.status, CellStatus::Cancelled, "call {i}: {text}");
            assert!(text.contains("cancelled before it started"), "call {i}: {text}");
            assert!(text.contains("never ran"), "call {i}: {text}");
        } else {
            assert_eq!(r.status, CellStatus::Ok, "call {i}: {text}");
        }
    }
    let (r, text) = s.run(check).await;
    assert_eq!(r.status, CellStatus::Ok, "{text}");
    assert!(!text.contains("interrupted"), "no cell was interrupted: {text}");
    assert!(text.ends_with(expected), "arrival order; the cancelled cells never ran: {text}");
}

/// Polls every future together (the first polls in order) and collects their outputs in order.
async fn poll_together<F: std::future::Future>(futures: impl Iterator<Item = F>) -> Vec<F::Output> {
    let mut pinned: Vec<std::pin::Pin<Box<F>>> = futures.map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = pinned.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut all = true;
        for (fut, out) in pinned.iter_mut().zip(outputs.iter_mut()) {
            if out.is_none() {
                match fut.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => *out = Some(v),
                    std::task::Poll::Pending => all = false,
                }
            }
        }
        if all { std::task::Poll::Ready(()) } else { std::task::Poll::Pending }
    })
    .await;
    outputs.into_iter().map(|o| o.expect("ready")).collect()
}

#[tokio::test]
async fn python_calls_cancelled_while_queued_never_run_and_the_rest_run_in_arrival_order() {
    let s = python(EvalConfig::default());
    queued_cancellation(
        &s,
        "import time\norder = [0]\nx = 0\ntime.sleep(1)",
        |i| format!("order.append({i})\nx += {i}"),
        "print(order, x)",
        "[0, 2, 4, 5] 11",
    )
    .await;
    s.kernels.shutdown().await;
}

#[tokio::test]
async fn node_calls_cancelled_while_queued_never_run_and_the_rest_run_in_arrival_order() {
    let node = std::process::Command::new("node").arg("--version").output();
    if !common::require("node", node.is_ok_and(|o| o.status.success()), "install Node.js") {
        return;
    }
    let config =
        EvalConfig { javascript: Some(agent_tools_eval::JsEngine::Node), ..EvalConfig::default() };
    let s = Session::new(Language::Javascript, config);
    queued_cancellation(
        &s,
        "var order = [0]; var x = 0; await new Promise(r => setTimeout(r, 1000))",
        |i| format!("order.push({i}); x += {i}"),
        "console.log(JSON.stringify(order), x)",
        "[0,2,4,5] 11",
    )
    .await;
    s.kernels.shutdown().await;
}
