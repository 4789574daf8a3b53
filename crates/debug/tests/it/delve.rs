//! delve (`dlv dap`) for real on a Go module: the whole scenario, the port dlv prints, the
//! program's output from dlv's own stdout, the exit code delve only prints at disconnect, the
//! build output in our temp folder, and no process left after terminate or the time limit.

use crate::support;

use agent_tools_debug::{
    DebugConfig, DebugOutcome, RunState,
    adapters::{SearchEnv, delve_candidates},
};
use serde_json::json;
use support::*;

pub(crate) fn check(config: DebugConfig) -> Option<(Project, Harness)> {
    let env = SearchEnv::from_process();
    let found = !delve_candidates(&env).is_empty() && env.which("go").is_some();
    if !require(
        "delve and Go",
        found,
        "`apt-get install delve golang-go` (or run `cargo xtask setup`)",
    ) {
        return None;
    }
    let project = Project::copy("go");
    // A cold `go build` takes seconds on this machine; be generous (it is a bound, not a target).
    let config = DebugConfig { stop_wait_seconds: 120, launch_timeout_seconds: 300, ..config };
    let harness = Harness::new(&project.root, config);
    Some((project, harness))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn go_breakpoint_launch_inspect_step_and_run_to_the_exit_code() {
    let Some((project, h)) = check(config()) else { return };
    h.ok(json!({"operation": "breakpoints", "file": "main.go", "lines": [15]})).await;
    let launched = h.ok(json!({"operation": "launch", "program": "."})).await;
    let procs = session_processes(&launched);
    let stop = stopped_at_breakpoint(&launched, "main.average", "main.go", 15);
    assert_eq!(local(stop, "total").as_deref(), Some("12"));
    assert_eq!(local(stop, "count").as_deref(), Some("2"));
    // delve's thread ids are goroutine ids: the stop names its goroutine.
    let thread = stop.thread.as_ref().expect("the stopped thread");
    assert_eq!(thread.name, format!("goroutine {}", thread.id));
    // The program's output arrives through dlv's own stdout.
    assert!(stop.output.text().contains("computing the average of numbers"), "{:?}", stop.output);

    let stack = h.ok(json!({"operation": "stack"})).await;
    let DebugOutcome::Stack(stack) = &stack else { panic!() };
    assert_eq!(stack.frames[0].name, "main.average");
    assert_eq!(stack.frames[1].name, "main.main");
    let scopes = h.ok(json!({"operation": "scopes", "frame_id": stack.frames[0].frame_id})).await;
    let DebugOutcome::Scopes { scopes, .. } = &scopes else { panic!() };
    let vars = h.variables(scopes[0].reference).await;
    let values = vars.iter().find(|v| v.name == "values").expect("values");
    let elems = h.variables(values.reference.unwrap()).await;
    let shown: Vec<&str> = elems.iter().map(|v| v.value.as_str()).collect();
    assert_eq!(shown, ["2", "4", "6"]);
    assert_eq!(h.evaluate("total * 2").await, "24");

    let step = h.ok(json!({"operation": "step_over"})).await;
    assert_eq!(stopped(&step).reason, "step");
    let again = h.err(json!({"operation": "launch", "program": "."})).await;
    assert!(again.contains("already running"), "{again}");

    let exit_code = h.continue_to_exit().await;
    assert_eq!(exit_code, Some(3), "delve prints the status only at disconnect");
    let all = h.all_output().await;
    assert!(all.contains("average=6") && all.contains("to stderr"), "{all}");

    h.ok(json!({"operation": "terminate"})).await;
    assert_gone(&procs);
    assert!(!project.root.join("__debug_bin").exists(), "the build output goes to our temp folder");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminate_while_stopped_kills_the_debuggee_in_its_own_group() {
    let Some((_project, h)) = check(config()) else { return };
    h.ok(json!({"operation": "breakpoints", "file": "main.go", "lines": [15]})).await;
    let launched = h.ok(json!({"operation": "launch", "program": "main.go"})).await;
    let procs = session_processes(&launched);
    stopped(&launched);
    assert!(procs.len() >= 2, "dlv and the program: {procs:?}");
    let DebugOutcome::Terminated(report) = h.ok(json!({"operation": "terminate"})).await else {
        panic!()
    };
    assert!(report.steps.iter().any(|s| s.starts_with("disconnect")), "{report:?}");
    assert_gone(&procs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_time_limit_ends_a_delve_session() {
    // The limit counts from the end of the launch, so a cold `go build` does not eat into it.
    let Some((_project, h)) = check(DebugConfig { ttl_seconds: 5, ..config() }) else { return };
    h.ok(json!({"operation": "breakpoints", "file": "main.go", "lines": [15]})).await;
    let launched = h.ok(json!({"operation": "launch", "program": "."})).await;
    let procs = session_processes(&launched);
    let ended = h.wait_until_ended().await;
    assert!(ended.expect("ended").contains("time limit"));
    assert_gone(&procs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_stops_the_program_with_its_message() {
    let Some((_project, h)) = check(config()) else { return };
    let launched = h.ok(json!({"operation": "launch", "program": "crash"})).await;
    let procs = session_processes(&launched);
    let stop = stopped(&launched);
    assert_eq!(stop.reason, "exception");
    let text = agent_tools_debug::render(&launched);
    assert!(text.contains("index out of range"), "{text}");
    // The runtime's panic frames are skipped: the user frame is where the bad index is used.
    assert_eq!(
        stop.frame.as_ref().map(|f| (f.name.as_str(), f.line)),
        Some(("main.pick", Some(7))),
        "{text}"
    );
    h.ok(json!({"operation": "terminate"})).await;
    assert_gone(&procs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_started_child_that_outlives_the_program_is_gone_after_terminate() {
    let Some((_project, h)) = check(config()) else { return };
    let (_launched, child) = h.launch_forker("forker").await;
    h.ok(json!({"operation": "terminate"})).await;
    assert_gone(&[child]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_without_newline_is_shown_and_stop_on_entry_stops_in_main() {
    let Some((_project, h)) = check(config()) else { return };
    h.ok(json!({"operation": "breakpoints", "file": "prompt/main.go", "lines": [9]})).await;
    let launched =
        h.ok(json!({"operation": "launch", "program": "prompt", "stop_on_entry": true})).await;
    let procs = session_processes(&launched);
    let text = agent_tools_debug::render(&launched);
    let stop = stopped(&launched);
    assert_eq!(stop.frame.as_ref().map(|f| f.name.as_str()), Some("main.main"), "{text}");
    assert!(text.contains("stop_on_entry with delve"), "{text}");
    let next = h.ok(json!({"operation": "continue"})).await;
    let stop = stopped(&next);
    assert_eq!(stop.frame.as_ref().and_then(|f| f.line), Some(9));
    assert!(h.all_output().await.contains("prompt> "), "{}", agent_tools_debug::render(&next));
    h.ok(json!({"operation": "terminate"})).await;
    assert_gone(&procs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_go_test_is_debugged_through_the_test_mode() {
    let Some((_project, h)) = check(config()) else { return };
    h.ok(json!({"operation": "breakpoints", "file": "calc/calc_test.go", "lines": [17]})).await;
    let launched =
        h.ok(json!({"operation": "launch", "test": "TestMean", "program": "calc"})).await;
    let procs = session_processes(&launched);
    let stop = stopped(&launched);
    assert_eq!(
        local(stop, "got").as_deref(),
        Some("2"),
        "{}",
        agent_tools_debug::render(&launched)
    );
    h.ok(json!({"operation": "terminate"})).await;
    assert_gone(&procs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attach_by_pid_to_a_go_program() {
    let Some((project, h)) = check(config()) else { return };
    let binary = project.root.join("waiter-bin");
    let built = std::process::Command::new("go")
        .args(["build", "-gcflags=all=-N -l", "-o"])
        .arg(&binary)
        .arg("./waiter")
        .current_dir(&project.root)
        .status()
        .expect("go build");
    assert!(built.success());
    let mut target = std::process::Command::new(&binary).spawn().expect("start the target");
    let attached =
        h.ok(json!({"operation": "attach", "pid": target.id(), "adapter": "delve"})).await;
    let text = agent_tools_debug::render(&attached);
    assert!(text.contains("Attached to"), "{text}");
    let paused = h.ok(json!({"operation": "pause"})).await;
    assert_eq!(stopped(&paused).reason, "pause", "{}", agent_tools_debug::render(&paused));
    h.ok(json!({"operation": "terminate"})).await;
    let _ = target.kill();
    let _ = target.wait();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_breakpoints_in_one_go_file_keep_their_own_conditions_and_hit_counts() {
    let Some((_project, h)) = check(config()) else { return };
    // In `average`'s loop over [2, 4, 6]: line 12 from its second hit on, line 14 only if the
    // total is 12.
    h.ok(
        json!({"operation": "breakpoints", "file": "main.go", "lines": [12], "hit_condition": "2"}),
    )
    .await;
    h.ok(json!({"operation": "breakpoints", "file": "main.go", "lines": [14], "condition": "total == 12"}))
        .await;
    let launched = h.ok(json!({"operation": "launch", "program": "."})).await;
    let procs = session_processes(&launched);
    let text = agent_tools_debug::render(&launched);
    let DebugOutcome::Started(started) = &launched else { panic!() };
    assert_eq!(started.breakpoints.len(), 2, "{text}");
    assert!(started.breakpoints.iter().all(|b| b.verified), "{text}");
    let stop = stopped(&launched);
    assert_eq!(stop.frame.as_ref().and_then(|f| f.line), Some(12), "{text}");
    assert_eq!(local(stop, "v").as_deref(), Some("4"), "{text}");
    h.ok(json!({"operation": "breakpoints", "file": "main.go", "lines": [12], "remove": true}))
        .await;
    let next = h.ok(json!({"operation": "continue"})).await;
    let stop = stopped(&next);
    assert_eq!(stop.frame.as_ref().and_then(|f| f.line), Some(14));
    assert_eq!(local(stop, "total").as_deref(), Some("12"));
    h.ok(json!({"operation": "terminate"})).await;
    assert_gone(&procs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_standard_library_breakpoint_is_set_through_goroot_as_go_names_it() {
    let Some((_project, h)) = check(config()) else { return };
    let goroot = std::process::Command::new("go").args(["env", "GOROOT"]).output().unwrap();
    let goroot = String::from_utf8_lossy(&goroot.stdout).trim().to_string();
    // On Debian GOROOT's `src` is a symlink into /usr/share: the file is named as Go names it.
    let print = format!("{goroot}/src/fmt/print.go");
    let text = std::fs::read_to_string(&print).unwrap();
    let line = text.lines().position(|l| l.starts_with("func Println(")).unwrap() as u32 + 2;
    let set = h.ok(json!({"operation": "breakpoints", "file": print, "lines": [line]})).await;
    assert!(matches!(&set, DebugOutcome::Breakpoints(b) if b.pending), "{set:?}");
    let launched = h.ok(json!({"operation": "launch", "program": "."})).await;
    let procs = session_processes(&launched);
    let text = agent_tools_debug::render(&launched);
    let DebugOutcome::Started(started) = &launched else { panic!() };
    assert!(started.breakpoints[0].verified, "{text}");
    let stop = stopped(&launched);
    let frame = stop.frame.clone().expect("the stdlib frame");
    assert_eq!(frame.name, "fmt.Println", "{text}");
    assert_eq!(frame.line, Some(line), "{text}");
    assert!(frame.path.as_deref().is_some_and(|p| p.ends_with("src/fmt/print.go")), "{text}");
    h.ok(json!({"operation": "terminate"})).await;
    assert_gone(&procs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_setsid_daemon_with_a_cleared_environment_is_gone_after_terminate() {
    let Some((_project, h)) = check(config()) else { return };
    if !cgroup_available() {
        return;
    }
    let (_launched, daemon) = h.launch_forker("daemon").await;
    h.ok(json!({"operation": "terminate"})).await;
    assert_gone(&[daemon]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_go_test_stops_at_the_line_that_failed_it() {
    let Some((_project, h)) = check(config()) else { return };
    // t.Errorf: the test goes on after it, so the stop is where it was marked failed.
    let launched =
        h.ok(json!({"operation": "launch", "test": "TestMean", "program": "calc"})).await;
    let procs = session_processes(&launched);
    let text = agent_tools_debug::render(&launched);
    assert!(text.contains("Launched test TestMean with delve"), "{text}");
    let stop = stopped(&launched);
    assert_eq!(stop.reason, "exception", "{text}");
    let exception = stop.exception.clone().expect("the failure");
    assert_eq!(exception.id.as_deref(), Some("test failed"), "{text}");
    assert!(
        exception.description.as_deref().is_some_and(|d| d.contains("Mean = 2, want 3")),
        "{text}"
    );
    assert_eq!(
        stop.frame.as_ref().map(|f| (f.name.as_str(), f.path.as_deref(), f.line)),
        Some(("example.com/buggy/calc.TestMean", Some("calc/calc_test.go"), Some(18))),
        "{text}"
    );
    assert_eq!(local(stop, "got").as_deref(), Some("2"), "{text}");
    assert_eq!(h.continue_to_exit().await, Some(1));
    h.ok(json!({"operation": "terminate"})).await;
    assert_gone(&procs);

    // t.Fatalf likewise.
    let launched =
        h.ok(json!({"operation": "launch", "test": "TestMeanOfNone", "program": "calc"})).await;
    let procs = session_processes(&launched);
    let text = agent_tools_debug::render(&launched);
    let stop = stopped(&launched);
    assert_eq!(
        stop.frame.as_ref().map(|f| (f.name.as_str(), f.line)),
        Some(("example.com/buggy/calc.TestMeanOfNone", Some(25))),
        "{text}"
    );
    assert!(text.contains("no values to average"), "{text}");
    h.ok(json!({"operation": "terminate"})).await;
    assert_gone(&procs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_go_program_blocked_on_stdin_is_reported_as_waiting_for_input() {
    let Some((_project, h)) = check(config()) else { return };
    let launched = h
        .ok(json!({"operation": "launch", "program": "reader", "stdin": "", "wait_seconds": 120}))
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
async fn a_test_file_as_program_runs_go_test_and_stops_at_each_failure() {
    let Some((_project, h)) = check(config()) else { return };
    let launched = h.ok(json!({"operation": "launch", "program": "calc/calc_test.go"})).await;
    let procs = session_processes(&launched);
    let text = agent_tools_debug::render(&launched);
    assert!(text.contains("go test (calc/calc_test.go)"), "{text}");
    let stop = stopped(&launched);
    assert_eq!(stop.reason, "exception", "{text}");
    assert_eq!(
        stop.frame.as_ref().map(|f| (f.name.as_str(), f.line)),
        Some(("example.com/buggy/calc.TestMean", Some(18))),
        "{text}"
    );
    assert_eq!(local(stop, "got").as_deref(), Some("2"), "{text}");
    let next = h.ok(json!({"operation": "continue"})).await;
    let text = agent_tools_debug::render(&next);
    assert_eq!(
        stopped(&next).frame.as_ref().map(|f| (f.name.as_str(), f.line)),
        Some(("example.com/buggy/calc.TestMeanOfNone", Some(25))),
        "{text}"
    );
    assert_eq!(h.continue_to_exit().await, Some(1));
    h.ok(json!({"operation": "terminate"})).await;
    assert_gone(&procs);
}

/// Processes whose command line names `path` (a build of the project, say).
fn processes_naming(path: &std::path::Path) -> Vec<String> {
    let needle = path.display().to_string();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        if pid == std::process::id() {
            continue;
        }
        let line = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let line = String::from_utf8_lossy(&line).replace('\0', " ");
        if line.contains(&needle) {
            found.push(format!("{pid} {line}"));
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_go_program_that_does_not_compile_is_refused_with_go_s_message_and_nothing_left() {
    let Some((project, h)) = check(config()) else { return };
    project.write("broken/main.go", "package main\n\nfunc main() {\n\tunused := 1\n}\n");
    let err = h.err(json!({"operation": "launch", "program": "broken"})).await;
    assert!(err.contains("did not build"), "{err}");
    // go's own words, with the file and line to fix.
    assert!(err.contains("main.go:4"), "{err}");
    assert!(err.contains("unused"), "{err}");
    assert!(err.contains("launch again"), "{err}");
    assert!(processes_naming(&project.root).is_empty(), "{:?}", processes_naming(&project.root));
    // The session is gone: a fixed program launches.
    let fixed = "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tunused := 1\n\tfmt.Println(unused)\n}\n";
    project.write("broken/main.go", fixed);
    h.ok(json!({"operation": "breakpoints", "file": "broken/main.go", "lines": [7]})).await;
    let launched = h.ok(json!({"operation": "launch", "program": "broken"})).await;
    let procs = session_processes(&launched);
    assert_eq!(local(stopped(&launched), "unused").as_deref(), Some("1"));
    h.ok(json!({"operation": "terminate"})).await;
    assert_gone(&procs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_launch_env_reaches_the_go_build_as_delve_applies_it() {
    let Some((project, h)) = check(config()) else { return };
    project.write(
        "tagged/main.go",
        "package main\n\nimport \"fmt\"\n\nvar flavour = \"plain\"\n\nfunc main() {\n\tfmt.Println(\"flavour:\", flavour)\n}\n",
    );
    project.write(
        "tagged/special.go",
        "//go:build special\n\npackage main\n\nfunc init() { flavour = \"special\" }\n",
    );
    let launched = h
        .ok(json!({"operation": "launch", "program": "tagged", "env": {"GOFLAGS": "-tags=special"}}))
        .await;
    let procs = session_processes(&launched);
    if !matches!(run_state(&launched), RunState::Exited { .. }) {
        assert_eq!(h.continue_to_exit().await, Some(0));
    }
    let output = h.all_output().await;
    assert!(output.contains("flavour: special"), "{output}");
    h.ok(json!({"operation": "terminate"})).await;
    assert_gone(&procs);
}
