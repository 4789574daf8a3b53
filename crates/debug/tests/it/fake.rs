//! Dart and the rare paths, through the scripted fake adapter that speaks real DAP: a Dart
//! session end to end, uncaught exceptions, an adapter that crashes mid-session, one that never
//! sends `initialized`, a `stopped` event before the step's reply, huge values and paging,
//! reverse requests, an adapter that ignores SIGTERM with a debuggee in its own group, serialised
//! calls, the output cursor, `adapters`, and the rendered snapshot.

use crate::support;

use std::path::PathBuf;

use agent_tools_debug::{AdapterCommands, DebugConfig, DebugOutcome, RunState, SearchEnv};
use agent_tools_support::process::KnownProcess;
use serde_json::{Value, json};
use support::*;

const MAIN_DART: &str = "void main() {\n  var total = 0;\n  for (var v in [2, 4, 6]) {\n    total += v;\n  }\n  print('total=$total');\n  var count = 2;\n  print(total ~/ count);\n}\n";

/// A Dart project whose `dart` is the fake adapter running `script` (merged over a default
/// program), with `config` changes applied.
fn check(extra: Value, config: DebugConfig) -> (Project, Harness, PathBuf) {
    check_wrapped(extra, config, |argv| argv)
}

/// [`check`], with the adapter's command line passed through `wrap`.
fn check_wrapped(
    extra: Value,
    config: DebugConfig,
    wrap: impl FnOnce(Vec<String>) -> Vec<String>,
) -> (Project, Harness, PathBuf) {
    let project = Project::empty();
    project.write("pubspec.yaml", "name: buggy\n");
    project.write("bin/main.dart", MAIN_DART);
    let mut script = json!({
        "source": "bin/main.dart",
        "trace": [
            {"line": 2, "name": "main", "locals": {}},
            {"line": 3, "name": "main", "locals": {"total": "0"}},
            {"line": 4, "name": "main", "locals": {"total": "0", "v": "2"}},
            {"line": 6, "name": "main", "locals": {"total": "12"}, "output": "total=12\n"},
            {"line": 7, "name": "main", "locals": {"total": "12"}},
            {"line": 8, "name": "main", "locals": {"total": "12", "count": "2"}, "output": "6\n", "stderr": "warning: integer division\n"},
        ],
        "exit_code": 3,
        "log": project.root.join("fake.log").display().to_string(),
    });
    if let (Some(base), Some(extra)) = (script.as_object_mut(), extra.as_object()) {
        base.extend(extra.clone());
    }
    let script_path = project.write("fake-script.json", &script.to_string());
    let fake = env!("CARGO_BIN_EXE_agent-tools-fake-dap").to_string();
    let config = DebugConfig {
        commands: AdapterCommands {
            dart: Some(wrap(vec![fake, "debug_adapter".into(), script_path.display().to_string()])),
            ..Default::default()
        },
        ..config
    };
    let harness = Harness::with_env(&project.root, config, SearchEnv::default());
    let log = project.root.join("fake.log");
    (project, harness, log)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dart_session_end_to_end() {
    let (_p, h, _) = check(json!({}), config());
    // Line 5 has no code: the breakpoint lands on line 6 and says so.
    let pending =
        h.ok(json!({"operation": "breakpoints", "file": "bin/main.dart", "lines": [5]})).await;
    assert!(matches!(&pending, DebugOutcome::Breakpoints(b) if b.pending));
    let launched = h.ok(json!({"operation": "launch", "program": "bin/main.dart"})).await;
    let procs = session_processes(&launched);
    let DebugOutcome::Started(started) = &launched else { unreachable!() };
    assert_eq!(started.session.adapter.id(), "dart");
    assert_eq!(started.breakpoints[0].requested, 5);
    assert_eq!(started.breakpoints[0].line, Some(6));
    assert!(started.breakpoints[0].verified);
    assert_eq!(started.exception_filters, ["Unhandled"]);
    let stop = stopped(&launched);
    assert_eq!(stop.frame.as_ref().unwrap().line, Some(6));
    assert_eq!(stop.locals[0].name, "total");
    assert_eq!(stop.locals[0].value, "12");
    // The SDK frame is marked and skipped in favour of the user's.
    let text = agent_tools_debug::render(&launched);
    assert!(
        text.contains(
            "_startIsolate at /sdk/lib/isolate/isolate_patch.dart:300  [frame_id 2] (library)"
        ),
        "{text}"
    );

    let eval = h.ok(json!({"operation": "evaluate", "expression": "total"})).await;
    let DebugOutcome::Evaluate(eval) = eval else { panic!() };
    assert_eq!(eval.result.value, "12");
    let bad = h.err(json!({"operation": "evaluate", "expression": "nope"})).await;
    assert!(bad.contains("evaluating `nope` failed: Undefined name 'nope'."), "{bad}");

    let step = h.ok(json!({"operation": "step_over"})).await;
    let step = stopped(&step);
    assert_eq!((step.reason.as_str(), step.stop), ("step", 2));
    assert_eq!(step.output.text(), "total=12\n");
    let done = h.ok(json!({"operation": "continue"})).await;
    let RunState::Exited { exit_code, output, .. } = run_state(&done) else { panic!("{done:?}") };
    assert_eq!(*exit_code, Some(3));
    assert!(output.text().contains("6\n") && output.text().contains("warning: integer division"));
    h.ok(json!({"operation": "terminate"})).await;
    assert_gone(&procs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_uncaught_exception_stops_by_default_and_not_with_none() {
    let exception =
        json!({"exception": {"at": 4, "id": "StateError", "description": "Bad state: no element"}});
    let (_p, h, _) = check(exception.clone(), config());
    let launched = h.ok(json!({"operation": "launch", "program": "bin/main.dart"})).await;
    let stop = stopped(&launched);
    assert_eq!(stop.reason, "exception");
    let e = stop.exception.clone().unwrap();
    assert_eq!(e.id.as_deref(), Some("StateError"));
    assert_eq!(e.description.as_deref(), Some("Bad state: no element"));
    assert_eq!(e.break_mode.as_deref(), Some("unhandled"));
    let text = agent_tools_debug::render(&launched);
    assert!(text.contains("Stopped (stop 1): exception StateError: Bad state: no element (unhandled) in main at bin/main.dart:7"), "{text}");
    h.ok(json!({"operation": "terminate"})).await;

    let (_p, h, _) = check(exception, config());
    let launched = h
        .ok(json!({"operation": "launch", "program": "bin/main.dart", "exceptions": "none"}))
        .await;
    let RunState::Exited { exit_code, output, .. } = run_state(&launched) else {
        panic!("{launched:?}")
    };
    assert_eq!(*exit_code, Some(255));
    assert!(output.text().contains("Unhandled exception"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_adapter_that_crashes_mid_session_is_reported_and_cleaned_up() {
    let (_p, h, _) = check(json!({"quirks": {"crash_on": "next"}}), config());
    h.ok(json!({"operation": "breakpoints", "file": "bin/main.dart", "lines": [6]})).await;
    let launched = h.ok(json!({"operation": "launch", "program": "bin/main.dart"})).await;
    let procs = session_processes(&launched);
    stopped(&launched);
    let step = h.ok(json!({"operation": "step_over"})).await;
    let RunState::AdapterGone { reason, .. } = run_state(&step) else { panic!("{step:?}") };
    assert!(reason.starts_with("the adapter ended unexpectedly"), "{reason}");
    assert!(reason.contains("exit code 3"), "{reason}");
    assert!(reason.contains("fake-dap: crashing on purpose at `next`"), "{reason}");
    let status = h.ok(json!({"operation": "status"})).await;
    let text = agent_tools_debug::render(&status);
    assert!(text.contains("The adapter is gone"), "{text}");
    let again = h.err(json!({"operation": "stack"})).await;
    assert!(again.contains("the adapter is gone"), "{again}");
    let DebugOutcome::Terminated(report) = h.ok(json!({"operation": "terminate"})).await else {
        panic!()
    };
    assert!(report.steps.iter().any(|s| s.contains("exit code 3")), "{report:?}");
    assert_gone(&procs);
    // A new launch works after the crash was cleaned up.
    let (_p2, h2, _) = check(json!({}), config());
    h2.ok(json!({"operation": "launch", "program": "bin/main.dart"})).await;
    h2.ok(json!({"operation": "terminate"})).await;
}

/// `cargo xtask soak` found it: lldb-dap, aborting at its exit, left `symbolizer-*` files in
/// the host's temp folder when it was killed. An adapter's TMPDIR is now its session's own
/// folder, removed with the session: a file an adapter leaves there before it crashes is gone
/// after `terminate`, and nothing lands in the host's temp folder.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_crashed_adapter_leaves_in_its_temp_folder_goes_with_the_session() {
    let name = format!("left-by-the-adapter-{}", std::process::id());
    let left = format!("echo left > \"${{TMPDIR:-/tmp}}/{name}\"; exec \"$0\" \"$@\"");
    let wrap = |argv: Vec<String>| [vec!["sh".to_string(), "-c".into(), left], argv].concat();
    let (_p, h, _) = check_wrapped(json!({"quirks": {"crash_on": "next"}}), config(), wrap);
    h.ok(json!({"operation": "breakpoints", "file": "bin/main.dart", "lines": [6]})).await;
    let launched = h.ok(json!({"operation": "launch", "program": "bin/main.dart"})).await;
    stopped(&launched);
    let step = h.ok(json!({"operation": "step_over"})).await;
    assert!(matches!(run_state(&step), RunState::AdapterGone { .. }), "{step:?}");
    h.ok(json!({"operation": "terminate"})).await;
    let in_host_temp = std::env::temp_dir().join(&name);
    assert!(!in_host_temp.exists(), "the adapter wrote into the host's temp folder");
    let anywhere = walk_names(&std::env::temp_dir(), &name);
    assert!(anywhere.is_empty(), "left after the session: {anywhere:?}");
}

/// Every path under `dir` (two levels deep) whose file name is `name`.
fn walk_names(dir: &std::path::Path, name: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if entry.file_name() == name {
            found.push(entry.path());
        }
        for inner in std::fs::read_dir(entry.path()).into_iter().flatten().flatten() {
            if inner.file_name() == name {
                found.push(inner.path());
            }
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_adapter_that_never_sends_initialized_fails_the_launch_within_its_bound() {
    let (_p, h, _) = check(
        json!({"quirks": {"never_initialized": true}}),
        DebugConfig { launch_timeout_seconds: 2, ..config() },
    );
    let err = h.err(json!({"operation": "launch", "program": "bin/main.dart"})).await;
    assert!(err.contains("never sent `initialized` within 2 s of `launch`"), "{err}");
    let DebugOutcome::Status(s) = h.ok(json!({"operation": "status"})).await else { panic!() };
    assert!(s.session.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_launch_says_why() {
    let (_p, h, _) = check(
        json!({"quirks": {"launch_error": "Build failed: bin/main.dart:3: Expected ';'"}}),
        config(),
    );
    let err = h.err(json!({"operation": "launch", "program": "bin/main.dart"})).await;
    assert!(err.contains("`launch` failed: Build failed: bin/main.dart:3: Expected ';'"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_before_the_step_reply_is_the_step_stop() {
    let (_p, h, _) = check(json!({"quirks": {"stopped_before_reply": true}}), config());
    h.ok(json!({"operation": "breakpoints", "file": "bin/main.dart", "lines": [3]})).await;
    let launched = h.ok(json!({"operation": "launch", "program": "bin/main.dart"})).await;
    assert_eq!(stopped(&launched).stop, 1);
    for expected in 2..=4 {
        let step = h.ok(json!({"operation": "step_over"})).await;
        let stop = stopped(&step);
        assert_eq!((stop.reason.as_str(), stop.stop), ("step", expected));
    }
    h.ok(json!({"operation": "terminate"})).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huge_values_are_cut_and_children_are_paged() {
    let (_p, h, _) = check(json!({"quirks": {"huge_value": 100000}}), config());
    h.ok(json!({"operation": "breakpoints", "file": "bin/main.dart", "lines": [6]})).await;
    let launched = h.ok(json!({"operation": "launch", "program": "bin/main.dart"})).await;
    let stop = stopped(&launched);
    let huge = stop.locals.iter().find(|v| v.name == "huge").unwrap();
    assert_eq!(huge.value.len(), 400);
    assert_eq!(huge.cut_chars, 100000 - 400);
    let many = stop.locals.iter().find(|v| v.name == "many").unwrap();
    assert_eq!(many.children, Some(1000));
    let page = h.ok(json!({"operation": "variables", "reference": many.reference.unwrap()})).await;
    let DebugOutcome::Variables(page) = &page else { panic!() };
    assert_eq!(page.variables.len(), 50);
    assert!(page.has_more);
    let text = agent_tools_debug::render(&DebugOutcome::Variables(page.clone()));
    assert!(
        text.contains(&format!(
            "call variables with reference {} and start 50",
            many.reference.unwrap()
        )),
        "{text}"
    );
    let next = h
        .ok(json!({"operation": "variables", "reference": many.reference.unwrap(), "start": 950}))
        .await;
    let DebugOutcome::Variables(next) = &next else { panic!() };
    assert_eq!(next.variables[0].name, "[950]");
    assert_eq!(next.variables.len(), 50);
    assert!(!next.has_more);
    h.ok(json!({"operation": "terminate"})).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reverse_requests_are_answered_run_in_terminal_runs_and_start_debugging_is_refused() {
    let quirks = json!({"quirks": {
        "run_in_terminal": ["sh", "-c", "echo from-terminal; exec sleep 300"],
        "start_debugging": true,
    }});
    let (_p, h, log) = check(quirks, config());
    h.ok(json!({"operation": "breakpoints", "file": "bin/main.dart", "lines": [6]})).await;
    let launched = h.ok(json!({"operation": "launch", "program": "bin/main.dart"})).await;
    let procs = session_processes(&launched);
    stopped(&launched);
    let mut terminal_pid = None;
    for _ in 0..200 {
        let log = std::fs::read_to_string(&log).unwrap_or_default();
        if log.contains("response runInTerminal") && log.contains("response startDebugging") {
            assert!(log.contains("response runInTerminal success=true"), "{log}");
            assert!(
                log.contains(
                    "response startDebugging success=false message=startDebugging is not supported"
                ),
                "{log}"
            );
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let mut seen = output_text(&launched);
    for _ in 0..200 {
        seen.push_str(&output_text(&h.ok(json!({"operation": "output"})).await));
        if seen.contains("from-terminal") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(seen.contains("from-terminal"), "{seen}");
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let cmd = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let env = std::fs::read(entry.path().join("environ")).unwrap_or_default();
        if cmd.starts_with(b"sleep\x00300") && env.windows(10).any(|w| w == b"FAKE_DAP=1") {
            terminal_pid = KnownProcess::of(pid).filter(|p| procs.iter().all(|q| q.pid != p.pid));
        }
    }
    let terminal = terminal_pid.expect("the runInTerminal child runs");
    h.ok(json!({"operation": "terminate"})).await;
    assert_gone(&procs);
    assert_gone(&[terminal]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_adapter_that_ignores_sigterm_is_killed_and_so_is_its_debuggee_in_another_group() {
    let (_p, h, _) = check(
        json!({"quirks": {"linger": true, "spawn_debuggee": true}}),
        DebugConfig { disconnect_timeout_ms: 300, ..config() },
    );
    h.ok(json!({"operation": "breakpoints", "file": "bin/main.dart", "lines": [6]})).await;
    let launched = h.ok(json!({"operation": "launch", "program": "bin/main.dart"})).await;
    let procs = session_processes(&launched);
    let DebugOutcome::Started(started) = &launched else { unreachable!() };
    let debuggee = KnownProcess::of(started.session.debuggee_pid.unwrap()).unwrap();
    assert!(debuggee.leads_group(), "the fake starts its debuggee in a group of its own");
    let DebugOutcome::Terminated(report) = h.ok(json!({"operation": "terminate"})).await else {
        panic!()
    };
    let adapter = started.session.adapter_pid.unwrap();
    // Both ignored SIGTERM: the tree's teardown killed them, the debuggee through its lineage.
    assert!(report.killed.iter().any(|k| k.contains(&format!("pid {adapter} "))), "{report:?}");
    assert!(
        report.killed.iter().any(|k| k.contains(&format!("pid {} ", debuggee.pid))),
        "{report:?}"
    );
    assert_gone(&procs);
    assert_gone(&[debuggee]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_run_end_shuts_down_every_session() {
    let (_p, h, _) = check(json!({"quirks": {"spawn_debuggee": true}}), config());
    h.ok(json!({"operation": "breakpoints", "file": "bin/main.dart", "lines": [6]})).await;
    let launched = h.ok(json!({"operation": "launch", "program": "bin/main.dart"})).await;
    let procs = session_processes(&launched);
    let reports = h.debug.shutdown().await;
    assert_eq!(reports.len(), 1);
    assert_eq!(reports[0].reason, "the run ended");
    assert_gone(&procs);
    let err = h.err(json!({"operation": "launch", "program": "bin/main.dart"})).await;
    assert!(err.contains("the run is ending"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_are_serialised_and_stale_ids_are_refused() {
    let (_p, h, _) = check(json!({}), config());
    h.ok(json!({"operation": "breakpoints", "file": "bin/main.dart", "lines": [3, 7]})).await;
    let launched = h.ok(json!({"operation": "launch", "program": "bin/main.dart"})).await;
    let first = stopped(&launched).frame.clone().unwrap();
    let h = std::sync::Arc::new(h);
    let (a, b) = (h.clone(), h.clone());
    let cont = tokio::spawn(async move { a.ok(json!({"operation": "continue"})).await });
    let stack = tokio::spawn(async move { b.ok(json!({"operation": "stack"})).await });
    let (cont, stack) = (cont.await.unwrap(), stack.await.unwrap());
    assert_eq!(stopped(&cont).stop, 2);
    let DebugOutcome::Stack(stack) = stack else { panic!() };
    // Whichever ran first, the stack belongs to a stop, never to a program in motion.
    assert!(stack.stop == 1 || stack.stop == 2);
    assert!(!stack.frames.is_empty());
    let err = h.err(json!({"operation": "scopes", "frame_id": first.frame_id})).await;
    assert!(err.starts_with("stale reference from stop 1; the program has moved"), "{err}");
    let err = h.err(json!({"operation": "variables", "reference": 999})).await;
    assert!(err.starts_with("unknown reference 999"), "{err}");
    h.ok(json!({"operation": "terminate"})).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_has_a_cursor_and_a_new_launch_is_allowed_after_the_exit() {
    let (_p, h, _) = check(json!({}), config());
    let launched = h.ok(json!({"operation": "launch", "program": "bin/main.dart"})).await;
    assert!(matches!(run_state(&launched), RunState::Exited { .. }));
    let again = h.ok(json!({"operation": "output"})).await;
    assert_eq!(output_text(&again), "", "already delivered with the exit");
    let all = h.ok(json!({"operation": "output", "since": 0})).await;
    assert!(output_text(&all).contains("total=12"));
    // The program ended: a new launch replaces the finished session instead of being refused.
    let relaunched = h.ok(json!({"operation": "launch", "program": "bin/main.dart"})).await;
    assert!(matches!(run_state(&relaunched), RunState::Exited { exit_code: Some(3), .. }));
    h.ok(json!({"operation": "terminate"})).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adapters_say_what_is_usable_and_why_not() {
    let (_p, h, _) = check(json!({}), config());
    let outcome = h.ok(json!({"operation": "adapters"})).await;
    let DebugOutcome::Adapters { adapters } = &outcome else { panic!() };
    let ids: Vec<&str> = adapters.iter().map(|a| a.adapter.id()).collect();
    assert_eq!(ids, ["dart", "debugpy", "lldb", "delve"]);
    assert!(adapters[0].usable, "{:?}", adapters[0]);
    assert_eq!(adapters[0].marker.as_deref(), Some("pubspec.yaml"));
    assert!(adapters[0].version.as_deref().unwrap_or_default().contains("Dart SDK version"));
    // An empty PATH: nothing else is found, and each says how to get it.
    for a in &adapters[1..] {
        assert!(!a.usable);
        assert!(a.problems.iter().any(|p| p.contains("no marker")), "{a:?}");
    }
    let text = agent_tools_debug::render(&outcome);
    assert!(text.contains("lldb: not usable"), "{text}");
    assert!(text.contains("install: install debugpy into the project's environment"), "{text}");
    assert!(text.contains("no Python found"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paths_outside_the_root_and_missing_arguments_are_refused_clearly() {
    let (_p, h, _) = check(json!({}), config());
    let err =
        h.err(json!({"operation": "breakpoints", "file": "/etc/hostname", "lines": [1]})).await;
    assert!(err.contains("is outside the project root"), "{err}");
    let err = h.err(json!({"operation": "launch"})).await;
    assert!(err.contains("launch needs `program`"), "{err}");
    let err = h.err(json!({"operation": "scopes"})).await;
    assert!(err.contains("no debug session"), "{err}");
    let err = h.err(json!({"operation": "attach", "adapter": "debugpy"})).await;
    assert!(err.contains("attach needs `port`") && err.contains("debugpy --listen"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stop_snapshot_reads_well() {
    let (_p, h, _) = check(json!({}), config());
    h.ok(json!({"operation": "breakpoints", "file": "bin/main.dart", "lines": [6, 8]})).await;
    h.ok(json!({"operation": "launch", "program": "bin/main.dart"})).await;
    let next = h.ok(json!({"operation": "continue"})).await;
    insta::assert_snapshot!(agent_tools_debug::render(&next), @r#"
    Stopped (stop 2): breakpoint in main at bin/main.dart:8, thread 1 "main"
      5    }
      6    print('total=$total');
      7    var count = 2;
    > 8    print(total ~/ count);
      9  }
    Locals of main [frame_id 4, reference 6]:
      count: int = 2
      total: int = 12
    Stack (top 2):
      #0 main at bin/main.dart:8  [frame_id 4]
      #1 _startIsolate at /sdk/lib/isolate/isolate_patch.dart:300  [frame_id 5] (library)
    Output since the last call:
      total=12
    "#);
    h.ok(json!({"operation": "terminate"})).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_supervisor_dropped_without_shutdown_still_leaves_no_process() {
    let (_p, h, _) = check(json!({"quirks": {"linger": true, "spawn_debuggee": true}}), config());
    h.ok(json!({"operation": "breakpoints", "file": "bin/main.dart", "lines": [6]})).await;
    let launched = h.ok(json!({"operation": "launch", "program": "bin/main.dart"})).await;
    let procs = session_processes(&launched);
    assert!(procs.len() >= 2, "the adapter and its debuggee in another group: {procs:?}");
    drop(h);
    assert_gone(&procs);
}
