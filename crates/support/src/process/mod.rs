//! Process lifetime: every process a run starts is gone when the run ends, or when the host
//! dies, even by SIGKILL.
//!
//! [`spawn`] (Tokio) and [`spawn_std`] (blocking) start a command so that:
//! - it leads a process group of its own (`setpgid(0, 0)`), so one signal reaches what it starts;
//! - it carries a lineage mark, an environment variable unique to this spawn that every
//!   descendant inherits, so teardown finds descendants that left the group (`setsid`) or lost
//!   their parent (double fork);
//! - it gets SIGKILL when the host dies (`PR_SET_PDEATHSIG`, set on one process-lifetime
//!   spawner thread, because Linux ties that signal to the forking *thread*);
//! - a watchdog (on by default) kills the whole tree when the host dies or drops the handle,
//!   because the death signal reaches only the direct child;
//! - the host is a child subreaper, so orphans of the tree are re-parented to it (not init),
//!   and teardown reaps their zombies;
//! - where the host may make cgroups (a writable cgroup v2 hierarchy), it runs in a cgroup of
//!   its own, which the kernel keeps every descendant in, whatever it does (`setsid`, a double
//!   fork, a cleared environment): teardown kills what is in it too, and removes it.
//!
//! The returned [`ProcessGroup`] ends the tree: [`ProcessGroup::terminate`] is SIGTERM, a grace
//! period, SIGKILL to the group and to every marked process, bounded and idempotent; dropping
//! the last handle kills the group at once without blocking, and a background thread sweeps
//! and reaps the rest.
//!
//! How to adopt (a language server, a checker, an adapter):
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> std::io::Result<()> {
//! use std::{process::Stdio, time::Duration};
//! use agent_tools_support::process::{self, Spawned};
//!
//! // A server would be `basedpyright-langserver --stdio`; `cat` stands in for it here.
//! let mut command = tokio::process::Command::new("cat");
//! command.stdin(Stdio::piped()).stdout(Stdio::piped());
//! // Was: command.process_group(0).kill_on_drop(true).spawn()
//! let Spawned { mut child, group } = process::spawn(command).await?;
//! let stdout = child.stdout.take();
//! // ... talk to it; keep `group` as long as the process should live ...
//! let report = group.terminate(Duration::from_secs(2)).await;
//! tracing::debug!("server ended: {report}");
//! assert!(report.survivors.is_empty());
//! let _ = child.wait().await; // the leader's exit status stays with its `Child`
//! assert!(!process::group_exists(group.pid()));
//! # drop(stdout);
//! # Ok(()) }
//! ```
//!
//! A short-lived helper where a `sh` per spawn is too much can go without the watchdog:
//! `SpawnOptions::new().watchdog(false).spawn(command)`; it still dies with the host itself.

// The seam itself: the one place that starts and signals processes (clippy.toml).
#![allow(clippy::disallowed_methods)]

mod cgroup;
mod group;
mod janitor;
mod known;
mod spawner;
mod teardown;
mod tree;
mod watchdog;

use std::io;

use self::{
    cgroup::Cgroup,
    tree::{Lineage, TreeId},
    watchdog::Watchdog,
};
pub use self::{
    group::{ProcessGroup, WeakProcessGroup},
    known::{KnownProcess, children, descendants, family, group_members, group_of, kill_group},
    teardown::Teardown,
};

/// The start time of process `pid` (clock ticks since boot): with the pid it names one process
/// for good. None when it is gone.
pub(crate) fn start_time(pid: u32) -> Option<u64> {
    tree::stat(i32::try_from(pid).ok()?).filter(|s| !s.zombie).map(|s| s.start)
}

/// A started Tokio child and the handle of its tree.
#[derive(Debug)]
pub struct Spawned {
    /// The leader: its pipes and its exit status.
    pub child: tokio::process::Child,
    /// Ends the tree; dropping it kills the group.
    pub group: ProcessGroup,
}

/// A started blocking child and the handle of its tree.
#[derive(Debug)]
pub struct SpawnedStd {
    /// The leader: its pipes and its exit status.
    pub child: std::process::Child,
    /// Ends the tree; dropping it kills the group.
    pub group: ProcessGroup,
}

/// How a tree is tied to the host; [`SpawnOptions::new`] is what [`spawn`] uses.
#[derive(Debug, Clone)]
pub struct SpawnOptions {
    watchdog: bool,
    cgroup_join: CgroupJoin,
}

/// When the leader joins its tree's cgroup (where one can be made).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CgroupJoin {
    /// Between fork and exec: nothing the program does escapes it. The join waits for the
    /// kernel (a write to `cgroup.procs` waits for an RCU grace period: 1–15 ms, longer under
    /// load), and the program's start waits with it.
    #[default]
    BeforeExec,
    /// Moved by the host right after the exec, while the program boots; the spawn returns once
    /// it is in. For a program that starts nothing of its own before it is given input (the
    /// kernels' runners): whatever it starts afterwards is born in the cgroup. A program that
    /// forks at once (a shell, a wrapper such as bubblewrap) must use [`BeforeExec`](Self::BeforeExec):
    /// a child forked before the move stays outside (teardown still finds it by its lineage
    /// mark and process group).
    AfterStart,
    /// Moved by a helper thread right after the exec: the spawn returns at once and the program
    /// boots while the kernel moves it; [`ProcessGroup::joined_cgroup`] waits until it is in.
    /// For a program that starts nothing of its own before it is given input, where the caller
    /// waits for the join before it gives it any (a debug adapter: its boot and its first
    /// request overlap the wait, which [`AfterStart`](Self::AfterStart) puts before them).
    WhileStarting,
}

impl Default for SpawnOptions {
    fn default() -> Self {
        SpawnOptions { watchdog: true, cgroup_join: CgroupJoin::BeforeExec }
    }
}

impl SpawnOptions {
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether a watchdog kills the whole tree when the host dies (default: yes). Without it
    /// only the direct child dies with the host; teardown by the handle is unchanged.
    pub fn watchdog(mut self, on: bool) -> Self {
        self.watchdog = on;
        self
    }

    /// When the leader joins its cgroup (default: [`CgroupJoin::BeforeExec`]).
    pub fn cgroup_join(mut self, when: CgroupJoin) -> Self {
        self.cgroup_join = when;
        self
    }

    /// Starts `command` (its program, arguments, pipes, directory and environment as set) in
    /// a tree of its own, registered with the current Tokio runtime.
    pub async fn spawn(&self, mut command: tokio::process::Command) -> io::Result<Spawned> {
        let lineage = Lineage::new();
        let cgroup = self.prepare(command.as_std_mut(), &lineage);
        tracing::trace!("spawn: prepared");
        let child = spawner::spawn_tokio(command).await?;
        let pid = child.id().ok_or_else(|| io::Error::other("the spawned process has no pid"))?;
        tracing::trace!(pid, "spawn: started");
        let group = self.track(pid, lineage, cgroup);
        tracing::trace!(pid, "spawn: tracked");
        Ok(Spawned { child, group })
    }

    /// [`spawn`](Self::spawn) for blocking code.
    pub fn spawn_std(&self, mut command: std::process::Command) -> io::Result<SpawnedStd> {
        let lineage = Lineage::new();
        let cgroup = self.prepare(&mut command, &lineage);
        let child = spawner::spawn_std(command)?;
        let group = self.track(child.id(), lineage, cgroup);
        Ok(SpawnedStd { child, group })
    }

    fn track(&self, pid: u32, lineage: Lineage, cgroup: Option<Cgroup>) -> ProcessGroup {
        let leader = pid as i32;
        // Read before anyone can reap the leader: a zombie still has its stat.
        let leader_start = tree::stat(leader).map(|info| info.start);
        // The leader joined before its exec, or joins now, or joins on a helper thread, or could
        // not (then the cgroup is of no use).
        let (cgroup, joining) = match (self.cgroup_join, cgroup) {
            (CgroupJoin::WhileStarting, Some(cgroup)) => {
                let cgroup = std::sync::Arc::new(cgroup);
                let joining = cgroup::join_soon(cgroup.clone(), leader);
                (Some(cgroup), Some(joining))
            }
            (join, cgroup) => {
                if let (CgroupJoin::AfterStart, Some(cgroup)) = (join, &cgroup) {
                    cgroup.add(leader);
                }
                (cgroup.filter(|c| c.contains(leader)).map(std::sync::Arc::new), None)
            }
        };
        let watchdog = if self.watchdog {
            match Watchdog::start(leader, &lineage, cgroup.as_deref()) {
                Ok(watchdog) => Some(watchdog),
                Err(e) => {
                    tracing::warn!(
                        "no watchdog for process group {leader} ({e}); what it starts may \
                         outlive a killed host"
                    );
                    None
                }
            }
        } else {
            None
        };
        ProcessGroup::new(TreeId { leader, leader_start, lineage, cgroup }, watchdog, joining)
    }
}

/// Starts `command` in a tree of its own with a watchdog; see the module docs.
pub async fn spawn(command: tokio::process::Command) -> io::Result<Spawned> {
    SpawnOptions::new().spawn(command).await
}

/// Starts a blocking `command` in a tree of its own with a watchdog; see the module docs.
pub fn spawn_std(command: std::process::Command) -> io::Result<SpawnedStd> {
    SpawnOptions::new().spawn_std(command)
}

/// Whether any process of process group `pgid` exists, zombies included (`killpg(pgid, 0)`).
pub fn group_exists(pgid: u32) -> bool {
    let Ok(pgid) = libc::pid_t::try_from(pgid) else { return false };
    // SAFETY: signal 0 only checks; no memory is involved.
    pgid > 1 && unsafe { libc::killpg(pgid, 0) } == 0
}

/// Whether spawned trees get a cgroup of their own here (a writable cgroup v2 hierarchy: root,
/// or a delegated subtree). Without one, a descendant that leaves the group, clears its
/// environment and loses its parent is out of reach.
pub fn cgroup_available() -> bool {
    Cgroup::create().is_some()
}

impl SpawnOptions {
    /// Readies `command` for a tree of its own; its cgroup, where one can be made. Only a tree
    /// with a watchdog gets one: the watchdog removes it if the host dies first (a short-lived
    /// helper without one would leave an empty cgroup folder behind).
    fn prepare(&self, command: &mut std::process::Command, lineage: &Lineage) -> Option<Cgroup> {
        use std::os::unix::process::CommandExt;
        command.env(&lineage.name, "1").process_group(0);
        spawner::die_with_host(command);
        let cgroup = if self.watchdog { Cgroup::create() } else { None };
        if let Some(cgroup) = &cgroup
            && self.cgroup_join == CgroupJoin::BeforeExec
        {
            cgroup.join_on_exec(command);
        }
        // Last: a Landlock capsule's confinement, once the steps that need the host's rights
        // (the cgroup join) are done.
        crate::capsule::confine_last(command);
        cgroup
    }
}
