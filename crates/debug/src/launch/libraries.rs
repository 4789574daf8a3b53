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
    roots.iter_mut().for_each(|r| *r = std::fs::canonicalize(&*r).unwrap_or_else(|_| r.clone()));
    roots.sort();
    roots.dedup();
    roots
}

/// A breakpoint file: inside the root, or an absolute path under one of `libraries`.
pub(crate) fn resolve_source(
    root: &Path,
    file: &str,
    libraries: &[PathBuf],
) -> Result<(PathBuf, bool), DebugError> {
    match resolve_in_root(root, file, "file") {
        Ok(path) => Ok((path, false)),
        Err(inside) => {
            if Path::new(file).is_absolute()
                && let Ok(path) = std::fs::canonicalize(file)
                && libraries.iter().any(|l| path.starts_with(l))
            {
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
