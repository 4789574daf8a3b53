//! Landlock as a run's capsule: where bubblewrap cannot make its namespaces (unprivileged
//! containers, Ubuntu's AppArmor rule on user namespaces), the kernel's own access control.
//!
//! Applied between fork and exec, so the host is never restricted: `no_new_privs`, no
//! capabilities (root's bounding set emptied), death with the host, a Landlock domain (the
//! system read-only, the project read-write with its protected paths read-only, the private
//! home's shown paths read-only, a private temp folder, no TCP connection and no TCP port but
//! an ephemeral one without network, for workers no TCP connection but to their egress proxy,
//! no signal and no abstract socket out of the domain), then
//! the [`seccomp`](super::seccomp) filter. The ruleset and the filter are built once in the
//! host; the child only makes system calls.
//!
//! What it does not give that bubblewrap does: no PID namespace (the host's processes are
//! listed in `/proc`, their command lines readable; signals and `ptrace` to them are refused by
//! Landlock), no loopback of its own (a process inside reaches no TCP port of `127.0.0.1`, its
//! own capsule's included), pathname sockets of host services (`/run/…`) stay reachable where
//! their permissions allow until Landlock ABI 9, and while the project's `.git` is protected
//! nothing new can be created at the project's top level (Landlock cannot except a folder from
//! a writable one).

use std::{
    collections::HashMap,
    ffi::{OsStr, OsString},
    io,
    os::fd::{AsRawFd, OwnedFd},
    path::{Path, PathBuf},
    process::Command,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
};

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, NetPort, PathBeneath, PathFd,
    Ruleset, RulesetAttr, RulesetCreatedAttr, Scope,
};

use super::{
    Capsule, LoopbackTcp,
    seccomp::{self, Instruction, IpSockets},
    walls::{CapsuleOptions, Network, Walls, capsule_error},
};
use crate::Error;

/// The Landlock ABI the kernel offers (0: none), asked once.
pub fn kernel_abi() -> i32 {
    // SAFETY: LANDLOCK_CREATE_RULESET_VERSION with a null attribute only returns a number.
    let abi = unsafe {
        libc::syscall(libc::SYS_landlock_create_ruleset, std::ptr::null::<u8>(), 0usize, 1u32)
    };
    i32::try_from(abi).unwrap_or(0).max(0)
}

/// The oldest ABI this capsule runs on: 4 has TCP rules (older kernels could not keep a
/// capsule without network off the host's ports).
const MIN_ABI: i32 = 4;

/// What the child applies on itself: built once per capsule in the host.
#[derive(Debug)]
struct Confinement {
    ruleset: OwnedFd,
    filter: Vec<Instruction>,
}

impl Confinement {
    /// Confines the calling (forked, single-threaded) process. Only system calls: no
    /// allocation, no lock.
    fn apply(&self) -> io::Result<()> {
        let check = |done: libc::c_long| {
            if done < 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
        };
        // SAFETY: plain system calls on integers and on memory owned by `self`.
        unsafe {
            check(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0).into())?;
            check(libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL).into())?;
            if libc::geteuid() == 0 {
                // Root keeps no capability across the exec: an empty bounding set.
                for cap in 0..64 {
                    libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0);
                }
                libc::prctl(libc::PR_CAP_AMBIENT, libc::PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
            }
            check(libc::syscall(libc::SYS_landlock_restrict_self, self.ruleset.as_raw_fd(), 0u32))?;
        }
        seccomp::install(&self.filter)
    }
}

/// Commands made by [`Landlock::command`] whose spawn has not yet taken over the confinement,
/// by the marker variable's value.
static PENDING: Mutex<Option<HashMap<u64, (Arc<Confinement>, Arc<AtomicBool>)>>> = Mutex::new(None);
static NEXT: AtomicU64 = AtomicU64::new(1);

/// The variable that marks a command to confine (removed before the exec).
const MARKER: &str = "AGENT_TOOLS_CAPSULE_LANDLOCK";

/// Called by the support crate's spawn after it has set up everything that needs the host's
/// rights in the child (joining the tree's cgroup): moves the confinement of a Landlock
/// command to the last step before the exec. A command spawned any other way is confined by
/// its first step instead (and may then miss its cgroup).
pub(crate) fn confine_last(command: &mut Command) {
    use std::os::unix::process::CommandExt;
    let Some(id) = command
        .get_envs()
        .find(|(name, _)| *name == OsStr::new(MARKER))
        .and_then(|(_, value)| value?.to_str()?.parse::<u64>().ok())
    else {
        return;
    };
    let taken = PENDING.lock().ok().and_then(|mut p| p.as_mut()?.remove(&id));
    let Some((confinement, first_step_skips)) = taken else { return };
    first_step_skips.store(true, Ordering::SeqCst);
    command.env_remove(MARKER);
    // SAFETY: `apply` only makes system calls on memory prepared before the fork.
    unsafe { command.pre_exec(move || confinement.apply()) };
}

/// A run's Landlock capsule. Dropping it removes its private temp folder and home.
#[derive(Debug)]
pub struct Landlock {
    walls: Walls,
    abi: i32,
    confinement: Arc<Confinement>,
}

impl Landlock {
    /// Makes the run's capsule: checks the kernel's Landlock ABI and builds the ruleset.
    pub fn start(options: CapsuleOptions) -> Result<Landlock, Error> {
        let abi = kernel_abi();
        if abi < MIN_ABI {
            return Err(capsule_error(format!(
                "Landlock {} on this kernel; a capsule needs ABI {MIN_ABI} (Linux 6.7) for its \
                 network rules; use bubblewrap ([capsule] kind = \"bwrap\") where user \
                 namespaces are allowed",
                if abi == 0 { "is off".to_string() } else { format!("has ABI {abi}") }
            )));
        }
        let walls = Walls::new(&options)?;
        let confinement = Arc::new(confinement(&walls, abi, &[])?);
        Ok(Landlock { walls, abi, confinement })
    }

    /// The private temp folder as the host sees it (the same path inside).
    pub fn tmp_on_host(&self) -> PathBuf {
        self.walls.tmp_on_host()
    }
}

/// The ruleset and filter of a process that may also connect to and listen on `ports` of the
/// loopback (without network).
fn confinement(walls: &Walls, abi: i32, ports: &[u16]) -> Result<Confinement, Error> {
    let ruleset = ruleset(walls, abi, ports)
        .map_err(|e| capsule_error(format!("cannot build its Landlock rules: {e}")))?;
    let ip = match walls.network {
        Network::None | Network::Internet => IpSockets::TcpOnly,
        Network::Host => IpSockets::All,
    };
    Ok(Confinement { ruleset, filter: seccomp::program(ip) })
}

/// The rights that read a file or folder and run programs.
fn read(abi: ABI) -> landlock::BitFlags<AccessFs> {
    AccessFs::from_read(abi)
}

/// Every right.
fn all(abi: ABI) -> landlock::BitFlags<AccessFs> {
    AccessFs::from_all(abi)
}

fn ruleset(walls: &Walls, abi_number: i32, ports: &[u16]) -> Result<OwnedFd, String> {
    build_ruleset(walls, abi_number, ports)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| "the kernel gave no ruleset".to_string())
}

fn build_ruleset(
    walls: &Walls,
    abi_number: i32,
    ports: &[u16],
) -> Result<Option<OwnedFd>, landlock::RulesetError> {
    let abi = ABI::from(abi_number);
    let mut rules: Vec<(PathBuf, landlock::BitFlags<AccessFs>)> = Vec::new();
    let home = walls.home.home().map(Path::to_path_buf);
    let temp = std::env::temp_dir();
    let mut outside: Vec<PathBuf> = ["/tmp", "/var/tmp", "/run", "/dev"].map(PathBuf::from).into();
    outside.extend(home.iter().cloned());
    outside.push(temp);
    allow_except(Path::new("/"), &outside, read(abi), &mut rules);
    for device in ["null", "zero", "full", "random", "urandom", "tty", "ptmx", "pts"] {
        rules.push((Path::new("/dev").join(device), all(abi)));
    }
    for prefix in &walls.programs_in_temp {
        rules.push((prefix.clone(), read(abi)));
    }
    // The home's shown paths, without the secrets inside them.
    for shown in walls.home.shown() {
        allow_except(shown, &walls.hidden, read(abi), &mut rules);
    }
    rules.extend(project_rules(walls, abi));
    for folder in walls.read_write.iter().chain([&walls.tmp_on_host()]) {
        rules.push((folder.clone(), all(abi)));
    }
    let mut handled = Ruleset::default().set_compatibility(CompatLevel::BestEffort);
    handled = handled.handle_access(AccessFs::from_all(abi))?;
    if walls.network != Network::Host {
        handled = handled.handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)?;
    }
    let mut created = handled.scope(Scope::Signal | Scope::AbstractUnixSocket)?.create()?;
    for (path, access) in rules {
        let Ok(fd) = PathFd::new(&path) else { continue }; // gone since: nothing to allow
        let access = if path.is_dir() { access } else { access & AccessFs::from_file(abi) };
        created = created.add_rule(PathBeneath::new(fd, access))?;
    }
    if walls.network == Network::None {
        // An ephemeral port to listen on (a debug adapter's), reached from the host only.
        created = created.add_rule(NetPort::new(0, AccessNet::BindTcp))?;
    }
    if walls.network != Network::Host {
        for port in ports {
            created = created
                .add_rule(NetPort::new(*port, AccessNet::BindTcp | AccessNet::ConnectTcp))?;
        }
    }
    if let Some(port) = walls.proxy_port() {
        // The only way out: the egress proxy, on the host's loopback.
        created = created.add_rule(NetPort::new(port, AccessNet::ConnectTcp))?;
    }
    Ok(created.into())
}

/// A ruleset that confines the network only: TCP connections to `port` alone, no TCP port
/// to listen on, no abstract socket out of the domain. For a bubblewrap capsule's workers,
/// which share the host's network namespace (and with it its loopback and abstract sockets).
pub(super) fn network_only(port: u16) -> Result<OwnedFd, String> {
    let built = || -> Result<Option<OwnedFd>, landlock::RulesetError> {
        let created = Ruleset::default()
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)?
            .scope(Scope::AbstractUnixSocket)?
            .create()?
            .add_rule(NetPort::new(port, AccessNet::ConnectTcp))?;
        Ok(created.into())
    };
    built().map_err(|e| e.to_string())?.ok_or_else(|| "the kernel gave no ruleset".to_string())
}

/// Confines the calling (forked, single-threaded) process by `ruleset`, with `no_new_privs`,
/// which Landlock requires. Only system calls: no allocation, no lock.
pub(super) fn restrict_self(ruleset: &OwnedFd) -> io::Result<()> {
    // SAFETY: plain system calls on integers and a descriptor `ruleset` owns.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
            || libc::syscall(libc::SYS_landlock_restrict_self, ruleset.as_raw_fd(), 0u32) != 0
        {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The project: read-write, but its protected paths read-only; Landlock cannot except a path
/// from a writable folder, so with protected paths the top level itself is read-only and each
/// of its other entries read-write.
fn project_rules(walls: &Walls, abi: ABI) -> Vec<(PathBuf, landlock::BitFlags<AccessFs>)> {
    if walls.protected.is_empty() {
        return vec![(walls.project.clone(), all(abi))];
    }
    let mut rules = vec![(walls.project.clone(), read(abi))];
    for entry in std::fs::read_dir(&walls.project).into_iter().flatten().flatten() {
        let path = entry.path();
        // A symlink out of the project must not make its target writable.
        let link = entry.file_type().is_ok_and(|t| t.is_symlink());
        if link || walls.protected.contains(&path) {
            continue;
        }
        rules.push((path, all(abi)));
    }
    rules
}

/// Allows `access` beneath `root` but not beneath any of `except`: the folders on the way to
/// an exception are opened up entry by entry.
fn allow_except(
    root: &Path,
    except: &[PathBuf],
    access: landlock::BitFlags<AccessFs>,
    rules: &mut Vec<(PathBuf, landlock::BitFlags<AccessFs>)>,
) {
    if except.iter().any(|e| root.starts_with(e)) {
        return;
    }
    if !except.iter().any(|e| e.starts_with(root)) {
        rules.push((root.to_path_buf(), access));
        return;
    }
    let entries: Vec<PathBuf> = match std::fs::read_dir(root) {
        Ok(entries) => entries.flatten().map(|e| e.path()).collect(),
        // Inside a Landlock capsule (a worker's own agent-tools) `/` cannot be listed: the
        // usual top-level folders, each still checked against the exceptions (the enclosing
        // capsule's own rules apply on top).
        Err(_) if root == Path::new("/") => TOP_LEVEL.iter().map(|n| root.join(n)).collect(),
        Err(_) => return,
    };
    for entry in entries {
        // A symlink is reached through its target's own rule.
        if entry.symlink_metadata().is_ok_and(|m| !m.file_type().is_symlink()) {
            allow_except(&entry, except, access, rules);
        }
    }
}

/// The top-level folders of a Linux system, for a root that cannot be listed.
const TOP_LEVEL: &[&str] = &[
    "bin", "boot", "dev", "etc", "gnu", "home", "lib", "lib32", "lib64", "libx32", "media", "mnt",
    "nix", "opt", "proc", "root", "run", "sbin", "snap", "srv", "sys", "tmp", "usr", "var",
];

impl Landlock {
    /// `program args…` confined by `confinement`.
    fn confined(
        &self,
        program: &OsStr,
        args: &[OsString],
        confinement: Arc<Confinement>,
    ) -> Command {
        use std::os::unix::process::CommandExt;
        let tmp = self.walls.tmp_on_host();
        let mut command = Command::new(program);
        command.args(args).env_clear().envs(self.walls.environment(&tmp.join("home"), &tmp));
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        let skip = Arc::new(AtomicBool::new(false));
        if let Ok(mut pending) = PENDING.lock() {
            pending
                .get_or_insert_with(HashMap::new)
                .insert(id, (confinement.clone(), skip.clone()));
        }
        command.env(MARKER, id.to_string());
        // SAFETY: `apply` only makes system calls on memory prepared before the fork.
        unsafe {
            command.pre_exec(move || {
                if skip.load(Ordering::SeqCst) { Ok(()) } else { confinement.apply() }
            });
        }
        command
    }
}

impl Capsule for Landlock {
    fn command(&self, program: &OsStr, args: &[OsString]) -> Command {
        self.confined(program, args, self.confinement.clone())
    }

    fn loopback_tcp(&self) -> LoopbackTcp {
        match self.walls.network {
            Network::None | Network::Internet => LoopbackTcp::GivenPorts,
            Network::Host => LoopbackTcp::Open,
        }
    }

    fn command_with_ports(&self, program: &OsStr, args: &[OsString], ports: &[u16]) -> Command {
        match confinement(&self.walls, self.abi, ports) {
            Ok(confinement) => self.confined(program, args, Arc::new(confinement)),
            // Rules that cannot be built: without the ports, which the process then misses.
            Err(_) => self.command(program, args),
        }
    }

    fn describe(&self) -> String {
        format!(
            "landlock (ABI {}): {}, {}, signals and abstract sockets kept inside{}, no new \
             namespaces, no kernel keyring, no capabilities, gone with the host; not given \
             (bubblewrap gives them): a PID namespace (the host's processes are listed), a \
             loopback of its own{}",
            self.abi,
            self.walls.describe_files(),
            self.walls
                .describe_network("no network (no TCP connection, not even to 127.0.0.1; no UDP)"),
            if self.abi >= 6 { "" } else { " (NOT on this kernel: Landlock ABI 6 needed)" },
            if self.abi >= 9 {
                ""
            } else {
                ", and pathname sockets of host services stay reachable (Landlock ABI 9 confines \
                 them)"
            },
        )
    }

    fn temp_dir(&self) -> PathBuf {
        self.tmp_on_host()
    }

    fn explain(&self, output: &str) -> Option<String> {
        let mut found = self.walls.explain(
            output,
            "there is no network (the user's capsule setting network = \"none\"): no TCP \
             connection, 127.0.0.1 included",
        );
        let denied = output.contains("Permission denied") || output.contains("EACCES");
        if denied && !self.walls.protected.is_empty() {
            found.push(
                "new files cannot be made at the project's top level while its .git is \
                 protected (write into a folder of the project)"
                    .into(),
            );
        }
        if found.is_empty() {
            return None;
        }
        Some(format!("This ran in the run's Landlock capsule: {}.", found.join("; ")))
    }
}
