//! `agent-tools mcp --http` started for a test: on a free loopback port, its processes marked
//! for the survivor checks, stopped with SIGTERM (or killed if the test fails first).

use std::{
    io::{BufRead, BufReader},
    path::Path,
    process::{Child, Command, Stdio},
    time::Duration,
};

use serde_json::{Value, json};

use crate::support::{assert_no_survivors, host_binary, processes_with_marker};

/// A host serving HTTP; `url` is its MCP endpoint, `marker` the environment mark its processes
/// (and whatever else the test gives it to) carry.
pub(crate) struct HttpHost {
    child: Child,
    pub(crate) url: String,
    pub(crate) marker: String,
    /// Every line the host wrote to stderr after its first.
    pub(crate) log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl HttpHost {
    /// Starts `agent-tools mcp --http 127.0.0.1:0 --root ROOT --trust-project EXTRA...` and
    /// reads the address it serves at from its first line on stderr.
    pub(crate) fn start(root: &Path, extra: &[&str]) -> HttpHost {
        HttpHost::start_via(&[], root, extra)
    }

    /// [`HttpHost::start`] through `wrapper` (a program that execs the rest, such as
    /// `prlimit --nofile=256`).
    pub(crate) fn start_via(wrapper: &[&str], root: &Path, extra: &[&str]) -> HttpHost {
        let marker = format!("e2e-http-{}-{}", std::process::id(), crate::support::unique());
        let host = host_binary();
        let (program, before): (&std::ffi::OsStr, &[&str]) = match wrapper.split_first() {
            Some((program, rest)) => (program.as_ref(), rest),
            None => (host.as_os_str(), &[]),
        };
        let mut command = Command::new(program);
        command.args(before);
        if !wrapper.is_empty() {
            command.arg(&host);
        }
        let mut child = command
            .args(["mcp", "--http", "127.0.0.1:0", "--trust-project", "--root"])
            .arg(root)
            .args(extra)
            .env("AGENT_TOOLS_E2E_MARKER", &marker)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the host");
        let mut stderr = BufReader::new(child.stderr.take().expect("stderr"));
        let mut first = String::new();
        let _ = stderr.read_line(&mut first);
        let url = first.split_whitespace().find(|word| word.starts_with("http://"));
        let url = url.map(String::from);
        // Keep draining stderr so the host never blocks on a full pipe.
        let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let kept = log.clone();
        std::thread::spawn(move || {
            let mut line = String::new();
            while stderr.read_line(&mut line).is_ok_and(|n| n > 0) {
                eprint!("host: {line}");
                if let Ok(mut kept) = kept.lock() {
                    kept.push(std::mem::take(&mut line));
                }
                line.clear();
            }
        });
        let host = HttpHost { child, url: url.unwrap_or_default(), marker, log };
        assert!(!host.url.is_empty(), "the host did not say where it serves: {first:?}");
        host
    }

    /// Runs the Python driver's HTTP mode with `script` (its `url` filled in).
    pub(crate) fn drive(&self, python: &Path, mut script: Value) -> Value {
        script["url"] = json!(self.url);
        crate::support::run_driver(python, &script)
    }

    /// Waits for every process of the host's sessions to be gone, the host itself excepted.
    pub(crate) fn assert_only_the_host_is_left(&self) {
        let host = self.child.id();
        let others = || -> Vec<(u32, String)> {
            processes_with_marker(&self.marker).into_iter().filter(|(p, _)| *p != host).collect()
        };
        for _ in 0..200 {
            if others().is_empty() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("processes of ended sessions survived them: {:?}", others());
    }

    /// Stops the host with SIGTERM, as a service manager would: it must exit 0 and leave no
    /// process behind.
    pub(crate) fn stop(mut self) {
        let _ = Command::new("kill").arg("-TERM").arg(self.child.id().to_string()).status();
        let status = self.child.wait().expect("wait for the host");
        assert!(status.success(), "the host exited with {status} on SIGTERM");
        assert_no_survivors(&self.marker, Duration::from_secs(15));
    }
}

impl Drop for HttpHost {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
