//! Running client CLIs in a sandboxed home, with a deadline, and the HTTP host they connect to.

use std::{
    io::Read,
    path::{Path, PathBuf},
    process::{Command, Output, Stdio},
    time::{Duration, Instant},
};

use crate::{http_host::HttpHost, support::unique};

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

/// `mcp --http` serving `root` with a fresh bearer token (its file in `home`); the token.
pub(super) fn http_host_with_token(root: &Path, home: &Path) -> (HttpHost, String) {
    let token = format!("e2e-token-{}", unique());
    let token_file = home.join("token");
    std::fs::write(&token_file, &token).expect("write the token");
    let host = HttpHost::start(root, &["--token-file", &token_file.display().to_string()]);
    (host, token)
}
