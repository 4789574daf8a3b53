//! debugpy's breakpoints beyond the first stop: a breakpoint hit between calls, per-line
//! conditions, hit counts and log messages in one file, and breakpoints in the project's venv
//! libraries (also through a symlinked venv) and under just-my-code.

use crate::support;

use std::{process::Command, time::Duration};

use agent_tools_debug::{DebugOutcome, RunState, SearchEnv};
use serde_json::json;
use support::*;

/// Sends `GET path` to the local `port` on a thread of its own; its reply when it comes.
fn http_get(port: u16, path: &str) -> std::thread::JoinHandle<String> {
    let path = path.to_string();
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
        write!(stream, "GET {path} HTTP/1.0\r\n\r\n").unwrap();
        let mut reply = String::new();
        let _ = stream.read_to_string(&mut reply);
        reply
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_breakpoint_hit_between_calls_is_reported_by_the_next_call_and_by_status() {
    let Some((_project, h)) = debugpy_harness("python", config()) else { return };
    h.ok(json!({"operation": "breakpoints", "file": "server.py", "lines": [7]})).await;
    let launched =
        h.ok(json!({"operation": "launch", "program": "server.py", "wait_seconds": 1})).await;
    let procs = session_processes(&launched);
    assert!(matches!(run_state(&launched), RunState::Running { .. }), "{launched:?}");
    let mut port = None;
    for _ in 0..600 {
        port = h.all_output().await.lines().find_map(|l| l.strip_prefix("port ")?.parse().ok());
        if port.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let port: u16 = port.expect("the server printed its port");

    // The request arrives while no call waits; the next call (whatever it is) starts with it.
    let first = http_get(port, "/hello");
    let mut meanwhile = None;
    for _ in 0..600 {
        let listed = h.ok(json!({"operation": "threads"})).await;
        if let DebugOutcome::StoppedMeanwhile { stop, then } = listed {
            assert!(matches!(*then, DebugOutcome::Threads { .. }), "{then:?}");
            meanwhile = Some(stop);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let stop = meanwhile.expect("the stop between calls was reported");
    let text = agent_tools_debug::render(&DebugOutcome::StoppedMeanwhile {
        stop: stop.clone(),
        then: Box::new(DebugOutcome::Threads { threads: Vec::new(), more: 0 }),
    });
    assert_eq!(stop.reason, "breakpoint", "{text}");
    let frame = stop.frame.clone().expect("the handler's frame");
    assert_eq!((frame.name.as_str(), frame.line), ("do_GET", Some(7)), "{text}");
    assert!(local(&stop, "self").is_some(), "{text}");
    assert!(text.contains("while no call was waiting"), "{text}");
    // The default frame is the handler's now.
    assert_eq!(h.evaluate("self.path").await, "'/hello'");
    let resumed = h.ok(json!({"operation": "continue", "wait_seconds": 1})).await;
    assert!(matches!(run_state(&resumed), RunState::Running { .. }), "{resumed:?}");
    assert!(first.join().unwrap().contains("you asked for /hello"));

    // `status` shows a stop nobody has seen in full.
    let second = http_get(port, "/again");
    let mut seen = None;
    for _ in 0..600 {
        let DebugOutcome::Status(status) = h.ok(json!({"operation": "status"})).await else {
            panic!()
        };
        if status.state == "stopped" {
            seen = Some(status);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let status = seen.expect("status saw the stop");
    let snapshot = status.snapshot.clone().expect("status shows the whole stop");
    assert_eq!(snapshot.frame.as_ref().map(|f| f.name.as_str()), Some("do_GET"));
    let text = agent_tools_debug::render(&DebugOutcome::Status(status));
    assert!(
        text.contains("breakpoint in do_GET at server.py:7") && text.contains("Locals of do_GET"),
        "{text}"
    );
    assert_eq!(h.evaluate("self.path").await, "'/again'");
    h.ok(json!({"operation": "continue", "wait_seconds": 1})).await;
    assert!(second.join().unwrap().contains("you asked for /again"));
    h.ok(json!({"operation": "terminate"})).await;
    assert_gone(&procs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn breakpoints_in_one_file_keep_their_own_conditions_hit_counts_and_log_messages() {
    let Some((_project, h)) = debugpy_harness("python", config()) else { return };
    let file = "counter.py";
    h.ok(json!({"operation": "breakpoints", "file": file, "lines": [4], "log_message": "seen i={i}"}))
        .await;
    // A second call adds to the file; it does not replace the logpoint.
    h.ok(json!({"operation": "breakpoints", "file": file, "lines": [5], "condition": "i == 7"}))
        .await;
    let set = h
        .ok(json!({"operation": "breakpoints", "file": file, "lines": [6], "hit_condition": "3"}))
        .await;
    let DebugOutcome::Breakpoints(set) = &set else { panic!("{set:?}") };
    let lines: Vec<u32> = set.breakpoints.iter().map(|b| b.requested).collect();
    assert_eq!(lines, [4, 5, 6], "{set:?}");
    let text = agent_tools_debug::render(&DebugOutcome::Breakpoints(set.clone()));
    assert!(
        text.contains("line 4 [logs \"seen i={i}\"]")
            && text.contains("line 5 [if i == 7]")
            && text.contains("line 6 [hits 3]"),
        "{text}"
    );
    let bad = h.err(json!({"operation": "breakpoints", "file": file, "lines": [6], "hit_condition": "often"})).await;
    assert!(bad.contains("hit_condition") && bad.contains("\"3\""), "{bad}");
    let missing = h
        .err(json!({"operation": "breakpoints", "file": file, "lines": [2], "remove": true}))
        .await;
    assert!(
        missing.contains("no breakpoint at line 2") && missing.contains("4, 5, 6"),
        "{missing}"
    );

    let launched = h.ok(json!({"operation": "launch", "program": file})).await;
    let procs = session_processes(&launched);
    let DebugOutcome::Started(started) = &launched else { panic!() };
    assert!(started.breakpoints.iter().all(|b| b.verified), "{:?}", started.breakpoints);
    // Line 6 from its third hit on: i = 2.
    let stop = stopped(&launched);
    assert_eq!(stop.frame.as_ref().and_then(|f| f.line), Some(6));
    assert_eq!(local(stop, "i").as_deref(), Some("2"));
    // Removed on its own: the others hold.
    let removed =
        h.ok(json!({"operation": "breakpoints", "file": file, "lines": [6], "remove": true})).await;
    let DebugOutcome::Breakpoints(removed) = &removed else { panic!() };
    assert_eq!(removed.breakpoints.iter().map(|b| b.requested).collect::<Vec<_>>(), [4, 5]);
    let listed = h.ok(json!({"operation": "breakpoints"})).await;
    let DebugOutcome::Breakpoints(listed) = &listed else { panic!() };
    assert_eq!(listed.breakpoints.len(), 2, "{listed:?}");
    assert!(listed.breakpoints.iter().all(|b| b.verified && b.file == file), "{listed:?}");
    let hit = h.ok(json!({"operation": "continue"})).await;
    let stop = stopped(&hit);
    assert_eq!(stop.frame.as_ref().and_then(|f| f.line), Some(5));
    assert_eq!(local(stop, "i").as_deref(), Some("7"));
    assert_eq!(h.continue_to_exit().await, Some(0));
    let out = h.all_output().await;
    assert!(
        out.contains("seen i=0") && out.contains("seen i=9"),
        "the logpoint kept logging: {out}"
    );
    h.ok(json!({"operation": "terminate"})).await;
    assert_gone(&procs);
}

/// A real virtual environment of `python` at `at` (no pip), with `mylib` in its site-packages;
/// the site-packages folder relative to the environment.
fn venv_with_a_library(python: &std::path::Path, at: &std::path::Path) -> String {
    let made = Command::new(python)
        .args(["-m", "venv", "--without-pip"])
        .arg(at)
        .status()
        .is_ok_and(|s| s.success());
    assert!(made, "python -m venv failed");
    let out = Command::new(python)
        .args(["-c", "import sys; print(f'python{sys.version_info[0]}.{sys.version_info[1]}')"])
        .output()
        .unwrap();
    let site = format!("lib/{}/site-packages", String::from_utf8_lossy(&out.stdout).trim());
    std::fs::write(
        at.join(&site).join("mylib.py"),
        "def shout(word):\n    loud = word.upper()\n    return loud + '!'\n",
    )
    .unwrap();
    site
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_breakpoint_in_the_project_venv_stops_there_also_through_a_symlinked_venv() {
    let Some(python) = python_with_debugpy() else {
        require("debugpy (in the test venv)", false, "run `cargo xtask setup`");
        return;
    };
    for symlinked in [false, true] {
        let project = Project::copy("python");
        project.write("uses_lib.py", "import mylib\n\nprint(mylib.shout('ada'))\n");
        let elsewhere = tempfile::tempdir().unwrap();
        let site = if symlinked {
            let real = elsewhere.path().join("env");
            let site = venv_with_a_library(&python, &real);
            std::os::unix::fs::symlink(&real, project.root.join(".venv")).unwrap();
            site
        } else {
            venv_with_a_library(&python, &project.root.join(".venv"))
        };
        // The project's interpreter has no debugpy: the adapter runs on the test venv's.
        let env = SearchEnv {
            path: vec![python.parent().unwrap().to_path_buf()],
            ..SearchEnv::default()
        };
        let h = Harness::with_env(&project.root, config(), env);
        let file = format!(".venv/{site}/mylib.py");
        h.ok(json!({"operation": "breakpoints", "file": file, "lines": [3]})).await;
        let launched = h.ok(json!({"operation": "launch", "program": "uses_lib.py"})).await;
        let procs = session_processes(&launched);
        let text = agent_tools_debug::render(&launched);
        let DebugOutcome::Started(started) = &launched else { panic!() };
        assert!(started.breakpoints[0].verified, "symlinked {symlinked}: {text}");
        assert!(text.contains("justMyCode is off"), "symlinked {symlinked}: {text}");
        let stop = stopped(&launched);
        let frame = stop.frame.clone().expect("the library frame");
        assert_eq!((frame.name.as_str(), frame.line), ("shout", Some(3)), "{text}");
        assert!(frame.library, "{text}");
        assert_eq!(local(stop, "loud").as_deref(), Some("'ADA'"), "{text}");
        h.ok(json!({"operation": "terminate"})).await;
        assert_gone(&procs);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_library_breakpoint_set_during_a_just_my_code_session_says_how_to_reach_it() {
    let Some((_project, h)) = debugpy_harness("python", config()) else { return };
    let decoder = json_decoder_source();
    h.ok(json!({"operation": "breakpoints", "file": "loop.py", "lines": [6]})).await;
    let launched = h.ok(json!({"operation": "launch", "program": "loop.py"})).await;
    let procs = session_processes(&launched);
    stopped(&launched);
    let set = h.ok(json!({"operation": "breakpoints", "file": decoder, "lines": [337]})).await;
    let DebugOutcome::Breakpoints(set) = &set else { panic!("{set:?}") };
    let text = agent_tools_debug::render(&DebugOutcome::Breakpoints(set.clone()));
    // debugpy refuses it under justMyCode; the reply says why and what reaches it.
    let placed = &set.breakpoints[0];
    assert!(!placed.verified, "{text}");
    assert!(placed.message.as_deref().is_some_and(|m| m.contains("`launch` again")), "{text}");
    h.ok(json!({"operation": "terminate"})).await;
    assert_gone(&procs);
}
