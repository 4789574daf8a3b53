//! Where a run's exec-tier processes run: the capsule contract and its local backends.
//!
//! A capsule is made by the host when a run starts, from the user's configuration (decision
//! D11), and every process that runs code of the project or of the model (kernels, debug
//! adapters and their debuggees, workers) is started through it. A tool never boots one. The
//! contract is the one a container or a pod per run also gives: start (the backend's
//! constructor), exec with pipes ([`Capsule::command`]: file descriptors, stdio and the
//! environment pass through), signal (through the process group the support crate's spawn
//! makes, or the program's own protocol when a wrapper sits in between) and tear down (drop:
//! the capsule's processes die with their spawn's teardown, its private folders go with it).
//!
//! Backends: [`OnHost`] (no capsule), [`Prefix`] (a command prefix a harness supplies),
//! [`Bwrap`] (bubblewrap: the project read-write at its own path, the system read-only, a
//! private `/tmp`, the home private but for what the run needs, no network, its own PID
//! namespace) and [`Landlock`] (the same walls from Landlock rules and a seccomp filter applied
//! between fork and exec, where bubblewrap cannot make namespaces; no PID namespace, no
//! loopback of its own). A local capsule with [`Network::Internet`] (the workers') reaches
//! public addresses only, through an [`EgressProxy`] of its own.
//!
//! Past one machine: a container per run (`podman exec -i NAME`) or a Kubernetes pod per run
//! (`kubectl exec -i POD --`) fits the same contract as another implementation: the constructor
//! creates the container or pod and waits for it to run, [`Capsule::command`] prefixes the exec,
//! [`Capsule::connect_loopback`] becomes a port-forward, [`Capsule::host_pid`] answers None
//! (teardown is the pod's deletion), and [`Capsule::signals_reach_the_program`] is false, so
//! interrupts travel by the program's own protocol (the kernel's interrupt frame, DAP `pause`).
//! A host fleet behind a load balancer places runs by session affinity on `Mcp-Session-Id` (one
//! session is one run), each run with its pod; the host's per-run state (kernels' slots, debug
//! sessions, the request-state key, the journal of the root) stays on the host that owns the
//! session, and a session whose host died is gone (its client starts a new one). Of the
//! confining backends, only bubblewrap and Landlock are built and tested here.

mod bwrap;
mod destination;
mod egress;
mod environment;
mod home;
mod landlock;
mod logins;
mod netns;
mod pids;
mod seccomp;
mod walls;

pub(crate) use self::landlock::confine_last;

use std::{
    ffi::{OsStr, OsString},
    fmt, io,
    net::TcpStream,
    process::{Command, ExitStatus},
    time::Duration,
};

pub use self::{
    bwrap::Bwrap,
    egress::EgressProxy,
    environment::PASSED_ENV,
    home::{HomeNeeds, HomeView},
    landlock::{Landlock, kernel_abi as landlock_abi},
    logins::{WORKER_LOGINS, WorkerLogin},
    walls::{BwrapOptions, CapsuleOptions, HIDDEN_IN_HOME, Network, PROTECTED_IN_PROJECT},
};

/// A run's confinement: builds the command lines of the processes that run inside it.
pub trait Capsule: Send + Sync + fmt::Debug {
    /// `program args…` as a command that runs inside the capsule. The caller adds the working
    /// directory (the same path inside), environment, stdio and inherited descriptors; all of
    /// them pass through.
    fn command(&self, program: &OsStr, args: &[OsString]) -> Command;

    /// One line for `status` and notes: the kind and what it confines.
    fn describe(&self) -> String;

    /// Whether a signal sent to the spawned pid reaches `program` itself (false when a wrapper
    /// sits in between: then the program's own protocol carries interrupts).
    fn signals_reach_the_program(&self) -> bool {
        true
    }

    /// Whether the host's files are at the same paths inside, so a program found on the host
    /// (an interpreter, an adapter) runs there as it is (false for a prefix into a container).
    fn sees_host_files(&self) -> bool {
        true
    }

    /// A folder for scratch files that the host and the processes inside see at the same path
    /// (a debug session's build output, a program's stdin file).
    fn temp_dir(&self) -> std::path::PathBuf {
        std::env::temp_dir()
    }

    /// Connects to `port` on the loopback that the process `pid` (started through
    /// [`Capsule::command`], or one of its descendants) sees: a capsule without network has a
    /// loopback of its own.
    fn connect_loopback(&self, pid: u32, port: u16, within: Duration) -> io::Result<TcpStream> {
        let _ = pid;
        TcpStream::connect_timeout(&(std::net::Ipv4Addr::LOCALHOST, port).into(), within)
    }

    /// The host's pid for the process whose pid is `inside` as a process started under the
    /// host pid `under` sees it (an adapter's report of its debuggee); None when none is.
    fn host_pid(&self, inside: u32, under: u32) -> Option<u32> {
        let _ = under;
        Some(inside)
    }

    /// A sentence for the model when `output` (what a process inside printed) shows it ran into
    /// the capsule's walls: a read-only file system, no network. None when it did not.
    fn explain(&self, output: &str) -> Option<String> {
        let _ = output;
        None
    }

    /// Whether processes inside reach each other over TCP on 127.0.0.1 (a debug adapter and
    /// its debuggee), or only on ports given to [`Capsule::command_with_ports`].
    fn loopback_tcp(&self) -> LoopbackTcp {
        LoopbackTcp::Open
    }

    /// [`Capsule::command`] whose process (and its descendants) may also listen on and connect
    /// to `ports` of the loopback, where [`Capsule::loopback_tcp`] is
    /// [`LoopbackTcp::GivenPorts`] (pick them with [`free_loopback_ports`]).
    fn command_with_ports(&self, program: &OsStr, args: &[OsString], ports: &[u16]) -> Command {
        let _ = ports;
        self.command(program, args)
    }

    /// How the exit statuses of processes started through [`Capsule::command`] read: a
    /// wrapper that reaps the program (bubblewrap's init) passes a death by signal N on as exit
    /// code 128+N.
    fn exit_statuses(&self) -> ExitStatuses {
        ExitStatuses::Direct
    }

    /// How a process started through [`Capsule::command`] ended, from its spawned pid's status.
    fn ended(&self, status: ExitStatus) -> ProcessEnd {
        self.exit_statuses().read(status)
    }
}

/// TCP between the processes of a capsule on 127.0.0.1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoopbackTcp {
    /// Any port (the host's network, or a network namespace of its own).
    Open,
    /// Only ports given to [`Capsule::command_with_ports`] (Landlock without network).
    GivenPorts,
}

/// `count` loopback ports free now (bound at once, then released), for
/// [`Capsule::command_with_ports`].
pub fn free_loopback_ports(count: usize) -> io::Result<Vec<u16>> {
    let listeners = (0..count)
        .map(|_| std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0)))
        .collect::<io::Result<Vec<_>>>()?;
    listeners.iter().map(|l| l.local_addr().map(|a| a.port())).collect()
}

/// Whose exit status the spawned pid reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatuses {
    /// The program's own: a death by signal is one.
    Direct,
    /// A wrapper's that reaps the program: exit code 128+N is a death by signal N.
    Wrapped,
}

impl ExitStatuses {
    /// How the process whose status is `status` ended.
    pub fn read(self, status: ExitStatus) -> ProcessEnd {
        match self {
            ExitStatuses::Direct => ProcessEnd::of(status),
            ExitStatuses::Wrapped => ProcessEnd::of_wrapped(status),
        }
    }
}

/// How a process ended: its exit code, or the signal that killed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcessEnd {
    /// It exited with this code.
    Code(i32),
    /// It was killed by this signal.
    Signal(i32),
}

impl ProcessEnd {
    /// The end `status` reports, as the kernel gave it.
    pub fn of(status: ExitStatus) -> ProcessEnd {
        use std::os::unix::process::ExitStatusExt;
        match (status.code(), status.signal()) {
            (Some(code), _) => ProcessEnd::Code(code),
            (None, Some(signal)) => ProcessEnd::Signal(signal),
            // Stopped or continued statuses are not ends; read them as the raw value.
            (None, None) => ProcessEnd::Code(status.into_raw()),
        }
    }

    /// The end `status` reports when a wrapper stands between: a code of 128+N (N a signal
    /// number) is a death by signal N, as shells and bubblewrap report it.
    pub fn of_wrapped(status: ExitStatus) -> ProcessEnd {
        match ProcessEnd::of(status) {
            ProcessEnd::Code(code) if (129..=128 + 64).contains(&code) => {
                ProcessEnd::Signal(code - 128)
            }
            end => end,
        }
    }

    /// Whether it exited with code 0.
    pub fn success(self) -> bool {
        self == ProcessEnd::Code(0)
    }

    /// The exit code, if it exited.
    pub fn code(self) -> Option<i32> {
        match self {
            ProcessEnd::Code(code) => Some(code),
            ProcessEnd::Signal(_) => None,
        }
    }

    /// The signal, if one killed it.
    pub fn signal(self) -> Option<i32> {
        match self {
            ProcessEnd::Signal(signal) => Some(signal),
            ProcessEnd::Code(_) => None,
        }
    }
}

/// No capsule: processes run on the host with the host's rights.
#[derive(Debug, Clone, Copy, Default)]
pub struct OnHost;

impl Capsule for OnHost {
    fn command(&self, program: &OsStr, args: &[OsString]) -> Command {
        let mut command = Command::new(program);
        command.args(args);
        command
    }

    fn describe(&self) -> String {
        "none: processes run on the host with the user's rights, unconfined (set [capsule] kind \
         = \"auto\" for a sandbox)"
            .to_string()
    }
}

/// A command prefix the harness supplies (`["docker", "exec", "-i", "box"]`, a `bwrap` line of
/// its own); the prefix must pass file descriptors 3 and 4 through.
#[derive(Debug, Clone)]
pub struct Prefix {
    words: Vec<String>,
}

impl Prefix {
    /// `words` must not be empty; the first is the program.
    pub fn new(words: Vec<String>) -> Result<Self, String> {
        if words.first().is_none_or(|p| p.trim().is_empty()) {
            return Err("a prefix capsule needs a command prefix, for example \
                        [\"docker\", \"exec\", \"-i\", \"box\"]"
                .into());
        }
        Ok(Prefix { words })
    }
}

impl Capsule for Prefix {
    fn command(&self, program: &OsStr, args: &[OsString]) -> Command {
        let mut command = Command::new(&self.words[0]);
        command.args(&self.words[1..]).arg(program).args(args);
        command
    }

    fn describe(&self) -> String {
        format!(
            "prefix: `{}` before every command (it confines what it confines)",
            self.words.join(" ")
        )
    }

    fn signals_reach_the_program(&self) -> bool {
        false
    }

    fn sees_host_files(&self) -> bool {
        false
    }

    fn exit_statuses(&self) -> ExitStatuses {
        // A wrapper (a shell, `docker exec`) passes a death by signal N on as 128+N.
        ExitStatuses::Wrapped
    }
}
