//! The watchdog of one tree: a tiny `sh` that kills the whole tree when the host goes away.
//!
//! `PR_SET_PDEATHSIG` kills only the direct child when the host dies; what the child started
//! would live on. The watchdog blocks reading a pipe only the host holds open. When the host
//! dies (even by SIGKILL) or drops the tree's handle, the pipe closes, the read returns, and the
//! watchdog kills every process carrying the tree's lineage mark, and the group when a marked
//! process is still in it (so a reused group number is never signalled). It is not forked
//! with the death signal and sits in a group of its own, ignoring terminal signals, so it
//! outlives the host long enough to do that.

use std::{
    io,
    process::{Child, Command, Stdio},
};

use super::{cgroup::Cgroup, tree::Lineage};

/// `$1` is the group id, `$2` the `NAME=1` lineage entry, `$3` the tree's cgroup folder (or
/// empty). Sweeps until no marked process is left (a process may fork while it is being
/// killed), at most 50 rounds; the cgroup is killed whole and removed.
const SCRIPT: &str = r#"trap '' HUP INT QUIT TERM PIPE
read -r _ || :
pgid=$1 entry=$2 cgroup=$3 round=0
[ -n "$cgroup" ] && echo 1 > "$cgroup/cgroup.kill" 2>/dev/null
while [ "$round" -lt 50 ]; do
  round=$((round + 1)) found=
  for f in $(grep -lzxF -e "$entry" /proc/[0-9]*/environ 2>/dev/null); do
    p=${f#/proc/}; p=${p%/environ}
    [ "$p" = "$$" ] && continue
    found=1
    if read -r stat < "/proc/$p/stat"; then
      set -- ${stat##*) }
      [ "$3" = "$pgid" ] && kill -KILL -"$pgid"
    fi
    kill -KILL "$p"
  done 2>/dev/null
  [ -z "$found" ] && break
  sleep 0.05 2>/dev/null || :
done
round=0
while [ -n "$cgroup" ] && [ -d "$cgroup" ] && [ "$round" -lt 100 ]; do
  round=$((round + 1))
  rmdir "$cgroup" 2>/dev/null && break
  echo 1 > "$cgroup/cgroup.kill" 2>/dev/null
  sleep 0.05 2>/dev/null || :
done
"#;

/// A running watchdog; dropping it closes its pipe, which makes it sweep the tree.
#[derive(Debug)]
pub(super) struct Watchdog {
    child: Child,
}

impl Watchdog {
    pub(super) fn start(
        pgid: i32,
        lineage: &Lineage,
        cgroup: Option<&Cgroup>,
    ) -> io::Result<Watchdog> {
        use std::os::unix::process::CommandExt;
        let entry = String::from_utf8_lossy(&lineage.entry).into_owned();
        let child = Command::new("sh")
            .args(["-c", SCRIPT, "agent-tools-watchdog"])
            .arg(pgid.to_string())
            .arg(entry)
            .arg(cgroup.map(|c| c.dir().as_os_str().to_owned()).unwrap_or_default())
            // The watchdog must not carry the mark itself, nor be in the tree's group.
            .env_remove(&lineage.name)
            .process_group(0)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        Ok(Watchdog { child })
    }

    /// Ends the watchdog without a sweep (teardown already swept) and reaps it.
    pub(super) fn stop(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Closes the pipe, so the watchdog sweeps the tree and exits. Its exit is not awaited:
    /// this is the fallback when no janitor thread could run.
    pub(super) fn release(mut self) {
        drop(self.child.stdin.take());
    }
}
