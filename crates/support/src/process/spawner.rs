//! The process-lifetime spawner thread: every child is forked here with `PR_SET_PDEATHSIG`.
//!
//! Linux ties the death signal to the *thread* that forked the child, not to its process: a
//! child forked on a thread that later exits (a blocking-pool thread, a short-lived runtime's
//! thread) would be killed early. Forking on one thread that never exits leaves only the host's
//! own death to trigger it.

use std::{
    io,
    panic::AssertUnwindSafe,
    sync::{Once, OnceLock, mpsc},
};

use tokio::runtime::Handle;

/// One spawn to perform on the spawner thread.
enum Job {
    /// A Tokio command; the child is registered with `runtime`.
    Tokio {
        command: tokio::process::Command,
        runtime: Handle,
        reply: tokio::sync::oneshot::Sender<io::Result<tokio::process::Child>>,
    },
    /// A blocking `std` command.
    Std { command: std::process::Command, reply: mpsc::Sender<io::Result<std::process::Child>> },
}

/// Spawns `command` on the spawner thread; the child is registered with the current runtime.
pub(super) async fn spawn_tokio(
    command: tokio::process::Command,
) -> io::Result<tokio::process::Child> {
    let runtime = Handle::try_current().map_err(|_| {
        io::Error::other("process::spawn needs a Tokio runtime; use process::spawn_std outside one")
    })?;
    let (reply, result) = tokio::sync::oneshot::channel();
    submit(Job::Tokio { command, runtime, reply })?;
    result.await.map_err(|_| dropped())?
}

/// Spawns `command` on the spawner thread and blocks until it is started.
pub(super) fn spawn_std(command: std::process::Command) -> io::Result<std::process::Child> {
    let (reply, result) = mpsc::channel();
    submit(Job::Std { command, reply })?;
    result.recv().map_err(|_| dropped())?
}

fn dropped() -> io::Error {
    io::Error::other("the process spawner thread dropped the request (a spawn panicked)")
}

fn submit(job: Job) -> io::Result<()> {
    spawner()?.send(job).map_err(|_| io::Error::other("the process spawner thread has stopped"))
}

fn spawner() -> io::Result<&'static mpsc::Sender<Job>> {
    static SPAWNER: OnceLock<Option<mpsc::Sender<Job>>> = OnceLock::new();
    SPAWNER
        .get_or_init(|| {
            become_subreaper();
            let (jobs, queue) = mpsc::channel();
            std::thread::Builder::new()
                .name("agent-tools-spawner".into())
                .spawn(move || serve(queue))
                .ok()
                .map(|_| jobs)
        })
        .as_ref()
        .ok_or_else(|| io::Error::other("the process spawner thread could not be started"))
}

/// Makes the host a child subreaper, so a descendant whose parent exits (a daemonizing
/// grandchild) is re-parented to the host instead of init: it stays findable by parentage, and
/// its zombie is the host's to reap after teardown. Without it (an old kernel) teardown still
/// finds such processes by their lineage mark.
fn become_subreaper() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: prctl with integer arguments only; no memory is shared.
        if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) } != 0 {
            tracing::debug!(
                "cannot become a child subreaper ({}); orphans are found by lineage only",
                io::Error::last_os_error()
            );
        }
    });
}

/// Never returns: the sender lives in a static. A panicking spawn is contained, because this
/// thread's exit would kill every child it started.
fn serve(queue: mpsc::Receiver<Job>) {
    for job in queue {
        let _ = std::panic::catch_unwind(AssertUnwindSafe(move || match job {
            Job::Tokio { mut command, runtime, reply } => {
                let _entered = runtime.enter();
                let _ = reply.send(command.spawn());
            }
            Job::Std { mut command, reply } => {
                let _ = reply.send(command.spawn());
            }
        }));
    }
}

/// Arranges for the child to get SIGKILL when the host dies: sets `PR_SET_PDEATHSIG` between
/// fork and exec, and exits at once if the host already died in that window.
pub(super) fn die_with_host(command: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    let host = std::process::id() as libc::pid_t;
    // SAFETY: the closure runs between fork and exec and calls only async-signal-safe functions
    // (prctl, getppid, _exit); it touches no memory of the parent but the copied pid.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(io::Error::last_os_error());
            }
            // The host died between fork and prctl: no signal will come, so leave now.
            if libc::getppid() != host {
                libc::_exit(1);
            }
            Ok(())
        });
    }
}
