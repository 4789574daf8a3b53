//! Ending a tree: SIGTERM, a grace period, then SIGKILL sweeps until nothing of it runs,
//! reaping the orphans re-parented to the host. Bounded in time.

use std::{
    collections::HashMap,
    fmt,
    time::{Duration, Instant},
};

use rustix::process::{Pid, PidfdFlags, Signal, pidfd_open, pidfd_send_signal};

use super::tree::{ProcInfo, TreeId};

/// How long the SIGKILL sweep may go on after the grace period before teardown gives up and
/// reports survivors (a process in uninterruptible sleep can take a while to die).
const KILL_BOUND: Duration = Duration::from_secs(5);

/// What ending a tree did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Teardown {
    /// How many processes were running when the teardown began.
    pub found: usize,
    /// Pids that were still running after the grace period (or appeared later) and got SIGKILL.
    pub killed: Vec<u32>,
    /// Pids still running when the bounded teardown gave up (normally empty).
    pub survivors: Vec<u32>,
    /// The tree had already been ended by an earlier call; nothing was done.
    pub repeated: bool,
}

impl fmt::Display for Teardown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.repeated {
            return f.write_str("it had already been ended");
        }
        if self.found == 0 && self.killed.is_empty() {
            return f.write_str("nothing of it was running");
        }
        let on_term = self.found.saturating_sub(self.killed.len() + self.survivors.len());
        let noun = if self.found == 1 { "process" } else { "processes" };
        write!(f, "{on_term} of {} {noun} ended on SIGTERM", self.found)?;
        if !self.killed.is_empty() {
            write!(f, "; killed with SIGKILL: pid {}", join(&self.killed))?;
        }
        if !self.survivors.is_empty() {
            write!(f, "; still running after SIGKILL: pid {}", join(&self.survivors))?;
        }
        Ok(())
    }
}

fn join(pids: &[u32]) -> String {
    pids.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
}

/// Ends the tree `id` names; see [`ProcessGroup::terminate`](super::ProcessGroup::terminate).
pub(super) fn teardown(id: &TreeId, grace: Duration) -> Teardown {
    let first = id.find();
    let mut report = Teardown { found: first.running.len(), ..Teardown::default() };
    if !first.running.is_empty() && !grace.is_zero() {
        // SIGTERM first: a server flushes its caches, a debug adapter detaches cleanly.
        if first.group_is_ours {
            signal_group(id.leader, libc::SIGTERM);
        }
        // Each process too, not only those outside the group: one may have left it
        // (`setsid`) since the scan.
        for process in &first.running {
            signal_exact(process, Signal::TERM);
        }
        let deadline = Instant::now() + grace;
        let mut pause = Pause::default();
        while first.running.iter().any(ProcInfo::running) && Instant::now() < deadline {
            pause.sleep_until(deadline);
        }
    }
    // SIGKILL to whatever of the tree still runs, including what it started meanwhile,
    // until a scan finds nothing: a process may fork while it is being killed.
    let deadline = Instant::now() + KILL_BOUND;
    // Reap candidates: everything of the tree seen running, whether SIGTERM or SIGKILL
    // ended it; a killed subset goes into the report.
    let mut seen: HashMap<i32, ProcInfo> = first.running.iter().map(|p| (p.pid, *p)).collect();
    let mut killed: Vec<u32> = Vec::new();
    let mut pause = Pause::default();
    loop {
        let tree = id.find();
        // What an earlier scan saw and still runs, even if the scan no longer finds it: a
        // descendant whose subreaper ancestor just died is the host's now, without the mark.
        for process in seen.values().filter(|p| p.running()) {
            signal_exact(process, Signal::KILL);
        }
        for process in &tree.running {
            seen.entry(process.pid).or_insert(*process);
            signal_exact(process, Signal::KILL);
            if !killed.contains(&(process.pid as u32)) {
                killed.push(process.pid as u32);
            }
        }
        // The group too, for a member that appeared after the scan; and the cgroup, which
        // holds even a member that left the group and cleared its environment.
        if tree.group_is_ours && !tree.running.is_empty() {
            signal_group(id.leader, libc::SIGKILL);
        }
        if let Some(cgroup) = &id.cgroup
            && !tree.running.is_empty()
        {
            cgroup.kill();
        }
        reap_orphans(seen.values(), id.leader);
        reap(&tree.orphan_zombies);
        if tree.running.is_empty() {
            break;
        }
        if Instant::now() >= deadline {
            report.survivors = tree.running.iter().map(|p| p.pid as u32).collect();
            break;
        }
        pause.sleep_until(deadline);
    }
    reap_orphans(seen.values(), id.leader);
    reap(&id.find().orphan_zombies);
    // Gone now, not when the last handle drops: a host that exits with the handle alive (its
    // watchdog already stopped) would leave the folder behind.
    if let Some(cgroup) = &id.cgroup
        && report.survivors.is_empty()
    {
        cgroup.remove();
    }
    killed.sort_unstable();
    killed.retain(|pid| !report.survivors.contains(pid));
    report.killed = killed;
    report
}

pub(super) fn signal_group(pgid: i32, signal: i32) {
    if pgid > 1 {
        // SAFETY: killpg(2) on a group the caller verified is ours; no memory is involved.
        unsafe {
            libc::killpg(pgid, signal);
        }
    }
}

/// Signals exactly the process `process` names: through a pidfd opened before its start time
/// is checked, so a pid the kernel has since given to another process is never signalled.
pub(super) fn signal_exact(process: &ProcInfo, signal: Signal) -> bool {
    let Some(pid) = Pid::from_raw(process.pid) else { return false };
    match pidfd_open(pid, PidfdFlags::empty()) {
        Ok(pidfd) => process.running() && pidfd_send_signal(&pidfd, signal).is_ok(),
        // No pidfds (a kernel before 5.3): check, then signal by pid.
        Err(rustix::io::Errno::NOSYS) => {
            process.running()
                // SAFETY: kill(2) on a pid just verified by its start time; no memory is involved.
                && unsafe { libc::kill(process.pid, signal.as_raw()) } == 0
        }
        Err(_) => false,
    }
}

/// Reaps the zombies among `seen` that were re-parented to the host (it is their
/// subreaper). Only processes the teardown itself found in the tree, and never the leader,
/// whose `Child` owns its exit status: reaping anything else would steal another waiter's.
fn reap_orphans<'a>(seen: impl Iterator<Item = &'a ProcInfo>, leader: i32) {
    let host = std::process::id() as i32;
    let zombies: Vec<i32> = seen
        .filter(|p| p.pid != leader)
        .filter(|p| {
            super::tree::stat(p.pid)
                .is_some_and(|now| now.start == p.start && now.zombie && now.ppid == host)
        })
        .map(|p| p.pid)
        .collect();
    reap(&zombies);
}

pub(super) fn reap(zombies: &[i32]) {
    for pid in zombies {
        let mut status = 0;
        // SAFETY: waitpid(2) on one pid, a zombie child of the host; `status` is a local.
        unsafe {
            libc::waitpid(*pid, &mut status, libc::WNOHANG);
        }
    }
}

/// Polling intervals that start short (most processes exit at once) and back off.
#[derive(Debug)]
struct Pause(Duration);

impl Default for Pause {
    fn default() -> Self {
        Pause(Duration::from_millis(5))
    }
}

impl Pause {
    fn sleep_until(&mut self, deadline: Instant) {
        let left = deadline.saturating_duration_since(Instant::now());
        std::thread::sleep(self.0.min(left));
        self.0 = (self.0 * 2).min(Duration::from_millis(50));
    }
}
