//! Starts language servers from one thread that lives as long as the host, so that a server's
//! death signal (`PR_SET_PDEATHSIG`) fires when the host process dies, even by SIGKILL.
//!
//! Linux ties the death signal to the *thread* that forked the child, not to its process: a
//! server forked on a thread that later exits (a blocking-pool thread, a short-lived runtime's
//! thread) would be killed early. Forking on a thread that never exits leaves only the host's
//! own death to trigger it.

use std::{
    io,
    panic::AssertUnwindSafe,
    sync::{OnceLock, mpsc},
};

use tokio::{
    process::{Child, Command},
    runtime::Handle,
    sync::oneshot,
};

/// One spawn to perform: the prepared command, the runtime the child is registered with, and
/// where the result goes.
struct Job {
    command: Command,
    runtime: Handle,
    reply: oneshot::Sender<io::Result<Child>>,
}

/// Spawns `command` on the spawner thread with SIGKILL as its death signal; the child is
/// registered with the current Tokio runtime.
pub(crate) async fn spawn(command: Command) -> io::Result<Child> {
    let runtime = Handle::try_current().map_err(io::Error::other)?;
    let (reply, result) = oneshot::channel();
    spawner()?
        .send(Job { command, runtime, reply })
        .map_err(|_| io::Error::other("the process spawner thread has stopped"))?;
    result.await.map_err(|_| io::Error::other("the process spawner thread dropped the request"))?
}

fn spawner() -> io::Result<&'static mpsc::Sender<Job>> {
    static SPAWNER: OnceLock<Option<mpsc::Sender<Job>>> = OnceLock::new();
    SPAWNER
        .get_or_init(|| {
            let (jobs, queue) = mpsc::channel();
            std::thread::Builder::new()
                .name("lsp-spawner".into())
                .spawn(move || serve(queue))
                .ok()
                .map(|_| jobs)
        })
        .as_ref()
        .ok_or_else(|| io::Error::other("the process spawner thread could not be started"))
}

/// Never returns: the sender lives in a static. A panicking spawn is contained, because this
/// thread's exit would kill every child it started.
fn serve(queue: mpsc::Receiver<Job>) {
    for Job { command, runtime, reply } in queue {
        let result = std::panic::catch_unwind(AssertUnwindSafe(move || {
            let _entered = runtime.enter();
            spawn_here(command)
        }));
        if let Ok(result) = result {
            let _ = reply.send(result);
        }
    }
}

fn spawn_here(mut command: Command) -> io::Result<Child> {
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
    command.spawn()
}
