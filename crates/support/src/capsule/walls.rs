//! What every local capsule backend confines, computed once per run: the project and its
//! protected paths, the private home, the hidden secrets, the private temp folder, the
//! environment, and the sentences that tell the model which wall a process ran into.
#![allow(
    clippy::disallowed_methods,
    reason = "the capsule removes its own folders under the host temp dir"
)]

use std::{
    ffi::OsString,
    io,
    path::{Path, PathBuf},
};

use super::{
    egress::EgressProxy,
    environment,
    home::{HomeNeeds, HomeView},
};
use crate::Error;

/// Whether processes in the capsule reach the network.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Network {
    /// No network: with bubblewrap a namespace with only its own loopback, with Landlock no TCP
    /// connection and no UDP socket at all; the host's `127.0.0.1` services are unreachable.
    #[default]
    None,
    /// The host's network.
    Host,
    /// Public addresses only, through an egress proxy of the capsule's own (its proxy
    /// variables point there; every other TCP connection and UDP are refused): what workers
    /// get to reach their model's API. Set by the host, not by a configuration.
    #[serde(skip)]
    Internet,
}

/// Locations under the home folder hidden even where the run shows the folder they are in
/// (`~/.cargo/credentials.toml` under a shown `~/.cargo`): keys, tokens and credentials of the
/// tools people use, and agent-tools' own settings and state.
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

/// The proxy variables a capsule with [`Network::Internet`] sets (each also in lower case).
const PROXY_VARIABLES: [&str; 3] = ["HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY"];

/// Project paths kept read-only inside (a cell must not plant a git hook or change the
/// project's agent-tools settings), unless the user's configuration says otherwise.
pub const PROTECTED_IN_PROJECT: &[&str] = &[".git", "agent-tools.toml"];

/// What a local capsule is made from: the user's configuration, never the project's.
#[derive(Debug, Clone, Default)]
pub struct CapsuleOptions {
    /// The `bwrap` program (bubblewrap only); default: the first of `/usr/bin/bwrap`,
    /// `/usr/local/bin/bwrap`, `/bin/bwrap`, then `bwrap` on PATH outside the project.
    pub program: Option<PathBuf>,
    /// The project, read-write at its own path.
    pub project: PathBuf,
    pub network: Network,
    /// More folders read-write at their own paths.
    pub read_write: Vec<PathBuf>,
    /// More paths hidden.
    pub hide: Vec<PathBuf>,
    /// Paths of the home the capsule shows besides what the run resolves, secret locations of
    /// [`HIDDEN_IN_HOME`] included (an agent CLI's own credentials for a worker: `~/.claude`).
    pub expose: Vec<PathBuf>,
    /// Paths of the home shown read-only, each with why (a worker CLI's login), secret
    /// locations included.
    pub logins: Vec<(PathBuf, String)>,
    /// Programs the run resolves (an interpreter, `node`): their prefixes under the home are
    /// shown.
    pub programs: Vec<PathBuf>,
    /// Project paths (relative to it) read-only inside; `None`: [`PROTECTED_IN_PROJECT`].
    pub protect: Option<Vec<PathBuf>>,
    /// Environment variables passed on besides [`super::PASSED_ENV`].
    pub pass_env: Vec<String>,
    /// The home folder kept private; default: `$HOME`.
    pub home: Option<PathBuf>,
}

/// The options of a bubblewrap capsule (the same for every local backend).
pub type BwrapOptions = CapsuleOptions;

/// A run's walls, shared by the local backends. Dropping it removes the private folders.
#[derive(Debug)]
pub(super) struct Walls {
    pub(super) project: PathBuf,
    pub(super) network: Network,
    pub(super) read_write: Vec<PathBuf>,
    /// Existing secret paths of the home and those the user lists, hidden (most already by the
    /// private home; the rest inside what it shows).
    pub(super) hidden: Vec<PathBuf>,
    /// Existing protected project paths, read-only.
    pub(super) protected: Vec<PathBuf>,
    pub(super) home: HomeView,
    /// Prefixes of the run's programs inside a temp folder (a virtual environment under
    /// `/tmp`), shown read-only although the capsule's temp folder is private.
    pub(super) programs_in_temp: Vec<PathBuf>,
    pass_env: Vec<String>,
    /// Toolchain homes that default to the home folder, pinned to the host's (read-only
    /// inside), since the home inside is a private one.
    toolchain_env: Vec<(&'static str, PathBuf)>,
    /// With [`Network::Internet`]: the only way out. Dropped before the folders go.
    pub(super) egress: Option<Egress>,
    pub(super) run_dir: RunDir,
}

/// A worker CLI reads its login from `$HOME`, the private home inside: each login path of the
/// real `home` gets a link there to its real path (shown read-only).
fn link_logins(
    private: &Path,
    home: Option<&Path>,
    logins: &[(PathBuf, String)],
) -> Result<(), Error> {
    let Some(home) = home else { return Ok(()) };
    for (path, _) in logins {
        let Ok(relative) = path.strip_prefix(home) else { continue };
        let link = private.join(relative);
        let made = link
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::os::unix::fs::symlink(path, &link));
        made.map_err(|e| {
            capsule_error(format!("cannot link {} into its private home: {e}", path.display()))
        })?;
    }
    Ok(())
}

/// A capsule's way out with [`Network::Internet`].
#[derive(Debug)]
pub(super) enum Egress {
    /// A proxy of its own.
    Own(EgressProxy),
    /// The proxy of the workers' capsule this one is made in (a worker's own agent-tools
    /// starting workers), whose rules let nothing listen: that proxy's port.
    Enclosing(u16),
}

/// The variable that tells processes inside a workers' capsule its proxy's port.
const EGRESS_PORT: &str = "AGENT_TOOLS_EGRESS_PROXY_PORT";

impl Egress {
    fn for_network(network: Network) -> Result<Option<Egress>, Error> {
        if network != Network::Internet {
            return Ok(None);
        }
        let started = EgressProxy::start();
        let enclosing = || std::env::var(EGRESS_PORT).ok()?.parse::<u16>().ok();
        match started {
            Ok(proxy) => Ok(Some(Egress::Own(proxy))),
            // Refused a port: inside a workers' capsule, whose own proxy is the way out.
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied && enclosing().is_some() => {
                Ok(enclosing().map(Egress::Enclosing))
            }
            Err(e) => {
                Err(capsule_error(format!("cannot start its egress proxy on 127.0.0.1: {e}")))
            }
        }
    }

    pub(super) fn port(&self) -> u16 {
        match self {
            Egress::Own(proxy) => proxy.port(),
            Egress::Enclosing(port) => *port,
        }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port())
    }
}

/// Where a capsule's private temp folder (and the home in it) lives on the host.
#[derive(Debug)]
pub(super) struct RunDir(pub(super) PathBuf);

impl Drop for RunDir {
    fn drop(&mut self) {
        // remove_dir_all never follows a symlink a process inside may have planted.
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const RUN_DIR_PREFIX: &str = "agent-tools-capsule-";

impl Walls {
    /// Computes the walls and creates the private folders.
    pub(super) fn new(options: &CapsuleOptions) -> Result<Walls, Error> {
        let project = options.project.clone();
        sweep_abandoned(&std::env::temp_dir());
        let dir = std::env::temp_dir().join(run_dir_name());
        create_private(&dir.join("tmp").join("home")).map_err(|e| {
            capsule_error(format!("cannot create its private /tmp in {}: {e}", dir.display()))
        })?;
        let run_dir = RunDir(dir);
        let home_path =
            options.home.clone().or_else(|| std::env::var_os("HOME").map(PathBuf::from));
        let home = HomeView::resolve(
            home_path.as_deref(),
            &HomeNeeds {
                project: &project,
                programs: &options.programs,
                expose: &options.expose,
                logins: &options.logins,
            },
        );
        let secrets =
            home_path.iter().flat_map(|home| HIDDEN_IN_HOME.iter().map(move |p| home.join(p)));
        let mut hidden: Vec<PathBuf> = secrets
            .chain(options.hide.iter().cloned())
            .filter(|p| p.symlink_metadata().is_ok())
            .filter(|p| !options.expose.iter().any(|shown| p.starts_with(shown)))
            .filter(|p| !options.logins.iter().any(|(shown, _)| p.starts_with(shown)))
            .collect();
        hidden.sort();
        hidden.dedup();
        let protected: Vec<PathBuf> = options
            .protect
            .clone()
            .unwrap_or_else(|| PROTECTED_IN_PROJECT.iter().map(PathBuf::from).collect())
            .into_iter()
            .map(|p| project.join(p))
            .filter(|p| p.symlink_metadata().is_ok())
            .collect();
        let toolchain_env = home_path.as_deref().map(toolchain_homes).unwrap_or_default();
        link_logins(&run_dir.0.join("tmp").join("home"), home_path.as_deref(), &options.logins)?;
        let programs_in_temp = super::home::programs_in_temp(&options.programs);
        let egress = Egress::for_network(options.network)?;
        Ok(Walls {
            project,
            programs_in_temp,
            network: options.network,
            read_write: options.read_write.clone(),
            hidden,
            protected,
            home,
            pass_env: options.pass_env.clone(),
            toolchain_env,
            egress,
            run_dir,
        })
    }

    /// The private temp folder as the host sees it.
    pub(super) fn tmp_on_host(&self) -> PathBuf {
        self.run_dir.0.join("tmp")
    }

    /// The environment of a process inside, with `HOME` and `TMPDIR` as given.
    pub(super) fn environment(&self, home: &Path, tmp: &Path) -> Vec<(OsString, OsString)> {
        let mut env = environment::passed(&self.pass_env);
        env.extend(self.toolchain_env.iter().map(|(n, p)| (n.into(), p.clone().into())));
        env.push(("HOME".into(), home.into()));
        env.push(("TMPDIR".into(), tmp.into()));
        if let Some(proxy) = &self.egress {
            env.push((EGRESS_PORT.into(), proxy.port().to_string().into()));
            for name in PROXY_VARIABLES {
                env.push((name.into(), proxy.url().into()));
                env.push((name.to_ascii_lowercase().into(), proxy.url().into()));
            }
            env.push(("NO_PROXY".into(), "".into()));
            env.push(("no_proxy".into(), "".into()));
            // Node (22.21, 24) reads the proxy variables in `fetch` and `http` only with it.
            env.push(("NODE_USE_ENV_PROXY".into(), "1".into()));
        }
        env
    }

    /// The egress proxy's port, with [`Network::Internet`].
    pub(super) fn proxy_port(&self) -> Option<u16> {
        self.egress.as_ref().map(Egress::port)
    }

    /// What the processes inside reach of the network, for `status`; `none` is the backend's
    /// phrase for no network.
    pub(super) fn describe_network(&self, none: &str) -> String {
        match (self.network, self.proxy_port()) {
            (Network::None, _) => none.to_string(),
            (Network::Host, _) => "the host's network (its 127.0.0.1 services included)".into(),
            (Network::Internet, port) => {
                let port = port.map_or_else(|| "?".to_string(), |p| p.to_string());
                format!(
                    "public addresses only, through the run's egress proxy at 127.0.0.1:{port}{} \
                     (HTTPS_PROXY, HTTP_PROXY and ALL_PROXY point there), which refuses the \
                     host's own addresses (127.0.0.1, ::1, its interfaces'), link-local ones \
                     (the cloud metadata service) and multicast; every other TCP connection, \
                     listening port, UDP socket and DNS lookup inside is refused, so a program \
                     that ignores the proxy variables has no network (port {port} of another \
                     address stays reachable directly, other machines of the local network \
                     through the proxy)",
                    match self.egress {
                        Some(Egress::Enclosing(_)) => " (the enclosing worker's)",
                        _ => "",
                    }
                )
            }
        }
    }

    /// `~/.ssh, ~/.netrc` for a list of paths.
    pub(super) fn names(&self, paths: &[PathBuf]) -> String {
        paths.iter().map(|p| self.home.relative(p)).collect::<Vec<_>>().join(", ")
    }

    /// What the walls are, for `status`: the project, protected paths, home, secrets.
    pub(super) fn describe_files(&self) -> String {
        let protected: Vec<String> = self
            .protected
            .iter()
            .map(|p| p.strip_prefix(&self.project).unwrap_or(p).display().to_string())
            .collect();
        format!(
            "the project {} read-write{}, the rest of the system read-only; {}; {} hidden; a \
             private temp folder; the environment cut to an allow-list",
            self.project.display(),
            if protected.is_empty() {
                String::new()
            } else {
                format!(" (but {} read-only)", protected.join(", "))
            },
            self.home.describe(),
            if self.hidden.is_empty() {
                "no secret location found to be".to_string()
            } else {
                self.names(&self.hidden)
            },
        )
    }

    /// Sentences for what `output` shows a process ran into; `no_network` is the backend's
    /// sentence for a refused connection.
    pub(super) fn explain(&self, output: &str, no_network: &str) -> Vec<String> {
        let mut found = Vec::new();
        let denied = ["Read-only file system", "EROFS", "Permission denied", "EACCES"];
        if denied.iter().any(|w| output.contains(w)) {
            found.push(format!(
                "only the project ({}) and the private temp folder are writable here: the rest \
                 of the file system is read-only{}",
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
            "Permission denied",
            "EACCES",
            "EPERM",
        ];
        if network_words.iter().any(|w| output.contains(w)) {
            match self.network {
                Network::None => found.push(no_network.to_string()),
                Network::Internet => found.push(
                    "a worker reaches the internet only through the run's egress proxy (its \
                     HTTPS_PROXY): a direct connection, DNS lookups, and any connection to the \
                     host's own addresses (127.0.0.1 included) are refused"
                        .into(),
                ),
                Network::Host => {}
            }
        }
        let hidden: Vec<PathBuf> = self
            .hidden
            .iter()
            .filter(|p| output.contains(&*p.to_string_lossy()))
            .cloned()
            .collect();
        if !hidden.is_empty() {
            found.push(format!("{} is hidden (secrets stay outside)", self.names(&hidden)));
        }
        let private: Vec<PathBuf> = paths_under_home(output, &self.home)
            .into_iter()
            .filter(|p| self.home.hides(p) && !hidden.iter().any(|h| p.starts_with(h)))
            .collect();
        if !private.is_empty() {
            found.push(format!(
                "{} is hidden: the home folder is private (only what the run needs from it is \
                 visible; the user can add a path to [capsule] expose)",
                self.names(&private)
            ));
        }
        found
    }
}

/// The paths under the home folder that `output` names (up to a quote, space or colon).
fn paths_under_home(output: &str, home: &HomeView) -> Vec<PathBuf> {
    let Some(home) = home.home().and_then(Path::to_str) else { return Vec::new() };
    let mut paths: Vec<PathBuf> = output
        .match_indices(home)
        .map(|(at, _)| {
            let rest = &output[at..];
            let end = rest
                .find(|c: char| c.is_whitespace() || "'\"`:,;()[]<>".contains(c))
                .unwrap_or(rest.len());
            PathBuf::from(&rest[..end])
        })
        .collect();
    paths.sort();
    paths.dedup();
    paths
}

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

pub(super) fn capsule_error(message: String) -> Error {
    Error::Capsule { message }
}

/// Creates `dir` and its parents, the top one readable by its owner only.
fn create_private(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)
}
