//! The handle of a spawned tree: signal it, list it, and end it — bounded, idempotent, from
//! async code, blocking code or `Drop`.

use std::{
    sync::{Arc, Mutex, MutexGuard},
    time::Duration,
};

use super::{
    janitor,
    teardown::{Teardown, reap, signal_group, teardown},
    tree::TreeId,
    watchdog::Watchdog,
};

/// A spawned process, its process group and every descendant carrying its lineage mark.
///
/// Clones share one tree. When the last clone is dropped without [`terminate`](Self::terminate),
/// the group is killed with SIGKILL at once and a background thread sweeps and reaps the rest
/// (descendants that left the group); nothing blocks.
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
    /// Turns true once the leader's move into its cgroup is done
    /// ([`CgroupJoin::WhileStarting`](super::CgroupJoin::WhileStarting)); None otherwise.
    joining: Option<tokio::sync::watch::Receiver<bool>>,
}

/// A reference to a tree that does not keep it alive: what may signal it from outside its
/// owner (a shutdown that must kill a busy kernel) without a number that could be reused.
#[derive(Debug, Clone, Default)]
pub struct WeakProcessGroup {
    inner: std::sync::Weak<Inner>,
}

impl WeakProcessGroup {
    /// The tree, while a [`ProcessGroup`] of it is still held.
    pub fn upgrade(&self) -> Option<ProcessGroup> {
        self.inner.upgrade().map(|inner| ProcessGroup { inner })
    }
}

impl ProcessGroup {
    /// A reference that does not keep the tree alive.
    pub fn downgrade(&self) -> WeakProcessGroup {
        WeakProcessGroup { inner: Arc::downgrade(&self.inner) }
    }

    pub(super) fn new(
        id: TreeId,
        watchdog: Option<Watchdog>,
        joining: Option<tokio::sync::watch::Receiver<bool>>,
    ) -> Self {
        let (watchdog, ended) = (Mutex::new(watchdog), Mutex::new(None));
        ProcessGroup { inner: Arc::new(Inner { id, watchdog, ended, joining }) }
    }

    /// Waits until the leader has joined its cgroup (or could not), for a tree spawned with
    /// [`CgroupJoin::WhileStarting`](super::CgroupJoin::WhileStarting); returns at once for
    /// any other. What the leader starts after this is born in the cgroup.
    pub async fn joined_cgroup(&self) {
        if let Some(joining) = &self.inner.joining {
            let _ = joining.clone().wait_for(|done| *done).await;
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

    /// The tree's own cgroup folder, where the host could make one (a writable cgroup v2
    /// hierarchy): every descendant stays in it, whatever it does.
    pub fn cgroup(&self) -> Option<&std::path::Path> {
        self.inner.id.cgroup.as_deref().map(|c| c.dir())
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

    /// Sends `signal` to the spawned process alone (not what it started), while it still is
    /// the process spawned: a kernel's interrupt goes to the interpreter, not to its children.
    pub fn signal_leader(&self, signal: i32) -> std::io::Result<()> {
        let id = &self.inner.id;
        if !id.leader_exists() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!("process {} has ended", id.leader),
            ));
        }
        // SAFETY: kill(2) on the leader just verified by its start time; no memory is involved.
        if unsafe { libc::kill(id.leader, signal) } == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    }

    /// Waits up to `within` until no process of the group is left, zombies included, reaping
    /// the zombies re-parented to the host (never the leader, whose `Child` owns its status);
    /// true once the group is empty.
    pub async fn wait_empty(&self, within: Duration) -> bool {
        let until = std::time::Instant::now() + within;
        loop {
            if !super::group_exists(self.pid()) {
                return true;
            }
            reap(&self.inner.id.find().orphan_zombies);
            if std::time::Instant::now() >= until {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
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
        let report = teardown(&self.inner.id, grace);
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

impl Drop for Inner {
    /// Best effort and non-blocking: SIGKILL to the group while its number is still ours; the
    /// janitor thread then sweeps and reaps the rest, and the watchdog covers a host that dies
    /// before it has.
    fn drop(&mut self) {
        let ended = self.ended.get_mut().unwrap_or_else(|p| p.into_inner()).is_some();
        if ended {
            return;
        }
        if self.id.leader_exists() {
            signal_group(self.id.leader, libc::SIGKILL);
        }
        let watchdog = self.watchdog.get_mut().unwrap_or_else(|p| p.into_inner()).take();
        janitor::end_later(self.id.clone(), watchdog);
    }
}
