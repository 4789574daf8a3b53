//! The folders outside the root that the program's environment runs code from (stdlib,
//! site-packages, GOROOT, the module cache, the Rust sources), where breakpoints may go too.

use std::path::{Path, PathBuf};

use crate::{
    adapters::{AdapterKind, Probes, SearchEnv},
    error::DebugError,
};

use super::resolve_in_root;

/// The folders outside the root that belong to the program's environment: breakpoints may be
/// set there (read-only) and stepping reaches them.
pub(crate) fn library_roots(
    kind: AdapterKind,
    python: Option<&Path>,
    probes: &Probes,
    env: &SearchEnv,
) -> Vec<PathBuf> {
    let lines = |argv: &[String]| -> Vec<PathBuf> {
        probes
            .run(argv)
            .map(|out| out.lines().filter(|l| !l.trim().is_empty()).map(PathBuf::from).collect())
            .unwrap_or_default()
    };
    let mut roots = match kind {
        AdapterKind::Debugpy => python
            .map(|python| {
                lines(&[
                    python.display().to_string(),
                    "-c".into(),
                    "import sys, sysconfig\nfor k in ('stdlib', 'platstdlib', 'purelib', \
                     'platlib'):\n    print(sysconfig.get_paths()[k])\nprint(sys.base_prefix)"
                        .into(),
                ])
            })
            .unwrap_or_default(),
        AdapterKind::Delve => env
            .which("go")
            .map(|go| {
                lines(&[
                    go.display().to_string(),
                    "env".into(),
                    "GOROOT".into(),
                    "GOMODCACHE".into(),
                ])
            })
            .unwrap_or_default(),
        AdapterKind::Lldb => {
            let mut out: Vec<PathBuf> = env
                .which("rustc")
                .map(|rustc| {
                    lines(&[rustc.display().to_string(), "--print".into(), "sysroot".into()])
                })
                .unwrap_or_default();
            if let Some(home) = &env.home {
                out.push(home.join(".cargo/registry"));
                out.push(home.join(".cargo/git"));
            }
            out.push("/usr/include".into());
            out
        }
        AdapterKind::Dart => Vec::new(),
    };
    roots.retain(|r| r.is_dir() && r != Path::new("/"));
    // Each folder as the tools name it and as it resolves: Debian's GOROOT `src` is a symlink
    // into /usr/share, a project's `.venv` may be one, and a file may be named either way.
    let resolved: Vec<PathBuf> =
        roots.iter().filter_map(|r| std::fs::canonicalize(r).ok()).collect();
    roots.extend(resolved);
    roots.sort();
    roots.dedup();
    roots
}

/// A breakpoint file: inside the root, or under one of `libraries` (named as given or as it
/// resolves), and whether it is library code. A library file is sent to the adapter by the
/// path as given when that path is a library's (the name the program's debug info or modules
/// use, as delve's for a GOROOT behind a symlink); project files by their resolved path.
pub(crate) fn resolve_source(
    root: &Path,
    file: &str,
    libraries: &[PathBuf],
) -> Result<(PathBuf, bool), DebugError> {
    let given =
        lexical(&if Path::new(file).is_absolute() { PathBuf::from(file) } else { root.join(file) });
    let in_library = |p: &Path| libraries.iter().any(|l| p.starts_with(l));
    let named_as_library =
        |p: &Path| in_library(p) || crate::session::is_library_path(&p.display().to_string());
    match resolve_in_root(root, file, "file") {
        // The project's own environment (`.venv/lib/…/site-packages`) is library code.
        Ok(path) => {
            let library = named_as_library(&path) || named_as_library(&given);
            Ok((path, library))
        }
        Err(inside) => {
            let resolved = std::fs::canonicalize(&given).ok();
            let given_is_library = resolved.is_some()
                && (in_library(&given) || given.starts_with(root) && named_as_library(&given));
            if given_is_library {
                return Ok((given, true));
            }
            if let Some(path) = resolved.filter(|p| in_library(p)) {
                return Ok((path, true));
            }
            Err(DebugError::usage(format!(
                "{inside}, and not in the program's libraries{}",
                if libraries.is_empty() {
                    String::new()
                } else {
                    format!(
                        " ({})",
                        libraries
                            .iter()
                            .map(|l| l.display().to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                }
            )))
        }
    }
}

/// `path` with `.` and `..` taken out by their names, no symlink followed.
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}
