//! The four adapters: root markers, binary candidates, versions, launch and attach argument
//! shapes, and each adapter's quirks (the measured ones, see the crate README).

use std::{
    collections::{BTreeMap, HashMap},
    path::{Path, PathBuf},
    time::Duration,
};

use parking_lot::Mutex;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::{config::DebugConfig, error::DebugError, request::ExceptionMode};

/// A debug adapter this crate knows.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
#[schemars(inline, transform = crate::request::bare_enum)]
pub enum AdapterKind {
    /// `dart debug_adapter` (Dart and Flutter).
    Dart,
    /// `python -m debugpy.adapter` (Python).
    Debugpy,
    /// `lldb-dap` (C, C++, Rust, anything with DWARF).
    Lldb,
    /// `dlv dap` (Go).
    Delve,
}

impl AdapterKind {
    pub const ALL: [AdapterKind; 4] =
        [AdapterKind::Dart, AdapterKind::Debugpy, AdapterKind::Lldb, AdapterKind::Delve];

    pub fn id(self) -> &'static str {
        match self {
            AdapterKind::Dart => "dart",
            AdapterKind::Debugpy => "debugpy",
            AdapterKind::Lldb => "lldb",
            AdapterKind::Delve => "delve",
        }
    }

    /// Files whose presence in the root says the project is of this kind.
    pub fn markers(self) -> &'static [&'static str] {
        match self {
            AdapterKind::Dart => &["pubspec.yaml"],
            AdapterKind::Debugpy => &["pyproject.toml", "setup.py", "requirements.txt"],
            AdapterKind::Lldb => &["Cargo.toml", "CMakeLists.txt"],
            AdapterKind::Delve => &["go.mod"],
        }
    }

    /// The command as the spec names it.
    pub fn command_name(self) -> &'static str {
        match self {
            AdapterKind::Dart => "dart debug_adapter",
            AdapterKind::Debugpy => "python3 -m debugpy.adapter",
            AdapterKind::Lldb => "lldb-dap",
            AdapterKind::Delve => "dlv dap",
        }
    }

    /// How to install the adapter on a Debian-like machine.
    pub fn install_hint(self) -> &'static str {
        match self {
            AdapterKind::Dart => {
                "install the Dart SDK (https://dart.dev/get-dart) so `dart` is on PATH, or set \
                 [debug.commands] dart in agent-tools.toml"
            }
            AdapterKind::Debugpy => {
                "install debugpy into the project's environment: `.venv/bin/python -m pip install \
                 debugpy` (or `pip install debugpy` for the python3 on PATH)"
            }
            AdapterKind::Lldb => {
                "install lldb-dap: `apt-get install lldb-19` (gives lldb-dap-19), or LLVM's release \
                 for your system"
            }
            AdapterKind::Delve => {
                "install delve and Go: `apt-get install delve golang-go`, or `go install \
                 github.com/go-delve/delve/cmd/dlv@latest`"
            }
        }
    }

    /// The `adapterID` sent in `initialize`.
    pub fn adapter_id(self) -> &'static str {
        match self {
            AdapterKind::Dart => "dart",
            AdapterKind::Debugpy => "debugpy",
            AdapterKind::Lldb => "lldb-dap",
            AdapterKind::Delve => "go",
        }
    }

    /// The `evaluate` context that gives expression values: lldb's `repl` is for LLDB commands,
    /// debugpy's `repl` also runs statements.
    pub fn evaluate_context(self) -> &'static str {
        match self {
            AdapterKind::Debugpy => "repl",
            _ => "watch",
        }
    }
}

/// Where programs and interpreters are looked up.
#[derive(Debug, Clone, Default)]
pub struct SearchEnv {
    /// The PATH folders, in order.
    pub path: Vec<PathBuf>,
    pub virtual_env: Option<PathBuf>,
    pub home: Option<PathBuf>,
    pub gopath: Option<PathBuf>,
}

impl SearchEnv {
    /// This process's PATH, VIRTUAL_ENV, HOME and GOPATH.
    pub fn from_process() -> Self {
        SearchEnv {
            path: std::env::var_os("PATH")
                .map(|p| std::env::split_paths(&p).collect())
                .unwrap_or_default(),
            virtual_env: std::env::var_os("VIRTUAL_ENV").map(PathBuf::from),
            home: std::env::var_os("HOME").map(PathBuf::from),
            gopath: std::env::var_os("GOPATH").map(PathBuf::from),
        }
    }

    /// The first executable called `name` on PATH.
    pub fn which(&self, name: &str) -> Option<PathBuf> {
        if name.contains('/') {
            let path = PathBuf::from(name);
            return is_executable(&path).then_some(path);
        }
        self.path.iter().map(|dir| dir.join(name)).find(|p| is_executable(p))
    }
}

pub(crate) fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Caches the output of version probes (`dlv version`, `python -c …`) per binary.
#[derive(Debug, Default)]
pub struct Probes {
    cache: Mutex<HashMap<String, Option<String>>>,
}

impl Probes {
    /// Runs `argv` (bounded to 10 s) and returns its stdout (or stderr when stdout is empty),
    /// or `None` if it failed. Blocking: async callers run it on the blocking pool.
    pub fn run(&self, argv: &[String]) -> Option<String> {
        let program = argv.first()?;
        let stamp = std::fs::metadata(program)
            .and_then(|m| m.modified())
            .map(|t| format!("{t:?}"))
            .unwrap_or_default();
        let key = format!("{}\u{0}{stamp}", argv.join("\u{0}"));
        if let Some(hit) = self.cache.lock().get(&key) {
            return hit.clone();
        }
        let result = run_bounded(argv, Duration::from_secs(10));
        self.cache.lock().insert(key, result.clone());
        result
    }
}

fn run_bounded(argv: &[String], within: Duration) -> Option<String> {
    let mut command = std::process::Command::new(&argv[0]);
    command
        .args(&argv[1..])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    // A short probe: it dies with the host; no watchdog needed.
    let agent_tools_support::process::SpawnedStd { mut child, group: _group } =
        agent_tools_support::process::SpawnOptions::new()
            .watchdog(false)
            .spawn_std(command)
            .ok()?;
    let deadline = std::time::Instant::now() + within;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if std::time::Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(5));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
    let out = child.wait_with_output().ok()?;
    if !out.status.success() {
        return None;
    }
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    if text.trim().is_empty() {
        text = String::from_utf8_lossy(&out.stderr).into_owned();
    }
    Some(text)
}

/// What `adapters` says about one adapter.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct AdapterReport {
    pub adapter: AdapterKind,
    /// Marker found and binary found (and, for delve, a Go it supports).
    pub usable: bool,
    /// The markers looked for in the root.
    pub markers: Vec<String>,
    /// The marker found, relative to the root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub marker: Option<String>,
    /// The command that would start the adapter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Facts that make it unusable, or worth knowing.
    pub problems: Vec<String>,
    pub notes: Vec<String>,
    /// How to install what is missing.
    pub install: String,
}

/// A resolved way to start an adapter.
#[derive(Debug, Clone)]
pub struct AdapterCommand {
    pub kind: AdapterKind,
    pub argv: Vec<String>,
    pub version: Option<String>,
    /// debugpy: the interpreter that runs the program (the project's).
    pub debuggee_python: Option<PathBuf>,
    pub notes: Vec<String>,
}

/// The first marker of `kind` in `dir` or its parents up to `root`.
pub fn find_marker(kind: AdapterKind, dir: &Path, root: &Path) -> Option<PathBuf> {
    let mut current = Some(dir);
    while let Some(d) = current {
        for marker in kind.markers() {
            let candidate = d.join(marker);
            if candidate.is_file() {
                return Some(candidate);
            }
        }
        if d == root || !d.starts_with(root) {
            break;
        }
        current = d.parent();
    }
    None
}

/// The folder holding `go.mod` for `program` (a folder or a file), searching up to `root`.
pub fn go_module_dir(program: &Path, root: &Path) -> Option<PathBuf> {
    let start = if program.is_dir() { program } else { program.parent()? };
    find_marker(AdapterKind::Delve, start, root).and_then(|m| m.parent().map(Path::to_path_buf))
}

/// Picks the adapter for `program` from its type, then from the root's markers.
pub fn adapter_for_program(program: &Path, root: &Path) -> Option<AdapterKind> {
    let ext = program.extension().and_then(|e| e.to_str()).unwrap_or_default();
    match ext {
        "py" | "pyw" => return Some(AdapterKind::Debugpy),
        "go" => return Some(AdapterKind::Delve),
        "dart" => return Some(AdapterKind::Dart),
        _ => {}
    }
    if program.is_dir() {
        if program.join("go.mod").is_file() || has_extension_inside(program, "go") {
            return Some(AdapterKind::Delve);
        }
        if program.join("pubspec.yaml").is_file() {
            return Some(AdapterKind::Dart);
        }
        if program.join("__main__.py").is_file() {
            return Some(AdapterKind::Debugpy);
        }
        return None;
    }
    if is_elf(program) {
        let go = find_marker(AdapterKind::Delve, program.parent().unwrap_or(root), root).is_some();
        let native =
            find_marker(AdapterKind::Lldb, program.parent().unwrap_or(root), root).is_some();
        return Some(if go && !native { AdapterKind::Delve } else { AdapterKind::Lldb });
    }
    if is_python_script(program) {
        return Some(AdapterKind::Debugpy);
    }
    None
}

fn has_extension_inside(dir: &Path, ext: &str) -> bool {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| e.path().extension().is_some_and(|x| x == ext))
}

/// Whether `path` starts with the ELF magic.
pub fn is_elf(path: &Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 4];
    std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut magic)).is_ok()
        && magic == *b"\x7fELF"
}

fn is_python_script(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 64];
    let Ok(mut file) = std::fs::File::open(path) else { return false };
    let n = file.read(&mut head).unwrap_or(0);
    let head = String::from_utf8_lossy(&head[..n]);
    head.starts_with("#!") && head.lines().next().is_some_and(|l| l.contains("python"))
}

/// The Python interpreters to consider, in order: the project's `.venv`, `venv`, `$VIRTUAL_ENV`,
/// then `python3` and `python` on PATH.
pub fn python_candidates(root: &Path, env: &SearchEnv) -> Vec<PathBuf> {
    let mut out = vec![root.join(".venv/bin/python"), root.join("venv/bin/python")];
    if let Some(venv) = &env.virtual_env {
        out.push(venv.join("bin/python"));
    }
    out.extend(env.which("python3"));
    out.extend(env.which("python"));
    let mut seen = Vec::new();
    out.retain(|p| {
        let keep = is_executable(p) && !seen.contains(p);
        seen.push(p.clone());
        keep
    });
    out
}

const PY_PROBE: &str = "import sys\ntry:\n    import debugpy\n    v = debugpy.__version__\nexcept Exception:\n    v = '-'\nprint(sys.version.split()[0], v)";

/// `(python version, debugpy version)` of `python`.
pub fn probe_python(probes: &Probes, python: &Path) -> Option<(String, Option<String>)> {
    let out = probes.run(&[python.display().to_string(), "-c".into(), PY_PROBE.into()])?;
    let mut words = out.split_whitespace();
    let version = words.next()?.to_string();
    let debugpy = words.next().filter(|v| *v != "-").map(str::to_string);
    Some((version, debugpy))
}

/// lldb-dap candidates, in order: `lldb-dap`, `lldb-dap-NN` (newest first), the LLVM `bin`
/// folders, then the older name `lldb-vscode` in the same places.
pub fn lldb_candidates(env: &SearchEnv) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for base in ["lldb-dap", "lldb-vscode"] {
        out.extend(env.which(base));
        for version in (10..=30).rev() {
            out.extend(env.which(&format!("{base}-{version}")));
        }
        for version in (10..=30).rev() {
            let p = PathBuf::from(format!("/usr/lib/llvm-{version}/bin/{base}"));
            if is_executable(&p) {
                out.push(p);
            }
        }
        for dir in ["/usr/local/opt/llvm/bin", "/opt/homebrew/opt/llvm/bin"] {
            let p = Path::new(dir).join(base);
            if is_executable(&p) {
                out.push(p);
            }
        }
    }
    out
}

/// The LLVM version of an lldb-dap binary: from its name, its folder, or its sibling `lldb`.
pub fn lldb_version(probes: &Probes, binary: &Path) -> Option<String> {
    let real = std::fs::canonicalize(binary).unwrap_or_else(|_| binary.to_path_buf());
    if let Some(dir) = real.parent() {
        let lldb = dir.join("lldb");
        if is_executable(&lldb)
            && let Some(out) = probes.run(&[lldb.display().to_string(), "--version".into()])
            && let Some(line) = out.lines().next()
        {
            return Some(line.trim().to_string());
        }
    }
    for text in [binary.display().to_string(), real.display().to_string()] {
        if let Some(n) = text
            .rsplit(['-', '/'])
            .find_map(|part| part.parse::<u32>().ok().filter(|n| (10..=40).contains(n)))
        {
            return Some(format!("LLVM {n}"));
        }
    }
    None
}

/// dlv candidates: PATH, `$GOPATH/bin`, `~/go/bin`.
pub fn delve_candidates(env: &SearchEnv) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = env.which("dlv").into_iter().collect();
    if let Some(gopath) = &env.gopath {
        out.push(gopath.join("bin/dlv"));
    }
    if let Some(home) = &env.home {
        out.push(home.join("go/bin/dlv"));
    }
    out.retain(|p| is_executable(p));
    out
}

fn go_binary(env: &SearchEnv) -> Option<PathBuf> {
    env.which("go").or_else(|| {
        ["/usr/lib/go/bin/go", "/usr/local/go/bin/go"]
            .into_iter()
            .map(PathBuf::from)
            .find(|p| is_executable(p))
    })
}

/// `1.20.2` from `dlv version` output.
fn parse_delve_version(text: &str) -> Option<String> {
    text.lines().find_map(|l| l.trim().strip_prefix("Version:")).map(|v| v.trim().to_string())
}

/// `1.19.8` from `go version go1.19.8 linux/amd64`.
fn parse_go_version(text: &str) -> Option<String> {
    text.split_whitespace()
        .filter_map(|w| w.strip_prefix("go"))
        .find(|v| v.starts_with('1'))
        .map(str::to_string)
}

fn minor(version: &str) -> Option<u32> {
    version
        .split('.')
        .nth(1)
        .and_then(|m| m.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok())
}

/// Whether delve `delve` supports Go `go`: delve 1.N supports Go 1.(N-2) to 1.N.
pub fn delve_go_fit(delve: &str, go: &str) -> Result<(), String> {
    let (Some(d), Some(g)) = (minor(delve), minor(go)) else { return Ok(()) };
    if d < 20 {
        return Ok(());
    }
    let (low, high) = (d - 2, d);
    if g < low || g > high {
        return Err(format!(
            "delve {delve} supports Go 1.{low} to 1.{high}, but the Go here is go{go}: {}",
            if g > high {
                "install a newer delve (`go install github.com/go-delve/delve/cmd/dlv@latest`)"
            } else {
                "install a newer Go or an older delve"
            }
        ));
    }
    Ok(())
}

/// Resolves how to start `kind` for `root`, or says why it cannot be started.
pub fn resolve(
    kind: AdapterKind,
    root: &Path,
    config: &DebugConfig,
    env: &SearchEnv,
    probes: &Probes,
) -> Result<AdapterCommand, DebugError> {
    resolve_with(kind, root, config, env, probes, true)
}

/// `resolve`, optionally without the version probes that only a report needs (`lldb --version`
/// loads all of LLDB: ~300 ms that a launch should not pay; lldb-dap says its version itself).
pub fn resolve_with(
    kind: AdapterKind,
    root: &Path,
    config: &DebugConfig,
    env: &SearchEnv,
    probes: &Probes,
    versions: bool,
) -> Result<AdapterCommand, DebugError> {
    let configured = match kind {
        AdapterKind::Dart => &config.commands.dart,
        AdapterKind::Debugpy => &config.commands.debugpy,
        AdapterKind::Lldb => &config.commands.lldb,
        AdapterKind::Delve => &config.commands.delve,
    };
    if configured.as_ref().is_some_and(|argv| argv.is_empty() || argv[0].is_empty()) {
        return Err(DebugError::Unavailable {
            resource: format!("debug adapter {}", kind.id()),
            reason: format!("[debug.commands] {} is empty", kind.id()),
            fix: "give the full command line, or remove the entry to use the built-in lookup"
                .into(),
        });
    }
    let unavailable = |reason: String| DebugError::Unavailable {
        resource: format!("debug adapter {}", kind.id()),
        reason,
        fix: kind.install_hint().to_string(),
    };
    match kind {
        AdapterKind::Debugpy => {
            let candidates = python_candidates(root, env);
            let project = candidates.first().cloned();
            let mut notes = Vec::new();
            let mut project_version = None;
            if let Some(p) = &project
                && let Some((version, _)) = probe_python(probes, p)
            {
                if minor(&version).is_some_and(|m| m < 8) && version.starts_with("3.") {
                    notes.push(format!(
                        "the program's Python {} is {version}; debugpy needs 3.8 or newer",
                        p.display()
                    ));
                }
                project_version = Some(version);
            }
            if let Some(argv) = &config.commands.debugpy {
                return Ok(AdapterCommand {
                    kind,
                    argv: argv.clone(),
                    version: None,
                    debuggee_python: project,
                    notes,
                });
            }
            let mut tried = Vec::new();
            for python in &candidates {
                match probe_python(probes, python) {
                    Some((version, Some(debugpy))) => {
                        if Some(python) != project.as_ref()
                            && let Some(p) = &project
                        {
                            notes.push(format!(
                                "the project's Python {} has no debugpy; the adapter runs on {} \
                                 (Python {version}, debugpy {debugpy}) and starts the program \
                                 with the project's Python {}",
                                p.display(),
                                python.display(),
                                project_version.as_deref().unwrap_or("?")
                            ));
                        }
                        return Ok(AdapterCommand {
                            kind,
                            argv: vec![
                                python.display().to_string(),
                                "-m".into(),
                                "debugpy.adapter".into(),
                            ],
                            version: Some(format!("debugpy {debugpy} on Python {version}")),
                            debuggee_python: project.clone().or(Some(python.clone())),
                            notes,
                        });
                    }
                    Some((version, None)) => {
                        tried.push(format!("{} (Python {version}, no debugpy)", python.display()))
                    }
                    None => tried.push(format!("{} (does not run)", python.display())),
                }
            }
            Err(unavailable(if tried.is_empty() {
                "no Python found: looked for .venv/bin/python, venv/bin/python, $VIRTUAL_ENV and \
                 python3 on PATH"
                    .to_string()
            } else {
                format!("no Python with debugpy: tried {}", tried.join(", "))
            }))
        }
        AdapterKind::Lldb => {
            let argv = match &config.commands.lldb {
                Some(argv) => argv.clone(),
                None => match lldb_candidates(env).first() {
                    Some(p) => vec![p.display().to_string()],
                    None => {
                        return Err(unavailable(
                            "no lldb-dap found: looked for lldb-dap, lldb-dap-NN, \
                             /usr/lib/llvm-NN/bin/lldb-dap and lldb-vscode[-NN]"
                                .to_string(),
                        ));
                    }
                },
            };
            let version = if versions { lldb_version(probes, Path::new(&argv[0])) } else { None };
            Ok(AdapterCommand { kind, argv, version, debuggee_python: None, notes: Vec::new() })
        }
        AdapterKind::Delve => {
            let dlv = match &config.commands.delve {
                Some(argv) => argv.clone(),
                None => match delve_candidates(env).first() {
                    Some(p) => vec![p.display().to_string()],
                    None => {
                        return Err(unavailable(
                            "no dlv found: looked on PATH, in $GOPATH/bin and ~/go/bin".into(),
                        ));
                    }
                },
            };
            let version = probes
                .run(&[dlv[0].clone(), "version".into()])
                .and_then(|t| parse_delve_version(&t));
            let mut notes = Vec::new();
            match go_binary(env) {
                None => notes.push("no `go` found on PATH: delve cannot build Go programs".into()),
                Some(go) => {
                    let go_version = probes
                        .run(&[go.display().to_string(), "version".into()])
                        .and_then(|t| parse_go_version(&t));
                    if let (Some(d), Some(g)) = (&version, &go_version)
                        && let Err(problem) = delve_go_fit(d, g)
                    {
                        return Err(DebugError::Unavailable {
                            resource: "debug adapter delve".into(),
                            reason: problem,
                            fix: kind.install_hint().to_string(),
                        });
                    }
                    if let Some(g) = go_version {
                        notes.push(format!("builds with go{g}"));
                    }
                }
            }
            Ok(AdapterCommand {
                kind,
                argv: dlv,
                version: version.map(|v| format!("delve {v}")),
                debuggee_python: None,
                notes,
            })
        }
        AdapterKind::Dart => {
            let argv = match &config.commands.dart {
                Some(argv) => argv.clone(),
                None => match env.which("dart") {
                    Some(p) => vec![p.display().to_string(), "debug_adapter".into()],
                    None => return Err(unavailable("no `dart` on PATH".into())),
                },
            };
            let version = probes
                .run(&[argv[0].clone(), "--version".into()])
                .and_then(|t| t.lines().next().map(|l| l.trim().to_string()));
            Ok(AdapterCommand { kind, argv, version, debuggee_python: None, notes: Vec::new() })
        }
    }
}

/// The `adapters` report for `root`.
pub fn report(
    kind: AdapterKind,
    root: &Path,
    config: &DebugConfig,
    env: &SearchEnv,
    probes: &Probes,
) -> AdapterReport {
    let marker = find_marker(kind, root, root)
        .map(|m| m.strip_prefix(root).unwrap_or(&m).display().to_string());
    let mut problems = Vec::new();
    let mut notes = Vec::new();
    if marker.is_none() {
        problems.push(format!("no marker in the root (looked for {})", kind.markers().join(", ")));
    }
    let (command, version) = match resolve(kind, root, config, env, probes) {
        Ok(cmd) => {
            notes.extend(cmd.notes.clone());
            if let Some(python) = &cmd.debuggee_python {
                notes.push(format!("programs run with {}", python.display()));
            }
            (Some(cmd.argv.clone()), cmd.version.clone())
        }
        Err(DebugError::Unavailable { reason, .. }) => {
            problems.push(reason);
            (None, None)
        }
        Err(other) => {
            problems.push(other.to_string());
            (None, None)
        }
    };
    if kind == AdapterKind::Dart && command.is_some() && config.commands.dart.is_some() {
        notes.push("command from [debug.commands] dart".into());
    }
    AdapterReport {
        adapter: kind,
        usable: marker.is_some() && command.is_some(),
        markers: kind.markers().iter().map(|m| m.to_string()).collect(),
        marker,
        command,
        version,
        problems,
        notes,
        install: kind.install_hint().to_string(),
    }
}

/// What a launch needs, whatever the adapter.
#[derive(Debug, Clone, Default)]
pub struct LaunchSpec {
    /// The script, package folder or executable (for a Python module: the working folder).
    pub program: PathBuf,
    /// debugpy: run this module (`python -m`) instead of `program`.
    pub module: Option<String>,
    pub args: Vec<String>,
    pub cwd: PathBuf,
    pub env: BTreeMap<String, String>,
    pub stop_on_entry: bool,
    pub debuggee_python: Option<PathBuf>,
    /// delve: where the built binary goes (our temp folder).
    pub build_output: Option<PathBuf>,
    /// lldb: commands that load the Rust formatters.
    pub init_commands: Vec<String>,
    /// debugpy: skip library code (`justMyCode`).
    pub just_my_code: bool,
    /// delve: build and run the package's tests (`mode: test`).
    pub go_test: bool,
    /// Where the program's stdin comes from.
    pub stdin: StdinSource,
}

/// A debuggee's stdin.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum StdinSource {
    /// End of file at once (lldb: `/dev/null`; debugpy and delve: their own stdin, closed).
    #[default]
    Closed,
    /// debugpy: the program runs in a "terminal" we start (`runInTerminal`), its stdin a pipe.
    Terminal,
    /// lldb: a FIFO we hold open for writing.
    Fifo(PathBuf),
    /// delve: the adapter's own stdin is a pipe the program inherits.
    Inherited,
}

/// The `launch` request's arguments for `kind`.
pub fn launch_arguments(kind: AdapterKind, spec: &LaunchSpec) -> Value {
    let program = spec.program.display().to_string();
    let cwd = spec.cwd.display().to_string();
    match kind {
        AdapterKind::Debugpy => {
            let mut env = spec.env.clone();
            env.entry("PYDEVD_DISABLE_FILE_VALIDATION".into()).or_insert_with(|| "1".into());
            env.entry("PYTHONUNBUFFERED".into()).or_insert_with(|| "1".into());
            let terminal = spec.stdin == StdinSource::Terminal;
            let mut args = json!({
                "type": "python",
                "request": "launch",
                "name": "agent-tools",
                "args": spec.args,
                "cwd": cwd,
                "env": env,
                // A "terminal" is a child we start with a stdin pipe; its output is our pipes.
                "console": if terminal { "integratedTerminal" } else { "internalConsole" },
                "justMyCode": spec.just_my_code,
                // Child processes would arrive as startDebugging requests we do not follow.
                "subProcess": false,
                "stopOnEntry": spec.stop_on_entry,
                "redirectOutput": !terminal,
                "showReturnValue": true,
            });
            match &spec.module {
                Some(module) => args["module"] = json!(module),
                None => args["program"] = json!(program),
            }
            if let Some(python) = &spec.debuggee_python {
                args["python"] = json!([python.display().to_string()]);
            }
            args
        }
        AdapterKind::Lldb => {
            // lldb-dap ignores `env` as an object: it takes a list of K=V.
            let env: Vec<String> = spec.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let input = match &spec.stdin {
                StdinSource::Fifo(path) => path.display().to_string(),
                _ => "/dev/null".into(),
            };
            json!({
                "name": "agent-tools",
                "program": program,
                "args": spec.args,
                "cwd": cwd,
                "env": env,
                "stopOnEntry": spec.stop_on_entry,
                "initCommands": spec.init_commands,
                // Programs that read stdin would otherwise block forever.
                "preRunCommands": [format!("settings set target.input-path {input}")],
            })
        }
        AdapterKind::Delve => {
            let mode = if spec.go_test {
                "test"
            } else if is_elf(&spec.program) {
                "exec"
            } else {
                "debug"
            };
            let mut args = json!({
                "name": "agent-tools",
                "mode": mode,
                "program": program,
                "args": spec.args,
                "cwd": cwd,
                "env": spec.env,
                // stopOnEntry leaves delve on a thread without frames (vscode-go#1818).
                "stopOnEntry": false,
                "hideSystemGoroutines": true,
            });
            if let Some(output) = &spec.build_output {
                args["output"] = json!(output.display().to_string());
            }
            args
        }
        AdapterKind::Dart => json!({
            "name": "agent-tools",
            "program": program,
            "args": spec.args,
            "cwd": cwd,
            "env": spec.env,
            "stopOnEntry": spec.stop_on_entry,
            "debugSdkLibraries": false,
            "debugExternalPackageLibraries": false,
        }),
    }
}

/// The `attach` request's arguments for `kind` attaching to a debug server on `port`, or (with
/// `pid`) to a running process.
pub fn attach_arguments(
    kind: AdapterKind,
    port: Option<u16>,
    pid: Option<u32>,
    program: Option<&Path>,
    cwd: &Path,
) -> Value {
    let mut args = match kind {
        AdapterKind::Debugpy => json!({
            "type": "python",
            "request": "attach",
            "name": "agent-tools",
            "justMyCode": true,
            "subProcess": false,
            "showReturnValue": true,
        }),
        AdapterKind::Lldb => {
            let mut args = json!({"name": "agent-tools"});
            if let Some(port) = port {
                args["attachCommands"] = json!([format!("gdb-remote 127.0.0.1:{port}")]);
            }
            if let Some(program) = program {
                args["program"] = json!(program.display().to_string());
            }
            args
        }
        AdapterKind::Delve => json!({
            "name": "agent-tools",
            "request": "attach",
            "mode": if pid.is_some() { "local" } else { "remote" },
            "cwd": cwd.display().to_string(),
            "hideSystemGoroutines": true,
        }),
        AdapterKind::Dart => json!({
            "name": "agent-tools",
            "vmServiceUri": format!("ws://127.0.0.1:{}/ws", port.unwrap_or(0)),
            "cwd": cwd.display().to_string(),
        }),
    };
    if let Some(pid) = pid {
        match kind {
            AdapterKind::Lldb => args["pid"] = json!(pid),
            _ => args["processId"] = json!(pid),
        }
    }
    args
}

/// Whether attaching to `port` means talking DAP to the port itself (no adapter process).
pub fn attach_is_direct(kind: AdapterKind) -> bool {
    matches!(kind, AdapterKind::Debugpy | AdapterKind::Delve)
}

/// The exception filters to send for `mode`, restricted to what the adapter offers.
pub fn exception_filters(
    kind: AdapterKind,
    mode: ExceptionMode,
    capabilities: &Value,
) -> Vec<String> {
    let wanted: &[&str] = match (kind, mode) {
        (_, ExceptionMode::None) => &[],
        (AdapterKind::Debugpy, ExceptionMode::Uncaught) => &["uncaught"],
        (AdapterKind::Debugpy, ExceptionMode::All) => &["raised", "uncaught"],
        (AdapterKind::Dart, ExceptionMode::Uncaught) => &["Unhandled"],
        (AdapterKind::Dart, ExceptionMode::All) => &["All"],
        // Crashes (signals) stop lldb without a filter; C++ throws only when asked.
        (AdapterKind::Lldb, ExceptionMode::Uncaught) => &[],
        (AdapterKind::Lldb, ExceptionMode::All) => &["cpp_throw", "objc_throw"],
        // delve stops on panics by itself and offers no filters.
        (AdapterKind::Delve, _) => &[],
    };
    let offered: Vec<&str> = capabilities["exceptionBreakpointFilters"]
        .as_array()
        .map(|filters| filters.iter().filter_map(|f| f["filter"].as_str()).collect())
        .unwrap_or_default();
    wanted.iter().filter(|w| offered.contains(w)).map(|w| w.to_string()).collect()
}

/// Whether the adapter offers the exception filter `filter`.
pub fn offers_filter(capabilities: &Value, filter: &str) -> bool {
    capabilities["exceptionBreakpointFilters"]
        .as_array()
        .is_some_and(|filters| filters.iter().any(|f| f["filter"] == filter))
}

/// lldb `initCommands` that load rustc's pretty-printers, when a Rust toolchain is here.
pub fn rust_formatter_commands(probes: &Probes, env: &SearchEnv) -> Vec<String> {
    let Some(rustc) = env.which("rustc") else { return Vec::new() };
    let Some(sysroot) =
        probes.run(&[rustc.display().to_string(), "--print".into(), "sysroot".into()])
    else {
        return Vec::new();
    };
    let etc = PathBuf::from(sysroot.trim()).join("lib/rustlib/etc");
    let lookup = etc.join("lldb_lookup.py");
    let commands = etc.join("lldb_commands");
    if !lookup.is_file() || !commands.is_file() {
        return Vec::new();
    }
    vec![
        format!("command script import \"{}\"", lookup.display()),
        format!("command source -s 1 \"{}\"", commands.display()),
    ]
}

/// Whether `program` in `root` is a Rust program (so lldb should load the Rust formatters).
pub fn looks_like_rust(program: &Path, root: &Path) -> bool {
    program.components().any(|c| c.as_os_str() == "target")
        && find_marker(AdapterKind::Lldb, program.parent().unwrap_or(root), root)
            .is_some_and(|m| m.ends_with("Cargo.toml"))
        || root.join("Cargo.toml").is_file()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delve_and_go_versions_are_checked_as_a_pair() {
        assert!(delve_go_fit("1.20.2", "1.19.8").is_ok());
        assert!(delve_go_fit("1.20.2", "1.18").is_ok());
        let err = delve_go_fit("1.20.2", "1.22.1").unwrap_err();
        assert!(
            err.contains("delve 1.20.2 supports Go 1.18 to 1.20, but the Go here is go1.22.1"),
            "{err}"
        );
        assert_eq!(parse_go_version("go version go1.19.8 linux/amd64").as_deref(), Some("1.19.8"));
        assert_eq!(
            parse_delve_version("Delve Debugger\nVersion: 1.20.2\nBuild: x").as_deref(),
            Some("1.20.2")
        );
    }

    #[test]
    fn lldb_takes_env_as_a_list_and_reads_stdin_from_dev_null() {
        let spec = LaunchSpec {
            program: "/p/a.out".into(),
            args: vec![],
            cwd: "/p".into(),
            env: [("FOO".to_string(), "bar".to_string())].into(),
            ..Default::default()
        };
        let args = launch_arguments(AdapterKind::Lldb, &spec);
        assert_eq!(args["env"], json!(["FOO=bar"]));
        assert_eq!(args["preRunCommands"], json!(["settings set target.input-path /dev/null"]));
        let py = launch_arguments(
            AdapterKind::Debugpy,
            &LaunchSpec { debuggee_python: Some("/p/.venv/bin/python".into()), ..spec.clone() },
        );
        assert_eq!(py["python"], json!(["/p/.venv/bin/python"]));
        assert_eq!(py["subProcess"], json!(false));
        let go = launch_arguments(AdapterKind::Delve, &LaunchSpec { stop_on_entry: true, ..spec });
        assert_eq!(go["stopOnEntry"], json!(false));
    }

    #[test]
    fn exception_filters_are_limited_to_what_the_adapter_offers() {
        let caps =
            json!({"exceptionBreakpointFilters": [{"filter": "raised"}, {"filter": "uncaught"}]});
        assert_eq!(
            exception_filters(AdapterKind::Debugpy, ExceptionMode::Uncaught, &caps),
            ["uncaught"]
        );
        assert!(exception_filters(AdapterKind::Debugpy, ExceptionMode::None, &caps).is_empty());
        assert!(exception_filters(AdapterKind::Dart, ExceptionMode::Uncaught, &caps).is_empty());
    }

    #[test]
    fn lldb_candidates_include_versioned_names_newest_first() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["lldb-dap-16", "lldb-dap-19", "lldb-vscode-14"] {
            let p = dir.path().join(name);
            std::fs::write(&p, "#!/bin/sh\n").unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let env = SearchEnv { path: vec![dir.path().to_path_buf()], ..Default::default() };
        let found: Vec<String> = lldb_candidates(&env)
            .iter()
            .filter(|p| p.starts_with(dir.path()))
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(found, ["lldb-dap-19", "lldb-dap-16", "lldb-vscode-14"]);
    }
}
