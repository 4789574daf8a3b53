//! A host killed with SIGKILL gets no chance to end its run: every process the run started (a
//! kernel and what its cell started, a language server, a debug adapter and its debuggee) must
//! still go with it.

use std::time::Duration;

use serde_json::json;

use crate::support::{
    RawHost, TempProject, assert_no_survivors, debug_fixture, processes_with_marker,
    python_venv_project, require, require_debugpy, test_python, text_of,
};

fn on_path(program: &str) -> bool {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).any(|dir| dir.join(program).is_file())
}

#[test]
fn every_process_of_a_run_dies_with_a_killed_host() {
    let Some(python) = test_python() else {
        require("python venv with the `mcp` SDK", false, "run `cargo xtask setup`");
        return;
    };
    if !require_debugpy(&python)
        || !require(
            "basedpyright-langserver on PATH",
            on_path("basedpyright-langserver"),
            "run `cargo xtask test`",
        )
    {
        return;
    }
    let config = format!("[eval]\npython = {:?}\n", python.display().to_string());
    let project = python_venv_project(
        &python,
        &[
            ("pyproject.toml", "[project]\nname = \"buggy\"\n"),
            ("buggy.py", &debug_fixture("python/buggy.py")),
            ("agent-tools.toml", &config),
        ],
    );
    let marker = format!("e2e-host-killed-{}", std::process::id());
    let mut host = RawHost::start(&project.root, &marker, &[]);
    host.initialize();

    let cell = host.call(
        1,
        "eval",
        json!({
            "code": "import subprocess\nchild = subprocess.Popen(['sleep', '300'])\nchild.pid",
            "description": "start a child process from the kernel",
        }),
    );
    assert_eq!(cell["isError"], false, "{}", text_of(&cell));
    let symbols = host.call(2, "lsp", json!({"action": "symbols", "file": "buggy.py"}));
    assert_eq!(symbols["isError"], false, "{}", text_of(&symbols));
    let breakpoints = host.call(
        3,
        "debug",
        json!({"operation": "breakpoints", "file": "buggy.py", "lines": [11]}),
    );
    assert_eq!(breakpoints["isError"], false, "{}", text_of(&breakpoints));
    let launched = host.call(
        4,
        "debug",
        json!({"operation": "launch", "program": "buggy.py", "wait_seconds": 120}),
    );
    assert!(text_of(&launched).contains("Stopped (stop 1)"), "{}", text_of(&launched));

    let running = processes_with_marker(&marker);
    let has = |needle: &str| running.iter().any(|(_, cmdline)| cmdline.contains(needle));
    assert!(
        has("sleep 300") && has("basedpyright") && has("debugpy") && has("buggy.py"),
        "the kernel's child, the server, the adapter and the debuggee should all run: {running:?}"
    );

    host.child.kill().expect("kill the host");
    host.child.wait().expect("reap the host");
    assert_no_survivors(&marker, Duration::from_secs(20));
}

/// Launches `program` stopped at `file:line` through a raw host, SIGKILLs the host, and
/// checks that the adapter and the debuggee (`debuggee` in its command line) are gone.
fn check_debugger_dies_with_host(
    project: &TempProject,
    file: &str,
    line: u32,
    program: &str,
    debuggee: &str,
) {
    let marker = format!("e2e-host-killed-{debuggee}-{}", std::process::id());
    let mut host = RawHost::start(&project.root, &marker, &[]);
    host.initialize();
    let set =
        host.call(1, "debug", json!({"operation": "breakpoints", "file": file, "lines": [line]}));
    assert_eq!(set["isError"], false, "{}", text_of(&set));
    let launched = host.call(
        2,
        "debug",
        json!({"operation": "launch", "program": program, "wait_seconds": 300}),
    );
    assert!(text_of(&launched).contains("Stopped (stop 1)"), "{}", text_of(&launched));
    let running = processes_with_marker(&marker);
    assert!(
        running.iter().any(|(_, c)| c.contains(debuggee)),
        "the debuggee should run: {running:?}"
    );
    host.child.kill().expect("kill the host");
    host.child.wait().expect("reap the host");
    assert_no_survivors(&marker, Duration::from_secs(20));
}

#[test]
fn a_delve_session_dies_with_a_killed_host() {
    if !require(
        "delve and Go",
        on_path("dlv") && on_path("go"),
        "`apt-get install delve golang-go`",
    ) {
        return;
    }
    let project = TempProject::new(&[
        ("go.mod", &crate::support::debug_fixture("go/go.mod")),
        ("main.go", &crate::support::debug_fixture("go/main.go")),
    ]);
    check_debugger_dies_with_host(&project, "main.go", 15, ".", "__debug_bin");
}

#[test]
fn an_lldb_session_dies_with_a_killed_host() {
    if !require(
        "lldb-dap-19 and cc",
        on_path("lldb-dap-19") && on_path("cc"),
        "`apt-get install lldb-19 gcc`",
    ) {
        return;
    }
    let Some(project) = crate::support::built_c_project() else { return };
    check_debugger_dies_with_host(&project, "buggy.c", 11, "buggy", "buggy");
}
