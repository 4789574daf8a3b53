//! How processes ended, in words (signal names, exit statuses), and a bounded poll. The
//! processes a session learns about are support's `KnownProcess` (pid and start time, killed
//! through a pidfd), found by its `/proc` walks.

use std::time::{Duration, Instant};

use agent_tools_support::capsule::ProcessEnd;

/// Waits until `done()` or `within` passed, polling briefly.
pub async fn wait_until(within: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + within;
    loop {
        if done() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A readable name for a signal number.
pub fn signal_name(signal: i32) -> String {
    match signal {
        libc::SIGABRT => "SIGABRT".into(),
        libc::SIGKILL => "SIGKILL".into(),
        libc::SIGTERM => "SIGTERM".into(),
        libc::SIGSEGV => "SIGSEGV".into(),
        libc::SIGINT => "SIGINT".into(),
        libc::SIGHUP => "SIGHUP".into(),
        libc::SIGPIPE => "SIGPIPE".into(),
        libc::SIGBUS => "SIGBUS".into(),
        libc::SIGFPE => "SIGFPE".into(),
        libc::SIGILL => "SIGILL".into(),
        libc::SIGQUIT => "SIGQUIT".into(),
        libc::SIGTRAP => "SIGTRAP".into(),
        libc::SIGUSR1 => "SIGUSR1".into(),
        libc::SIGUSR2 => "SIGUSR2".into(),
        libc::SIGALRM => "SIGALRM".into(),
        other => format!("signal {other}"),
    }
}

/// Describes how a process ended: `exit code 0`, `SIGABRT`.
pub fn describe_end(end: ProcessEnd) -> String {
    match end {
        ProcessEnd::Code(code) => format!("exit code {code}"),
        ProcessEnd::Signal(signal) => signal_name(signal),
    }
}
