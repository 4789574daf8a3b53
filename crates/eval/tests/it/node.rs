//! The Node.js kernel as a user sees it: the notebook contract of the Python kernel, plus
//! Node's APIs, built-in and project modules, and unhandled rejections reported.

use crate::common;

use agent_tools_eval::{CellStatus, EvalConfig, InterruptReason, Language};
use common::{Session, alive, gone_within, short_budget};

/// A Node session, or None (skipped loudly outside CI) when `node` is missing.
fn check(config: EvalConfig) -> Option<Session> {
    common::node_session(config)
}

#[tokio::test]
async fn the_first_result_names_node_and_declarations_persist_and_may_be_redeclared() {
    let Some(s) = check(EvalConfig::default()) else { return };
    let (r, text) = s.run("let x = 40; const y = 1; function f() { return 1 }\nx + y + f()").await;
    assert_eq!(r.status, CellStatus::Ok, "{text}");
    assert!(text.starts_with("[started Node.js v"), "the engine is named: {text}");
    assert!(text.ends_with("Out[1]: 42"), "{text}");
    let (_, text) = s.run("let x = 5; const y = 2; x + y").await;
    assert_eq!(text, "Out[2]: 7", "a cell may be run again");
    let (r, text) = s.run("const c = 1; c = 2").await;
    assert_eq!(r.status, CellStatus::Error, "{text}");
    assert!(text.contains("TypeError: Assignment to constant variable"), "{text}");
    let (_, text) =
        s.run("await new Promise(r => setTimeout(r, 10)); ({a: [1, 2], s: 'str'})").await;
    assert_eq!(text, "Out[4]: { a: [ 1, 2 ], s: 'str' }");
    let (_, text) = s.run("console.log('out'); console.error('err'); undefined").await;
    assert_eq!(text, "out\n[stderr]\nerr");
    s.kernels.shutdown().await;
}

#[tokio::test]
async fn node_apis_builtins_and_project_packages_are_there() {
    let Some(s) = check(EvalConfig::default()) else { return };
    let package = s.root().join("node_modules/left-pad-test");
    std::fs::create_dir_all(&package).expect("mkdir");
    std::fs::write(package.join("package.json"), r#"{"name":"left-pad-test","main":"index.js"}"#)
        .expect("write");
    std::fs::write(
        package.join("index.js"),
        "module.exports = (s, n) => String(s).padStart(n, '*');",
    )
    .expect("write");
    std::fs::write(s.root().join("data.txt"), "hello file").expect("write");
    let (r, text) = s
        .run(
            "import * as fs from 'node:fs';\nimport pad from 'left-pad-test';\n\
             const { join } = require('path');\n\
             [fs.readFileSync(join(process.cwd(), 'data.txt'), 'utf8'), pad('x', 3), \
             typeof fetch, new URL('https://a.b/c').host, Buffer.from('hi').toString('hex'), \
             structuredClone({k: 1}).k, new TextEncoder().encode('é').length]",
        )
        .await;
    assert_eq!(r.status, CellStatus::Ok, "{text}");
    assert!(text.ends_with("[ 'hello file', '**x', 'function', 'a.b', '6869', 1, 2 ]"), "{text}");
    let (_, text) = s.run("(await import('left-pad-test')).default('y', 2)").await;
    assert!(text.ends_with("'*y'"), "{text}");
    s.kernels.shutdown().await;
}

#[tokio::test]
async fn tool_is_a_promise_and_display_sends_bundles_and_images() {
    let Some(s) = check(EvalConfig::default()) else { return };
    std::fs::write(s.root().join("notes.txt"), "one\n").expect("write");
    let (r, text) = s
        .run(
            "const png = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64');\n\
             display(png);\n\
             display({'text/markdown': '**bold**'}, {raw: true});\n\
             const [a, b] = await Promise.all([tool('read', {path: 'notes.txt'}), tool('slow', {seconds: 0.1})]);\n\
             a",
        )
        .await;
    assert_eq!(r.status, CellStatus::Ok, "{text}");
    assert_eq!(Session::image_count(&r), 1, "{text}");
    assert!(text.contains("**bold**"), "{text}");
    assert!(text.ends_with("Out[1]: 'one\\n'"), "{text}");
    let (r, text) = s.run("await tool('write', {path: 'x', content: 'y'})").await;
    assert_eq!(r.status, CellStatus::Error, "{text}");
    assert!(text.contains("ToolError"), "{text}");
    s.kernels.shutdown().await;
}

#[tokio::test]
async fn a_busy_loop_is_interrupted_with_state_kept_and_a_crash_is_recovered() {
    let Some(s) = check(short_budget(0.5, 3.0)) else { return };
    s.run("var kept = 9").await;
    let (r, text) = s.run("while (true) {}").await;
    assert_eq!(r.status, CellStatus::Interrupted, "{text}");
    assert_eq!(r.interrupt, Some(InterruptReason::Inactivity));
    let (_, text) = s.run("kept").await;
    assert!(text.ends_with(": 9"), "state kept: {text}");
    let (r, text) = s.run("await new Promise(() => {})").await;
    assert_eq!(r.status, CellStatus::Interrupted, "a waiting cell is interrupted too: {text}");
    let (r, text) = s.run("process.exit(3)").await;
    assert_eq!(r.status, CellStatus::Crashed, "{text}");
    assert!(text.contains("exited with status 3"), "{text}");
    let (r, text) = s.run("typeof kept").await;
    assert!(r.kernel.started, "{text}");
    assert!(text.ends_with("'undefined'"), "{text}");
    s.kernels.shutdown().await;
}

#[tokio::test]
async fn unhandled_rejections_are_reported_and_the_kernel_goes_on() {
    let Some(s) = check(EvalConfig::default()) else { return };
    let (r, text) = s
        .run("Promise.reject(new Error('nobody caught me')); await new Promise(r => setTimeout(r, 20)); 1")
        .await;
    assert_eq!(r.status, CellStatus::Ok, "{text}");
    assert!(text.contains("Unhandled promise rejection: Error: nobody caught me"), "{text}");
    let (_, text) = s.run("2").await;
    assert!(text.ends_with(": 2"), "{text}");
    s.kernels.shutdown().await;
}

#[tokio::test]
async fn typescript_says_what_is_missing_on_an_old_node() {
    let Some(s) = check(EvalConfig::default()) else { return };
    let s = Session { language: Language::Typescript, ..s };
    let (r, text) = s.run("const n: number = 1; n + 1").await;
    let version = String::from_utf8(
        std::process::Command::new("node").arg("--version").output().expect("node").stdout,
    )
    .unwrap_or_default();
    let major: u32 = version
        .trim()
        .trim_start_matches('v')
        .split('.')
        .next()
        .and_then(|m| m.parse().ok())
        .unwrap_or(0);
    if major >= 24 {
        assert_eq!(r.status, CellStatus::Ok, "{text}");
        assert!(text.ends_with(": 2"), "{text}");
    } else {
        assert_eq!(r.status, CellStatus::Unavailable, "{text}");
        assert!(text.contains("TypeScript cells need Node.js 23.2 or newer"), "{text}");
    }
    s.kernels.shutdown().await;
}

#[tokio::test]
async fn no_node_process_survives_shutdown() {
    let Some(s) = check(EvalConfig::default()) else { return };
    let (_, text) = s.run("process.pid").await;
    let pid: u32 = text.rsplit(": ").next().and_then(|p| p.trim().parse().ok()).expect("pid");
    assert!(alive(pid));
    s.kernels.shutdown().await;
    assert!(gone_within(pid, std::time::Duration::from_secs(10)), "node {pid} survived");
}

/// A lone surrogate (which strict JSON refuses) is sent as U+FFFD, and the kernel goes on.
#[tokio::test]
async fn a_lone_surrogate_in_a_display_or_value_is_cleaned_and_the_kernel_goes_on() {
    let Some(s) = check(EvalConfig::default()) else { return };
    let (r, text) =
        s.run("display('lone \\ud800 surrogate'); display({k: 'x\\udc00'}); 'fine'").await;
    assert_eq!(r.status, CellStatus::Ok, "{text}");
    assert!(text.contains("lone \u{fffd} surrogate"), "{text}");
    assert!(text.ends_with("'fine'"), "{text}");
    let (r, text) = s.run("NaN").await;
    assert!(!r.kernel.started, "the same kernel: {text}");
    assert!(text.ends_with(": NaN"), "{text}");
    s.kernels.shutdown().await;
}

/// `_` and `_error` as in node's REPL: the last value and the last error, until the user
/// assigns one.
#[tokio::test]
async fn underscore_and_underscore_error_hold_the_last_value_and_error_as_in_the_node_repl() {
    let Some(s) = check(EvalConfig::default()) else { return };
    s.run("1 + 1").await;
    let (_, text) = s.run("_ * 2").await;
    assert!(text.ends_with(": 4"), "{text}");
    let (r, _) = s.run("null.x").await;
    assert_eq!(r.status, CellStatus::Error);
    let (_, text) = s.run("_error.message").await;
    assert!(text.ends_with(": \"Cannot read properties of null (reading 'x')\""), "{text}");
    let (_, text) = s.run("let a = 5").await;
    assert!(!text.contains("Out["), "{text}");
    let (_, text) = s.run("typeof _").await;
    assert!(text.ends_with(": 'undefined'"), "the value of `let` is undefined: {text}");
    let (_, text) = s.run("_ = 7").await;
    assert!(text.contains("Expression assignment to _ now disabled."), "{text}");
    s.run("3").await;
    let (_, text) = s.run("_").await;
    assert!(text.ends_with(": 7"), "{text}");
    s.kernels.shutdown().await;
}
