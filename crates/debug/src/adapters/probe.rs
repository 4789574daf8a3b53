//! Where adapters are looked for and what they are: the search environment, binary candidates
//! (versioned lldb-dap names, Pythons with debugpy, delve), bounded and cached version probes,
//! and whether a delve supports the Go here.

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
    time::Duration,
};

use parking_lot::Mutex;

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

pub(super) fn go_binary(env: &SearchEnv) -> Option<PathBuf> {
    env.which("go").or_else(|| {
        ["/usr/lib/go/bin/go", "/usr/local/go/bin/go"]
            .into_iter()
            .map(PathBuf::from)
            .find(|p| is_executable(p))
    })
}

/// `1.20.2` from `dlv version` output.
pub(super) fn parse_delve_version(text: &str) -> Option<String> {
    text.lines().find_map(|l| l.trim().strip_prefix("Version:")).map(|v| v.trim().to_string())
}

/// `1.19.8` from `go version go1.19.8 linux/amd64`.
pub(super) fn parse_go_version(text: &str) -> Option<String> {
    text.split_whitespace()
        .filter_map(|w| w.strip_prefix("go"))
        .find(|v| v.starts_with('1'))
        .map(str::to_string)
}

pub(super) fn minor(version: &str) -> Option<u32> {
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

#[cfg(test)]
#[allow(clippy::disallowed_methods, reason = "tests write their fixtures by path")]
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
