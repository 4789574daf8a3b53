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
//! loopback of its own).

mod bwrap;
mod environment;
mod home;
mod landlock;
mod netns;
mod pids;
mod seccomp;
mod walls;

pub(crate) use self::landlock::confine_last;

use std::{
    ffi::{OsStr, OsString},
    fmt, io,
    net::TcpStream,
    process::Command,
    time::Duration,
};

pub use self::{
    bwrap::Bwrap,
    environment::PASSED_ENV,
    home::{HomeNeeds, HomeView},
    landlock::{Landlock, kernel_abi as landlock_abi},
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
}
