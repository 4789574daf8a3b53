//! A cgroup of its own per spawned tree, where the host may make one (a writable cgroup v2
//! hierarchy, as root or with a delegated subtree): the kernel keeps every descendant in it
//! whatever the descendant does — `setsid`, a double fork, a cleared environment — so teardown
//! finds them all, and `cgroup.kill` ends them in one write. Where the host may not (most
//! containers and CI runners), the lineage mark, the process group and parentage still apply.

use std::{
    ffi::CString,
    path::{Path, PathBuf},
    sync::{Arc, OnceLock},
    time::Duration,
};

/// One tree's cgroup; removed when dropped (its processes killed first).
#[derive(Debug)]
pub(super) struct Cgroup {
    dir: PathBuf,
}

impl Cgroup {
    /// A new, empty cgroup below the host's own, or `None` where the host cannot make one.
    pub(super) fn create() -> Option<Cgroup> {
        let base = host_cgroup()?;
        let dir = base.join(format!("agent-tools-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir(&dir).ok()?;
        Some(Cgroup { dir })
    }

    /// Where the cgroup is (its folder in the cgroup file system).
    pub(super) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Arranges for the spawned process to join the cgroup between fork and exec; a process
    /// that could not join runs without it (the caller checks with [`Cgroup::contains`]).
    pub(super) fn join_on_exec(&self, command: &mut std::process::Command) {
        use std::os::unix::process::CommandExt;
        let Ok(procs) =
            CString::new(self.dir.join("cgroup.procs").into_os_string().into_encoded_bytes())
        else {
            return;
        };
        // SAFETY: the closure runs between fork and exec and calls only async-signal-safe
        // functions (open, write, close) on a path prepared before the fork.
        unsafe {
            command.pre_exec(move || {
                let fd = libc::open(procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                if fd >= 0 {
                    // "0" moves the writing process itself.
                    libc::write(fd, c"0".as_ptr().cast(), 1);
                    libc::close(fd);
                }
                Ok(())
            });
        }
    }

    /// Moves process `pid` (all its threads) into the cgroup; false where it could not (it
    /// has exited, or the host may not move it).
    pub(super) fn add(&self, pid: i32) -> bool {
        std::fs::write(self.dir.join("cgroup.procs"), pid.to_string()).is_ok()
    }

    /// Pids of the processes in the cgroup now.
    pub(super) fn members(&self) -> Vec<i32> {
        std::fs::read_to_string(self.dir.join("cgroup.procs"))
            .map(|text| text.lines().filter_map(|l| l.trim().parse().ok()).collect())
            .unwrap_or_default()
    }

    pub(super) fn contains(&self, pid: i32) -> bool {
        self.members().contains(&pid)
    }

    /// SIGKILL to every process in the cgroup, by the kernel, at once (`cgroup.kill`, Linux
    /// 5.14). False where the file is missing.
    pub(super) fn kill(&self) -> bool {
        std::fs::write(self.dir.join("cgroup.kill"), "1").is_ok()
    }
}

impl Cgroup {
    /// Removes the cgroup folder (its processes killed first: a cgroup with processes cannot
    /// be removed), bounded; true once it is gone.
    pub(super) fn remove(&self) -> bool {
        for _ in 0..200 {
            if std::fs::remove_dir(&self.dir).is_ok() || !self.dir.exists() {
                return true;
            }
            if !self.kill() {
                for pid in self.members() {
                    // SAFETY: kill(2) on a pid the kernel lists in our own cgroup right now.
                    unsafe {
                        libc::kill(pid, libc::SIGKILL);
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        tracing::debug!("could not remove the cgroup {}", self.dir.display());
        false
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        self.remove();
    }
}

/// Moves process `pid` into `cgroup` on a helper thread (the write waits for the kernel); the
/// receiver turns true once the move is done or has failed. Where no thread can start, the
/// move happens here.
pub(super) fn join_soon(cgroup: Arc<Cgroup>, pid: i32) -> tokio::sync::watch::Receiver<bool> {
    let (done, joined) = tokio::sync::watch::channel(false);
    let helper = cgroup.clone();
    let spawned =
        std::thread::Builder::new().name("agent-tools-cgroup-join".into()).spawn(move || {
            helper.add(pid);
            done.send_replace(true);
        });
    if spawned.is_err() {
        cgroup.add(pid);
        return tokio::sync::watch::channel(true).1;
    }
    joined
}

/// The host's own cgroup v2 folder, if the hierarchy is mounted (found once).
fn host_cgroup() -> Option<PathBuf> {
    static BASE: OnceLock<Option<PathBuf>> = OnceLock::new();
    BASE.get_or_init(|| {
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
        // `36 35 0:30 / /sys/fs/cgroup rw,… - cgroup2 cgroup2 rw,…`
        let mount = mountinfo.lines().find_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            (right.split_whitespace().next()? == "cgroup2")
                .then(|| left.split_whitespace().nth(4).map(PathBuf::from))?
        })?;
        let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
        let path = own.lines().find_map(|l| l.strip_prefix("0::"))?.trim();
        let dir = mount.join(path.trim_start_matches('/'));
        dir.join("cgroup.procs").exists().then_some(dir)
    })
    .clone()
}
