//! Processes: the adapter in its own process group, the debuggees we learned about, and the
//! signals that end them. A process is remembered with its start time, so a pid the kernel has
//! since given to someone else is never signalled.

use std::time::{Duration, Instant};

/// A process we may have to kill: its pid and its start time (clock ticks since boot).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ProcRef {
    pub pid: i32,
    pub start: u64,
}

/// The fields of `/proc/PID/stat` we need: parent, process group, start time, state.
#[derive(Debug, Clone, Copy)]
pub struct ProcStat {
    pub ppid: i32,
    pub pgid: i32,
    pub start: u64,
    pub state: char,
}

/// Reads `/proc/PID/stat`; `None` if the process is gone (or this is not Linux).
pub fn stat(pid: i32) -> Option<ProcStat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may contain spaces: parse after the last ')'.
    let rest = text.get(text.rfind(')')? + 2..)?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // rest[0] is field 3 (state); ppid is field 4, pgrp field 5, starttime field 22.
    Some(ProcStat {
        state: fields.first()?.chars().next()?,
        ppid: fields.get(1)?.parse().ok()?,
        pgid: fields.get(2)?.parse().ok()?,
        start: fields.get(19)?.parse().ok()?,
    })
}

impl ProcRef {
    /// The process `pid` as it is now, if it exists.
    pub fn of(pid: i32) -> Option<ProcRef> {
        stat(pid).map(|s| ProcRef { pid, start: s.start })
    }

    /// Whether this very process (same pid, same start time) is alive and not a zombie.
    pub fn alive(&self) -> bool {
        stat(self.pid).is_some_and(|s| s.start == self.start && s.state != 'Z' && s.state != 'X')
    }

    /// Sends `signal` if this is still the same process.
    #[allow(clippy::disallowed_methods)] // a debuggee the adapter started, checked by start time
    pub fn signal(&self, signal: i32) -> bool {
        if self.pid <= 1 || !self.alive() {
            return false;
        }
        // SAFETY: kill(2) with a positive pid we verified by start time; no memory is involved.
        unsafe { libc::kill(self.pid, signal) == 0 }
    }

    /// The process group it leads, if it leads one (delve starts its debuggee in a new group).
    pub fn leads_group(&self) -> bool {
        stat(self.pid).is_some_and(|s| s.start == self.start && s.pgid == self.pid)
    }
}

/// Sends `signal` to every process of group `pgid`. False if the group is empty.
#[allow(clippy::disallowed_methods)] // a debuggee's own group, found by its leader
pub fn signal_group(pgid: i32, signal: i32) -> bool {
    if pgid <= 1 {
        return false;
    }
    // SAFETY: killpg(2) on a group id we created with process_group(0); no memory is involved.
    unsafe { libc::killpg(pgid, signal) == 0 }
}

/// Live members of process group `pgid` (zombies excluded).
pub fn group_members(pgid: i32) -> Vec<ProcRef> {
    all_processes()
        .into_iter()
        .filter(|(_, s)| s.pgid == pgid && s.state != 'Z' && s.state != 'X')
        .map(|(pid, s)| ProcRef { pid, start: s.start })
        .collect()
}

fn all_processes() -> Vec<(i32, ProcStat)> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else { return out };
    for entry in dir.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        if let Some(stat) = stat(pid) {
            out.push((pid, stat));
        }
    }
    out
}

/// Every live descendant of `pid` (children, grandchildren, …).
pub fn descendants(pid: i32) -> Vec<ProcRef> {
    let all = all_processes();
    let mut found = Vec::new();
    let mut frontier = vec![pid];
    while let Some(parent) = frontier.pop() {
        for (child, stat) in &all {
            if stat.ppid == parent
                && stat.state != 'Z'
                && !found.iter().any(|p: &ProcRef| p.pid == *child)
            {
                found.push(ProcRef { pid: *child, start: stat.start });
                frontier.push(*child);
            }
        }
    }
    found
}

/// In one scan of `/proc`: every live descendant of `roots` and every live member of the
/// process groups `groups`, and their descendants. A debuggee's forked child that outlived
/// its parent is found through its group (it keeps the group unless it leaves it on purpose).
pub fn family(roots: &[i32], groups: &[i32]) -> Vec<ProcRef> {
    let all = all_processes();
    let live = |s: &ProcStat| s.state != 'Z' && s.state != 'X';
    let mut found: Vec<ProcRef> = all
        .iter()
        .filter(|(pid, s)| live(s) && groups.contains(&s.pgid) && !roots.contains(pid))
        .map(|(pid, s)| ProcRef { pid: *pid, start: s.start })
        .collect();
    let mut frontier: Vec<i32> = roots.iter().copied().chain(found.iter().map(|p| p.pid)).collect();
    while let Some(parent) = frontier.pop() {
        for (child, stat) in &all {
            if stat.ppid == parent && live(stat) && !found.iter().any(|p| p.pid == *child) {
                found.push(ProcRef { pid: *child, start: stat.start });
                frontier.push(*child);
            }
        }
    }
    found
}

/// The process group of `pid`, if it is alive.
pub fn group_of(pid: i32) -> Option<i32> {
    stat(pid).map(|s| s.pgid)
}

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

/// Describes an exit status: `exit code 0`, `SIGABRT`.
pub fn describe_status(status: &std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    if let Some(code) = status.code() {
        format!("exit code {code}")
    } else if let Some(signal) = status.signal() {
        signal_name(signal)
    } else {
        "unknown status".into()
    }
}
