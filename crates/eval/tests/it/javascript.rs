//! The embedded QuickJS kernel as a user sees it: completion values, persistence, console, display,
//! the bridge, the inactivity budget, out-of-memory recovery, and no outside access.

use crate::common;

use agent_tools_eval::{CellStatus, EvalConfig, InterruptReason, JsEngine, Language, Output};
use common::{Session, short_budget};

/// A JavaScript session with `config`.
fn check(config: EvalConfig) -> Session {
    let config = EvalConfig { javascript: Some(JsEngine::Quickjs), ..config };
    Session::new(Language::Javascript, config)
}

#[tokio::test]
async fn the_completion_value_is_returned_and_declarations_persist() {
    let s = check(EvalConfig::default());
    let (r, text) = s.run("let a = 40; const b = 1; function f() { return 1 }\nclass K { get v() { return 7 } }\na + b + f()").await;
    assert_eq!(r.status, CellStatus::Ok, "{text}");
    assert_eq!(text, "[started QuickJS-NG (rquickjs 0.14, embedded)]\nOut[1]: 42");
    let (_, text) = s.run("a + new K().v").await;
    assert_eq!(text, "Out[2]: 47");
    let (r, text) = s.run("let a = 'again'; a").await;
    assert_eq!(r.status, CellStatus::Ok, "re-declaring is allowed, as in a console: {text}");
    assert_eq!(text, "Out[3]: \"again\"");
    let (_, text) = s.run("({x: [1, 2], y: {z: null}})").await;
    assert_eq!(text, "Out[4]: { x: [1, 2], y: { z: null } }");
    let (_, text) = s.run("let nothing = 1").await;
    assert_eq!(text, "(no output)");
    s.kernels.shutdown().await;
}

#[tokio::test]
async fn reset_starts_a_clean_runtime() {
    let s = check(EvalConfig::default());
    s.run("var secret = 1").await;
    let (r, text) = s.reset("typeof secret").await;
    assert!(r.kernel.started);
    assert!(
        text.contains("reset was requested; earlier state (variables, imports) is gone"),
        "{text}"
    );
    assert!(text.ends_with("Out[1]: \"undefined\""), "{text}");
    s.kernels.shutdown().await;
}

#[tokio::test]
async fn console_output_is_captured_by_stream() {
    let s = check(EvalConfig::default());
    let (r, text) = s
        .run("console.log('hello', 1, {a: 'b'}, [1, 'x']); console.error('oops'); console.warn('careful'); 'done'")
        .await;
    assert_eq!(r.status, CellStatus::Ok, "{text}");
    assert_eq!(
        text,
        "[started QuickJS-NG (rquickjs 0.14, embedded)]\nhello 1 { a: \"b\" } [1, \"x\"]\n[stderr]\noops\ncareful\nOut[1]: \"done\""
    );
    s.kernels.shutdown().await;
}

#[tokio::test]
async fn exceptions_carry_a_stack() {
    let s = check(EvalConfig::default());
    let (r, text) =
        s.run("function inner() { null.x }\nfunction outer() { inner() }\nouter()").await;
    assert_eq!(r.status, CellStatus::Error);
    assert_eq!(r.error.as_ref().map(|e| e.ename.as_str()), Some("TypeError"));
    assert!(text.contains("Uncaught TypeError: cannot read property 'x' of null"), "{text}");
    assert!(text.contains("at inner (<cell-1>:1:"), "{text}");
    assert!(text.contains("at outer (<cell-1>:2:"), "{text}");
    let (r, text) = s.run("let = = 1").await;
    assert_eq!(r.status, CellStatus::Error);
    assert!(text.contains("SyntaxError"), "{text}");
    let (r, text) = s.run("await Promise.reject(new RangeError('nope'))").await;
    assert_eq!(r.status, CellStatus::Error);
    assert!(text.contains("Uncaught RangeError: nope"), "{text}");
    s.kernels.shutdown().await;
}

#[tokio::test]
async fn top_level_await_and_timers_work() {
    let s = check(EvalConfig::default());
    let (r, text) = s
        .run("const sleep = (ms) => new Promise(r => setTimeout(r, ms));\nlet order = [];\nsetTimeout(() => order.push('late'), 20);\nawait sleep(5); order.push('early');\nawait sleep(40);\norder")
        .await;
    assert_eq!(r.status, CellStatus::Ok, "{text}");
    assert!(text.ends_with("Out[1]: [\"early\", \"late\"]"), "{text}");
    s.kernels.shutdown().await;
}

#[tokio::test]
async fn display_shows_objects_as_json_and_strings_as_text() {
    let s = check(EvalConfig::default());
    let (r, text) = s
        .run("display('plain words'); display({rows: [1, 2]}); display({[Symbol.for('Jupyter.display')]() { return {'text/markdown': '**md**'} }})")
        .await;
    assert_eq!(r.status, CellStatus::Ok, "{text}");
    let bundles: Vec<_> = r
        .outputs
        .iter()
        .filter_map(|o| match o {
            Output::Display { bundle, .. } => Some(bundle.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(bundles.len(), 3);
    assert_eq!(bundles[0]["text/plain"], "plain words");
    assert_eq!(bundles[1]["application/json"], serde_json::json!({"rows": [1, 2]}));
    assert!(text.ends_with("plain words\n{ rows: [1, 2] }\n**md**"), "{text}");
    s.kernels.shutdown().await;
}

#[tokio::test]
async fn tool_returns_a_promise_and_fans_out() {
    let s = check(EvalConfig::default());
    std::fs::write(s.root().join("notes.txt"), "from a file\n").expect("write");
    let (r, text) =
        s.run("const text = await tool('read', {path: 'notes.txt'}); text.trim()").await;
    assert_eq!(r.status, CellStatus::Ok, "{text}");
    assert!(text.ends_with("Out[1]: \"from a file\""), "{text}");
    let (r, text) = s
        .run("try { await tool('write', {path: 'x', content: 'y'}) } catch (e) { console.log(e.name + ': ' + e.message) }")
        .await;
    assert_eq!(r.status, CellStatus::Ok, "{text}");
    assert!(text.contains("ToolError: `write` is a write-tier tool"), "{text}");
    let (r, text) = s
        .run("const rs = await Promise.all([0, 1, 2].map(n => tool('gate', {n}))); rs.map(r => [r.arg, r.in_flight_seen])")
        .await;
    assert_eq!(r.status, CellStatus::Ok, "{text}");
    assert!(
        text.ends_with("Out[3]: [[0, 3], [1, 3], [2, 3]]"),
        "three calls pending at once: {text}"
    );
    let (r, text) = s.run("await tool('write', {})").await;
    assert_eq!(r.status, CellStatus::Error);
    assert!(text.contains("Uncaught ToolError: `write` is a write-tier tool"), "{text}");
    s.kernels.shutdown().await;
}

#[tokio::test]
async fn a_runaway_loop_is_interrupted_and_state_survives() {
    let s = check(short_budget(0.5, 5.0));
    s.run("let kept = 'still here'").await;
    let (r, text) = s.run("console.log('spinning'); while (true) {}").await;
    assert_eq!(r.status, CellStatus::Interrupted, "{text}");
    assert_eq!(r.interrupt, Some(InterruptReason::Inactivity));
    assert!(text.contains("[interrupted: the cell produced no output for 500 ms; the kernel's state (variables, imports) is preserved]"), "{text}");
    let (r, text) = s.run("kept").await;
    assert!(!r.kernel.started);
    assert_eq!(text, "Out[3]: \"still here\"");
    let (r, text) = s.run("await new Promise(() => {})").await;
    assert_eq!(
        r.status,
        CellStatus::Interrupted,
        "a cell waiting forever is interrupted too: {text}"
    );
    s.kernels.shutdown().await;
}

#[tokio::test]
async fn a_cell_that_keeps_printing_is_not_interrupted() {
    let s = check(short_budget(0.5, 5.0));
    let (r, text) = s
        .run("for (let i = 0; i < 15; i++) { console.log(i); await new Promise(r => setTimeout(r, 100)) }\n'finished'")
        .await;
    assert_eq!(r.status, CellStatus::Ok, "{text}");
    assert!(text.ends_with("14\nOut[1]: \"finished\""), "{text}");
    let (r, text) = s.run("await tool('slow', {seconds: 1.2})").await;
    assert_eq!(r.status, CellStatus::Ok, "a pending bridged call suspends the budget: {text}");
    s.kernels.shutdown().await;
}

#[tokio::test]
async fn running_out_of_memory_is_reported_and_the_next_call_recovers() {
    let s = check(EvalConfig { js_memory_limit_mb: 32, ..EvalConfig::default() });
    s.run("var small = 1").await;
    let (r, text) =
        s.run("const hog = []; while (true) hog.push(new Array(100000).fill(1.5))").await;
    assert_eq!(r.status, CellStatus::Crashed, "{text}");
    assert!(text.contains("the JavaScript kernel ran out of memory (limit 32 MiB)"), "{text}");
    let (r, text) = s.run("typeof small").await;
    assert!(r.kernel.started);
    assert!(
        text.contains("the previous kernel died (the JavaScript kernel ran out of memory"),
        "{text}"
    );
    assert!(text.ends_with("Out[1]: \"undefined\""), "{text}");
    s.kernels.shutdown().await;
}

#[tokio::test]
async fn there_is_no_file_system_network_or_module_loader() {
    let s = check(EvalConfig::default());
    let (_, text) =
        s.run("[typeof require, typeof fetch, typeof process, typeof std, typeof os]").await;
    assert!(
        text.ends_with(
            "Out[1]: [\"undefined\", \"undefined\", \"undefined\", \"undefined\", \"undefined\"]"
        ),
        "{text}"
    );
    let (r, text) = s.run("await import('fs')").await;
    assert_eq!(r.status, CellStatus::Error, "{text}");
    s.kernels.shutdown().await;
}

#[tokio::test]
async fn an_unhandled_rejection_is_reported_and_a_handled_one_is_not() {
    let s = check(EvalConfig::default());
    let (r, text) = s.run("Promise.reject(new Error('nobody caught me')); 1").await;
    assert_eq!(r.status, CellStatus::Ok, "{text}");
    assert!(text.contains("Unhandled promise rejection: Error: nobody caught me"), "{text}");
    let (_, text) =
        s.run("const p = Promise.reject(new Error('caught')); await p.catch(() => 0); 2").await;
    assert!(!text.contains("Unhandled"), "{text}");
    assert!(text.ends_with(": 2"), "{text}");
    let (r, text) = s.run("throw new Error('the cell itself')").await;
    assert_eq!(r.status, CellStatus::Error, "{text}");
    assert!(!text.contains("Unhandled"), "the cell's own error is its traceback: {text}");
}
