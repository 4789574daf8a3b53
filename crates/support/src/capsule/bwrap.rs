//! bubblewrap as a run's capsule: namespaces and bind mounts around every process of the run.
//!
//! Inside: the system read-only at its own paths, the project read-write at its own path (its
//! `.git` and `agent-tools.toml` read-only), a private `/tmp` and home shared by the run's
//! processes, `/run` empty (no host service sockets), the user's secrets hidden (`~/.ssh`,
//! `~/.aws`, …), the environment cut to an allow-list, no network unless the user allows it,
//! an own PID, IPC and UTS namespace, no capabilities, a new session (no keystrokes pushed into
//! the host's terminal), and death with the host.
#![allow(
    clippy::disallowed_methods,
    reason = "the capsule removes its own folders under the host temp dir"
)]

use std::{
    ffi::{OsStr, OsString},
    io,
    net::TcpStream,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::Duration,
};

use super::{Capsule, environment};
use crate::Error;

/// Whether processes in the capsule reach the network.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Network {
    /// A network namespace of its own with only a loopback: nothing outside is reachable,
    /// the host's `127.0.0.1` services included.
    #[default]
    None,
    /// The host's network.
    Host,
}

/// Locations under the home folder hidden in every bubblewrap capsule: keys, tokens and
/// credentials of the tools people use, and agent-tools' own settings and state.
pub const HIDDEN_IN_HOME: &[&str] = &[
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".kube",
    ".docker",
    ".netrc",
    ".git-credentials",
    ".npmrc",
    ".pypirc",
    ".password-store",
    ".config/gh",
    ".config/hub",
    ".config/gcloud",
    ".config/agent-tools",
    ".local/share/keyrings",
    ".local/state/agent-tools",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".claude",
    ".claude.json",
    ".codex",
];

/// Project paths kept read-only inside (a cell must not plant a git hook or change the
/// project's agent-tools settings), unless the user's configuration says otherwise.
pub const PROTECTED_IN_PROJECT: &[&str] = &[".git", "agent-tools.toml"];

/// What a bubblewrap capsule is made from: the user's configuration, never the project's.
#[derive(Debug, Clone, Default)]
pub struct BwrapOptions {
    /// The `bwrap` program; default: the first of `/usr/bin/bwrap`, `/usr/local/bin/bwrap`,
    /// `/bin/bwrap`, then `bwrap` on PATH outside the project.
    pub program: Option<PathBuf>,
    /// The project, bound read-write at its own path.
    pub project: PathBuf,
    pub network: Network,
    /// More folders bound read-write at their own paths.
    pub read_write: Vec<PathBuf>,
    /// More paths hidden (an empty folder or an empty file in their place).
    pub hide: Vec<PathBuf>,
    /// Paths of [`HIDDEN_IN_HOME`] (or below them) the user lets the capsule see, such as an
    /// agent CLI's own credentials for a worker (`~/.claude`).
    pub expose: Vec<PathBuf>,
    /// Project paths (relative to it) read-only inside; `None`: [`PROTECTED_IN_PROJECT`].
    pub protect: Option<Vec<PathBuf>>,
    /// Environment variables passed on besides [`super::PASSED_ENV`].
    pub pass_env: Vec<String>,
    /// The home folder whose secrets are hidden; default: `$HOME`.
    pub home: Option<PathBuf>,
}

/// A run's bubblewrap capsule. Dropping it removes its private `/tmp` and home.
#[derive(Debug)]
pub struct Bwrap {
    program: PathBuf,
    project: PathBuf,
    network: Network,
    args: Vec<OsString>,
    hidden: Vec<PathBuf>,
    protected: Vec<PathBuf>,
    pass_env: Vec<String>,
    /// Toolchain homes that default to the home folder, pinned to the host's (read-only
    /// inside), since the home inside is a private one.
    toolchain_env: Vec<(&'static str, PathBuf)>,
    run_dir: RunDir,
}

/// Where a capsule's `/tmp` (and the home in it) lives on the host.
#[derive(Debug)]
struct RunDir(PathBuf);

impl Drop for RunDir {
    fn drop(&mut self) {
        // remove_dir_all never follows a symlink a process inside may have planted.
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const RUN_DIR_PREFIX: &str = "agent-tools-capsule-";

/// `agent-tools-capsule-<pid>-<start>-<uuid>`: the host that owns it, so a later host can tell
/// the folder of one that was killed from one in use.
fn run_dir_name() -> String {
    let pid = std::process::id();
    let start = crate::process::start_time(pid).unwrap_or(0);
    format!("{RUN_DIR_PREFIX}{pid}-{start}-{}", uuid::Uuid::new_v4().simple())
}

/// Removes the capsule folders of hosts that are gone (killed before they could remove them).
fn sweep_abandoned(temp: &Path) {
    let Ok(entries) = std::fs::read_dir(temp) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(RUN_DIR_PREFIX)) else {
            continue;
        };
        let mut parts = rest.splitn(3, '-');
        let (Some(pid), Some(start)) = (
            parts.next().and_then(|p| p.parse::<u32>().ok()),
            parts.next().and_then(|s| s.parse::<u64>().ok()),
        ) else {
            continue;
        };
        if crate::process::start_time(pid) != Some(start) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// The home inside a capsule (in its private `/tmp`).
const HOME_INSIDE: &str = "/tmp/home";

impl Bwrap {
    /// Makes the run's capsule: resolves `bwrap`, creates the private folders and checks once
    /// that bubblewrap can make its namespaces here.
    pub fn start(options: BwrapOptions) -> Result<Bwrap, Error> {
        let project = options.project.clone();
        let program = resolve_program(options.program.as_deref(), &project)?;
        sweep_abandoned(&std::env::temp_dir());
        let dir = std::env::temp_dir().join(run_dir_name());
        create_private(&dir.join("tmp").join("home")).map_err(|e| {
            capsule_error(format!("cannot create its private /tmp in {}: {e}", dir.display()))
        })?;
        let run_dir = RunDir(dir);
        // What a hidden file reads as: empty (a bound /dev/null would refuse to open).
        let empty = run_dir.0.join("empty");
        std::fs::write(&empty, "")
            .map_err(|e| capsule_error(format!("cannot create {}: {e}", empty.display())))?;
        let home = options.home.clone().or_else(|| std::env::var_os("HOME").map(PathBuf::from));
        let mut hidden: Vec<PathBuf> = home
            .iter()
            .flat_map(|home| HIDDEN_IN_HOME.iter().map(move |p| home.join(p)))
            .chain(options.hide.iter().cloned())
            .filter(|p| p.symlink_metadata().is_ok())
            .filter(|p| !options.expose.iter().any(|shown| p.starts_with(shown)))
            .collect();
        hidden.dedup();
        let protected: Vec<PathBuf> = options
            .protect
            .clone()
            .unwrap_or_else(|| PROTECTED_IN_PROJECT.iter().map(PathBuf::from).collect())
            .into_iter()
            .map(|p| project.join(p))
            .filter(|p| p.symlink_metadata().is_ok())
            .collect();
        let mut args: Vec<OsString> = Vec::new();
        let mut add = |words: &[&OsStr]| args.extend(words.iter().map(|w| w.to_os_string()));
        add(&["--ro-bind".as_ref(), "/".as_ref(), "/".as_ref()]);
        add(&["--dev".as_ref(), "/dev".as_ref(), "--proc".as_ref(), "/proc".as_ref()]);
        add(&["--tmpfs".as_ref(), "/run".as_ref()]);
        if options.network == Network::Host && Path::new("/run/systemd/resolve").is_dir() {
            add(&[
                "--ro-bind".as_ref(),
                "/run/systemd/resolve".as_ref(),
                "/run/systemd/resolve".as_ref(),
            ]);
        }
        let tmp = run_dir.0.join("tmp");
        add(&["--bind".as_ref(), tmp.as_os_str(), "/tmp".as_ref()]);
        // Also at its host path, so a scratch file the host puts there has one name for both.
        add(&["--bind".as_ref(), tmp.as_os_str(), tmp.as_os_str()]);
        // A home under /tmp (a CI runner's, a checkout's test home) would vanish under the
        // private /tmp: it stays readable at its path as it would be anywhere else (its secrets
        // are hidden below, as everywhere).
        if let Some(home) = home.as_deref().filter(|h| h.starts_with("/tmp") && h.is_dir()) {
            add(&["--ro-bind".as_ref(), home.as_os_str(), home.as_os_str()]);
        }
        for folder in std::iter::once(&project).chain(&options.read_write) {
            add(&["--bind".as_ref(), folder.as_os_str(), folder.as_os_str()]);
        }
        for path in &protected {
            add(&["--ro-bind".as_ref(), path.as_os_str(), path.as_os_str()]);
        }
        for path in &hidden {
            if path.is_dir() {
                add(&["--tmpfs".as_ref(), path.as_os_str()]);
            } else {
                add(&["--ro-bind".as_ref(), empty.as_os_str(), path.as_os_str()]);
            }
        }
        for flag in ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"] {
            add(&[flag.as_ref()]);
        }
        if options.network == Network::None {
            add(&["--unshare-net".as_ref()]);
        }
        add(&["--die-with-parent".as_ref(), "--new-session".as_ref()]);
        add(&["--cap-drop".as_ref(), "ALL".as_ref()]);
        let toolchain_env = home.as_deref().map(toolchain_homes).unwrap_or_default();
        let capsule = Bwrap {
            toolchain_env,
            program,
            project,
            network: options.network,
            args,
            hidden,
            protected,
            pass_env: options.pass_env,
            run_dir,
        };
        capsule.check()?;
        Ok(capsule)
    }

    /// The capsule's `/tmp` as the host sees it.
    pub fn tmp_on_host(&self) -> PathBuf {
        self.run_dir.0.join("tmp")
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
             \"none\" to run without one",
            self.program.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        )))
    }

    fn home_relative(&self, path: &Path) -> String {
        match std::env::var_os("HOME").map(PathBuf::from) {
            Some(home) if path.starts_with(&home) => {
                format!("~/{}", path.strip_prefix(&home).unwrap_or(path).display())
            }
            _ => path.display().to_string(),
        }
    }
}

impl Capsule for Bwrap {
    fn command(&self, program: &OsStr, args: &[OsString]) -> Command {
        let mut command = Command::new(&self.program);
        command.args(&self.args).arg("--").arg(program).args(args);
        command
            .env_clear()
            .envs(environment::passed(&self.pass_env))
            .envs(self.toolchain_env.iter().map(|(name, path)| (*name, path)))
            .env("HOME", HOME_INSIDE)
            .env("TMPDIR", "/tmp");
        command
    }

    fn describe(&self) -> String {
        let hidden: Vec<String> = self.hidden.iter().map(|p| self.home_relative(p)).collect();
        let protected: Vec<String> = self
            .protected
            .iter()
            .map(|p| p.strip_prefix(&self.project).unwrap_or(p).display().to_string())
            .collect();
        format!(
            "bwrap ({}): the project {} read-write{}, the rest of the system read-only, a \
             private /tmp and home, {} hidden, the environment cut to an allow-list, {}, its own \
             PID namespace (the host's processes are invisible), no capabilities, gone with the \
             host",
            self.program.display(),
            self.project.display(),
            if protected.is_empty() {
                String::new()
            } else {
                format!(" (but {} read-only)", protected.join(", "))
            },
            if hidden.is_empty() {
                "no secret locations found to".to_string()
            } else {
                hidden.join(", ")
            },
            match self.network {
                Network::None => "no network (127.0.0.1 is the capsule's own)",
                Network::Host => "the host's network",
            }
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
        match self.network {
            Network::Host => {
                TcpStream::connect_timeout(&(std::net::Ipv4Addr::LOCALHOST, port).into(), within)
            }
            Network::None => super::netns::connect_inside(pid, port, within),
        }
    }

    fn host_pid(&self, inside: u32, under: u32) -> Option<u32> {
        super::pids::host_pid_of(inside, under)
    }

    fn explain(&self, output: &str) -> Option<String> {
        let mut found = Vec::new();
        if output.contains("Read-only file system") || output.contains("EROFS") {
            found.push(format!(
                "only the project ({}) and /tmp are writable here: the rest of the file system is \
                 read-only{}",
                self.project.display(),
                if self.protected.is_empty() {
                    ""
                } else {
                    ", and so are the project's .git and agent-tools.toml"
                }
            ));
        }
        let network_words = [
            "Network is unreachable",
            "ENETUNREACH",
            "Temporary failure in name resolution",
            "Name or service not known",
            "EAI_AGAIN",
            "ENOTFOUND",
            "nodename nor servname",
            "Connection refused",
            "ECONNREFUSED",
        ];
        if self.network == Network::None && network_words.iter().any(|w| output.contains(w)) {
            found.push(
                "there is no network (the user's capsule setting network = \"none\"); 127.0.0.1 \
                 is the capsule's own loopback, so host services are not reachable either"
                    .to_string(),
            );
        }
        let hidden: Vec<String> = self
            .hidden
            .iter()
            .filter(|p| output.contains(&*p.to_string_lossy()))
            .map(|p| self.home_relative(p))
            .collect();
        if !hidden.is_empty() {
            found.push(format!("{} is hidden (secrets stay outside)", hidden.join(", ")));
        }
        if found.is_empty() {
            return None;
        }
        Some(format!("This ran in the run's bubblewrap capsule: {}.", found.join("; ")))
    }
}

/// rustup's and cargo's homes and Go's module cache where they default to the home folder and
/// exist there: a proxy like `~/.cargo/bin/cargo` finds its toolchains, Go its modules.
fn toolchain_homes(home: &Path) -> Vec<(&'static str, PathBuf)> {
    [("RUSTUP_HOME", ".rustup"), ("CARGO_HOME", ".cargo"), ("GOMODCACHE", "go/pkg/mod")]
        .into_iter()
        .filter(|(name, _)| std::env::var_os(name).is_none())
        .map(|(name, under)| (name, home.join(under)))
        .filter(|(_, path)| path.is_dir())
        .collect()
}

fn capsule_error(message: String) -> Error {
    Error::Capsule { message }
}

/// Creates `dir` and its parents, the top one readable by its owner only.
fn create_private(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)
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
