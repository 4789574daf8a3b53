//! A debug session in the run's capsule: the adapter and its debuggee start inside, delve is
//! reached on bubblewrap's own loopback or, under Landlock, on the host's (an ephemeral port is
//! the one a process inside may listen on), the debuggee meets the walls (a read-only system, no
//! network), and nothing is left when the session ends.

#![allow(clippy::print_stderr)]
// a skipped test says so loudly

use crate::support;

use std::sync::Arc;

use agent_tools_debug::{
    DebugConfig, DebugOutcome, DebugSupervisor,
    adapters::{SearchEnv, delve_candidates},
};
use agent_tools_support::capsule::{Bwrap, BwrapOptions, Capsule, Landlock, landlock_abi};
use serde_json::json;
use support::*;
use tokio_util::sync::CancellationToken;

fn bwrap_available() -> bool {
    require(
        "bubblewrap",
        std::path::Path::new("/usr/bin/bwrap").exists(),
        "run `cargo xtask setup`",
    )
}

fn in_bwrap(project: &Project, config: DebugConfig) -> Harness {
    let capsule =
        Bwrap::start(BwrapOptions { project: project.root.clone(), ..BwrapOptions::default() })
            .expect("a bubblewrap capsule");
    in_capsule(project, config, Arc::new(capsule))
}

fn in_capsule(project: &Project, config: DebugConfig, capsule: Arc<dyn Capsule>) -> Harness {
    Harness {
        debug: DebugSupervisor::in_capsule(config, capsule),
        root: project.root.clone(),
        conversation: "conversation-1".into(),
        cancel: CancellationToken::new(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_debuggee_in_bubblewrap_stops_and_cannot_leave() {
    if !bwrap_available() {
        return;
    }
    python_debuggee_stops_and_cannot_leave(|project| {
        Arc::new(
            Bwrap::start(BwrapOptions { project: project.root.clone(), ..BwrapOptions::default() })
                .expect("a bubblewrap capsule"),
        )
    })
    .await;
}

/// Under Landlock without network, debugpy's adapter and debuggee talk on loopback ports the
/// host picked, the only ones the capsule lets them use; any other port stays refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_debuggee_in_landlock_without_network_stops_and_cannot_leave() {
    if !require("Landlock ABI 4 (Linux 6.7)", landlock_abi() >= 4, "a newer kernel") {
        return;
    }
    python_debuggee_stops_and_cannot_leave(|project| {
        Arc::new(
            Landlock::start(BwrapOptions {
                project: project.root.clone(),
                ..BwrapOptions::default()
            })
            .expect("a Landlock capsule"),
        )
    })
    .await;
}

/// A Python program debugged in the capsule `make` gives: it stops at a breakpoint, its writes
/// outside the project, its connection to a host port and its signal to the host are refused,
/// it runs to its end, and nothing is left.
async fn python_debuggee_stops_and_cannot_leave(make: impl Fn(&Project) -> Arc<dyn Capsule>) {
    let python = python_with_debugpy();
    if !require("debugpy (in the test venv)", python.is_some(), "run `cargo xtask setup`") {
        return;
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let project = Project::empty();
    make_venv_python(&project, &python.unwrap());
    project.write(
        "walls.py",
        &format!(
            "import os, socket\n\
             open('inside.txt', 'w').write('made inside')\n\
             try:\n    open('/etc/agent-tools-probe', 'w')\nexcept OSError as e:\n    print('write refused:', e)\n\
             try:\n    socket.create_connection(('127.0.0.1', {port}), 2)\nexcept OSError as e:\n    print('connect refused:', e)\n\
             try:\n    os.kill({host}, 15)\nexcept OSError as e:\n    print('kill refused:', e)\n\
             done = True\n\
             print('the end')\n",
            host = std::process::id()
        ),
    );
    let h = in_capsule(&project, config(), make(&project));
    h.ok(json!({"operation": "breakpoints", "file": "walls.py", "lines": [15]})).await;
    let launched = h.ok(json!({"operation": "launch", "program": "walls.py"})).await;
    let procs = session_processes(&launched);
    let stop = stopped_at_breakpoint(&launched, "<module>", "walls.py", 15);
    let printed = stop.output.text();
    assert!(printed.contains("write refused"), "{printed}");
    assert!(printed.contains("connect refused"), "{printed}");
    assert!(printed.contains("kill refused"), "{printed}");
    assert_eq!(std::fs::read_to_string(project.root.join("inside.txt")).unwrap(), "made inside");
    h.continue_to_exit().await;
    h.ok(json!({"operation": "terminate"})).await;
    assert_gone(&procs);
    listener.set_nonblocking(true).unwrap();
    assert!(listener.accept().is_err(), "nothing reached the host's port");
}

fn delve_available() -> bool {
    let env = SearchEnv::from_process();
    let found = !delve_candidates(&env).is_empty() && env.which("go").is_some();
    require("delve and Go", found, "run `cargo xtask setup`")
}

/// The Go fixture debugged in `capsule` with delve: it stops, shows a local, exits, and leaves
/// nothing behind.
async fn delve_stops_and_exits(project: &Project, capsule: Arc<dyn Capsule>) {
    let config = DebugConfig { stop_wait_seconds: 120, launch_timeout_seconds: 300, ..config() };
    let h = in_capsule(project, config, capsule);
    h.ok(json!({"operation": "breakpoints", "file": "main.go", "lines": [15]})).await;
    let launched = h.ok(json!({"operation": "launch", "program": "."})).await;
    let procs = session_processes(&launched);
    let stop = stopped_at_breakpoint(&launched, "main.average", "main.go", 15);
    assert_eq!(local(stop, "total").as_deref(), Some("12"));
    assert_eq!(h.continue_to_exit().await, Some(3));
    h.ok(json!({"operation": "terminate"})).await;
    assert_gone(&procs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delve_in_bubblewrap_is_reached_on_the_capsules_own_loopback() {
    if !delve_available() || !bwrap_available() {
        return;
    }
    let project = Project::copy("go");
    let capsule =
        Bwrap::start(BwrapOptions { project: project.root.clone(), ..BwrapOptions::default() })
            .expect("a bubblewrap capsule");
    delve_stops_and_exits(&project, Arc::new(capsule)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delve_in_landlock_is_reached_on_the_hosts_loopback() {
    if !delve_available()
        || !require("Landlock ABI 4 (Linux 6.7)", landlock_abi() >= 4, "a newer kernel")
    {
        return;
    }
    let project = Project::copy("go");
    let capsule =
        Landlock::start(BwrapOptions { project: project.root.clone(), ..BwrapOptions::default() })
            .expect("a Landlock capsule");
    delve_stops_and_exits(&project, Arc::new(capsule)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lldb_in_bubblewrap_ends_without_an_error_its_abort_at_exit_is_read_as_a_signal() {
    let Some((project, _, _)) = crate::lldb::check("c", config()) else { return };
    if !bwrap_available() {
        return;
    }
    let h = in_bwrap(&project, config());
    h.ok(json!({"operation": "breakpoints", "file": "buggy.c", "lines": [11]})).await;
    let launched = h.ok(json!({"operation": "launch", "program": "buggy"})).await;
    let procs = session_processes(&launched);
    assert_eq!(h.continue_to_exit().await, Some(3));
    let DebugOutcome::Terminated(report) = h.ok(json!({"operation": "terminate"})).await else {
        panic!("terminate ends the session")
    };
    // bubblewrap's init passes lldb-dap's SIGABRT at exit on as code 134: read as the signal.
    let adapter_exit = report.steps.iter().find(|s| s.starts_with("adapter exited"));
    assert!(
        adapter_exit.is_none_or(
            |s| !s.contains("134") && (!s.contains("SIGABRT") || s.contains("not an error"))
        ),
        "{report:?}"
    );
    assert_gone(&procs);
}
