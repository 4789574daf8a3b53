//! `cargo xtask soak`: concurrent MCP sessions (stdio, and one over Streamable HTTP on loopback)
//! drive a seeded mixed workload on real-shaped projects while a chaos thread kills or stops the
//! hosts' children, drops connections and fills a small disk (a tmpfs under the first project and
//! the journal, when the soak may mount one); invariants are checked throughout and at the end.
//!
//! Options: `--seconds N` (default 180), `--seed S` (default 38), `--sessions K` stdio sessions
//! (default 3; one HTTP session besides). Exits non-zero on any broken invariant.

mod chaos;
mod client;
mod report;
mod session;
mod workload;

use std::{
    path::{Path, PathBuf},
    process::{Command, Stdio},
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use anyhow::{Context, Result, bail};

use chaos::SessionState;
use report::Report;

/// The seed used when none is given (and by CI).
pub(crate) const DEFAULT_SEED: u64 = 38;

/// What one soak run is asked to do.
struct Options {
    seconds: u64,
    seed: u64,
    sessions: usize,
}

fn options(args: &[String]) -> Result<Options> {
    let flag = |name: &str, default: u64| -> Result<u64> {
        match args.iter().position(|a| a == name) {
            Some(i) => args
                .get(i + 1)
                .with_context(|| format!("{name} needs a number after it"))?
                .parse()
                .with_context(|| format!("{name} needs a whole number")),
            None => Ok(default),
        }
    };
    let sessions = flag("--sessions", 3)? as usize;
    if sessions == 0 {
        bail!("--sessions must be at least 1");
    }
    Ok(Options { seconds: flag("--seconds", 180)?, seed: flag("--seed", DEFAULT_SEED)?, sessions })
}

/// Everything a session thread needs.
struct Soak {
    report: Report,
    states: Vec<Mutex<SessionState>>,
    binary: PathBuf,
    /// Every marker of this run starts with it.
    prefix: String,
    /// The state folder (journal) and temp folder the hosts use.
    state_dir: PathBuf,
    tmp_dir: PathBuf,
    /// The small disk the chaos thread fills, if one could be mounted.
    disk: Option<PathBuf>,
    end: Instant,
    seed: u64,
}

impl Soak {
    /// The host command with the test environment, its state and temp folders set.
    fn host_command(&self) -> Command {
        let mut command = Command::new(&self.binary);
        crate::setup::with_test_env(&mut command)
            .env("AGENT_TOOLS_STATE_DIR", &self.state_dir)
            .env("TMPDIR", &self.tmp_dir)
            .env("RUST_LOG", "warn");
        command
    }
}

pub(crate) fn run(args: &[String]) -> Result<()> {
    let options = options(args)?;
    #[allow(clippy::print_stdout)]
    {
        println!(
            "soak: {} s, seed {}, {} stdio sessions and 1 HTTP session",
            options.seconds, options.seed, options.sessions
        );
    }
    crate::run(crate::cargo().args(["build", "--quiet", "-p", "agent-tools-host"]))?;
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| crate::project_root().join("target"));
    let binary = target.join("debug").join("agent-tools");
    let work = tempfile::Builder::new().prefix("agent-tools-soak-").tempdir()?;
    let total = options.sessions + 1;
    let Layout { disk, projects, state_dir, tmp_dir } = Layout::make(work.path(), total)?;
    let prefix = format!("soak-{}-", std::process::id());
    let report =
        Report::new(std::env::temp_dir().join(format!("agent-tools-soak-{}.log", options.seed)));
    match &disk {
        Some(disk) => report.note(&format!(
            "a {} MB tmpfs at {} holds project 0 and the journal",
            SmallDisk::MB,
            disk.path.display()
        )),
        None => report.note("no small disk (mounting a tmpfs needs root): no full-disk faults"),
    }
    let soak = Arc::new(Soak {
        report,
        states: (0..total)
            .map(|_| {
                Mutex::new(SessionState {
                    marker: String::new(),
                    host_pid: 0,
                    pending: Default::default(),
                    drop_requested: false,
                    fds: Vec::new(),
                    rss: Vec::new(),
                    disk_full_since: None,
                })
            })
            .collect(),
        binary,
        prefix: prefix.clone(),
        state_dir,
        tmp_dir,
        disk: disk.as_ref().map(|d| d.path.clone()),
        end: Instant::now() + Duration::from_secs(options.seconds),
        seed: options.seed,
    });
    let http = HttpHost::start(&soak, &projects[options.sessions], options.sessions)?;

    let stop = Arc::new(AtomicBool::new(false));
    let chaos = {
        let (soak, stop, prefix) = (soak.clone(), stop.clone(), prefix.clone());
        std::thread::spawn(move || {
            let disk = soak.disk.clone();
            chaos::run(&soak.report, &soak.states, &prefix, soak.seed, disk.as_deref(), &stop)
        })
    };
    let sampler = {
        let (soak, stop) = (soak.clone(), stop.clone());
        std::thread::spawn(move || chaos::sample(&soak.report, &soak.states, &stop))
    };
    let threads: Vec<_> = projects
        .iter()
        .enumerate()
        .map(|(index, project)| {
            let (soak, project, url) = (soak.clone(), project.clone(), http.url.clone());
            let kind = if index < options.sessions {
                session::Kind::Stdio
            } else {
                session::Kind::Http(url)
            };
            std::thread::spawn(move || session::run(&soak, index, kind, &project))
        })
        .collect();
    for thread in threads {
        if thread.join().is_err() {
            soak.report.broken("a session thread panicked");
        }
    }
    stop.store(true, Ordering::Relaxed);
    let _ = chaos.join();
    let _ = sampler.join();
    http.stop(&soak);
    end_checks(&soak, &projects);
    drop(disk);
    if !soak.report.summary(options.seed) {
        bail!("the soak broke invariants (seed {})", options.seed);
    }
    Ok(())
}

/// Where a soak's projects, journal and temp folder are: project 0 and the journal on the
/// small disk when there is one.
struct Layout {
    disk: Option<SmallDisk>,
    projects: Vec<PathBuf>,
    state_dir: PathBuf,
    tmp_dir: PathBuf,
}

impl Layout {
    fn make(work: &Path, total: usize) -> Result<Layout> {
        let python = crate::setup::venv().join("bin").join("python");
        let disk = SmallDisk::mount(&work.join("disk"));
        let on_disk = |name: &str| match &disk {
            Some(disk) => disk.path.join(name),
            None => work.join(name),
        };
        let mut projects = Vec::new();
        for index in 0..total {
            let root = if index == 0 {
                on_disk("project-0")
            } else {
                work.join(format!("project-{index}"))
            };
            workload::write_project(&root, &python)?;
            projects.push(std::fs::canonicalize(&root)?);
        }
        let (state_dir, tmp_dir) = (on_disk("state"), work.join("tmp"));
        std::fs::create_dir_all(&state_dir)?;
        std::fs::create_dir_all(&tmp_dir)?;
        Ok(Layout { disk, projects, state_dir, tmp_dir })
    }
}

/// The shared Streamable HTTP host (its sessions are the soak's last).
struct HttpHost {
    child: std::process::Child,
    url: String,
    marker: String,
    index: usize,
}

impl HttpHost {
    fn start(soak: &Soak, root: &Path, index: usize) -> Result<HttpHost> {
        use std::io::BufRead;
        let marker = format!("{}s{index}-g0", soak.prefix);
        let mut child = soak
            .host_command()
            .args(["mcp", "--http", "127.0.0.1:0", "--trust-project", "--root"])
            .arg(root)
            .env(client::MARKER_VAR, &marker)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .context("start the HTTP host")?;
        let stderr = child.stderr.take().context("the HTTP host's stderr")?;
        let mut lines = std::io::BufReader::new(stderr).lines();
        let first = lines.next().transpose()?.unwrap_or_default();
        std::thread::spawn(move || for _ in lines {});
        let url = first.split_whitespace().find(|w| w.starts_with("http://"));
        let Some(url) = url.map(String::from) else {
            bail!("the HTTP host did not say where it serves: {first}")
        };
        let mut state = soak.states[index].lock().unwrap_or_else(|e| e.into_inner());
        state.marker = marker.clone();
        state.host_pid = child.id();
        Ok(HttpHost { child, url, marker, index })
    }

    /// SIGTERM, then the same checks as a stdio host's end.
    fn stop(mut self, soak: &Soak) {
        let (fds, rss) = {
            let mut state = soak.states[self.index].lock().unwrap_or_else(|e| e.into_inner());
            (std::mem::take(&mut state.fds), std::mem::take(&mut state.rss))
        };
        chaos::judge_memory(&soak.report, &rss, "the HTTP host", "HTTP host");
        match chaos::fds_bounded(&fds) {
            Ok(peak) => soak.report.peak("peak descriptors of the HTTP host", peak as u64),
            Err(why) => soak.report.broken(&format!("the HTTP host's descriptors grew: {why}")),
        }
        chaos::signal(self.child.id(), libc::SIGTERM);
        let end = Instant::now() + Duration::from_secs(30);
        while Instant::now() < end && !matches!(self.child.try_wait(), Ok(Some(_))) {
            std::thread::sleep(Duration::from_millis(50));
        }
        if !matches!(self.child.try_wait(), Ok(Some(_))) {
            soak.report.broken("the HTTP host did not exit within 30 s of SIGTERM");
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        session::no_survivors(soak, &self.marker, "the HTTP host");
        session::no_capsule_folder(soak, self.child.id(), "the HTTP host");
    }
}

/// Leftovers once every host is gone: temporary, lock and intent files in the projects and the
/// journal, and the temp folder's contents.
fn end_checks(soak: &Soak, projects: &[PathBuf]) {
    let mut left = Vec::new();
    for project in projects {
        walk(project, &mut |path| {
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            if name.starts_with(".agent-tools-")
                || name.ends_with(".tmp")
                || name.ends_with(".lock")
            {
                left.push(path.to_path_buf());
            }
        });
    }
    walk(&soak.state_dir.join("journal"), &mut |path| {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if name.ends_with(".json") || name.ends_with(".tmp") {
            left.push(path.to_path_buf());
        }
    });
    if !left.is_empty() {
        soak.report.broken(&format!("files left behind: {left:?}"));
    }
    // The hosts' TMPDIR must be empty: no capsule folder, no server's temp file (a killed
    // clangd's preambles go with its pool's folder).
    let temp: Vec<String> = std::fs::read_dir(&soak.tmp_dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    let capsules = temp.iter().filter(|n| n.starts_with("agent-tools-capsule-")).count();
    if capsules > 0 {
        soak.report.broken(&format!("{capsules} capsule folder(s) remain after the sessions"));
    }
    if !temp.is_empty() {
        soak.report.broken(&format!("left in the hosts' TMPDIR: {}: {temp:.2000?}", temp.len()));
    }
}

/// A small tmpfs the chaos thread fills (a full disk under a project and the journal),
/// unmounted when dropped. Mounting needs root (CI runs as root); `None` otherwise.
struct SmallDisk {
    path: PathBuf,
}

impl SmallDisk {
    const MB: u64 = 32;

    fn mount(path: &Path) -> Option<SmallDisk> {
        std::fs::create_dir_all(path).ok()?;
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={}m", Self::MB), "soak-disk"])
            .arg(path)
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        mounted.then(|| SmallDisk { path: path.to_path_buf() })
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.path).status();
    }
}

fn walk(dir: &Path, found: &mut dyn FnMut(&Path)) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if is_dir && path.file_name().is_some_and(|n| n == ".venv") {
            continue;
        }
        if is_dir {
            walk(&path, found);
        } else {
            found(&path);
        }
    }
}
