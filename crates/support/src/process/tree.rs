//! Finding a spawned tree in `/proc`: by its cgroup, its lineage mark, its process group and
//! parentage.
//!
//! Why `/proc` as well as a cgroup: a cgroup holds every descendant whatever it does, but it
//! needs a writable cgroup v2 hierarchy (root, or a delegated subtree), which many containers
//! and CI runners do not give. The lineage mark (an environment variable unique to one spawn,
//! inherited by every descendant) survives leaving the group (`setsid`) and losing the parent
//! (double fork); the group and parentage catch the descendant that cleared its environment;
//! only one that does all three is out of reach without the cgroup.

use std::collections::HashSet;

/// An environment variable unique to one spawn; every descendant inherits it.
#[derive(Debug, Clone)]
pub(super) struct Lineage {
    /// The variable's name, `AGENT_TOOLS_LINEAGE_<hex>`.
    pub(super) name: String,
    /// The `NAME=1` entry as it appears in `/proc/PID/environ`.
    pub(super) entry: Vec<u8>,
}

impl Lineage {
    pub(super) fn new() -> Self {
        // A variable per spawn (not one variable with a value per spawn), so a tree started by
        // a host that is itself in a tree carries both marks.
        let name = format!("AGENT_TOOLS_LINEAGE_{}", uuid::Uuid::new_v4().simple());
        let entry = format!("{name}=1").into_bytes();
        Lineage { name, entry }
    }
}

/// What `/proc/PID/stat` says about a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ProcInfo {
    pub(super) pid: i32,
    pub(super) ppid: i32,
    pub(super) pgid: i32,
    /// Start time in clock ticks since boot: with the pid, it names one process for good.
    pub(super) start: u64,
    pub(super) zombie: bool,
}

/// Reads `/proc/PID/stat`; `None` if the process is gone.
pub(super) fn stat(pid: i32) -> Option<ProcInfo> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may contain anything: parse after the last ')'.
    let rest = text.get(text.rfind(')')? + 2..)?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // fields[0] is field 3 (state); ppid is field 4, pgrp field 5, starttime field 22.
    let state = fields.first()?.chars().next()?;
    Some(ProcInfo {
        pid,
        ppid: fields.get(1)?.parse().ok()?,
        pgid: fields.get(2)?.parse().ok()?,
        start: fields.get(19)?.parse().ok()?,
        zombie: matches!(state, 'Z' | 'X'),
    })
}

impl ProcInfo {
    /// Whether this very process (same pid and start time) is still running (not a zombie).
    pub(super) fn running(&self) -> bool {
        stat(self.pid).is_some_and(|now| now.start == self.start && !now.zombie)
    }
}

/// Every process `/proc` lists now.
pub(super) fn all_processes() -> Vec<ProcInfo> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(stat)
        .collect()
}

/// Whether process `pid` carries `entry` in its environment. False for zombies (their
/// environment is gone) and for processes we may not read (another user's).
///
/// A process in the middle of `execve` shows an empty environment for a moment (the new
/// image's is not laid out yet, or the image the file was opened on is gone): a setsid'd,
/// double-forked descendant caught there would be missed, so an empty environment of a user
/// process is read again, briefly, before it counts.
pub(super) fn carries(info: &ProcInfo, entry: &[u8]) -> bool {
    const KTHREADD: i32 = 2;
    let mut environ = read_environ(info.pid);
    let user_process = info.pid != KTHREADD && info.ppid != KTHREADD;
    for _ in 0..EXEC_RETRIES {
        match &environ {
            Ok(bytes) if bytes.is_empty() && user_process && info.running() => {
                std::thread::sleep(std::time::Duration::from_millis(1));
                environ = read_environ(info.pid);
            }
            _ => break,
        }
    }
    environ.is_ok_and(|environ| environ.split(|b| *b == 0).any(|e| e == entry))
}

/// How many times an empty environment is read again: `execve` lays out the new one within
/// microseconds; this bounds a process that really has none.
const EXEC_RETRIES: usize = 20;

/// `/proc/PID/environ` in one `read` where it fits: the kernel copies it from one image per
/// call, and a process that execs between two smaller reads would show the old image's first
/// part and nothing after, cutting off the mark unless it is in that first part.
fn read_environ(pid: i32) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    // Far more than a usual environment, and under the allocator's mmap threshold.
    const AT_ONCE: usize = 64 * 1024;
    let mut file = std::fs::File::open(format!("/proc/{pid}/environ"))?;
    let mut environ = vec![0; AT_ONCE];
    let mut len = file.read(&mut environ)?;
    if len == AT_ONCE {
        environ.truncate(len);
        file.read_to_end(&mut environ)?;
        len = environ.len();
    }
    environ.truncate(len);
    Ok(environ)
}

/// The spawned tree as it is now.
#[derive(Debug, Default)]
pub(super) struct Tree {
    /// Running processes of the tree.
    pub(super) running: Vec<ProcInfo>,
    /// Whether the process group still belongs to the tree (its leader or a marked process is
    /// in it), so that signalling the group cannot reach a stranger that got the number.
    pub(super) group_is_ours: bool,
    /// Zombies of the group that were re-parented to the host: the host must reap them.
    /// (While a member, even a zombie, holds the group's number, it cannot be reused.)
    pub(super) orphan_zombies: Vec<i32>,
}

/// The identity of a spawned tree: its leader and its mark.
#[derive(Debug, Clone)]
pub(super) struct TreeId {
    pub(super) leader: i32,
    /// The leader's start time, if it could be read right after the spawn.
    pub(super) leader_start: Option<u64>,
    pub(super) lineage: Lineage,
    /// The tree's own cgroup, where the host could make one.
    pub(super) cgroup: Option<std::sync::Arc<super::cgroup::Cgroup>>,
}

impl TreeId {
    /// Whether `info` is the leader we spawned (and not a later process with its pid).
    pub(super) fn is_leader(&self, info: &ProcInfo) -> bool {
        info.pid == self.leader && Some(info.start) == self.leader_start
    }

    /// Whether the leader is still ours: running or a zombie nobody has reaped.
    pub(super) fn leader_exists(&self) -> bool {
        stat(self.leader).is_some_and(|info| self.is_leader(&info))
    }

    /// Scans `/proc` for every running process of the tree: marked, in the group (when the
    /// group is still ours), or descended from one of those. The host itself never is.
    pub(super) fn find(&self) -> Tree {
        let host = std::process::id() as i32;
        let all = all_processes();
        let mut ours: HashSet<i32> = HashSet::new();
        let mut group_is_ours = false;
        // What the kernel holds in the tree's cgroup belongs to it, whatever it did.
        let contained: HashSet<i32> =
            self.cgroup.as_ref().map(|c| c.members().into_iter().collect()).unwrap_or_default();
        for info in &all {
            if info.pid == host {
                continue;
            }
            let leader = self.is_leader(info);
            let marked = !info.zombie
                && (contained.contains(&info.pid) || carries(info, &self.lineage.entry));
            if (leader || marked) && info.pgid == self.leader {
                group_is_ours = true;
            }
            if marked || (leader && !info.zombie) {
                ours.insert(info.pid);
            }
        }
        if group_is_ours {
            ours.extend(
                all.iter()
                    .filter(|p| p.pgid == self.leader && !p.zombie && p.pid != host)
                    .map(|p| p.pid),
            );
        }
        // Descendants by parentage, to a fixed point.
        loop {
            let before = ours.len();
            for info in &all {
                if !info.zombie && info.pid != host && ours.contains(&info.ppid) {
                    ours.insert(info.pid);
                }
            }
            if ours.len() == before {
                break;
            }
        }
        let orphan_zombies = all
            .iter()
            .filter(|p| p.zombie && p.ppid == host && p.pgid == self.leader && p.pid != self.leader)
            .map(|p| p.pid)
            .collect();
        let running = all.into_iter().filter(|p| ours.contains(&p.pid)).collect();
        Tree { running, group_is_ours, orphan_zombies }
    }
}
