//! Watching a launched program's processes while the session lives: every process below the
//! adapter and the program, and every member of their process groups, is remembered (so a
//! forked child that outlives the program is still killed at teardown), and a program whose
//! process is gone without the adapter saying so is reported as exited.

use std::{sync::Arc, time::Duration};

use tokio::task::JoinHandle;

use super::state::Shared;
use agent_tools_support::process::{KnownProcess, children, family, group_of};

/// How often the processes are looked at.
const EVERY: Duration = Duration::from_millis(200);
/// How long a dead program may go unreported by the adapter before we say it ourselves.
const UNREPORTED_EXIT_GRACE: Duration = Duration::from_secs(1);

/// Starts the watcher of the session whose adapter is `adapter_pid` (none for a direct
/// connection).
pub(super) fn track(shared: Arc<Shared>, adapter_pid: Option<i32>) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut dead_since: Option<tokio::time::Instant> = None;
        loop {
            tokio::time::sleep(EVERY).await;
            remember_family(&shared, adapter_pid);
            notice_unreported_exit(&shared, &mut dead_since);
        }
    })
}

/// Remembers the adapter's and the program's descendants and process-group members.
pub(super) fn remember_family(shared: &Shared, adapter_pid: Option<i32>) {
    let (mut roots, groups) = shared.read(|s| {
        let roots: Vec<i32> = s.debuggees.iter().filter(|p| p.alive()).map(|p| p.pid).collect();
        (roots, s.groups.clone())
    });
    roots.extend(adapter_pid);
    remember(shared, family(&roots, &groups), adapter_pid);
}

/// Remembers the adapter's own children (the program it started) without a scan of `/proc`.
pub(super) fn remember_children(shared: &Shared, adapter_pid: i32) {
    remember(shared, children(adapter_pid), Some(adapter_pid));
}

fn remember(shared: &Shared, found: Vec<KnownProcess>, adapter_pid: Option<i32>) {
    let mut groups = shared.read(|s| s.groups.clone());
    for proc in &found {
        // A process group of the program's (delve starts it in one of its own) is watched
        // from now on; the adapter's own group is swept by teardown anyway.
        if let Some(pgid) = group_of(proc.pid)
            && Some(pgid) != adapter_pid
            && !groups.contains(&pgid)
            && pgid > 1
        {
            groups.push(pgid);
        }
    }
    shared.update(|s| {
        for proc in found {
            s.remember(proc);
        }
        for g in groups {
            if !s.groups.contains(&g) {
                s.groups.push(g);
            }
        }
    });
}

/// After a fork, the parent's exit can go unreported (the child keeps the adapter's
/// connection): when the program's own process is gone, say that it exited.
fn notice_unreported_exit(shared: &Shared, dead_since: &mut Option<tokio::time::Instant>) {
    let pid = shared.read(|s| if s.ended() || s.gone.is_some() { None } else { s.process_pid });
    let Some(pid) = pid else { return };
    let alive = shared
        .read(|s| s.debuggees.iter().find(|p| p.pid == pid).copied())
        .or_else(|| KnownProcess::of(pid))
        .is_some_and(|p| p.alive());
    if alive {
        *dead_since = None;
        return;
    }
    let since = *dead_since.get_or_insert_with(tokio::time::Instant::now);
    if since.elapsed() >= UNREPORTED_EXIT_GRACE {
        shared.update(|s| {
            if !s.ended() {
                s.exited = true;
                s.running = false;
                s.unreported_exit = Some(pid);
            }
        });
    }
}
