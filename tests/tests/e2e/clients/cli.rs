//! Running client CLIs in a sandboxed home with a deadline, and a Streamable HTTP host for them.

use std::{
    io::{BufRead, BufReader, Read},
    path::{Path, PathBuf},
    process::{Child, Command, Output, Stdio},
    time::{Duration, Instant},
};

use crate::support::{assert_no_survivors, host_binary, processes_with_marker};

/// No client call may take longer than this; a hung CLI fails the test instead of hanging it.
pub(super) const CLI_TIMEOUT: Duration = Duration::from_secs(120);

/// `name` on PATH (the test environment puts the npm tools there).
pub(super) fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(name)).find(|p| p.is_file())
}

/// Runs `cmd` to its end with a deadline; a CLI still running after it is killed and fails.
pub(super) fn run_cli(mut cmd: Command) -> Output {
    let described = format!("{cmd:?}");
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("start {described}: {e}"));
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let deadline = Instant::now() + CLI_TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the CLI") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{described} did not finish within {CLI_TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let output = Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    };
    if !output.stderr.is_empty() {
        eprintln!("{described} stderr:\n{}", String::from_utf8_lossy(&output.stderr));
    }
    output
}

fn drain(pipe: Option<impl Read + Send + 'static>) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut bytes);
        }
        bytes
    })
}

/// The standard output of a CLI that must have succeeded.
pub(super) fn stdout_of(output: &Output, what: &str) -> String {
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{what} failed ({}):\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// A client's home, XDG folders and nothing else of the real environment but PATH, so no CLI
/// reads or writes the real home; `marker` goes to every process the client starts.
pub(super) fn client_env(cmd: &mut Command, home: &Path, marker: &str) {
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env("XDG_STATE_HOME", home.join(".local/state"))
        .env("AGENT_TOOLS_STATE_DIR", home.join(".local/state/agent-tools"))
        .env("AGENT_TOOLS_E2E_MARKER", marker)
        .env("RUST_LOG", "warn");
}

/// `agent-tools mcp --http 127.0.0.1:0 --token-file FILE --root ROOT`, its processes marked.
pub(super) struct HttpHost {
    child: Option<Child>,
    pub(super) url: String,
    marker: String,
}

impl HttpHost {
    /// Starts the host and reads the address it serves at from its first line on stderr.
    pub(super) fn start(root: &Path, home: &Path, token_file: &Path, marker: &str) -> HttpHost {
        let mut cmd = Command::new(host_binary());
        client_env(&mut cmd, home, marker);
        let mut child = cmd
            .args(["mcp", "--http", "127.0.0.1:0", "--token-file"])
            .arg(token_file)
            .arg("--root")
            .arg(root)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the HTTP host");
        let mut stderr = BufReader::new(child.stderr.take().expect("stderr"));
        let mut first = String::new();
        let _ = stderr.read_line(&mut first);
        let url = first
            .split_whitespace()
            .find(|word| word.starts_with("http://"))
            .unwrap_or_else(|| panic!("the host did not say where it serves: {first:?}"))
            .to_string();
        // Keep draining stderr so the host never blocks on a full pipe.
        std::thread::spawn(move || {
            let mut line = String::new();
            while stderr.read_line(&mut line).is_ok_and(|n| n > 0) {
                eprint!("host: {line}");
                line.clear();
            }
        });
        HttpHost { child: Some(child), url, marker: marker.to_string() }
    }

    /// The processes the host's sessions started (the host itself excepted).
    pub(super) fn session_processes(&self) -> Vec<(u32, String)> {
        let host = self.child.as_ref().map(Child::id);
        processes_with_marker(&self.marker)
            .into_iter()
            .filter(|(pid, _)| Some(*pid) != host)
            .collect()
    }

    /// Stops the host with SIGTERM: it ends every run, exits 0 and leaves nothing behind.
    pub(super) fn stop(mut self) {
        let Some(mut child) = self.child.take() else { return };
        let _ = Command::new("kill").arg("-TERM").arg(child.id().to_string()).status();
        let status = child.wait().expect("wait for the host");
        assert!(status.success(), "the host exited with {status} on SIGTERM");
        assert_no_survivors(&self.marker, Duration::from_secs(15));
    }
}

impl Drop for HttpHost {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
