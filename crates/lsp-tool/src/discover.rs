//! Finding roots and binaries: the two halves of the intersection rule.
//!
//! A server starts for a file only when an ancestor of the file (inside the run's root) holds
//! one of its root markers and one of its candidate commands resolves to a program.

use std::{
    collections::BTreeMap,
    os::unix::fs::PermissionsExt,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use agent_tools_support::process::{SpawnOptions, SpawnedStd};
use serde::Serialize;

use crate::config::ServerDef;

/// Where a file's project root is, and which marker made it one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RootMatch {
    pub root: PathBuf,
    pub marker: String,
}

/// The nearest (or, for `topmost_root` servers, the topmost) ancestor of `file` inside
/// `run_root` that holds a marker of `def`; a marker inside a folder that a covering marker
/// of an enclosing folder already covers is no root of its own (the topmost covering folder
/// wins).
pub fn find_root(def: &ServerDef, run_root: &Path, file: &Path) -> Option<RootMatch> {
    let start = if file.is_dir() { file } else { file.parent()? };
    let mut found = None;
    let mut covering = None;
    for dir in start.ancestors() {
        if !dir.starts_with(run_root) {
            break;
        }
        if (found.is_none() || def.topmost_root)
            && let Some(marker) = def.root_markers.iter().find(|m| dir.join(m.as_str()).exists())
        {
            found = Some(RootMatch { root: dir.to_path_buf(), marker: marker.clone() });
        }
        if found.is_some()
            && let Some(marker) =
                def.covering_markers.iter().find(|m| dir.join(m.as_str()).exists())
        {
            covering = Some(RootMatch { root: dir.to_path_buf(), marker: marker.clone() });
        }
    }
    match (found, covering) {
        (Some(found), Some(covering))
            if covering.root.components().count() < found.root.components().count() =>
        {
            Some(covering)
        }
        (found, _) => found,
    }
}

/// The roots of `roots` that no other root of the list covers for `def`: one per real
/// project, however many nested folders hold a marker.
pub fn outermost_roots(def: &ServerDef, run_root: &Path, roots: &[RootMatch]) -> Vec<RootMatch> {
    let mut out: Vec<RootMatch> = Vec::new();
    for root in roots {
        let Some(effective) = find_root(def, run_root, &root.root.join("_")) else { continue };
        if !out.iter().any(|r| r.root == effective.root) {
            out.push(effective);
        }
    }
    out.sort_by(|a, b| a.root.cmp(&b.root));
    out
}

/// A resolved server command: the program's path and the full command line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ResolvedCommand {
    pub program: PathBuf,
    pub args: Vec<String>,
    /// Environment variables set for the process (by the trust rule).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<(String, String)>,
}

fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The project-local folders searched for programs when project code may run.
pub const PROJECT_BIN_DIRS: &[&str] = &[".venv/bin", "venv/bin", "node_modules/.bin"];

/// The directories searched for a program, in order: configured extra paths, `PATH`, then,
/// only when `allow_project_code`, the project's `.venv/bin`, `venv/bin` and
/// `node_modules/.bin` (of the project root, then the run's root). Without it, no folder
/// inside the run's root is searched at all, whatever `PATH` says.
pub fn search_dirs(
    extra: &[PathBuf],
    project_root: &Path,
    run_root: &Path,
    allow_project_code: bool,
) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = extra.to_vec();
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    if !allow_project_code {
        dirs.retain(|d| d.is_absolute() && !d.starts_with(run_root));
        return dirs;
    }
    for base in [project_root, run_root] {
        for local in PROJECT_BIN_DIRS {
            let dir = base.join(local);
            if !dirs.contains(&dir) {
                dirs.push(dir);
            }
        }
    }
    dirs
}

/// Resolves one program name in `dirs` (a name with a slash is taken as a path; a relative
/// one, inside the project, only when `allow_project_code`).
pub fn resolve_program(
    name: &str,
    dirs: &[PathBuf],
    project_root: &Path,
    allow_project_code: bool,
) -> Option<PathBuf> {
    if name.contains('/') {
        let path = if Path::new(name).is_absolute() {
            PathBuf::from(name)
        } else if allow_project_code {
            project_root.join(name)
        } else {
            return None;
        };
        return is_executable(&path).then_some(path);
    }
    dirs.iter().map(|d| d.join(name)).find(|p| is_executable(p))
}

/// The first candidate command of `def` whose program resolves.
pub fn resolve_command(
    def: &ServerDef,
    extra: &[PathBuf],
    project_root: &Path,
    run_root: &Path,
    allow_project_code: bool,
) -> Option<ResolvedCommand> {
    let dirs = search_dirs(extra, project_root, run_root, allow_project_code);
    def.commands.iter().find_map(|command| {
        let (name, args) = command.split_first()?;
        let program = resolve_program(name, &dirs, project_root, allow_project_code)?;
        Some(ResolvedCommand { program, args: args.to_vec(), env: Vec::new() })
    })
}

/// Runs `program args` with a short bound: `Ok` with the first line it printed, or `Err` with
/// it when the program fails (a rustup proxy without the component, for example).
pub fn probe_version(program: &Path, args: &[String]) -> Result<Option<String>, String> {
    match probe(program, args) {
        None => Ok(None),
        Some((true, line)) => Ok(Some(line)),
        Some((false, line)) => Err(line),
    }
}

fn probe(program: &Path, args: &[String]) -> Option<(bool, String)> {
    let mut command = Command::new(program);
    // Outside any project, with toolchains pinned: a rustup proxy would otherwise run the
    // binary a rust-toolchain.toml of the host's working folder names.
    command
        .args(args)
        .current_dir("/")
        .envs(crate::toolchain::toolchain_pins())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // A short probe: its own group and death with the host, no watchdog per spawn.
    let SpawnedStd { mut child, group } =
        SpawnOptions::new().watchdog(false).spawn_std(command).ok()?;
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            _ => {
                group.terminate_blocking(Duration::from_millis(200));
                let _ = child.wait();
                return None;
            }
        }
    }
    let output = child.wait_with_output().ok()?;
    let text = String::from_utf8_lossy(&output.stdout).to_string()
        + &String::from_utf8_lossy(&output.stderr);
    let line: String = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(|l| l.chars().take(160).collect())?;
    Some((output.status.success(), line))
}

/// What a bounded walk of the run's root found for one server definition.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Presence {
    /// Number of source files with the server's extensions (up to the walk's bound).
    pub files: usize,
    /// One example source file.
    pub example: Option<PathBuf>,
    /// Directories that hold a marker, with the marker.
    pub roots: Vec<RootMatch>,
}

pub(crate) const SKIP_DIRS: &[&str] = &[
    ".git",
    "node_modules",
    "target",
    ".venv",
    "venv",
    "__pycache__",
    ".mypy_cache",
    ".dart_tool",
    "build",
    "dist",
    ".cache",
];

/// Walks `run_root` (depth ≤ 4, ≤ 5000 entries) and reports, per server id, which source
/// files and markers are present.
pub fn scan(run_root: &Path, defs: &[ServerDef]) -> BTreeMap<String, Presence> {
    let mut out: BTreeMap<String, Presence> =
        defs.iter().map(|d| (d.id.clone(), Presence::default())).collect();
    let mut budget = 5000usize;
    let mut queue = vec![(run_root.to_path_buf(), 0usize)];
    while let Some((dir, depth)) = queue.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        let mut names: Vec<_> = entries.flatten().collect();
        names.sort_by_key(|e| e.file_name());
        for entry in names {
            if budget == 0 {
                return out;
            }
            budget -= 1;
            let name = entry.file_name().to_string_lossy().to_string();
            let path = entry.path();
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            for def in defs {
                let presence = out.entry(def.id.clone()).or_default();
                if def.root_markers.contains(&name) && !presence.roots.iter().any(|r| r.root == dir)
                {
                    presence.roots.push(RootMatch { root: dir.clone(), marker: name.clone() });
                }
                if !is_dir
                    && let Some(ext) = path.extension().and_then(|e| e.to_str())
                    && def.language_of(ext).is_some()
                {
                    presence.files += 1;
                    presence.example.get_or_insert_with(|| path.clone());
                }
            }
            if is_dir && depth < 4 && !SKIP_DIRS.contains(&name.as_str()) && !name.starts_with('.')
            {
                queue.push((path, depth + 1));
            }
        }
    }
    for presence in out.values_mut() {
        presence.roots.sort_by(|a, b| a.root.cmp(&b.root));
    }
    out
}

#[cfg(test)]
#[allow(clippy::disallowed_methods, reason = "tests write their fixtures by path")]
mod tests {
    use super::*;
    use crate::config::builtin_servers;

    fn python() -> ServerDef {
        builtin_servers().into_iter().find(|d| d.id == "python").unwrap()
    }

    #[test]
    fn the_nearest_marker_inside_the_run_root_wins() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("pkg/sub")).unwrap();
        std::fs::write(root.join("requirements.txt"), "").unwrap();
        std::fs::write(root.join("pkg/setup.py"), "").unwrap();
        std::fs::write(root.join("pkg/sub/a.py"), "").unwrap();
        let found = find_root(&python(), &root, &root.join("pkg/sub/a.py")).unwrap();
        assert_eq!(found, RootMatch { root: root.join("pkg"), marker: "setup.py".into() });
        // A marker above the run's root does not count.
        let inner = root.join("pkg/sub");
        assert_eq!(find_root(&python(), &inner, &inner.join("a.py")), None);
    }

    #[test]
    fn a_marker_under_a_covering_config_is_no_root_of_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("examples/demo")).unwrap();
        std::fs::write(root.join("pyproject.toml"), "").unwrap();
        std::fs::write(root.join("examples/demo/pyproject.toml"), "").unwrap();
        let found = find_root(&python(), &root, &root.join("examples/demo/app.py")).unwrap();
        assert_eq!(found.root, root);
        let ts = builtin_servers().into_iter().find(|d| d.id == "typescript").unwrap();
        std::fs::create_dir_all(root.join("web/ajax")).unwrap();
        std::fs::write(root.join("web/package.json"), "{}").unwrap();
        std::fs::write(root.join("web/ajax/package.json"), "{}").unwrap();
        let scan = scan(&root, std::slice::from_ref(&ts));
        assert_eq!(scan["typescript"].roots.len(), 2);
        let outer = outermost_roots(&ts, &root, &scan["typescript"].roots);
        assert_eq!(outer.iter().map(|r| r.root.clone()).collect::<Vec<_>>(), [root.join("web")]);
        // Go modules do not cover each other: a nested go.mod is its own module.
        let go = builtin_servers().into_iter().find(|d| d.id == "go").unwrap();
        std::fs::create_dir_all(root.join("svc/inner")).unwrap();
        std::fs::write(root.join("svc/go.mod"), "").unwrap();
        std::fs::write(root.join("svc/inner/go.mod"), "").unwrap();
        assert_eq!(
            find_root(&go, &root, &root.join("svc/inner/a.go")).unwrap().root,
            root.join("svc/inner")
        );
    }

    #[test]
    fn project_local_bin_folders_are_searched_only_when_project_code_may_run() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let bin = root.join(".venv/bin");
        std::fs::create_dir_all(&bin).unwrap();
        let program = bin.join("agent-tools-test-no-such-server");
        std::fs::write(&program, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
        let dirs = search_dirs(&[], &root, &root, true);
        assert_eq!(
            resolve_program("agent-tools-test-no-such-server", &dirs, &root, true),
            Some(program)
        );
        let dirs = search_dirs(&[], &root, &root, false);
        assert!(!dirs.iter().any(|d| d.starts_with(&root)), "{dirs:?}");
        assert_eq!(resolve_program("agent-tools-test-no-such-server", &dirs, &root, false), None);
        assert_eq!(
            resolve_program(".venv/bin/agent-tools-test-no-such-server", &dirs, &root, false),
            None
        );
    }

    #[test]
    fn the_scan_reports_files_and_markers_per_server() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("web/node_modules/x")).unwrap();
        std::fs::write(root.join("web/package.json"), "{}").unwrap();
        std::fs::write(root.join("web/node_modules/x/index.js"), "").unwrap();
        std::fs::write(root.join("main.go"), "").unwrap();
        let scan = scan(&root, &builtin_servers());
        assert_eq!(scan["typescript"].files, 0, "node_modules is skipped");
        assert_eq!(scan["typescript"].roots[0].root, root.join("web"));
        assert_eq!(scan["go"].files, 1);
        assert!(scan["go"].roots.is_empty());
    }
}
