//! `watch` on the real adapters: run until a line is reached with a condition true, until a
//! value changes (debugpy and delve: a condition on
//! the function's lines; lldb: a data breakpoint), until an exception is raised, until an
//! output line matches; a call never waits past its `wait_seconds`, and a stop that comes
//! later is reported by the next call.

use crate::support;

use agent_tools_debug::{DebugOutcome, RunState, StopSnapshot};
use serde_json::{Value, json};
use support::*;

/// Launches `program` stopped at `line` of `file`, then drops that breakpoint (it is in the
/// loop the watch runs through).
async fn stopped_in_the_loop(h: &Harness, file: &str, line: u32, program: &str) -> DebugOutcome {
    h.ok(json!({"operation": "breakpoints", "file": file, "lines": [line]})).await;
    let launched = h.ok(json!({"operation": "launch", "program": program})).await;
    assert_eq!(stopped(&launched).frame.as_ref().and_then(|f| f.line), Some(line));
    h.ok(json!({"operation": "breakpoints", "file": file, "lines": [line], "remove": true})).await;
    launched
}

/// The stop of a `watch` that must have stopped, with its watch note.
fn watch_stop<'a>(outcome: &'a DebugOutcome, note: &str) -> &'a StopSnapshot {
    let text = agent_tools_debug::render(outcome);
    let stop = stopped(outcome);
    assert!(stop.notes.iter().any(|n| n.contains(note)), "no note `{note}` in:\n{text}");
    stop
}

async fn watch(h: &Harness, args: Value) -> DebugOutcome {
    let mut all = json!({"operation": "watch", "wait_seconds": 120});
    for (k, v) in args.as_object().unwrap() {
        all[k] = v.clone();
    }
    h.ok(all).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_watch_stops_at_a_line_on_a_change_an_exception_and_an_output_line() {
    let Some((_project, h)) = debugpy_harness("python", config()) else { return };
    let launched = stopped_in_the_loop(&h, "watched.py", 8, "watched.py").await;
    let procs = session_processes(&launched);

    let changed = watch(&h, json!({"expression": "level"})).await;
    let stop = watch_stop(&changed, "watch: `level` changed: '1' → '2'");
    assert_eq!(local(stop, "ticks").as_deref(), Some("20"));
    assert_eq!(local(stop, "level").as_deref(), Some("2"));

    // A line reached with a condition true; the watch's breakpoint is gone after its stop.
    let reached =
        watch(&h, json!({"file": "watched.py", "lines": [9], "condition": "ticks == 30"})).await;
    let stop = watch_stop(&reached, "watch: stopped at line 9 with the condition true");
    assert_eq!(local(stop, "ticks").as_deref(), Some("30"));
    let listed = agent_tools_debug::render(&h.ok(json!({"operation": "breakpoints"})).await);
    assert!(!listed.contains("watched.py:9"), "{listed}");

    let raised = watch(&h, json!({"exceptions": "all"})).await;
    let stop = watch_stop(&raised, "watch: an exception was raised");
    assert_eq!(stop.frame.as_ref().and_then(|f| f.line), Some(14));

    // The line comes a second later: a call that may not wait returns at once, running.
    let early =
        h.ok(json!({"operation": "watch", "pattern": "^level is \\d", "wait_seconds": 0})).await;
    let RunState::Running { waited_seconds, .. } = run_state(&early) else {
        panic!("{}", agent_tools_debug::render(&early))
    };
    assert_eq!(*waited_seconds, 0);
    let text = agent_tools_debug::render(&early);
    assert!(
        text.contains("the watch keeps waiting until an output line matches `^level is \\d`"),
        "{text}"
    );
    // The stop comes between calls; the next call reports it first: `status` (in full) if
    // it came already, else a later call.
    let status = agent_tools_debug::render(&h.ok(json!({"operation": "status"})).await);
    let reported = if status.contains("a watch waits until an output line matches") {
        agent_tools_debug::render(&wait_for_a_stop(&h).await)
    } else {
        status
    };
    assert!(
        reported.contains("watch: an output line matched `^level is \\d`: level is 2"),
        "{reported}"
    );
    assert!(reported.contains("while no call was waiting"), "{reported}");
    h.ok(json!({"operation": "terminate"})).await;
    assert_gone(&procs);
}

/// Watches with no time to wait: the call returns at once, running, saying the watch waits;
/// the stop comes later and the next call reports it first. That stop.
async fn watch_later(h: &Harness, args: Value, how: &str) -> StopSnapshot {
    let mut all = json!({"operation": "watch", "wait_seconds": 0});
    for (k, v) in args.as_object().unwrap() {
        all[k] = v.clone();
    }
    let early = h.ok(all).await;
    let text = agent_tools_debug::render(&early);
    assert!(matches!(run_state(&early), RunState::Running { .. }), "{text}");
    assert!(text.contains("the watch keeps waiting until"), "{text}");
    assert!(text.contains(how), "{text}");
    match wait_for_a_stop(h).await {
        DebugOutcome::StoppedMeanwhile { stop, .. } => *stop,
        other => panic!("{other:?}"),
    }
}

/// Calls `output` until a call reports a stop that happened between calls.
async fn wait_for_a_stop(h: &Harness) -> DebugOutcome {
    for _ in 0..600 {
        let outcome = h.ok(json!({"operation": "output"})).await;
        if matches!(outcome, DebugOutcome::StoppedMeanwhile { .. }) {
            return outcome;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("the program never stopped")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c_watch_stops_on_a_change_through_a_data_breakpoint_and_on_a_crash() {
    let Some((_project, h, _)) = crate::lldb::check("c", config()) else { return };
    let launched = stopped_in_the_loop(&h, "watched.c", 9, "watched").await;
    let procs = session_processes(&launched);
    let stop = watch_later(
        &h,
        json!({"expression": "level"}),
        "`level` changes (now 1; a data breakpoint)",
    )
    .await;
    assert!(stop.notes.iter().any(|n| n.contains("watch: `level` changed: 1 → 2")), "{stop:?}");
    assert_eq!(local(&stop, "ticks").as_deref(), Some("20"));
    let crashed = watch(&h, json!({"exceptions": "all"})).await;
    let stop = watch_stop(&crashed, "watch: an exception was raised");
    assert!(stop.description.as_deref().unwrap_or_default().contains("SIGABRT"), "{stop:?}");
    h.ok(json!({"operation": "terminate"})).await;
    assert_gone(&procs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn go_watch_stops_on_a_change_through_conditions_and_on_a_panic() {
    let Some((_project, h)) = crate::delve::check(config()) else { return };
    let launched = stopped_in_the_loop(&h, "watched/main.go", 12, "watched").await;
    let procs = session_processes(&launched);
    let how = "`level` changes (now 1; a condition on the";
    let stop = watch_later(&h, json!({"expression": "level"}), how).await;
    assert!(stop.notes.iter().any(|n| n.contains("watch: `level` changed: 1 → 2")), "{stop:?}");
    assert_eq!(local(&stop, "ticks").as_deref(), Some("20"));
    let panicked = watch(&h, json!({"exceptions": "all"})).await;
    let stop = watch_stop(&panicked, "watch: an exception was raised");
    assert_eq!(stop.frame.as_ref().and_then(|f| f.line), Some(21), "{stop:?}");
    h.ok(json!({"operation": "terminate"})).await;
    assert_gone(&procs);
}
