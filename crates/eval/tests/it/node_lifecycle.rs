//! The Node.js kernel's lifecycle as dependable as `node`'s: the program's own exit ends the
//! cell at once with the exit reported and the next cell on a fresh kernel; a cancelled or
//! interrupted cell stops everything it started, so none of its output reaches a later result;
//! errors show the user's frames only, and a SyntaxError its line and caret.

use crate::common;

use std::sync::Arc;

use agent_tools_eval::{CellStatus, EvalConfig, Kernels, Prefix};
use common::Session;

/// A Node session, or None (skipped loudly outside CI) when `node` is missing.
fn check(config: EvalConfig) -> Option<Session> {
    common::node_session(config)
}

#[tokio::test]
async fn process_exit_ends_the_cell_with_its_code_and_the_next_cell_is_fresh_twenty_times() {
    // A short budget: an exit that hangs shows as a killed cell, not as a slow test.
    let Some(s) = check(common::short_budget(10.0, 2.0)) else { return };
    for round in 0..20 {
        let (r, text) =
            s.run("globalThis.marker = 'old'; console.log('bye'); process.exit(3)").await;
        assert_eq!(r.status, CellStatus::Crashed, "round {round}: {text}");
        assert!(text.contains("exited with status 3"), "round {round}: {text}");
        assert!(text.contains("bye"), "round {round}: output before the exit is kept: {text}");
        assert!(!text.contains("Waiting for the debugger"), "round {round}: {text}");
        let (r, text) = s.run("typeof globalThis.marker").await;
        assert!(r.kernel.started, "round {round}: a fresh kernel: {text}");
        assert!(text.ends_with("'undefined'"), "round {round}: {text}");
    }
    s.kernels.shutdown().await;
}

/// Every way the program ends itself: the cell ends with how, and the next cell is fresh.
#[tokio::test]
async fn every_way_a_program_ends_itself_is_reported_and_the_next_cell_is_fresh() {
    let Some(s) = check(common::short_budget(5.0, 2.0)) else { return };
    let cases = [
        ("process.exit()", "exited with status 0"),
        ("process.exitCode = 7; process.exit()", "exited with status 7"),
        (
            "setTimeout(() => process.exit(4), 5); await new Promise(r => setTimeout(r, 60000))",
            "exited with status 4",
        ),
        ("await Promise.resolve(); process.exit(5)", "exited with status 5"),
        ("process.abort()", "SIGABRT"),
        ("process.kill(process.pid, 'SIGTERM')", "SIGTERM"),
        ("const p = tool('slow', {seconds: 30}); process.exit(6)", "exited with status 6"),
    ];
    for (code, how) in cases {
        let (r, text) = s.run(&format!("globalThis.marker = 'old';\n{code}")).await;
        assert_eq!(r.status, CellStatus::Crashed, "{code}: {text}");
        assert!(text.contains(how), "{code}: the result says how it ended ({how}): {text}");
        assert!(!text.contains("Waiting for the debugger"), "{code}: {text}");
        let (r, text) = s.run("typeof globalThis.marker").await;
        assert!(r.kernel.started, "{code}: a fresh kernel: {text}");
        assert!(text.ends_with("'undefined'"), "{code}: {text}");
    }
    s.kernels.shutdown().await;
}

/// An exit handler that throws cancels the exit, as in node's REPL: the cell fails with the
/// handler's error and the kernel (its state too) goes on.
#[tokio::test]
async fn an_exit_handler_that_throws_cancels_the_exit_as_in_the_node_repl() {
    let Some(s) = check(EvalConfig::default()) else { return };
    s.run("globalThis.marker = 'kept'").await;
    let (r, text) = s
        .run("process.once('exit', () => { throw new Error('in an exit handler') }); process.exit(2)")
        .await;
    assert_eq!(r.status, CellStatus::Error, "{text}");
    assert!(text.contains("Error: in an exit handler"), "{text}");
    let (r, text) = s.run("process.exitCode = 0; globalThis.marker").await;
    assert!(!r.kernel.started, "{text}");
    assert!(text.ends_with("'kept'"), "{text}");
    let (r, text) = s.run("process.exit(9)").await;
    assert_eq!(r.status, CellStatus::Crashed, "a later exit still exits: {text}");
    assert!(text.contains("exited with status 9"), "{text}");
    s.kernels.shutdown().await;
}

/// A kernel that ends itself after its cell returned (a timer calling `process.exit`): the next
/// call starts a fresh kernel and says how the previous one ended, instead of failing.
#[tokio::test]
async fn a_kernel_that_exits_between_cells_is_replaced_at_the_next_call() {
    let Some(s) = check(EvalConfig::default()) else { return };
    // The kernel exits once the test says so, after the first cell's result is in: a timer
    // with a fixed delay could fire while a loaded host is still finishing that cell.
    let go = s.root.path().join("exit-now");
    let (_, text) = s
        .run(&format!(
            "globalThis.marker = 'old'; const fs = require('fs'); \
             setInterval(() => {{ if (fs.existsSync({go:?})) process.exit(4) }}, 10); process.pid"
        ))
        .await;
    let pid: u32 = text.rsplit(": ").next().and_then(|p| p.trim().parse().ok()).expect("pid");
    std::fs::write(&go, "").expect("write the signal file");
    assert!(
        common::gone_within(pid, std::time::Duration::from_secs(20)),
        "node {pid} did not exit"
    );
    let (r, text) = s.run("typeof globalThis.marker").await;
    assert_eq!(r.status, CellStatus::Ok, "{text}");
    assert!(r.kernel.started, "{text}");
    assert!(
        text.contains("the previous kernel ended between cells (it exited with status 4)"),
        "{text}"
    );
    assert!(text.ends_with("'undefined'"), "{text}");
    s.kernels.shutdown().await;
}

/// A kernel that ends itself the moment its cell finished (an immediate calling `process.exit`,
/// which may run before or after the runner has sent the cell's result): the cell either keeps
/// its result or reports the exit with its status, never anything else, and the next call starts
/// a fresh kernel.
#[tokio::test]
async fn a_kernel_that_exits_as_its_cell_returns_is_replaced_at_the_next_call() {
    let Some(s) = check(EvalConfig::default()) else { return };
    for round in 0..5 {
        let (r, text) = s
            .run("console.log('pid', process.pid); setImmediate(() => process.exit(4)); 6 * 7")
            .await;
        let kept = r.status == CellStatus::Ok && text.ends_with("42");
        let reported = r.status == CellStatus::Crashed && text.contains("exited with status 4");
        assert!(kept || reported, "round {round}: {:?}: {text}", r.status);
        let pid: u32 = text
            .split("pid ")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("round {round}: no pid in {text}"));
        // The next call comes once the old kernel is gone: one that arrives in the very instant
        // the old kernel exits is sent to it and reported as its death (see the crate README).
        assert!(common::gone_within(pid, std::time::Duration::from_secs(20)), "node {pid} lives");
        let (r, text) = s.run("1 + 1").await;
        assert_eq!(r.status, CellStatus::Ok, "round {round}: {text}");
        assert!(r.kernel.started, "round {round}: {text}");
        assert!(text.contains("exited with status 4"), "round {round}: {text}");
    }
    s.kernels.shutdown().await;
}

/// What a cancelled cell started, each in its own way of going on: none of it prints again.
#[tokio::test]
async fn a_cancelled_cell_stops_everything_it_started_and_no_later_result_has_its_output() {
    let Some(s) = check(EvalConfig::default()) else { return };
    let starters = [
        ("an interval", "setInterval(() => console.log('late tick'), 20);"),
        (
            "a loop awaiting timers",
            "(async () => { for (;;) { console.log('late tick'); await new Promise(r => setTimeout(r, 20)); } })();",
        ),
        (
            "a timers/promises interval",
            "(async () => { for await (const _ of require('timers/promises').setInterval(20)) console.error('late tick'); })();",
        ),
        (
            "a chain of immediates",
            "const again = () => setTimeout(() => { display('late tick'); setImmediate(again); }, 20); again();",
        ),
        (
            "a worker thread",
            "new (require('worker_threads').Worker)(\"setInterval(() => console.log('late tick'), 20)\", {eval: true});",
        ),
        (
            "a child process",
            "require('child_process').spawn('sh', ['-c', 'while true; do echo late tick; sleep 0.02; done'], {stdio: 'inherit'});",
        ),
    ];
    for (what, starter) in starters {
        let (r, text) = s
            .run_cancelled(&format!(
                "{starter}\nconsole.log('started');\nawait new Promise(() => {{}})"
            ))
            .await;
        assert_eq!(r.status, CellStatus::Interrupted, "{what}: {text}");
        assert!(text.contains("started"), "{what}: {text}");
        // A window in which anything left running would print many times.
        let (r, text) = s.run("await new Promise(r => setTimeout(r, 400)); 'after'").await;
        assert_eq!(r.status, CellStatus::Ok, "{what}: {text}");
        assert!(!text.contains("late tick"), "{what} of the cancelled cell printed later: {text}");
        assert!(text.contains("was cancelled by the client and interrupted"), "{what}: {text}");
        let (_, text) = s.run("await new Promise(r => setTimeout(r, 100)); 'again'").await;
        assert!(!text.contains("late tick"), "{what}: {text}");
        assert!(text.ends_with("'again'"), "{what}: {text}");
    }
    s.kernels.shutdown().await;
}

/// The same for a cell the inactivity budget interrupts (a busy loop that started an interval).
#[tokio::test]
async fn an_interrupted_busy_cell_stops_its_interval_and_its_state_is_kept() {
    let Some(s) = check(common::short_budget(0.5, 3.0)) else { return };
    s.run("var kept = 3").await;
    let (r, text) = s.run("setInterval(() => console.log('late tick'), 20); while (true) {}").await;
    assert_eq!(r.status, CellStatus::Interrupted, "{text}");
    let (r, text) = s.run("await new Promise(r => setTimeout(r, 300)); kept").await;
    assert_eq!(r.status, CellStatus::Ok, "{text}");
    assert!(!text.contains("late tick"), "{text}");
    assert!(text.ends_with(": 3"), "{text}");
    // A later cell's own interval still runs, as in node's REPL.
    let (_, text) = s
        .run("let n = 0; const t = setInterval(() => n++, 5); await new Promise(r => setTimeout(r, 100)); clearInterval(t); n > 0")
        .await;
    assert!(text.ends_with("true"), "{text}");
    s.kernels.shutdown().await;
}

/// The first cell of a fresh kernel runs before the reader thread is up (its synchronous part
/// under SIGINT; under a capsule prefix, where no signal reaches node, the thread is started
/// first): a busy first cell is still interrupted, not killed, and its kernel goes on; later
/// cells are interrupted through the reader thread; so is a first cell whose call is cancelled.
#[tokio::test]
async fn a_busy_first_cell_of_a_fresh_kernel_is_interrupted_and_the_kernel_goes_on() {
    let cases = [
        ("while (true) {}", false),
        ("for (;;) { JSON.stringify({a: [1, 2, 3]}) }", false),
        ("while (true) {}", true),
    ];
    for (busy, in_a_capsule) in cases {
        let Some(mut s) = check(common::short_budget(0.5, 5.0)) else { return };
        if in_a_capsule {
            let capsule = Prefix::new(vec!["env".into(), "IN_A_CAPSULE=1".into()]).expect("prefix");
            s.kernels = Kernels::new(s.kernels.config().clone()).with_capsule(Arc::new(capsule));
        }
        let (r, text) = s.run(&format!("globalThis.kept = 1; {busy}")).await;
        assert!(r.kernel.started, "{busy}: {text}");
        assert_eq!(r.status, CellStatus::Interrupted, "{busy}: {text}");
        let (r, text) = s.run("kept + 1").await;
        assert!(!r.kernel.started, "{busy}: the same kernel: {text}");
        assert!(text.ends_with(": 2"), "{busy}: {text}");
        // Later cells are interrupted through the reader thread.
        let (r, text) = s.run(busy).await;
        assert_eq!(r.status, CellStatus::Interrupted, "{busy}: {text}");
        s.kernels.shutdown().await;
    }
    let Some(s) = check(EvalConfig::default()) else { return };
    let (r, text) = s.run_cancelled("globalThis.kept = 1; while (true) {}").await;
    assert!(r.kernel.started, "{text}");
    assert_eq!(r.status, CellStatus::Interrupted, "{text}");
    let (r, text) = s.run("kept + 1").await;
    assert!(!r.kernel.started, "the same kernel: {text}");
    assert!(text.ends_with(": 2"), "{text}");
    s.kernels.shutdown().await;
}

/// Errors as node shows them for a script: the user's frames only (named after the cell), and
/// a SyntaxError with its line and a caret under the place.
#[tokio::test]
async fn error_stacks_show_the_users_frames_and_a_syntax_error_its_line_and_caret() {
    let Some(s) = check(EvalConfig::default()) else { return };
    let runner_frames = [
        "agent-tools-runner",
        "node:inspector",
        "Worker.emit",
        "node:internal/worker",
        "Session.post",
        "runCell",
    ];
    let cases = [
        (
            "function inner() { throw new Error('boom') }\nfunction outer() { inner() }\nouter()",
            &["Error: boom", "at inner (cell-1:1:26)", "at outer (cell-1:2:20)", "at cell-1:3:1"][..],
        ),
        ("await null;\nnull.x", &["TypeError: Cannot read properties of null", "cell-2:2"][..]),
        ("JSON.parse('{bad')", &["SyntaxError", "at JSON.parse", "cell-3:1"][..]),
        ("await tool('write', {path: 'x', content: 'y'})", &["ToolError"][..]),
        ("require('fs').readFileSync('/no/such/file')", &["ENOENT", "cell-5:1"][..]),
    ];
    for (code, shows) in cases {
        let (r, text) = s.run(code).await;
        assert_eq!(r.status, CellStatus::Error, "{code}: {text}");
        for want in shows {
            assert!(text.contains(want), "{code}: shows {want:?}: {text}");
        }
        for frame in runner_frames {
            assert!(!text.contains(frame), "{code}: no runner frame {frame:?}: {text}");
        }
    }
    let (r, text) = s.run("let ok = 1;\nlet x = );\nok").await;
    assert_eq!(r.status, CellStatus::Error, "{text}");
    assert!(
        text.contains("cell-6:2\nlet x = );\n        ^\n\nSyntaxError: Unexpected token ')'"),
        "the line and a caret under the place: {text}"
    );
    let (_, text) = s
        .run("setTimeout(() => { throw new Error('late') }, 0); await new Promise(r => setTimeout(r, 50)); 1")
        .await;
    assert!(text.contains("Uncaught exception: Error: late"), "{text}");
    for frame in runner_frames {
        assert!(!text.contains(frame), "no runner frame {frame:?}: {text}");
    }
    s.kernels.shutdown().await;
}
