//! Processes a run learned about but did not start itself (a debuggee its adapter started, what
//! that debuggee forked): each named by its pid and start time, found again by `/proc` walks,
//! and killed through a pidfd, so a pid the kernel has since given to another process is never
//! signalled.

use rustix::process::Signal;

use super::{
    teardown::signal_exact,
    tree::{ProcInfo, all_processes, stat},
};

/// One process, for good: its pid and its start time (clock ticks since boot).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KnownProcess {
    pub pid: i32,
    pub start: u64,
}

impl KnownProcess {
    /// The process `pid` as it is now, if it exists (a zombie included).
    pub fn of(pid: i32) -> Option<KnownProcess> {
        stat(pid).map(|s| KnownProcess { pid, start: s.start })
    }

    /// Whether this very process (same pid, same start time) is alive and not a zombie.
    pub fn alive(&self) -> bool {
        self.info().running()
    }

    /// Whether it leads its own process group (delve starts its debuggee in a new one).
    pub fn leads_group(&self) -> bool {
        stat(self.pid).is_some_and(|s| s.start == self.start && s.pgid == self.pid)
    }

    /// SIGKILL to this very process, if it still runs. False if it did not (or was not) sent.
    pub fn kill(&self) -> bool {
        self.pid > 1 && signal_exact(&self.info(), Signal::KILL)
    }

    /// SIGKILL to the process group this process leads, if it still leads one.
    pub fn kill_group(&self) -> bool {
        if self.pid <= 1 || !self.leads_group() {
            return false;
        }
        // SAFETY: killpg(2) on the group of a process just verified by its start time to lead
        // it; no memory is involved.
        unsafe { libc::killpg(self.pid, libc::SIGKILL) == 0 }
    }

    fn info(&self) -> ProcInfo {
        ProcInfo { pid: self.pid, ppid: 0, pgid: 0, start: self.start, zombie: false }
    }
}

/// SIGKILL to process group `pgid` while it has live members. False if it has none.
pub fn kill_group(pgid: i32) -> bool {
    if pgid <= 1 || group_members(pgid).is_empty() {
        return false;
    }
    // SAFETY: killpg(2) on a group seen with live members just now; no memory is involved.
    unsafe { libc::killpg(pgid, libc::SIGKILL) == 0 }
}

/// Live members of process group `pgid`.
pub fn group_members(pgid: i32) -> Vec<KnownProcess> {
    all_processes()
        .into_iter()
        .filter(|p| p.pgid == pgid && !p.zombie)
        .map(|p| KnownProcess { pid: p.pid, start: p.start })
        .collect()
}

/// The process group of `pid`, if it exists.
pub fn group_of(pid: i32) -> Option<i32> {
    stat(pid).map(|s| s.pgid)
}

/// The live children of `pid`, from its threads' `children` lists: no scan of `/proc`, so cheap
/// where many processes run. Empty where the kernel has no such lists.
pub fn children(pid: i32) -> Vec<KnownProcess> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return Vec::new() };
    let mut found: Vec<KnownProcess> = Vec::new();
    for task in tasks.flatten() {
        let Ok(list) = std::fs::read_to_string(task.path().join("children")) else { continue };
        for child in list.split_whitespace().filter_map(|c| c.parse::<i32>().ok()) {
            match stat(child) {
                Some(info) if !info.zombie && !found.iter().any(|p| p.pid == child) => {
                    found.push(KnownProcess { pid: child, start: info.start });
                }
                _ => {}
            }
        }
    }
    found
}

/// Every live descendant of `pid` (children, grandchildren, …).
pub fn descendants(pid: i32) -> Vec<KnownProcess> {
    family(&[pid], &[])
}

/// In one scan of `/proc`: every live member of the process groups `groups` and every live
/// descendant of `roots` and of those members (`roots` themselves excluded). A forked child
/// that outlived its parent is found through its group, which it keeps unless it leaves it.
pub fn family(roots: &[i32], groups: &[i32]) -> Vec<KnownProcess> {
    let all = all_processes();
    let mut found: Vec<KnownProcess> = all
        .iter()
        .filter(|p| !p.zombie && groups.contains(&p.pgid) && !roots.contains(&p.pid))
        .map(|p| KnownProcess { pid: p.pid, start: p.start })
        .collect();
    let mut frontier: Vec<i32> = roots.iter().copied().chain(found.iter().map(|p| p.pid)).collect();
    while let Some(parent) = frontier.pop() {
        for child in &all {
            if child.ppid == parent && !child.zombie && !found.iter().any(|p| p.pid == child.pid) {
                found.push(KnownProcess { pid: child.pid, start: child.start });
                frontier.push(child.pid);
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_is_found_among_the_descendants_and_killed_by_its_start_time() {
        let mut child = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        let pid = i32::try_from(child.id()).unwrap();
        let me = i32::try_from(std::process::id()).unwrap();
        let known = KnownProcess::of(pid).unwrap();
        assert!(descendants(me).contains(&known));
        assert!(children(me).contains(&known));
        assert!(known.alive());
        // The same pid with another start time is another process: it is left alone.
        assert!(!KnownProcess { pid, start: known.start + 1 }.kill());
        assert!(known.alive());
        assert!(known.kill());
        let _ = child.wait();
        assert!(!known.alive());
        assert!(!known.kill());
    }
}
