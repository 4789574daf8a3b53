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
