//! lldb-dap for real, on a C program (built with the system C compiler, -g) and a Rust program
//! (built with cargo): the whole scenario, env as K=V, stdin from /dev/null, Rust formatters,
//! terminate and the time limit leave no process (lldb-dap's SIGABRT at exit is no error).

use crate::support;

use std::{path::PathBuf, process::Command};

use agent_tools_debug::{
    DebugConfig, DebugOutcome, RunState,
    adapters::{SearchEnv, lldb_candidates},
};
use serde_json::json;
use support::*;

/// A project with the fixture built, and a harness; `None` when lldb-dap or the compiler is missing.
pub(crate) fn check(fixture: &str, config: DebugConfig) -> Option<(Project, Harness, PathBuf)> {
    let found = !lldb_candidates(&SearchEnv::from_process()).is_empty();
    if !require("lldb-dap", found, "`apt-get install lldb-19` (or run `cargo xtask setup`)") {
        return None;
    }
    let project = Project::copy(fixture);
    let program = match fixture {
        "c" => {
            let built = [
                ("buggy", "buggy.c"),
                ("crash", "crash.c"),
                ("forker", "forker.c"),
                ("daemon", "daemon.c"),
                ("waiter", "waiter.c"),
                ("greet", "greet.c"),
                ("die", "die.c"),
                ("watched", "watched.c"),
                ("traced", "traced.c"),
                ("deep", "deep.c"),
            ];
            let ok = built.iter().all(|(out, src)| {
                Command::new("cc")
                    .args(["-g", "-O0", "-o", out, src])
                    .current_dir(&project.root)
                    .status()
                    .is_ok_and(|s| s.success())
            });
            if !require("a C compiler (cc)", ok, "`apt-get install gcc`") {
                return None;
            }
            project.root.join("buggy")
        }
        _ => {
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            let out = Command::new(cargo)
                .args(["build", "--offline", "--quiet"])
                .current_dir(&project.root)
                .env("CARGO_TARGET_DIR", project.root.join("target"))
                .env_remove("RUSTFLAGS")
                .output()
                .expect("run cargo");
            assert!(
                out.status.success(),
                "cargo build failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            project.root.join("target/debug/buggy")
        }
    };
    let harness = Harness::new(&project.root, config);
    Some((project, harness, program))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c_breakpoint_launch_inspect_step_and_run_to_the_exit_code() {
    let Some((_project, h, _)) = check("c", config()) else { return };
    h.ok(json!({"operation": "breakpoints", "file": "buggy.c", "lines": [11]})).await;
    let launched = h
        .ok(json!({"operation": "launch", "program": "buggy", "env": {"GREETING": "hello"}}))
        .await;
    let procs = session_processes(&launched);
    let stop = stopped_at_breakpoint(&launched, "average", "buggy.c", 11);
    assert_eq!(local(stop, "total").as_deref(), Some("12"));
    assert_eq!(local(stop, "count").as_deref(), Some("2"));

    let stack = h.ok(json!({"operation": "stack"})).await;
    let DebugOutcome::Stack(stack) = &stack else { panic!() };
    assert_eq!(stack.frames[0].name, "average");
    assert_eq!(stack.frames[1].name, "main");
    let scopes = h.ok(json!({"operation": "scopes", "frame_id": stack.frames[1].frame_id})).await;
    let DebugOutcome::Scopes { scopes, .. } = &scopes else { panic!() };
    let locals = scopes.iter().find(|s| s.name == "Locals").unwrap();
    let vars = h.variables(locals.reference).await;
    let data = vars.iter().find(|v| v.name == "data").expect("data in main");
    let elems = h.variables(data.reference.unwrap()).await;
    let values: Vec<&str> = elems.iter().map(|v| v.value.as_str()).collect();
    assert_eq!(values, ["2", "4", "6"]);

    // Evaluated as an expression (`watch`), not as an LLDB command.
    assert_eq!(h.evaluate("total * 2").await, "24");

    let step = h.ok(json!({"operation": "step_over"})).await;
    assert_eq!(stopped(&step).reason, "step");
    let again = h.err(json!({"operation": "launch", "program": "buggy"})).await;
    assert!(again.contains("already running"), "{again}");

    assert_eq!(h.continue_to_exit().await, Some(3));
    let all = h.all_output().await;
    // stdin is /dev/null (no hang), env arrived as K=V, and stdout/stderr are captured.
    assert!(all.contains("stdin: eof"), "{all}");
    assert!(all.contains("greeting=hello"), "{all}");
    assert!(all.contains("average=6"), "{all}");
    assert!(!all.contains('\r'));

    let DebugOutcome::Terminated(report) = h.ok(json!({"operation": "terminate"})).await else {
        panic!()
    };
    assert!(
        !report.steps.iter().any(|s| s.contains("SIGABRT") && !s.contains("not an error")),
        "{report:?}"
    );
    assert_gone(&procs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_values_are_readable_with_the_formatters() {
    let Some((_project, h, _)) = check("rust", config()) else { return };
    h.ok(json!({"operation": "breakpoints", "file": "src/main.rs", "lines": [9]})).await;
    let launched = h.ok(json!({"operation": "launch", "program": "target/debug/buggy"})).await;
    let procs = session_processes(&launched);
    let stop = stopped(&launched);
    let frame = stop.frame.clone().unwrap();
    assert_eq!(frame.line, Some(9));
    assert!(frame.name.contains("average"), "{frame:?}");
    assert_eq!(local(stop, "total").as_deref(), Some("12"));
    assert_eq!(local(stop, "count").as_deref(), Some("2"));

    let out = h.ok(json!({"operation": "step_out"})).await;
    let stop = stopped(&out);
    assert!(stop.frame.as_ref().unwrap().name.contains("main"), "{stop:?}");
    let label = h.ok(json!({"operation": "evaluate", "expression": "label"})).await;
    let DebugOutcome::Evaluate(label) = label else { panic!() };
    assert!(
        label.result.value.contains("numbers"),
        "String shown through the formatters: {label:?}"
    );
    let data = h.ok(json!({"operation": "evaluate", "expression": "data"})).await;
    let DebugOutcome::Evaluate(data) = data else { panic!() };
    assert!(data.result.value.contains("size=3"), "Vec shown through the formatters: {data:?}");

    assert_eq!(h.continue_to_exit().await, Some(3));
    let all = h.all_output().await;
    assert!(all.contains("average=6") && all.contains("to stderr"), "{all}");
    h.ok(json!({"operation": "terminate"})).await;
    assert_gone(&procs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_time_limit_ends_an_lldb_session() {
    let Some((_project, h, _)) = check("c", DebugConfig { ttl_seconds: 5, ..config() }) else {
        return;
    };
    h.ok(json!({"operation": "breakpoints", "file": "buggy.c", "lines": [11]})).await;
    let launched = h.ok(json!({"operation": "launch", "program": "buggy"})).await;
    let procs = session_processes(&launched);
    stopped(&launched);
    let ended = h.wait_until_ended().await;
    assert!(ended.expect("ended").contains("time limit"));
    assert_gone(&procs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_stops_the_program_where_it_happened() {
    let Some((_project, h, _)) = check("c", config()) else { return };
    let launched = h.ok(json!({"operation": "launch", "program": "crash"})).await;
    let procs = session_processes(&launched);
    let stop = stopped(&launched);
    assert_eq!(stop.reason, "exception");
    let text = agent_tools_debug::render(&launched);
    assert!(text.contains("SIGSEGV"), "{text}");
    assert_eq!(
        stop.frame.as_ref().map(|f| (f.name.as_str(), f.line)),
        Some(("read_value", Some(5))),
        "{text}"
    );
    assert!(stop.output.text().contains("reading"), "{text}");
    h.ok(json!({"operation": "terminate"})).await;
    assert_gone(&procs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rust_panic_stops_at_the_panicking_line() {
    let Some((_project, h, _)) = check("rust", config()) else { return };
    let launched = h
        .ok(json!({"operation": "launch", "program": "target/debug/buggy", "args": ["panic"]}))
        .await;
    let procs = session_processes(&launched);
    let stop = stopped(&launched);
    let text = agent_tools_debug::render(&launched);
    // The panic machinery's frames are library code: the user frame is the indexing line.
    assert_eq!(stop.frame.as_ref().and_then(|f| f.line), Some(15), "{text}");
    assert!(stop.frames_skipped > 0, "{text}");
    assert_eq!(stop.reason, "exception");
    let e = stop.exception.clone().unwrap();
    assert_eq!(e.id.as_deref(), Some("panic"));
    assert!(e.description.unwrap_or_default().contains("index out of bounds"), "{text}");
    h.ok(json!({"operation": "terminate"})).await;
    assert_gone(&procs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forked_child_that_outlives_the_program_is_gone_after_terminate() {
    let Some((_project, h, _)) = check("c", config()) else { return };
    let (_launched, child) = h.launch_forker("forker").await;
    h.ok(json!({"operation": "terminate"})).await;
    assert_gone(&[child]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attach_by_pid_pause_reads_as_a_pause_and_detach_leaves_it_running() {
    let Some((project, h, _)) = check("c", config()) else { return };
    let mut target = Command::new(project.root.join("waiter")).spawn().expect("start the target");
    let pid = target.id();
    let attached = h
        .ok(json!({"operation": "attach", "pid": pid, "adapter": "lldb", "program": "waiter"}))
        .await;
    let text = agent_tools_debug::render(&attached);
    assert!(text.contains("Attached to waiter"), "{text}");
    let paused = h.ok(json!({"operation": "pause"})).await;
    let stop = stopped(&paused);
    assert_eq!(stop.reason, "pause", "{}", agent_tools_debug::render(&paused));
    assert!(stop.exception.is_none());
    let DebugOutcome::Terminated(report) = h.ok(json!({"operation": "terminate"})).await else {
        panic!()
    };
    assert!(report.steps.iter().any(|s| s.contains("detach")), "{report:?}");
    assert!(target.try_wait().unwrap().is_none(), "the detached program runs on");
    target.kill().unwrap();
    let _ = target.wait();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdin_is_fed_through_a_fifo() {
    let Some((_project, h, _)) = check("c", config()) else { return };
    let launched = h
        .ok(json!({"operation": "launch", "program": "greet", "stdin": "ada\n", "wait_seconds": 30}))
        .await;
    let procs = session_processes(&launched);
    let done = match run_state(&launched) {
        RunState::Exited { .. } => launched.clone(),
        _ => h.ok(json!({"operation": "continue", "wait_seconds": 30})).await,
    };
    assert!(matches!(run_state(&done), RunState::Exited { exit_code: Some(0), .. }), "{done:?}");
    assert!(h.all_output().await.contains("hello ada"));
    h.ok(json!({"operation": "terminate"})).await;
    assert_gone(&procs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_death_by_signal_reads_as_the_signal_not_an_exit_code() {
    let Some((_project, h, _)) = check("c", config()) else { return };
    let launched = h.ok(json!({"operation": "launch", "program": "die"})).await;
    let procs = session_processes(&launched);
    assert_eq!(stopped(&launched).reason, "exception");
    let done = h.ok(json!({"operation": "continue"})).await;
    let text = agent_tools_debug::render(&done);
    assert!(text.contains("killed by SIGABRT") && !text.contains("code 6."), "{text}");
    let status = agent_tools_debug::render(&h.ok(json!({"operation": "status"})).await);
    assert!(status.contains("killed by SIGABRT"), "{status}");
    h.ok(json!({"operation": "terminate"})).await;
    assert_gone(&procs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_cargo_test_stops_at_its_assertion() {
    let Some((_project, h, _)) = check("rust", config()) else { return };
    let launched = h.ok(json!({"operation": "launch", "test": "tests::average_of_three"})).await;
    let procs = session_processes(&launched);
    let text = agent_tools_debug::render(&launched);
    let stop = stopped(&launched);
    assert_eq!(stop.reason, "exception", "{text}");
    assert_eq!(stop.frame.as_ref().and_then(|f| f.line), Some(32), "{text}");
    assert_eq!(local(stop, "got").as_deref(), Some("6"), "{text}");
    h.ok(json!({"operation": "terminate"})).await;
    assert_gone(&procs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_breakpoints_in_one_c_file_keep_their_own_conditions_and_hit_counts() {
    let Some((_project, h, _)) = check("c", config()) else { return };
    // In `average`'s loop over {2, 4, 6}: line 8 from its third hit on, line 10 only if the
    // total is 12.
    h.ok(
        json!({"operation": "breakpoints", "file": "buggy.c", "lines": [8], "hit_condition": "3"}),
    )
    .await;
    h.ok(json!({"operation": "breakpoints", "file": "buggy.c", "lines": [10], "condition": "total == 12"}))
        .await;
    let launched = h.ok(json!({"operation": "launch", "program": "buggy"})).await;
    let procs = session_processes(&launched);
    let text = agent_tools_debug::render(&launched);
    let DebugOutcome::Started(started) = &launched else { panic!() };
    assert_eq!(started.breakpoints.len(), 2, "{text}");
    assert!(started.breakpoints.iter().all(|b| b.verified), "{text}");
    let stop = stopped(&launched);
    assert_eq!(stop.frame.as_ref().and_then(|f| f.line), Some(8), "{text}");
    assert_eq!(local(stop, "i").as_deref(), Some("2"), "{text}");
    let next = h.ok(json!({"operation": "continue"})).await;
    let stop = stopped(&next);
    assert_eq!(stop.frame.as_ref().and_then(|f| f.line), Some(10));
    assert_eq!(local(stop, "total").as_deref(), Some("12"));
    h.ok(json!({"operation": "terminate"})).await;
    assert_gone(&procs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_setsid_daemon_with_a_cleared_environment_is_gone_after_terminate() {
    let Some((_project, h, _)) = check("c", config()) else { return };
    if !cgroup_available() {
        return;
    }
    let (_launched, daemon) = h.launch_forker("daemon").await;
    h.ok(json!({"operation": "terminate"})).await;
    assert_gone(&[daemon]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_program_blocked_on_stdin_is_reported_as_waiting_for_input() {
    let Some((_project, h, _)) = check("c", config()) else { return };
    // stdin open with nothing in it: the program blocks in its read.
    let launched = h
        .ok(json!({"operation": "launch", "program": "greet", "stdin": "", "wait_seconds": 120}))
        .await;
    let procs = session_processes(&launched);
    assert!(
        matches!(run_state(&launched), RunState::Running { waiting_for_input: true, .. }),
        "{}",
        agent_tools_debug::render(&launched)
    );
    let sent = h.ok(json!({"operation": "input", "stdin": "ada\n", "wait_seconds": 120})).await;
    let DebugOutcome::Input(sent) = &sent else { panic!("{sent:?}") };
    assert!(matches!(sent.state, Some(RunState::Exited { exit_code: Some(0), .. })), "{sent:?}");
    assert!(h.all_output().await.contains("hello ada"));
    h.ok(json!({"operation": "terminate"})).await;
    assert_gone(&procs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cpp_standard_types_display_through_the_formatters() {
    let Some((project, h, _)) = check("c", config()) else { return };
    let built = Command::new("c++")
        .args(["-g", "-O0", "-o", "values", "values.cpp"])
        .current_dir(&project.root)
        .status()
        .is_ok_and(|s| s.success());
    if !require("a C++ compiler (c++)", built, "`apt-get install g++`") {
        return;
    }
    h.ok(json!({"operation": "breakpoints", "file": "values.cpp", "lines": [14]})).await;
    let launched = h.ok(json!({"operation": "launch", "program": "values"})).await;
    let procs = session_processes(&launched);
    let text = agent_tools_debug::render(&launched);
    let stop = stopped(&launched);
    // As VS Code shows them, and the content a summary leaves out previewed.
    assert_eq!(local(stop, "maybe").as_deref(), Some("Has Value=true {Value = 42}"), "{text}");
    assert_eq!(local(stop, "none").as_deref(), Some("Has Value=false"), "{text}");
    assert_eq!(
        local(stop, "ages").as_deref(),
        Some("size=2 {[0] = {first = \"ada\", second = 36}, [1] = {first = \"bob\", second = 41}}"),
        "{text}"
    );
    assert_eq!(local(stop, "values").as_deref(), Some("size=3 {[0] = 1, [1] = 2, [2] = 3}"));
    assert_eq!(local(stop, "name").as_deref(), Some("\"line one\\nline two\""), "{text}");
    assert_eq!(h.evaluate("*owned").await, "7");
    // lldb's complaints about the debug info are not the program's output.
    assert!(!text.contains("DW_TAG"), "{text}");
    h.ok(json!({"operation": "terminate"})).await;
    assert_gone(&procs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_standard_types_display_through_the_formatters() {
    let Some((_project, h, _)) = check("rust", config()) else { return };
    h.ok(json!({"operation": "breakpoints", "file": "src/main.rs", "lines": [41]})).await;
    let launched = h.ok(json!({"operation": "launch", "program": "target/debug/buggy"})).await;
    let procs = session_processes(&launched);
    let text = agent_tools_debug::render(&launched);
    let stop = stopped(&launched);
    let ages = local(stop, "ages").unwrap_or_default();
    assert!(ages.starts_with("size=1 {") && ages.contains("ada") && ages.contains("36"), "{text}");
    assert_eq!(
        local(stop, "kept").as_deref(),
        Some("size=3 {[0] = 1, [1] = 2, [2] = 3}"),
        "{text}"
    );
    assert_eq!(local(stop, "text").as_deref(), Some("\"line one\\nline two\""), "{text}");
    h.ok(json!({"operation": "terminate"})).await;
    assert_gone(&procs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cargo_test_binary_as_program_stops_at_the_failing_assertion() {
    let Some((project, h, _)) = check("rust", config()) else { return };
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["test", "--no-run", "--offline", "--message-format=json"])
        .current_dir(&project.root)
        .env("CARGO_TARGET_DIR", project.root.join("target"))
        .env_remove("RUSTFLAGS")
        .output()
        .expect("run cargo");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let binary = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find_map(|m| {
            m["executable"].as_str().filter(|_| m["profile"]["test"] == true).map(String::from)
        })
        .expect("a test binary");
    // As a user runs it: every test, the harness's threads, no filter.
    let launched = h.ok(json!({"operation": "launch", "program": binary})).await;
    let procs = session_processes(&launched);
    let text = agent_tools_debug::render(&launched);
    let stop = stopped(&launched);
    assert_eq!(stop.reason, "exception", "{text}");
    assert_eq!(stop.frame.as_ref().and_then(|f| f.line), Some(32), "{text}");
    assert_eq!(local(stop, "got").as_deref(), Some("6"), "{text}");
    h.ok(json!({"operation": "terminate"})).await;
    assert_gone(&procs);
}
