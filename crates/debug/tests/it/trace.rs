//! `trace` on the real adapters: one call runs the program and returns every call of a
//! function with its arguments, caller, return value and time; recursion unwinds call by call.

use crate::support;

use agent_tools_debug::{DebugOutcome, TraceView};
use serde_json::json;
use support::*;

fn trace_of(outcome: &DebugOutcome) -> &TraceView {
    let DebugOutcome::Trace(trace) = outcome else { panic!("not a trace: {outcome:?}") };
    trace
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recursive_python_function_is_traced_call_by_call() {
    let Some((_project, h)) = debugpy_harness("python", config()) else { return };
    let outcome = h
        .ok(json!({"operation": "trace", "name": "fib", "program": "traced.py", "wait_seconds": 300}))
        .await;
    let text = agent_tools_debug::render(&outcome);
    let trace = trace_of(&outcome);
    // fib(4) makes 9 calls.
    assert_eq!(trace.total, 9, "{text}");
    assert!(trace.ended.contains("exited with code 0"), "{text}");
    let first = &trace.calls[0];
    assert_eq!(first.arguments, ["n=4"], "{text}");
    assert_eq!(first.returned.as_deref(), Some("3"), "{text}");
    assert!(first.caller.as_deref().is_some_and(|c| c.starts_with("traced.py:10")), "{text}");
    let second = &trace.calls[1];
    assert_eq!(
        (second.arguments.as_slice(), second.returned.as_deref()),
        (&["n=3".to_string()][..], Some("2")),
        "{text}"
    );
    assert!(
        second.caller.as_deref().is_some_and(|c| c.starts_with("traced.py:7 in fib")),
        "{text}"
    );
    assert!(second.depth > first.depth, "{text}");
    assert!(trace.calls.iter().all(|c| c.returned.is_some()), "{text}");
    assert!(text.contains("#1 fib(n=4) → 3"), "{text}");
    assert!(text.contains("fib(4) = 3"), "{text}");
    // The session is over: the trace ended it.
    let status = agent_tools_debug::render(&h.ok(json!({"operation": "status"})).await);
    assert!(
        status.starts_with("No debug session (the session of traced.py ended with its trace)"),
        "{status}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_c_function_is_traced_with_its_arguments_and_return_values() {
    let Some((_project, h, _)) = crate::lldb::check("c", config()) else { return };
    let outcome = h
        .ok(json!({"operation": "trace", "name": "scale", "program": "traced", "wait_seconds": 300}))
        .await;
    let text = agent_tools_debug::render(&outcome);
    let trace = trace_of(&outcome);
    assert_eq!(trace.total, 3, "{text}");
    for (call, i) in trace.calls.iter().zip(1..) {
        assert!(call.arguments.contains(&format!("value={i}")), "{text}");
        assert!(call.arguments.contains(&"factor=10".to_string()), "{text}");
        assert_eq!(call.returned.as_deref(), Some(format!("{}", i * 10).as_str()), "{text}");
        assert!(call.caller.as_deref().is_some_and(|c| c.starts_with("traced.c:11")), "{text}");
    }
    assert!(trace.ended.contains("exited with code 0"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_raises_is_traced_with_its_exception() {
    let Some((_project, h)) = debugpy_harness("python", config()) else { return };
    let outcome = h
        .ok(json!({"operation": "trace", "name": "parse", "program": "parsed.py", "wait_seconds": 300}))
        .await;
    let text = agent_tools_debug::render(&outcome);
    let trace = trace_of(&outcome);
    assert_eq!(trace.total, 3, "{text}");
    let ended: Vec<(Option<&str>, bool)> = trace
        .calls
        .iter()
        .map(|c| {
            (
                c.returned.as_deref(),
                c.exception.as_deref().is_some_and(|e| e.contains("ValueError")),
            )
        })
        .collect();
    assert_eq!(ended, [(Some("1"), false), (None, true), (Some("3"), false)], "{text}");
    assert!(text.contains("#2 parse(text='x') raised ValueError"), "{text}");
    assert!(text.contains("bad x"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_go_function_is_traced_with_its_arguments_and_callers() {
    let Some((_project, h)) = crate::delve::check(config()) else { return };
    let outcome = h
        .ok(json!({"operation": "trace", "name": "scale", "program": "traced", "wait_seconds": 300}))
        .await;
    let text = agent_tools_debug::render(&outcome);
    let trace = trace_of(&outcome);
    assert_eq!(trace.total, 3, "{text}");
    for (call, i) in trace.calls.iter().zip(1..) {
        assert_eq!(call.arguments, [format!("value={i}"), "factor=10".into()], "{text}");
        // delve 1.20 shows no return value after a step out: unknown, not an exception.
        assert_eq!((call.returned.as_deref(), call.exception.as_deref()), (None, None), "{text}");
        assert!(
            call.caller.as_deref().is_some_and(|c| c.starts_with("traced/main.go:13")),
            "{text}"
        );
    }
    assert!(trace.ended.contains("exited with code 0"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_trace_keeps_its_first_and_last_calls() {
    let Some((_project, h, _)) = crate::lldb::check("c", config()) else { return };
    let outcome = h
        .ok(json!({"operation": "trace", "name": "count_down", "program": "deep", "wait_seconds": 300}))
        .await;
    let text = agent_tools_debug::render(&outcome);
    let trace = trace_of(&outcome);
    assert_eq!((trace.total, trace.calls.len(), trace.omitted), (60, 50, 10), "{text}");
    let (first, last) = (&trace.calls[0], &trace.calls[49]);
    assert_eq!(
        (first.index, first.arguments.as_slice(), first.returned.as_deref()),
        (1, &["n=59".to_string()][..], Some("59")),
        "{text}"
    );
    assert_eq!(
        (last.index, last.arguments.as_slice(), last.returned.as_deref()),
        (60, &["n=0".to_string()][..], Some("0")),
        "{text}"
    );
    assert_eq!(trace.calls[25].index, 36, "{text}");
    assert!(text.contains("… 10 call(s) left out …"), "{text}");
}

#[tokio::test]
async fn watch_and_trace_say_what_they_need() {
    let project = Project::empty();
    let h = Harness::new(&project.root, config());
    let none = h.err(json!({"operation": "watch"})).await;
    assert!(none.starts_with("watch needs what to wait for: `file` + `lines`"), "{none}");
    let regex = h.err(json!({"operation": "watch", "pattern": "(unclosed"})).await;
    assert!(regex.starts_with("watch: `pattern` is not a regular expression"), "{regex}");
    let lines = h.err(json!({"operation": "watch", "file": "x.py", "lines": [1, 2]})).await;
    assert!(lines.contains("needs `lines` with one line"), "{lines}");
    let no_session = h.err(json!({"operation": "watch", "expression": "x"})).await;
    assert!(no_session.starts_with("no debug session in this conversation"), "{no_session}");
    let name = h.err(json!({"operation": "trace", "program": "x.py"})).await;
    assert!(name.starts_with("trace needs `name`"), "{name}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_function_a_failing_test_calls_is_traced_through_test() {
    let Some((_project, h)) = debugpy_harness("python", config()) else { return };
    let outcome = h
        .ok(json!({
            "operation": "trace", "name": "mean",
            "test": "tests/test_calc.py::test_mean_of_three", "wait_seconds": 300
        }))
        .await;
    let text = agent_tools_debug::render(&outcome);
    let trace = trace_of(&outcome);
    assert_eq!(trace.total, 1, "{text}");
    let call = &trace.calls[0];
    assert_eq!(call.arguments, ["values=[1, 2, 3]"], "{text}");
    assert_eq!(call.returned.as_deref(), Some("2.0"), "{text}");
    assert!(
        call.caller.as_deref().is_some_and(|c| c.starts_with("tests/test_calc.py:10")),
        "{text}"
    );
    assert!(trace.ended.contains("exited with code 1"), "{text}");
}
