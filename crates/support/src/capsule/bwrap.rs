//! bubblewrap as a run's capsule: namespaces and bind mounts around every process of the run.
//!
//! Inside: the system read-only at its own paths, the project read-write at its own path (its
//! `.git` and `agent-tools.toml` read-only), a private `/tmp`, the home folder private (an empty
//! one in its place, with only what the run needs from it bound read-only at its own paths), the
//! user's secrets hidden even there (`~/.cargo/credentials.toml`), `/run` empty (no host service
//! sockets), the environment cut to an allow-list, no network unless the user allows it (for
//! workers: the host's network kept by Landlock's network rules to their egress proxy), an own
//! PID, IPC and UTS namespace, no capabilities, a new session (no keystrokes pushed into the
//! host's terminal), and death with the host.
#![allow(
    clippy::disallowed_methods,
    reason = "the capsule writes its own empty file under its private folder"
)]

use std::{
    ffi::{OsStr, OsString},
    io,
    net::TcpStream,
    os::fd::OwnedFd,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    sync::Arc,
    time::Duration,
};

use super::{
    Capsule, seccomp,
    walls::{CapsuleOptions, Network, Walls, capsule_error},
};
use crate::Error;

/// A run's bubblewrap capsule. Dropping it removes its private `/tmp` and home.
#[derive(Debug)]
pub struct Bwrap {
    program: PathBuf,
    args: Vec<OsString>,
    walls: Walls,
    filter: Vec<seccomp::Instruction>,
    /// With [`Network::Internet`]: Landlock's network rules, applied to bubblewrap itself (they
    /// pass to everything it starts), since the capsule shares the host's network namespace.
    network_rules: Option<Arc<OwnedFd>>,
    /// Why the capsule has the host's network although [`Network::Internet`] was asked for.
    network_note: Option<String>,
}

/// The descriptor bubblewrap reads the seccomp filter from.
const SECCOMP_FD: i32 = 200;

/// The home inside a capsule (in its private `/tmp`).
const HOME_INSIDE: &str = "/tmp/home";

impl Bwrap {
    /// Makes the run's capsule: resolves `bwrap`, creates the private folders and checks once
    /// that bubblewrap can make its namespaces here.
    pub fn start(mut options: CapsuleOptions) -> Result<Bwrap, Error> {
        let program = resolve_program(options.program.as_deref(), &options.project)?;
        let (network, network_note) = network_on(options.network, super::landlock_abi());
        options.network = network;
        let walls = Walls::new(&options)?;
        let network_rules = match walls.proxy_port() {
            Some(port) => Some(Arc::new(super::landlock::network_only(port).map_err(|e| {
                capsule_error(format!("cannot build the workers' Landlock network rules: {e}"))
            })?)),
            None => None,
        };
        // What a hidden file reads as: empty (a bound /dev/null would refuse to open).
        let empty = walls.run_dir.0.join("empty");
        std::fs::write(&empty, "")
            .map_err(|e| capsule_error(format!("cannot create {}: {e}", empty.display())))?;
        let args = mounts(&walls, &empty);
        let filter = seccomp::program(match walls.network {
            // Without network UDP stays in its own namespace; a worker resolves through the proxy.
            Network::Internet => seccomp::IpSockets::TcpOnly,
            Network::None | Network::Host => seccomp::IpSockets::All,
        });
        let capsule = Bwrap { program, args, walls, filter, network_rules, network_note };
        capsule.check()?;
        Ok(capsule)
    }

    /// The capsule's `/tmp` as the host sees it.
    pub fn tmp_on_host(&self) -> PathBuf {
        self.walls.tmp_on_host()
    }

    /// Runs `true` inside once, so a machine where bubblewrap cannot make namespaces fails at
    /// the run's start with bubblewrap's reason, not at the first cell.
    fn check(&self) -> Result<(), Error> {
        let mut command = self.command(OsStr::new("true"), &[]);
        command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
        let spawned = crate::process::SpawnOptions::new()
            .watchdog(false)
            .spawn_std(command)
            .map_err(|e| capsule_error(format!("cannot run {}: {e}", self.program.display())))?;
        let output = spawned.child.wait_with_output().map_err(|e| {
            capsule_error(format!("{} did not finish its check: {e}", self.program.display()))
        })?;
        if output.status.success() {
            return Ok(());
        }
        Err(capsule_error(format!(
            "{} cannot make a sandbox on this machine ({}): {}; user namespaces may be disabled \
             (sysctl kernel.unprivileged_userns_clone or an AppArmor rule); set [capsule] kind = \
             \"landlock\" (or \"auto\") for a Landlock capsule instead",
            self.program.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        )))
    }
}

/// The network a capsule that asked for `network` gets on a kernel with Landlock ABI `abi`, and
/// what `status` adds about it: without Landlock's network rules nothing keeps a process that
/// shares the host's network namespace off its loopback, so workers get the host's network.
fn network_on(network: Network, abi: i32) -> (Network, Option<String>) {
    match network {
        Network::Internet if abi < 4 => (
            Network::Host,
            Some(format!(
                "; workers reach the host's loopback and its other local addresses, since this \
                 kernel has {} (Landlock ABI 4, Linux 6.7, keeps them to an egress proxy)",
                if abi == 0 { "no Landlock".to_string() } else { format!("Landlock ABI {abi}") }
            )),
        ),
        Network::Internet if abi < 6 => (
            Network::Internet,
            Some(
                "; abstract sockets of the host's services stay reachable (Landlock ABI 6, Linux \
                 6.12, scopes them)"
                    .to_string(),
            ),
        ),
        network => (network, None),
    }
}

/// bubblewrap's mount and namespace arguments for `walls`; `empty` is what a hidden file
/// reads as.
fn mounts(walls: &Walls, empty: &Path) -> Vec<OsString> {
    let mut args: Vec<OsString> = Vec::new();
    let mut add = |words: &[&OsStr]| args.extend(words.iter().map(|w| w.to_os_string()));
    add(&["--ro-bind".as_ref(), "/".as_ref(), "/".as_ref()]);
    add(&["--dev".as_ref(), "/dev".as_ref(), "--proc".as_ref(), "/proc".as_ref()]);
    add(&["--tmpfs".as_ref(), "/run".as_ref()]);
    if walls.network == Network::Host && Path::new("/run/systemd/resolve").is_dir() {
        let resolve: &OsStr = "/run/systemd/resolve".as_ref();
        add(&["--ro-bind".as_ref(), resolve, resolve]);
    }
    let tmp = walls.tmp_on_host();
    add(&["--bind".as_ref(), tmp.as_os_str(), "/tmp".as_ref()]);
    // Also at its host path, so a scratch file the host puts there has one name for both.
    add(&["--bind".as_ref(), tmp.as_os_str(), tmp.as_os_str()]);
    for prefix in &walls.programs_in_temp {
        add(&["--ro-bind".as_ref(), prefix.as_os_str(), prefix.as_os_str()]);
    }
    // The home: an empty folder in its place, then what the run needs from it, read-only.
    if let Some(home) = walls.home.home() {
        add(&["--tmpfs".as_ref(), home.as_os_str()]);
        for shown in walls.home.shown() {
            add(&["--ro-bind".as_ref(), shown.as_os_str(), shown.as_os_str()]);
        }
        for (link, target) in walls.home.links() {
            add(&["--symlink".as_ref(), target.as_os_str(), link.as_os_str()]);
        }
    }
    for folder in std::iter::once(&walls.project).chain(&walls.read_write) {
        add(&["--bind".as_ref(), folder.as_os_str(), folder.as_os_str()]);
    }
    for path in &walls.protected {
        add(&["--ro-bind".as_ref(), path.as_os_str(), path.as_os_str()]);
    }
    for path in &walls.hidden {
        if walls.home.hides(path) {
            continue; // not there at all
        }
        if path.is_dir() {
            add(&["--tmpfs".as_ref(), path.as_os_str()]);
        } else {
            add(&["--ro-bind".as_ref(), empty.as_os_str(), path.as_os_str()]);
        }
    }
    if let Some(home) = walls.home.home() {
        add(&["--remount-ro".as_ref(), home.as_os_str()]);
    }
    for flag in ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"] {
        add(&[flag.as_ref()]);
    }
    if walls.network == Network::None {
        add(&["--unshare-net".as_ref()]);
    }
    add(&["--die-with-parent".as_ref(), "--new-session".as_ref()]);
    add(&["--cap-drop".as_ref(), "ALL".as_ref()]);
    args
}

impl Capsule for Bwrap {
    fn command(&self, program: &OsStr, args: &[OsString]) -> Command {
        use std::os::{fd::AsRawFd, unix::process::CommandExt};
        let mut command = Command::new(&self.program);
        command.args(&self.args);
        // The system-call filter, from a memory file of this command's own (bubblewrap reads
        // it to its end): a spawn that cannot make one fails rather than run without it.
        let filter = seccomp::memory_file(&self.filter);
        command.args(["--add-seccomp-fd".as_ref(), SECCOMP_FD.to_string().as_ref() as &OsStr]);
        // SAFETY: dup2 only, on a descriptor the closure owns.
        unsafe {
            command.pre_exec(move || match &filter {
                Ok(fd) if libc::dup2(fd.as_raw_fd(), SECCOMP_FD) == SECCOMP_FD => Ok(()),
                Ok(_) => Err(io::Error::last_os_error()),
                Err(e) => Err(io::Error::new(e.kind(), "no memory file for the seccomp filter")),
            });
        }
        if let Some(rules) = self.network_rules.clone() {
            // SAFETY: `restrict_self` only makes system calls.
            unsafe { command.pre_exec(move || super::landlock::restrict_self(&rules)) };
        }
        command.arg("--").arg(program).args(args);
        command.env_clear().envs(self.walls.environment(HOME_INSIDE.as_ref(), "/tmp".as_ref()));
        command
    }

    fn describe(&self) -> String {
        format!(
            "bwrap ({}): {}, {}, its own PID namespace (the host's processes are invisible), no \
             capabilities, gone with the host",
            self.program.display(),
            self.walls.describe_files(),
            self.walls.describe_network("no network (127.0.0.1 is the capsule's own)")
                + self.network_note.as_deref().unwrap_or_default(),
        )
    }

    fn signals_reach_the_program(&self) -> bool {
        // The spawned pid is bwrap's; the program runs in a new session under it.
        false
    }

    fn temp_dir(&self) -> PathBuf {
        self.tmp_on_host()
    }

    fn connect_loopback(&self, pid: u32, port: u16, within: Duration) -> io::Result<TcpStream> {
        match self.walls.network {
            Network::Host | Network::Internet => {
                TcpStream::connect_timeout(&(std::net::Ipv4Addr::LOCALHOST, port).into(), within)
            }
            Network::None => super::netns::connect_inside(pid, port, within),
        }
    }

    fn host_pid(&self, inside: u32, under: u32) -> Option<u32> {
        super::pids::host_pid_of(inside, under)
    }

    fn exit_statuses(&self) -> super::ExitStatuses {
        // bubblewrap's init reaps the program and exits with 128+N when signal N killed it.
        super::ExitStatuses::Wrapped
    }

    fn explain(&self, output: &str) -> Option<String> {
        let found = self.walls.explain(
            output,
            "there is no network (the user's capsule setting network = \"none\"); 127.0.0.1 is \
             the capsule's own loopback, so host services are not reachable either",
        );
        if found.is_empty() {
            return None;
        }
        Some(format!("This ran in the run's bubblewrap capsule: {}.", found.join("; ")))
    }
}

/// The `bwrap` to run: the configured one, else a fixed system location, else the first on
/// PATH that is not inside the project (a repository must not plant its own).
fn resolve_program(configured: Option<&Path>, project: &Path) -> Result<PathBuf, Error> {
    let usable = |p: &Path| {
        p.is_absolute()
            && !p.starts_with(project)
            && std::fs::metadata(p).is_ok_and(|m| {
                use std::os::unix::fs::PermissionsExt;
                m.is_file() && m.permissions().mode() & 0o111 != 0
            })
    };
    if let Some(path) = configured {
        return if usable(path) {
            Ok(path.to_path_buf())
        } else {
            Err(capsule_error(format!(
                "capsule.bwrap = {}: not an executable file outside the project; give the \
                 absolute path of bubblewrap's `bwrap`",
                path.display()
            )))
        };
    }
    let on_path = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).map(|d| d.join("bwrap")).collect::<Vec<_>>())
        .unwrap_or_default();
    ["/usr/bin/bwrap", "/usr/local/bin/bwrap", "/bin/bwrap"]
        .into_iter()
        .map(PathBuf::from)
        .chain(on_path)
        .find(|p| usable(p))
        .ok_or_else(|| {
            capsule_error(
                "bubblewrap's `bwrap` is not installed (apt install bubblewrap, dnf install \
                 bubblewrap), or set [capsule] kind = \"none\""
                    .to_string(),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_landlock_network_rules_workers_get_the_host_network_and_status_says_so() {
        for abi in [0, 3] {
            let (network, note) = network_on(Network::Internet, abi);
            assert_eq!(network, Network::Host, "ABI {abi}");
            let note = note.expect("a note");
            assert!(note.contains("workers reach the host's loopback"), "{note}");
        }
        let (network, note) = network_on(Network::Internet, 5);
        assert_eq!(network, Network::Internet);
        assert!(note.is_some_and(|n| n.contains("abstract sockets")));
        assert_eq!(network_on(Network::Internet, 7), (Network::Internet, None));
        assert_eq!(network_on(Network::None, 0), (Network::None, None));
        assert_eq!(network_on(Network::Host, 7), (Network::Host, None));
    }
}
