//! Where kernels run: in the run's capsule, a prefix a harness gives or a real bubblewrap one.

#![allow(clippy::print_stderr)] // a skipped test says so loudly

use std::sync::Arc;

use agent_tools_eval::{
    CallScope, Capsule, CellStatus, EvalConfig, EvalRequest, Kernels, Language, NoBridge, Prefix,
    render,
};
use agent_tools_support::capsule::{Bwrap, BwrapOptions};
use tokio_util::sync::CancellationToken;

/// Runs `code` in a Python kernel started through `kernels`' capsule, then shuts it down.
async fn check(kernels: &Kernels, code: &str) -> (CellStatus, String) {
    let root = tempfile::tempdir().expect("temp");
    let result =
        cell(kernels, root.path(), Language::Python, code, &CancellationToken::new()).await;
    kernels.shutdown().await;
    result
}

/// Runs one cell in `root` and renders it.
async fn cell(
    kernels: &Kernels,
    root: &std::path::Path,
    language: Language,
    code: &str,
    cancel: &CancellationToken,
) -> (CellStatus, String) {
    let request = EvalRequest {
        code: code.into(),
        description: "inside the capsule".into(),
        language: Some(language),
        reset: None,
        ..Default::default()
    };
    let report = kernels
        .eval("capsule", root, request, Arc::new(NoBridge), CallScope::new(cancel.clone()))
        .await
        .expect("eval");
    (report.status, render(&report))
}

fn prefix(words: &[&str]) -> Arc<dyn Capsule> {
    Arc::new(Prefix::new(words.iter().map(|w| w.to_string()).collect()).expect("prefix"))
}

#[tokio::test]
async fn a_capsule_prefix_wraps_the_kernel_and_keeps_the_protocol_pipes() {
    let kernels = Kernels::new(EvalConfig::default()).with_capsule(prefix(&[
        "env",
        "AGENT_TOOLS_CAPSULE=demo",
        "nice",
        "-n",
        "7",
    ]));
    assert!(
        kernels.capsule().describe().contains("`env AGENT_TOOLS_CAPSULE=demo nice -n 7`"),
        "{}",
        kernels.capsule().describe()
    );
    let base = niceness();
    let (status, text) = check(
        &kernels,
        "import os\nprint('in capsule')\n(os.environ['AGENT_TOOLS_CAPSULE'], os.nice(0))",
    )
    .await;
    assert_eq!(status, CellStatus::Ok, "{text}");
    assert!(
        text.ends_with(&format!("in capsule\nOut[1]: ('demo', {})", (base + 7).min(19))),
        "{text}"
    );
}

#[tokio::test]
async fn an_empty_prefix_is_refused() {
    assert!(Prefix::new(vec![]).is_err());
    assert!(Prefix::new(vec![" ".into()]).is_err());
}

#[tokio::test]
async fn a_prefix_that_cannot_start_is_a_clear_error() {
    let kernels =
        Kernels::new(EvalConfig::default()).with_capsule(prefix(&["/nonexistent/capsule-wrapper"]));
    let (status, text) = check(&kernels, "1").await;
    assert_eq!(status, CellStatus::Unavailable);
    assert!(text.contains("cannot start") && text.contains("in the run's capsule"), "{text}");
    assert!(text.contains("/nonexistent/capsule-wrapper"), "which capsule: {text}");
}

/// bubblewrap, or a loud skip outside CI (CI installs it, so there a missing one fails).
fn bwrap_available() -> bool {
    if std::path::Path::new("/usr/bin/bwrap").exists() {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "bubblewrap is missing: `cargo xtask setup` installs it"
    );
    eprintln!(
        "\n!!! SKIPPED: bubblewrap (bwrap) is not installed; `cargo xtask setup` installs it !!!\n"
    );
    false
}

fn in_bwrap(project: &std::path::Path) -> Kernels {
    let capsule =
        Bwrap::start(BwrapOptions { project: project.to_path_buf(), ..BwrapOptions::default() })
            .expect("a bubblewrap capsule");
    Kernels::new(EvalConfig::default()).with_capsule(Arc::new(capsule))
}

#[tokio::test]
async fn a_python_kernel_in_bubblewrap_keeps_its_state_and_meets_the_walls() {
    if !bwrap_available() {
        return;
    }
    let project = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temp");
    let kernels = in_bwrap(project.path());
    let go = CancellationToken::new();
    let (status, text) = cell(
        &kernels,
        project.path(),
        Language::Python,
        "open('inside.txt', 'w').write('x'); n = 41",
        &go,
    )
    .await;
    assert_eq!(status, CellStatus::Ok, "{text}");
    assert!(project.path().join("inside.txt").exists(), "the project is writable");
    let (status, text) = cell(&kernels, project.path(), Language::Python, "n + 1", &go).await;
    assert!(status == CellStatus::Ok && text.ends_with("Out[2]: 42"), "state is kept: {text}");
    let (status, text) = cell(
        &kernels,
        project.path(),
        Language::Python,
        "open('/etc/agent-tools-probe', 'w')",
        &go,
    )
    .await;
    assert_eq!(status, CellStatus::Error, "{text}");
    assert!(text.contains("Read-only file system"), "{text}");
    assert!(
        text.contains("bubblewrap capsule") && text.contains("only the project"),
        "the note says why: {text}"
    );
    let (status, text) = cell(
        &kernels,
        project.path(),
        Language::Python,
        "import socket; socket.create_connection(('127.0.0.1', 9), 2)",
        &go,
    )
    .await;
    assert_eq!(status, CellStatus::Error, "{text}");
    assert!(text.contains("no network"), "{text}");
    // An interrupt reaches the interpreter through the runner's own protocol.
    let cancel = CancellationToken::new();
    let stop = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
        stop.cancel();
    });
    let (status, text) = cell(
        &kernels,
        project.path(),
        Language::Python,
        "import time\nwhile True: time.sleep(0.05)",
        &cancel,
    )
    .await;
    assert_eq!(status, CellStatus::Interrupted, "{text}");
    let (status, text) = cell(&kernels, project.path(), Language::Python, "n", &go).await;
    assert!(
        status == CellStatus::Ok && text.contains("41"),
        "state survives the interrupt: {text}"
    );
    // A crash: the next cell gets a fresh kernel in the same capsule.
    let (status, text) =
        cell(&kernels, project.path(), Language::Python, "import os; os._exit(3)", &go).await;
    assert_eq!(status, CellStatus::Crashed, "{text}");
    assert!(text.contains("it exited with status 3"), "{text}");
    // bubblewrap's init reports a death by signal as 128+N: it is read as the signal.
    let (status, text) =
        cell(&kernels, project.path(), Language::Python, "import ctypes\nctypes.string_at(0)", &go)
            .await;
    assert_eq!(status, CellStatus::Crashed, "{text}");
    assert!(text.contains("killed by signal 11 (SIGSEGV"), "{text}");
    let (status, text) =
        cell(&kernels, project.path(), Language::Python, "import os; os.getpid()", &go).await;
    assert_eq!(status, CellStatus::Ok, "{text}");
    kernels.shutdown().await;
}

#[tokio::test]
async fn a_node_kernel_in_bubblewrap_runs_and_meets_the_walls() {
    if !bwrap_available() {
        return;
    }
    let project = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temp");
    let kernels = in_bwrap(project.path());
    let go = CancellationToken::new();
    let (status, text) = cell(
        &kernels,
        project.path(),
        Language::Javascript,
        "require('fs').writeFileSync('inside.js.txt', 'x'); process.pid",
        &go,
    )
    .await;
    assert_eq!(status, CellStatus::Ok, "{text}");
    assert!(project.path().join("inside.js.txt").exists());
    let (status, text) = cell(
        &kernels,
        project.path(),
        Language::Javascript,
        "require('fs').writeFileSync('/usr/agent-tools-probe', 'x')",
        &go,
    )
    .await;
    assert_eq!(status, CellStatus::Error, "{text}");
    assert!(text.contains("EROFS") && text.contains("bubblewrap capsule"), "{text}");
    kernels.shutdown().await;
}

/// This process's niceness, read from /proc (field 19 of stat).
fn niceness() -> i64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    stat.rsplit(") ")
        .next()
        .and_then(|rest| rest.split(' ').nth(16))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}
