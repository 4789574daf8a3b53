//! Shared helpers for the kernel tests: a session over `Kernels`, a scripted bridge, skips.

#![allow(dead_code, unreachable_pub, clippy::print_stderr)]

use std::{
    path::{Path, PathBuf},
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use agent_tools_eval::{
    CallScope, CellReport, EvalConfig, EvalRequest, Kernels, Language, Progress, Tier, ToolBridge,
    images, render,
};
use async_trait::async_trait;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// True in CI, where a missing prerequisite fails instead of skipping.
pub fn in_ci() -> bool {
    std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "false")
}

/// Fails in CI, skips loudly elsewhere; `false` means skip.
pub fn require(what: &str, found: bool, how: &str) -> bool {
    if found {
        return true;
    }
    assert!(!in_ci(), "{what} is missing in CI; {how}");
    eprintln!("\n!!! SKIPPED: {what} is not installed; {how} !!!\n");
    false
}

/// A Node.js session with `config`, or None (skipped loudly outside CI) when `node` is missing.
#[allow(dead_code, reason = "used by the Node test files, not by every test crate")]
pub fn node_session(config: EvalConfig) -> Option<Session> {
    let found = std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !require("node", found, "install Node.js (the setup step expects it on PATH)") {
        return None;
    }
    let config = EvalConfig { javascript: Some(agent_tools_eval::JsEngine::Node), ..config };
    Some(Session::new(Language::Javascript, config))
}

/// The test venv's Python (pandas, matplotlib) if set up, else None.
pub fn test_python() -> Option<PathBuf> {
    let candidate =
        std::env::var_os("AGENT_TOOLS_TEST_PYTHON").map(PathBuf::from).unwrap_or_else(|| {
            let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_default();
            home.join(".cache/agent-tools-test/venv/bin/python")
        });
    candidate.exists().then_some(candidate)
}

/// Whether `python` can import `module`.
pub fn has_module(python: &Path, module: &str) -> bool {
    std::process::Command::new(python)
        .args(["-c", &format!("import {module}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A bridge that serves `read` from the root, refuses `write` as a read-only surface would,
/// holds `gate` calls until three are pending at once, and sleeps on `slow`.
pub struct TestBridge {
    pub root: PathBuf,
    pub in_flight: AtomicUsize,
    pub gate: tokio::sync::Notify,
    pub calls: parking_lot::Mutex<Vec<String>>,
}

impl TestBridge {
    pub fn new(root: &Path) -> Arc<Self> {
        Arc::new(TestBridge {
            root: root.to_path_buf(),
            in_flight: AtomicUsize::new(0),
            gate: tokio::sync::Notify::new(),
            calls: parking_lot::Mutex::new(Vec::new()),
        })
    }
}

#[async_trait]
impl ToolBridge for TestBridge {
    async fn call(&self, name: &str, args: Value, _ceiling: Tier) -> Result<Value, String> {
        self.calls.lock().push(name.to_string());
        match name {
            "read" => {
                let path = args["path"].as_str().unwrap_or_default();
                std::fs::read_to_string(self.root.join(path))
                    .map(Value::String)
                    .map_err(|e| format!("read {path}: {e}"))
            }
            "write" => Err(
                "`write` is a write-tier tool; this surface (plan) is limited to read-tier tools"
                    .into(),
            ),
            "gate" => {
                let n = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                if n >= 3 {
                    self.gate.notify_waiters();
                } else {
                    let notified = self.gate.notified();
                    if self.in_flight.load(Ordering::SeqCst) < 3 {
                        let _ = tokio::time::timeout(Duration::from_secs(20), notified).await;
                    }
                }
                let seen = self.in_flight.load(Ordering::SeqCst);
                Ok(json!({"arg": args["n"], "in_flight_seen": seen}))
            }
            "slow" => {
                tokio::time::sleep(Duration::from_secs_f64(
                    args["seconds"].as_f64().unwrap_or(1.0),
                ))
                .await;
                Ok(json!("slept"))
            }
            other => Err(format!("unknown tool `{other}`")),
        }
    }
}

/// Kernels over a temp root with one conversation.
pub struct Session {
    pub kernels: Kernels,
    pub root: tempfile::TempDir,
    pub bridge: Arc<TestBridge>,
    pub cancel: CancellationToken,
    pub language: Language,
}

impl Session {
    pub fn new(language: Language, config: EvalConfig) -> Self {
        let root = tempfile::tempdir().expect("temp dir");
        let bridge = TestBridge::new(root.path());
        Session {
            kernels: Kernels::new(config),
            root,
            bridge,
            cancel: CancellationToken::new(),
            language,
        }
    }

    pub fn root(&self) -> PathBuf {
        std::fs::canonicalize(self.root.path()).expect("canonical root")
    }

    /// Runs one cell; returns the report and its rendered text.
    pub async fn run(&self, code: &str) -> (CellReport, String) {
        self.run_with(code, false).await
    }

    pub async fn reset(&self, code: &str) -> (CellReport, String) {
        self.run_with(code, true).await
    }

    async fn run_with(&self, code: &str, reset: bool) -> (CellReport, String) {
        let request = EvalRequest {
            code: code.to_string(),
            description: "a test cell".into(),
            language: Some(self.language),
            reset: Some(reset),
            ..Default::default()
        };
        let report = self
            .kernels
            .eval(
                "conversation",
                &self.root(),
                request,
                self.bridge.clone(),
                CallScope::new(self.cancel.clone()),
            )
            .await
            .expect("eval");
        let text = render(&report);
        (report, text)
    }

    fn request(&self, code: &str) -> EvalRequest {
        EvalRequest {
            code: code.to_string(),
            description: "a test cell".into(),
            language: Some(self.language),
            reset: Some(false),
            ..Default::default()
        }
    }

    /// Runs a cell under the given cancellation token (cancelled by the test when it likes).
    pub async fn run_under(&self, code: &str, cancel: &CancellationToken) -> (CellReport, String) {
        let report = self
            .kernels
            .eval(
                "conversation",
                &self.root(),
                self.request(code),
                self.bridge.clone(),
                CallScope::new(cancel.clone()),
            )
            .await
            .expect("eval");
        let text = render(&report);
        (report, text)
    }

    /// Runs a cell and cancels its call (as a client's `notifications/cancelled` does) at the
    /// cell's first progress report, that is while it runs.
    pub async fn run_cancelled(&self, code: &str) -> (CellReport, String) {
        let cancel = CancellationToken::new();
        let progress = CancelOnProgress(cancel.clone());
        let report = self
            .kernels
            .eval(
                "conversation",
                &self.root(),
                self.request(code),
                self.bridge.clone(),
                CallScope::new(cancel.clone()).with_progress(Arc::new(progress)),
            )
            .await
            .expect("eval");
        let text = render(&report);
        (report, text)
    }

    /// Runs a cell and drops its call's future at the first progress report, as a host that
    /// abandons a call without cancelling it would.
    pub async fn run_abandoned(&self, code: &str) {
        let running = CancellationToken::new();
        let progress = CancelOnProgress(running.clone());
        let never = CancellationToken::new();
        let root = self.root();
        let call = self.kernels.eval(
            "conversation",
            &root,
            self.request(code),
            self.bridge.clone(),
            CallScope::new(never).with_progress(Arc::new(progress)),
        );
        tokio::select! {
            result = call => panic!("the cell ended before it was abandoned: {result:?}"),
            () = running.cancelled() => {}
        }
    }

    /// Sends any request under a fresh scope reporting to `progress`; the report and its text.
    pub async fn call(
        &self,
        request: EvalRequest,
        progress: Option<Arc<dyn Progress>>,
    ) -> Result<(CellReport, String), agent_tools_eval::EvalError> {
        let scope = CallScope::new(CancellationToken::new());
        let scope = match progress {
            Some(progress) => scope.with_progress(progress),
            None => scope,
        };
        let report = self
            .kernels
            .eval("conversation", &self.root(), request, self.bridge.clone(), scope)
            .await?;
        let text = render(&report);
        Ok((report, text))
    }

    /// A new cell that waits at most `wait_s`.
    pub async fn run_waiting(&self, code: &str, wait_s: f64) -> (CellReport, String) {
        let request = EvalRequest { wait_s: Some(wait_s), ..self.request(code) };
        self.call(request, None).await.expect("eval")
    }

    /// `eval` with `cell`: waits again for that cell, at most `wait_s`.
    pub async fn collect(&self, cell: u64, wait_s: f64) -> (CellReport, String) {
        let request = EvalRequest { wait_s: Some(wait_s), ..EvalRequest::collect(cell) };
        self.call(request, None).await.expect("collect")
    }

    /// `eval` with `cell` and `interrupt: true`.
    pub async fn interrupt(&self, cell: u64) -> (CellReport, String) {
        let request = EvalRequest { interrupt: Some(true), ..EvalRequest::collect(cell) };
        self.call(request, None).await.expect("interrupt")
    }

    /// Runs a cell whose caller's connection is cut at the first progress report (and, with
    /// `also_cancel`, whose call is cancelled at the same moment, as a host whose transport
    /// cancels a cut request does): the call returns at once and the cell runs on.
    pub async fn run_cut(&self, code: &str, also_cancel: bool) -> (CellReport, String) {
        let cut = CancellationToken::new();
        let cancel = CancellationToken::new();
        let progress =
            CutOnProgress { cut: cut.clone(), cancel: also_cancel.then(|| cancel.clone()) };
        let request = EvalRequest { wait_s: Some(600.0), ..self.request(code) };
        let report = self
            .kernels
            .eval(
                "conversation",
                &self.root(),
                request,
                self.bridge.clone(),
                CallScope::new(cancel).with_progress(Arc::new(progress)).with_cut(cut),
            )
            .await
            .expect("eval");
        let text = render(&report);
        (report, text)
    }

    pub fn image_count(report: &CellReport) -> usize {
        images(report).len()
    }
}

/// Cancels its token at the first progress report.
pub struct CancelOnProgress(pub CancellationToken);

impl Progress for CancelOnProgress {
    fn report(&self, _elapsed_secs: f64, _message: &str) {
        self.0.cancel();
    }
}

/// Cuts the caller's connection (and cancels, when asked) at the first progress report.
pub struct CutOnProgress {
    pub cut: CancellationToken,
    pub cancel: Option<CancellationToken>,
}

impl Progress for CutOnProgress {
    fn report(&self, _elapsed_secs: f64, _message: &str) {
        self.cut.cancel();
        if let Some(cancel) = &self.cancel {
            cancel.cancel();
        }
    }
}

/// Keeps every progress message.
#[derive(Default)]
pub struct Heard(pub parking_lot::Mutex<Vec<String>>);

impl Progress for Heard {
    fn report(&self, _elapsed_secs: f64, message: &str) {
        self.0.lock().push(message.to_string());
    }
}

/// Config with short budgets for the timeout tests.
pub fn short_budget(inactivity: f64, grace: f64) -> EvalConfig {
    EvalConfig { inactivity_seconds: inactivity, grace_seconds: grace, ..EvalConfig::default() }
}

/// Whether a process with `pid` is alive (zombies count as gone).
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat.split(") ").nth(1).is_some_and(|rest| rest.starts_with('Z')),
        Err(_) => false,
    }
}

/// Waits (bounded) until `pid` is gone; false if it survived.
pub fn gone_within(pid: u32, within: Duration) -> bool {
    let start = std::time::Instant::now();
    while start.elapsed() < within {
        if !alive(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    !alive(pid)
}
