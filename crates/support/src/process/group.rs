//! The handle of a spawned tree: signal it, list it, and end it — bounded, idempotent, from
//! async code, blocking code or `Drop`.

use std::{
    collections::HashMap,
    fmt,
    sync::{Arc, Mutex, MutexGuard},
    time::{Duration, Instant},
};

use rustix::process::{Pid, PidfdFlags, Signal, pidfd_open, pidfd_send_signal};

use super::{
    tree::{ProcInfo, TreeId},
    watchdog::Watchdog,
};

/// How long the SIGKILL sweep may go on after the grace period before teardown gives up and
/// reports survivors (a process in uninterruptible sleep can take a while to die).
const KILL_BOUND: Duration = Duration::from_secs(5);

/// A spawned process, its process group and every descendant carrying its lineage mark.
///
/// Clones share one tree. When the last clone is dropped without [`terminate`](Self::terminate),
/// the group is killed with SIGKILL at once and the watchdog (if any) sweeps the descendants
/// that left the group; nothing blocks.
#[derive(Debug, Clone)]
pub struct ProcessGroup {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    id: TreeId,
    watchdog: Mutex<Option<Watchdog>>,
    /// The first teardown's report; set once the tree is ended.
    ended: Mutex<Option<Teardown>>,
}

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
        write!(f, "{on_term} of {} processes ended on SIGTERM", self.found)?;
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

impl ProcessGroup {
    pub(super) fn new(id: TreeId, watchdog: Option<Watchdog>) -> Self {
        ProcessGroup {
            inner: Arc::new(Inner { id, watchdog: Mutex::new(watchdog), ended: Mutex::new(None) }),
        }
    }

    /// The pid of the spawned process, which is also its process group id.
    pub fn pid(&self) -> u32 {
        self.inner.id.leader as u32
    }

    /// The environment variable (`AGENT_TOOLS_LINEAGE_<hex>=1`) every process of the tree
    /// inherits; a caller that clears the environment of a grandchild should keep it.
    pub fn lineage_var(&self) -> &str {
        &self.inner.id.lineage.name
    }

    /// Sends `signal` (for example `libc::SIGINT`) to the process group, while it still is ours.
    pub fn signal(&self, signal: i32) -> std::io::Result<()> {
        let id = &self.inner.id;
        if !(id.leader_exists() || id.find().group_is_ours) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!("process group {} has ended", id.leader),
            ));
        }
        // SAFETY: killpg(2) on a group verified to be ours; no memory is involved.
        if unsafe { libc::killpg(id.leader, signal) } == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    }

    /// Pids of every running process of the tree (zombies excluded); a `/proc` scan.
    pub fn members(&self) -> Vec<u32> {
        self.inner.id.find().running.iter().map(|p| p.pid as u32).collect()
    }

    /// Ends the whole tree: SIGTERM to the group and to every marked process, up to `grace`
    /// for them to exit, then SIGKILL to whatever of the tree still runs or has appeared,
    /// repeated until nothing is left (bounded), reaping the orphans re-parented to the host.
    /// Idempotent; the leader itself is left for its `Child` to reap.
    ///
    /// Runs on Tokio's blocking pool: the sweep polls `/proc`. If the call is dropped midway,
    /// the teardown still completes.
    pub async fn terminate(&self, grace: Duration) -> Teardown {
        let group = self.clone();
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                match runtime.spawn_blocking(move || group.terminate_blocking(grace)).await {
                    Ok(report) => report,
                    // The runtime is shutting down: do it here.
                    Err(_) => self.terminate_blocking(grace),
                }
            }
            Err(_) => self.terminate_blocking(grace),
        }
    }

    /// [`terminate`](Self::terminate) for blocking code; blocks up to `grace` plus a few seconds.
    pub fn terminate_blocking(&self, grace: Duration) -> Teardown {
        let mut ended = lock(&self.inner.ended);
        if ended.is_some() {
            return Teardown { repeated: true, ..Teardown::default() };
        }
        let report = self.inner.teardown(grace);
        if let Some(watchdog) = lock(&self.inner.watchdog).take() {
            watchdog.stop();
        }
        *ended = Some(report.clone());
        report
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Inner {
    fn teardown(&self, grace: Duration) -> Teardown {
        let id = &self.id;
        let first = id.find();
        let mut report = Teardown { found: first.running.len(), ..Teardown::default() };
        if !first.running.is_empty() && !grace.is_zero() {
            // SIGTERM first: a server flushes its caches, a debug adapter detaches cleanly.
            if first.group_is_ours {
                signal_group(id.leader, libc::SIGTERM);
            }
            for process in first.running.iter().filter(|p| p.pgid != id.leader) {
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
            for process in &tree.running {
                seen.entry(process.pid).or_insert(*process);
                signal_exact(process, Signal::KILL);
                if !killed.contains(&(process.pid as u32)) {
                    killed.push(process.pid as u32);
                }
            }
            // The group too, for a member that appeared after the scan.
            if tree.group_is_ours && !tree.running.is_empty() {
                signal_group(id.leader, libc::SIGKILL);
            }
            reap_orphans(seen.values(), id.leader);
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
        killed.sort_unstable();
        killed.retain(|pid| !report.survivors.contains(pid));
        report.killed = killed;
        report
    }
}

impl Drop for Inner {
    /// Best effort and non-blocking: SIGKILL to the group while its number is still ours, and
    /// the watchdog's pipe closed so it sweeps what left the group.
    fn drop(&mut self) {
        let ended = self.ended.get_mut().unwrap_or_else(|p| p.into_inner()).is_some();
        if ended {
            return;
        }
        if self.id.leader_exists() {
            signal_group(self.id.leader, libc::SIGKILL);
        }
        if let Some(watchdog) = self.watchdog.get_mut().unwrap_or_else(|p| p.into_inner()).take() {
            watchdog.release();
        }
    }
}

fn signal_group(pgid: i32, signal: i32) {
    if pgid > 1 {
        // SAFETY: killpg(2) on a group the caller verified is ours; no memory is involved.
        unsafe {
            libc::killpg(pgid, signal);
        }
    }
}

/// Signals exactly the process `process` names: through a pidfd opened before its start time
/// is checked, so a pid the kernel has since given to another process is never signalled.
fn signal_exact(process: &ProcInfo, signal: Signal) -> bool {
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
/// subreaper). Only pids the teardown itself found in the tree, and never the leader, whose `Child` owns
/// its exit status: reaping anything else would steal another waiter's status.
fn reap_orphans<'a>(seen: impl Iterator<Item = &'a ProcInfo>, leader: i32) {
    let host = std::process::id() as i32;
    for process in seen {
        if process.pid == leader {
            continue;
        }
        if super::tree::stat(process.pid)
            .is_some_and(|now| now.start == process.start && now.zombie && now.ppid == host)
        {
            let mut status = 0;
            // SAFETY: waitpid(2) on one pid that is our own zombie child; `status` is a local.
            unsafe {
                libc::waitpid(process.pid, &mut status, libc::WNOHANG);
            }
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
