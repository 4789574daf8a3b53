//! Helpers for end-to-end tests: find the test tools, drive the host with the Python MCP client,
//! and check that no process of a run survives it.

use std::{
    path::{Path, PathBuf},
    process::Command,
    time::{Duration, Instant},
};

use serde_json::{Value, json};

/// Path of the host binary built by this package.
pub(crate) fn host_binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_agent-tools-under-test"))
}

/// True when running in CI, where a missing test tool is a failure, not a skip.
pub(crate) fn in_ci() -> bool {
    std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "false")
}

/// Handles a missing prerequisite: fails in CI, skips loudly elsewhere. Returns `false` to skip.
#[allow(clippy::print_stderr)]
pub(crate) fn require(what: &str, found: bool, how: &str) -> bool {
    if found {
        return true;
    }
    assert!(!in_ci(), "{what} is missing in CI; the setup step should have installed it ({how})");
    eprintln!("\n!!! SKIPPED: {what} is not installed here; {how} !!!\n");
    false
}

/// Where `cargo xtask setup` puts the test tools (`AGENT_TOOLS_TEST_HOME` overrides it).
pub(crate) fn tools_home() -> PathBuf {
    std::env::var_os("AGENT_TOOLS_TEST_HOME").map(PathBuf::from).unwrap_or_else(|| {
        let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_default();
        home.join(".cache/agent-tools-test")
    })
}

/// True when the test venv has basedpyright; otherwise fails in CI or skips loudly.
pub(crate) fn require_basedpyright() -> bool {
    let server = tools_home().join("venv/bin/basedpyright-langserver");
    require("basedpyright", server.exists(), "run `cargo xtask setup` (pip install basedpyright)")
}

/// The test venv's Python, which has the `mcp` SDK (installed by `cargo xtask setup`).
pub(crate) fn test_python() -> Option<PathBuf> {
    let candidate = std::env::var_os("AGENT_TOOLS_TEST_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| tools_home().join("venv/bin/python"));
    let usable = candidate.exists()
        && Command::new(&candidate)
            .args(["-c", "import mcp"])
            .output()
            .is_ok_and(|o| o.status.success());
    usable.then_some(candidate)
}

/// The second venv's Python, with the newest MCP SDK (2.x), installed by `cargo xtask setup`.
pub(crate) fn test_python_sdk2() -> Option<PathBuf> {
    let candidate = std::env::var_os("AGENT_TOOLS_TEST_PYTHON_SDK2")
        .map(PathBuf::from)
        .unwrap_or_else(|| tools_home().join("venv-sdk2/bin/python"));
    let usable = candidate.exists()
        && Command::new(&candidate)
            .args(["-c", "import importlib.metadata as m; assert m.version('mcp') >= '2'"])
            .output()
            .is_ok_and(|o| o.status.success());
    usable.then_some(candidate)
}

/// Which official Python SDK drives a script.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Sdk {
    /// The pinned 1.x (`initialize` handshake).
    V1,
    /// The newest 2.x in its default `auto` mode.
    V2,
}

impl Sdk {
    /// The SDK's Python, or `None` after a loud skip (a failure in CI).
    pub(crate) fn python(self) -> Option<PathBuf> {
        let (python, what) = match self {
            Sdk::V1 => (test_python(), "python venv with the pinned `mcp` SDK 1.x"),
            Sdk::V2 => (test_python_sdk2(), "python venv with the newest `mcp` SDK 2.x"),
        };
        require(what, python.is_some(), "run `cargo xtask setup`").then_some(python).flatten()
    }
}

/// A script for the Python MCP driver.
pub(crate) struct McpScript {
    server_args: Vec<String>,
    steps: Vec<Value>,
    elicitation: Value,
    marker: String,
    mode: Option<String>,
    env: Vec<(String, String)>,
}

impl McpScript {
    /// Serves `root` with `agent-tools mcp --root ROOT --trust-project` plus `extra` arguments:
    /// the test is the user, and trusts the `agent-tools.toml` its fixture writes.
    pub(crate) fn new(root: &Path, extra: &[&str]) -> Self {
        let mut with_trust = vec!["--trust-project"];
        with_trust.extend_from_slice(extra);
        Self::untrusted(root, &with_trust)
    }

    /// Serves `root` as a user who does not trust the project's own files would.
    pub(crate) fn untrusted(root: &Path, extra: &[&str]) -> Self {
        let mut server_args = vec![
            host_binary().display().to_string(),
            "mcp".into(),
            "--root".into(),
            root.display().to_string(),
        ];
        server_args.extend(extra.iter().map(|s| s.to_string()));
        let marker = format!("e2e-{}-{}", std::process::id(), unique());
        McpScript {
            server_args,
            steps: Vec::new(),
            elicitation: Value::Null,
            marker,
            mode: None,
            env: Vec::new(),
        }
    }

    /// Runs the server as `user` (root only) with a login-like environment, `HOME` at `home`,
    /// from a copy of the host binary in `bin` (a folder the user can read: the build's may lie
    /// in one only root can enter).
    pub(crate) fn run_by(mut self, user: &str, home: &Path, bin: &Path) -> Self {
        let copy = bin.join("agent-tools");
        std::fs::copy(&self.server_args[0], &copy).expect("copy the host binary");
        use std::os::unix::fs::PermissionsExt;
        for path in [bin, copy.as_path()] {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        }
        let mut args: Vec<String> = [
            "setpriv",
            "--reuid",
            user,
            "--regid",
            user,
            "--init-groups",
            "--reset-env",
            "--",
            "env",
        ]
        .map(String::from)
        .into();
        args.push(format!("HOME={}", home.display()));
        args.push("PATH=/usr/local/bin:/usr/bin:/bin".into());
        args.push(format!("AGENT_TOOLS_E2E_MARKER={}", self.marker));
        args.push(copy.display().to_string());
        args.extend(self.server_args.drain(1..));
        self.server_args = args;
        self
    }

    /// Sets `name` in the server's environment.
    pub(crate) fn env(mut self, name: &str, value: &str) -> Self {
        self.env.push((name.to_string(), value.to_string()));
        self
    }

    pub(crate) fn list_tools(mut self) -> Self {
        self.steps.push(json!({"op": "list_tools"}));
        self
    }

    pub(crate) fn call(mut self, tool: &str, args: Value) -> Self {
        self.steps.push(json!({"op": "call", "tool": tool, "args": args}));
        self
    }

    /// A call the client cancels with its SDK's own cancel `after_seconds` after sending it.
    pub(crate) fn call_cancelled(mut self, tool: &str, args: Value, after_seconds: f64) -> Self {
        self.steps
            .push(json!({"op": "call", "tool": tool, "args": args, "cancel_after": after_seconds}));
        self
    }

    /// A call with a progress token; the result records the progress reports.
    pub(crate) fn call_with_progress(mut self, tool: &str, args: Value) -> Self {
        self.steps.push(json!({"op": "call", "tool": tool, "args": args, "progress": true}));
        self
    }

    /// The SDK 2.x connection mode (`auto`, `legacy` or a protocol version).
    pub(crate) fn mode(mut self, mode: &str) -> Self {
        self.mode = Some(mode.to_string());
        self
    }

    /// Runs the script with `sdk`, then proves that no process of the run outlived it.
    pub(crate) fn run_with(&self, sdk: Sdk) -> Option<Value> {
        let out = self.run(&sdk.python()?);
        assert_no_survivors(&self.marker, Duration::from_secs(15));
        Some(out)
    }

    /// Declares the elicitation capability and answers every request with `action`/`content`.
    pub(crate) fn elicitation(mut self, action: &str, content: Value) -> Self {
        self.elicitation = json!({"action": action, "content": content});
        self
    }

    /// The marker in the server's environment; every process of the run inherits it.
    pub(crate) fn marker(&self) -> &str {
        &self.marker
    }

    /// Runs the script; returns the driver's output (`results`, `elicitations`).
    pub(crate) fn run(&self, python: &Path) -> Value {
        let mut env = json!({"AGENT_TOOLS_E2E_MARKER": self.marker, "RUST_LOG": "warn"});
        for (name, value) in &self.env {
            env[name] = json!(value);
        }
        let script = json!({
            "server": self.server_args,
            "env": env,
            "steps": self.steps,
            "elicitation": self.elicitation,
            "mode": self.mode,
        });
        run_driver(python, &script)
    }
}

/// Runs the Python MCP driver on `script` and returns its JSON output; fails on a driver error.
pub(crate) fn run_driver(python: &Path, script: &Value) -> Value {
    let dir = std::env::temp_dir().join(format!("agent-tools-e2e-{}", unique()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("script.json");
    std::fs::write(&file, script.to_string()).expect("write script");
    let driver = Path::new(env!("CARGO_MANIFEST_DIR")).join("py").join("mcp_driver.py");
    let output =
        Command::new(python).arg(driver).arg(&file).output().expect("start the python driver");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        output.status.success(),
        "the MCP driver failed ({}):\nstdout: {}\nstderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!("driver output is not JSON ({e}): {}", String::from_utf8_lossy(&output.stdout))
    })
}

/// A number unlikely to repeat, for temp names and markers.
pub(crate) fn unique() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

impl McpScript {
    /// Runs the script with the test venv's Python, then proves that no process of the run
    /// outlived it. `None` after a loud skip where the venv is missing outside CI.
    pub(crate) fn run_and_end(&self) -> Option<Value> {
        let python = test_python();
        if !require("python venv with the `mcp` SDK", python.is_some(), "run `cargo xtask setup`") {
            return None;
        }
        let out = self.run(python.as_deref()?);
        assert_no_survivors(&self.marker, Duration::from_secs(15));
        Some(out)
    }
}

/// The per-step results of the driver's output.
pub(crate) fn results(out: Value) -> Vec<Value> {
    out["results"].as_array().cloned().unwrap_or_default()
}

/// Pids of live processes whose environment carries `marker`.
pub(crate) fn processes_with_marker(marker: &str) -> Vec<(u32, String)> {
    let needle = format!("AGENT_TOOLS_E2E_MARKER={marker}");
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else { continue };
        if environ.split(|&b| b == 0).any(|var| var == needle.as_bytes()) {
            let state = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
            // Zombies already exited; only their parent has not reaped them yet.
            if state.split(") ").nth(1).is_some_and(|rest| rest.starts_with('Z')) {
                continue;
            }
            let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            found.push((pid, cmdline));
        }
    }
    found
}

/// Waits up to a minute until at least `count` processes carrying `marker` run a command line
/// starting with `command`; whether they did.
pub(crate) fn wait_for_marked(marker: &str, command: &str, count: usize) -> bool {
    let running = || {
        processes_with_marker(marker).iter().filter(|(_, c)| c.starts_with(command)).count()
            >= count
    };
    for _ in 0..1200 {
        if running() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    running()
}

/// Waits up to `within` for every process carrying `marker` to be gone; panics naming survivors.
pub(crate) fn assert_no_survivors(marker: &str, within: Duration) {
    let start = Instant::now();
    loop {
        let alive = processes_with_marker(marker);
        if alive.is_empty() {
            return;
        }
        if start.elapsed() > within {
            panic!("processes of the run survived it: {alive:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A fresh project folder under the system temp dir, removed on drop.
pub(crate) struct TempProject {
    pub(crate) root: PathBuf,
}

impl TempProject {
    pub(crate) fn new(files: &[(&str, &str)]) -> Self {
        let root = std::env::temp_dir().join(format!("agent-tools-project-{}", unique()));
        for (path, contents) in files {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(path, contents).expect("write fixture");
        }
        std::fs::create_dir_all(&root).expect("mkdir root");
        let root = std::fs::canonicalize(&root).expect("canonical root");
        TempProject { root }
    }
}

impl Drop for TempProject {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// The names of the tools in a `tools/list` result from the driver, in its order.
pub(crate) fn tool_names(listed: &Value) -> Vec<&str> {
    listed["tools"]
        .as_array()
        .expect("a tools/list result")
        .iter()
        .map(|t| t["name"].as_str().expect("every tool has a name"))
        .collect()
}

/// The text of the first content block of a call result from the driver.
pub(crate) fn text_of(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or("")
}

/// Speaks just enough MCP over the host's stdio to call tools; the host is our own child, so a
/// test can SIGKILL it.
pub(crate) struct RawHost {
    pub(crate) child: std::process::Child,
    stdin: std::process::ChildStdin,
    lines: std::sync::mpsc::Receiver<String>,
}

impl RawHost {
    pub(crate) fn start(root: &std::path::Path, marker: &str, extra: &[&str]) -> RawHost {
        RawHost::start_with_env(root, marker, extra, &[])
    }

    /// [`RawHost::start`] with `env` set in the host's environment.
    pub(crate) fn start_with_env(
        root: &std::path::Path,
        marker: &str,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> RawHost {
        use std::process::{Command, Stdio};
        let mut child = Command::new(crate::support::host_binary())
            .args(["mcp", "--trust-project", "--root"])
            .arg(root)
            .args(extra)
            .env("AGENT_TOOLS_E2E_MARKER", marker)
            .env("RUST_LOG", "warn")
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the host");
        let stdin = child.stdin.take().expect("host stdin");
        let stdout = child.stdout.take().expect("host stdout");
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        RawHost { child, stdin, lines }
    }

    pub(crate) fn send(&mut self, message: Value) {
        use std::io::Write;
        writeln!(self.stdin, "{message}").and_then(|()| self.stdin.flush()).expect("write");
    }

    /// Sends a request and returns the response with its id, skipping notifications.
    pub(crate) fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.next_message(|message| message["id"] == id)
    }
}

impl RawHost {
    /// Sends one line as it is, valid JSON or not.
    pub(crate) fn send_raw(&mut self, line: &str) {
        use std::io::Write;
        writeln!(self.stdin, "{line}").and_then(|()| self.stdin.flush()).expect("write");
    }

    /// The next error response whose id is `id` (`None`: an error without an id).
    pub(crate) fn next_error(&mut self, id: Option<u64>) -> Value {
        let wanted = id.map_or(Value::Null, Value::from);
        self.next_message(|message| message.get("error").is_some() && message["id"] == wanted)
    }

    /// The next message for which `wanted` holds (a JSON object or array); a bound of two
    /// minutes so that a host that never sends it fails the test instead of hanging it.
    pub(crate) fn next_message(&mut self, wanted: impl Fn(&Value) -> bool) -> Value {
        loop {
            let line = self
                .lines
                .recv_timeout(std::time::Duration::from_secs(120))
                .unwrap_or_else(|e| panic!("no such message: {e}"));
            let message: Value = serde_json::from_str(&line).expect("a JSON-RPC line");
            if wanted(&message) {
                return message;
            }
        }
    }

    /// The answers to the requests `ids`, in the order they come (notifications and requests
    /// of the host skipped).
    pub(crate) fn answers(&mut self, ids: impl IntoIterator<Item = u64>) -> Vec<Value> {
        let mut waiting: Vec<u64> = ids.into_iter().collect();
        let mut got = Vec::new();
        while !waiting.is_empty() {
            let answer = self.next_message(|m| {
                m.get("method").is_none()
                    && m["id"].as_u64().is_some_and(|id| waiting.contains(&id))
            });
            waiting.retain(|id| answer["id"] != *id);
            got.push(answer);
        }
        got
    }

    /// The next line that is a JSON array (the replies to a batch).
    pub(crate) fn next_array(&mut self) -> Vec<Value> {
        match self.next_message(Value::is_array) {
            Value::Array(replies) => replies,
            _ => unreachable!("an array was asked for"),
        }
    }

    /// Closes the host's stdin, as a client that is done does, and waits for it to exit.
    pub(crate) fn finish(self) -> std::process::ExitStatus {
        let RawHost { mut child, stdin, .. } = self;
        drop(stdin);
        child.wait().expect("host exit")
    }

    /// `initialize` plus `notifications/initialized`, as a client without capabilities.
    pub(crate) fn initialize(&mut self) {
        let init = self.request(
            0,
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw-e2e", "version": "0"},
            }),
        );
        assert!(init.get("result").is_some(), "{init}");
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    }

    /// Calls `tool` and returns the tool result (`content`, `isError`, …).
    pub(crate) fn call(&mut self, id: u64, tool: &str, args: Value) -> Value {
        let response = self.request(id, "tools/call", json!({"name": tool, "arguments": args}));
        response["result"].clone()
    }
}

/// True when `python` can import debugpy; otherwise fails in CI or skips loudly.
pub(crate) fn require_debugpy(python: &Path) -> bool {
    let found = Command::new(python)
        .args(["-c", "import debugpy"])
        .output()
        .is_ok_and(|o| o.status.success());
    require("debugpy in the test venv", found, "run `cargo xtask setup`")
}

/// A Python project whose own `.venv/bin/python` runs `python`, with `files` besides.
pub(crate) fn python_venv_project(python: &Path, files: &[(&str, &str)]) -> TempProject {
    let wrapper = format!("#!/bin/sh\nexec {} \"$@\"\n", python.display());
    let mut all = files.to_vec();
    all.push((".venv/bin/python", &wrapper));
    let project = TempProject::new(&all);
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        project.root.join(".venv/bin/python"),
        std::fs::Permissions::from_mode(0o755),
    )
    .expect("make the venv's python executable");
    project
}

/// A file of the debug crate's fixtures.
pub(crate) fn debug_fixture(path: &str) -> String {
    let file =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates/debug/tests/fixtures").join(path);
    std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
}

/// The buggy C program of the debug fixtures, built with `cc -g` in a fresh project;
/// `None` (after a loud skip, or a failure in CI) without a C compiler.
pub(crate) fn built_c_project() -> Option<TempProject> {
    let project = TempProject::new(&[
        ("CMakeLists.txt", "project(buggy C)\n"),
        ("buggy.c", &debug_fixture("c/buggy.c")),
    ]);
    let built = Command::new("cc")
        .args(["-g", "-O0", "-o", "buggy", "buggy.c"])
        .current_dir(&project.root)
        .status();
    require("a C compiler", built.is_ok_and(|s| s.success()), "`apt-get install gcc`")
        .then_some(project)
}
