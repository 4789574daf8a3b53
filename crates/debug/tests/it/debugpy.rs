//! debugpy for real: breakpoint → launch → stop snapshot → stack → scopes → variables →
//! evaluate → step → continue to the exit code; uncaught exceptions; the project interpreter;
//! attach to a `debugpy --listen` server; terminate and the time limit leave no process.

use crate::support;

use std::{process::Command, time::Duration};

use agent_tools_debug::{AdapterCommands, DebugConfig, DebugOutcome, RunState, SearchEnv};
use serde_json::json;
use support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn breakpoint_launch_inspect_step_and_run_to_the_exit_code() {
    let Some((_project, h)) = debugpy_harness("python", config()) else { return };
    let pending =
        h.ok(json!({"operation": "breakpoints", "file": "buggy.py", "lines": [11]})).await;
    let DebugOutcome::Breakpoints(b) = &pending else { panic!("{pending:?}") };
    assert!(b.pending);

    let launched = h.ok(json!({"operation": "launch", "program": "buggy.py"})).await;
    let procs = session_processes(&launched);
    let DebugOutcome::Started(started) = &launched else { unreachable!() };
    assert_eq!(started.breakpoints.len(), 1);
    assert!(started.breakpoints[0].verified, "{:?}", started.breakpoints);
    assert_eq!(started.breakpoints[0].line, Some(11));
    assert_eq!(started.exception_filters, ["uncaught"]);
    let stop = stopped(&launched);
    assert_eq!(stop.reason, "breakpoint");
    // Named from the thread list asked for as the program started (no round trip at the stop);
    // a thread started later (worker.py below) is named by a list asked for at its stop.
    assert_eq!(stop.thread.as_ref().map(|t| t.name.as_str()), Some("MainThread"));
    let frame = stop.frame.clone().expect("a user frame");
    assert_eq!(frame.name, "average");
    assert_eq!(frame.path.as_deref(), Some("buggy.py"));
    assert_eq!(frame.line, Some(11));
    assert!(
        stop.source.iter().any(|l| l.current && l.line == 11 && l.text.contains("total / count"))
    );
    assert_eq!(local(stop, "total").as_deref(), Some("12"));
    assert_eq!(local(stop, "count").as_deref(), Some("2"));
    let text = agent_tools_debug::render(&launched);
    assert!(text.contains("Stopped (stop 1): breakpoint in average at buggy.py:11"), "{text}");

    let stack = h.ok(json!({"operation": "stack"})).await;
    let DebugOutcome::Stack(stack) = &stack else { panic!("{stack:?}") };
    let names: Vec<&str> = stack.frames.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(&names[..3], ["average", "main", "<module>"]);

    let scopes = h.ok(json!({"operation": "scopes", "frame_id": stack.frames[0].frame_id})).await;
    let DebugOutcome::Scopes { scopes, .. } = &scopes else { panic!("{scopes:?}") };
    let locals = scopes.iter().find(|s| s.name == "Locals").expect("a Locals scope");
    let vars = h.variables(locals.reference).await;
    let values = vars.iter().find(|v| v.name == "values").expect("values");
    assert_eq!(values.value, "[2, 4, 6]");
    let children = h.variables(values.reference.unwrap()).await;
    assert!(children.iter().any(|v| v.value == "6"), "{children:?}");

    assert_eq!(h.evaluate("total / count").await, "6.0");
    // pydevd's socket to the adapter sends at once (TCP_NODELAY), so no request waits ~40 ms
    // for a delayed acknowledgement.
    let nodelay = "__import__('pydevd').get_global_debugger().writer.sock.getsockopt(6, 1)";
    assert_eq!(h.evaluate(nodelay).await, "1");
    let long = h.ok(json!({"operation": "evaluate", "expression": "'x' * 10000"})).await;
    let DebugOutcome::Evaluate(long) = &long else { panic!() };
    assert_eq!(long.result.value.chars().count(), 400);
    assert_eq!(long.result.cut_chars, 10002 - 400);
    assert!(
        agent_tools_debug::render(&DebugOutcome::Evaluate(long.clone()))
            .contains("value cut: 9602 more characters")
    );

    let old_frame = stack.frames[0].frame_id;
    let step = h.ok(json!({"operation": "step_over"})).await;
    let step = stopped(&step);
    assert_eq!(step.reason, "step");
    assert_eq!(step.stop, 2);
    let stale = h.err(json!({"operation": "scopes", "frame_id": old_frame})).await;
    assert!(stale.starts_with("stale reference from stop 1; the program has moved"), "{stale}");

    let again = h.err(json!({"operation": "launch", "program": "buggy.py"})).await;
    assert!(
        again.contains("already running")
            && again.contains("buggy.py")
            && again.contains("terminate"),
        "{again}"
    );

    assert_eq!(h.continue_to_exit().await, Some(3));
    let text = h.all_output().await;
    assert!(text.contains("computing the average") && text.contains("average=6.0"), "{text}");
    assert!(text.contains("to stderr"), "{text}");

    let ended = h.ok(json!({"operation": "terminate"})).await;
    assert!(matches!(ended, DebugOutcome::Terminated(_)));
    assert_gone(&procs);
    let status = h.ok(json!({"operation": "status"})).await;
    let DebugOutcome::Status(status) = status else { panic!() };
    assert!(status.session.is_none());
    assert!(status.last_end.unwrap().contains("terminate"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_uncaught_exception_stops_with_its_message() {
    let Some((_project, h)) = debugpy_harness("python", config()) else { return };
    let launched = h.ok(json!({"operation": "launch", "program": "crash.py"})).await;
    let procs = session_processes(&launched);
    let stop = stopped(&launched);
    assert_eq!(stop.reason, "exception");
    let exception = stop.exception.clone().expect("exception info");
    assert_eq!(exception.id.as_deref(), Some("KeyError"));
    assert!(exception.description.unwrap_or_default().contains("plum"));
    assert_eq!(stop.frame.as_ref().and_then(|f| f.line), Some(7));
    assert!(stop.output.text().contains("looking up"));
    h.ok(json!({"operation": "terminate"})).await;
    assert_gone(&procs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_time_limit_ends_the_session_like_terminate() {
    let config = DebugConfig { ttl_seconds: 5, ..config() };
    let Some((_project, h)) = debugpy_harness("python", config) else { return };
    h.ok(json!({"operation": "breakpoints", "file": "buggy.py", "lines": [11]})).await;
    let launched = h.ok(json!({"operation": "launch", "program": "buggy.py"})).await;
    let procs = session_processes(&launched);
    let ended = h.wait_until_ended().await;
    let ended = ended.expect("the session ended by its time limit");
    assert!(ended.contains("time limit (5 s)"), "{ended}");
    assert_gone(&procs);
    let err = h.err(json!({"operation": "stack"})).await;
    assert!(err.contains("no debug session") && err.contains("time limit"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attach_connects_to_a_debugpy_server() {
    let Some((project, h)) = debugpy_harness("python", config()) else { return };
    let python = python_with_debugpy().unwrap();
    let port = free_port();
    let mut target = Command::new(&python)
        .args([
            "-m",
            "debugpy",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--wait-for-client",
            "buggy.py",
        ])
        .current_dir(&project.root)
        .env("PYDEVD_DISABLE_FILE_VALIDATION", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start the target");
    h.ok(json!({"operation": "breakpoints", "file": "buggy.py", "lines": [11]})).await;
    // The server needs a moment to listen; attach retries only briefly, so retry here.
    let mut attached = None;
    for _ in 0..100 {
        match h.call(json!({"operation": "attach", "port": port, "adapter": "debugpy"})).await {
            Ok(outcome) => {
                attached = Some(outcome);
                break;
            }
            Err(e) if e.to_string().contains("nothing accepts") => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("attach failed: {e}"),
        }
    }
    let attached = attached.expect("attached");
    let stop = stopped(&attached);
    assert_eq!(stop.frame.as_ref().and_then(|f| f.line), Some(11));
    let eval = h.ok(json!({"operation": "evaluate", "expression": "total"})).await;
    let DebugOutcome::Evaluate(eval) = eval else { panic!() };
    assert_eq!(eval.result.value, "12");
    let ended = h.ok(json!({"operation": "terminate"})).await;
    let DebugOutcome::Terminated(report) = ended else { panic!() };
    assert!(report.steps.iter().any(|s| s.contains("detach")), "{report:?}");
    // Detached: the program runs on to its own end.
    let status = target.wait().expect("the target exits");
    assert_eq!(status.code(), Some(3));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_interpreter_without_debugpy_runs_the_program_under_another_adapter() {
    let Some(python) = python_with_debugpy() else {
        require("debugpy (in the test venv)", false, "run `cargo xtask setup`");
        return;
    };
    let system = std::path::Path::new("/usr/bin/python3");
    let bare = Command::new(system)
        .args(["-c", "import debugpy"])
        .output()
        .is_ok_and(|o| !o.status.success());
    if !require(
        "a system python3 without debugpy",
        bare,
        "this check needs /usr/bin/python3 without debugpy",
    ) {
        return;
    }
    let project = Project::copy("python");
    make_venv_python(&project, system);
    let env =
        SearchEnv { path: vec![python.parent().unwrap().to_path_buf()], ..SearchEnv::default() };
    let h = Harness::with_env(&project.root, config(), env);
    let report = h.ok(json!({"operation": "adapters"})).await;
    let text = agent_tools_debug::render(&report);
    assert!(text.contains("has no debugpy; the adapter runs on"), "{text}");
    h.ok(json!({"operation": "breakpoints", "file": "buggy.py", "lines": [11]})).await;
    let launched = h.ok(json!({"operation": "launch", "program": "buggy.py"})).await;
    let procs = session_processes(&launched);
    stopped(&launched);
    let exe = h.ok(json!({"operation": "evaluate", "expression": "sys.executable"})).await;
    let DebugOutcome::Evaluate(exe) = exe else { panic!() };
    assert!(exe.result.value.contains("/usr/bin/python3"), "{exe:?}");
    h.ok(json!({"operation": "terminate"})).await;
    assert_gone(&procs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configured_adapter_command_is_used_as_is() {
    let Some(python) = python_with_debugpy() else {
        require("debugpy (in the test venv)", false, "run `cargo xtask setup`");
        return;
    };
    let project = Project::copy("python");
    let config = DebugConfig {
        commands: AdapterCommands {
            debugpy: Some(vec![
                python.display().to_string(),
                "-m".into(),
                "debugpy.adapter".into(),
            ]),
            ..Default::default()
        },
        ..config()
    };
    let h = Harness::with_env(
        &project.root,
        config,
        SearchEnv { path: vec![python.parent().unwrap().to_path_buf()], ..Default::default() },
    );
    let launched = h.ok(json!({"operation": "launch", "program": "buggy.py"})).await;
    let procs = session_processes(&launched);
    let RunState::Exited { exit_code, .. } = run_state(&launched) else { panic!("{launched:?}") };
    assert_eq!(*exit_code, Some(3));
    h.ok(json!({"operation": "terminate"})).await;
    assert_gone(&procs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_program_is_reported_as_running_then_paused_and_breakpoints_apply_at_once() {
    let Some((_project, h)) = debugpy_harness("python", config()) else { return };
    // A logpoint prints instead of stopping.
    h.ok(json!({"operation": "breakpoints", "file": "loop.py", "lines": [6], "log_message": "tick n={n}"})).await;
    // The wait is a bound we choose: the program never stops by itself.
    let launched =
        h.ok(json!({"operation": "launch", "program": "loop.py", "wait_seconds": 1})).await;
    let procs = session_processes(&launched);
    let RunState::Running { waited_seconds, .. } = run_state(&launched) else {
        panic!("{launched:?}")
    };
    assert!(*waited_seconds >= 1);
    assert!(
        agent_tools_debug::render(&launched).contains("still running after"),
        "{}",
        agent_tools_debug::render(&launched)
    );
    let stack = h.err(json!({"operation": "stack"})).await;
    assert!(stack.contains("the program is running"), "{stack}");

    let paused = h.ok(json!({"operation": "pause"})).await;
    let stop = stopped(&paused);
    assert_eq!(stop.reason, "pause");
    let again = h.ok(json!({"operation": "pause"})).await;
    assert!(stopped(&again).notes.iter().any(|n| n.contains("already stopped")));

    // Set while the session runs: sent at once, verified, and hit on continue.
    let set = h.ok(json!({"operation": "breakpoints", "file": "loop.py", "lines": [11]})).await;
    let DebugOutcome::Breakpoints(set) = set else { panic!() };
    assert!(!set.pending && set.breakpoints[0].verified, "{set:?}");
    let hit = h.ok(json!({"operation": "continue"})).await;
    let stop = stopped(&hit);
    assert_eq!(
        (stop.reason.as_str(), stop.frame.as_ref().and_then(|f| f.line)),
        ("breakpoint", Some(11))
    );
    // One more round trip through `tick`: on a loaded machine the pause may have come before
    // the first call, so only a stop after a whole loop proves the logpoint ran.
    let again = h.ok(json!({"operation": "continue"})).await;
    assert_eq!(stopped(&again).frame.as_ref().and_then(|f| f.line), Some(11));
    let logged = h.all_output().await;
    assert!(logged.contains("tick n="), "the logpoint printed: {logged}");
    h.ok(json!({"operation": "terminate"})).await;
    assert_gone(&procs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_pytest_test_stops_at_its_assertion_with_the_locals() {
    let Some((_project, h)) = debugpy_harness("python", config()) else { return };
    let pytest =
        Command::new(python_with_debugpy().unwrap()).args(["-c", "import pytest"]).status();
    if !require(
        "pytest (in the test venv)",
        pytest.is_ok_and(|s| s.success()),
        "run `cargo xtask setup`",
    ) {
        return;
    }
    // One call to the failing line; the second reads what is wrong.
    let launched = h
        .ok(json!({"operation": "launch", "test": "tests/test_calc.py::test_mean_of_three"}))
        .await;
    let procs = session_processes(&launched);
    let text = agent_tools_debug::render(&launched);
    assert!(
        text.contains("Launched test tests/test_calc.py::test_mean_of_three with debugpy"),
        "{text}"
    );
    let stop = stopped(&launched);
    assert_eq!(stop.reason, "exception", "{text}");
    // debugpy's note about its own display and pytest's rewriting locals are left out.
    assert_eq!(stop.exception.as_ref().and_then(|e| e.id.as_deref()), Some("AssertionError"));
    assert!(!text.contains("(note: full exception trace") && !text.contains("@py_"), "{text}");
    let frame = stop.frame.clone().expect("the test's frame");
    assert_eq!(
        (frame.name.as_str(), frame.path.as_deref(), frame.line),
        ("test_mean_of_three", Some("tests/test_calc.py"), Some(11))
    );
    assert_eq!(local(stop, "result").as_deref(), Some("2.0"));
    assert_eq!(h.evaluate("values").await, "[1, 2, 3]");
    h.ok(json!({"operation": "terminate"})).await;
    assert_gone(&procs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_breakpoint_in_the_standard_library_stops_there_with_its_locals() {
    let Some((_project, h)) = debugpy_harness("python", config()) else { return };
    let decoder = json_decoder_source();
    let text = std::fs::read_to_string(&decoder).unwrap();
    let line = text.lines().position(|l| l.contains("obj, end = self.raw_decode(s, idx=")).unwrap()
        as u32
        + 1;
    let set = h.ok(json!({"operation": "breakpoints", "file": decoder, "lines": [line]})).await;
    assert!(matches!(&set, DebugOutcome::Breakpoints(b) if b.pending), "{set:?}");
    let outside =
        h.err(json!({"operation": "breakpoints", "file": "/etc/hostname", "lines": [1]})).await;
    assert!(
        outside.contains("outside the project root") && outside.contains("libraries"),
        "{outside}"
    );
    let launched = h.ok(json!({"operation": "launch", "program": "uses_json.py"})).await;
    let procs = session_processes(&launched);
    let text = agent_tools_debug::render(&launched);
    let stop = stopped(&launched);
    assert_eq!(stop.reason, "breakpoint", "{text}");
    assert!(text.contains("justMyCode is off"), "{text}");
    // The stop the user asked for is the frame shown, with its locals: not the project frame
    // that called into the library.
    let frame = stop.frame.clone().expect("the stopped frame");
    assert_eq!(frame.name, "decode", "{text}");
    assert!(frame.path.as_deref().is_some_and(|p| p.ends_with("json/decoder.py")), "{text}");
    assert_eq!(frame.line, Some(line), "{text}");
    assert_eq!(stop.frames_skipped, 0, "{text}");
    assert!(local(stop, "s").is_some_and(|s| s.contains("ada")), "{text}");
    assert!(text.contains(&format!("decoder.py:{line}")), "{text}");
    // evaluate and scopes default to that frame.
    assert!(h.evaluate("s").await.contains("ada"));
    let scopes = h.ok(json!({"operation": "scopes"})).await;
    let DebugOutcome::Scopes { scopes, .. } = &scopes else { panic!("{scopes:?}") };
    let locals = scopes.iter().find(|s| s.name == "Locals").expect("a Locals scope");
    assert!(h.variables(locals.reference).await.iter().any(|v| v.name == "_w"));
    // A step moves from it, within the library.
    let step = h.ok(json!({"operation": "step_over"})).await;
    let step = stopped(&step);
    let frame = step.frame.clone().expect("a frame after the step");
    assert_eq!(frame.name, "decode", "{}", agent_tools_debug::render(&launched));
    assert_eq!(frame.line, Some(line + 1));
    assert_eq!(local(step, "end").as_deref(), Some("38"));
    h.ok(json!({"operation": "terminate"})).await;
    assert_gone(&procs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdin_is_fed_at_launch_and_more_is_sent_later() {
    let Some((_project, h)) = debugpy_harness("python", config()) else { return };
    h.ok(json!({"operation": "breakpoints", "file": "greet.py", "lines": [7]})).await;
    let launched = h
        .ok(json!({"operation": "launch", "program": "greet.py", "stdin": "ada\n", "wait_seconds": 120}))
        .await;
    let procs = session_processes(&launched);
    // It waits for its second line, and says so at once (not when the wait ends).
    let text = agent_tools_debug::render(&launched);
    assert!(
        matches!(run_state(&launched), RunState::Running { waiting_for_input: true, .. }),
        "{text}"
    );
    assert!(text.contains("waiting for input on stdin"), "{text}");
    let sent = h.ok(json!({"operation": "input", "stdin": "bob\n"})).await;
    let DebugOutcome::Input(sent) = &sent else { panic!("{sent:?}") };
    let Some(RunState::Stopped(stop)) = &sent.state else { panic!("{sent:?}") };
    assert_eq!(stop.frame.as_ref().and_then(|f| f.line), Some(7));
    assert_eq!(local(stop, "second").as_deref(), Some("'bob'"));
    assert!(h.all_output().await.contains("hello ada"));
    h.ok(json!({"operation": "terminate"})).await;
    assert_gone(&procs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn honest_states_evaluate_while_running_syntax_errors_thread_names_and_terminate() {
    let Some((_project, h)) = debugpy_harness("python", config()) else { return };
    let launched =
        h.ok(json!({"operation": "launch", "program": "loop.py", "wait_seconds": 1})).await;
    let procs = session_processes(&launched);
    let running = h.err(json!({"operation": "evaluate", "expression": "count"})).await;
    assert!(running.contains("the program is running") && running.contains("pause"), "{running}");
    h.ok(json!({"operation": "pause"})).await;
    let bad = h.err(json!({"operation": "evaluate", "expression": "count +"})).await;
    assert!(bad.contains("SyntaxError"), "{bad}");
    assert!(bad.len() < 400 && !bad.contains("pydevd"), "{bad}");
    // scopes without frame_id: the current frame.
    let scopes = h.ok(json!({"operation": "scopes"})).await;
    assert!(matches!(scopes, DebugOutcome::Scopes { ref scopes, .. } if !scopes.is_empty()));
    let DebugOutcome::Terminated(report) = h.ok(json!({"operation": "terminate"})).await else {
        panic!()
    };
    let text = agent_tools_debug::render(&DebugOutcome::Terminated(report.clone()));
    assert_eq!(report.exit_code, None, "{text}");
    assert!(text.contains("terminate ended it") && !text.contains("247"), "{text}");
    assert_gone(&procs);

    h.ok(json!({"operation": "breakpoints", "file": "worker.py", "lines": [7]})).await;
    let launched = h.ok(json!({"operation": "launch", "program": "worker.py"})).await;
    let procs = session_processes(&launched);
    let stop = stopped(&launched);
    assert_eq!(stop.thread.as_ref().map(|t| t.name.as_str()), Some("worker-2"));
    let set = h
        .ok(json!({"operation": "set_variable", "reference": stop.locals_reference.unwrap(), "name": "total", "expression": "40"}))
        .await;
    assert!(matches!(&set, DebugOutcome::SetVariable(v) if v.value == "40"), "{set:?}");
    assert_eq!(h.evaluate("total + 2").await, "42");
    h.ok(json!({"operation": "terminate"})).await;
    assert_gone(&procs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_console_script_of_the_project_environment_is_launched_by_name() {
    let Some((project, h)) = debugpy_harness("python", config()) else { return };
    let python = python_with_debugpy().unwrap();
    let script = project.write(
        ".venv/bin/hello",
        &format!(
            "#!{}\nimport sys\n\n\ndef main():\n    name = 'world'\n    print(f'hello {{name}}')\n    return 4\n\n\nsys.exit(main())\n",
            python.display()
        ),
    );
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    h.ok(json!({"operation": "breakpoints", "file": ".venv/bin/hello", "lines": [7]})).await;
    let launched = h.ok(json!({"operation": "launch", "program": "hello"})).await;
    let procs = session_processes(&launched);
    let stop = stopped(&launched);
    assert_eq!(
        local(stop, "name").as_deref(),
        Some("'world'"),
        "{}",
        agent_tools_debug::render(&launched)
    );
    assert_eq!(h.continue_to_exit().await, Some(4));
    h.ok(json!({"operation": "terminate"})).await;
    assert_gone(&procs);
}
