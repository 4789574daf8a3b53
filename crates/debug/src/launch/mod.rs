//! What a `launch` means before any adapter starts: the program (in the root, or a console
//! script of the project's environment), a Python module, or a test; and which library folders
//! outside the root breakpoints may address, read-only.

pub(crate) mod failure_hooks;
mod libraries;
mod test_runs;

pub(crate) use self::{
    libraries::{library_roots, resolve_source},
    test_runs::{adapter_for_test, plan_test},
};

use std::path::{Path, PathBuf};

use crate::{
    adapters::{self, SearchEnv},
    error::DebugError,
};

/// `path` (relative to `root`, or absolute) as a canonical path inside `root`.
pub(crate) fn resolve_in_root(root: &Path, path: &str, what: &str) -> Result<PathBuf, DebugError> {
    let candidate =
        if Path::new(path).is_absolute() { PathBuf::from(path) } else { root.join(path) };
    let canonical = std::fs::canonicalize(&candidate).map_err(|e| {
        DebugError::usage(format!("{what} `{path}`: {e} (looked at {})", candidate.display()))
    })?;
    if !canonical.starts_with(root) {
        return Err(DebugError::usage(format!(
            "{what} `{path}` is outside the project root {}; debug works only inside it",
            root.display()
        )));
    }
    Ok(canonical)
}

/// The folders of the project's Python environment holding its console scripts.
fn environment_bins(root: &Path, env: &SearchEnv) -> Vec<PathBuf> {
    let mut bins = vec![root.join(".venv/bin"), root.join("venv/bin")];
    if let Some(venv) = &env.virtual_env {
        bins.push(venv.join("bin"));
    }
    bins
}

/// The program to launch: a path inside the root, or the name (or path) of a console script in
/// the project's environment (`.venv/bin/pytest`, `$VIRTUAL_ENV/bin/x`), read-only.
pub(crate) fn resolve_program(
    root: &Path,
    program: &str,
    env: &SearchEnv,
) -> Result<PathBuf, DebugError> {
    let inside = resolve_in_root(root, program, "program");
    if inside.is_ok() {
        return inside;
    }
    let bins = environment_bins(root, env);
    let name = Path::new(program).file_name().map(PathBuf::from).unwrap_or_default();
    for bin in &bins {
        // Not canonicalised: the interpreter in a venv is a symlink that leaves the root, while
        // the console script itself is what we run.
        let candidate = bin.join(&name);
        let named_here = Path::new(program).is_absolute() && Path::new(program) == candidate
            || !program.contains('/')
            || program.starts_with(".venv/")
            || program.starts_with("venv/");
        if named_here && adapters::is_executable(&candidate) {
            return Ok(candidate);
        }
    }
    inside.map_err(|e| {
        DebugError::usage(format!(
            "{e}; console scripts are also looked up in {}",
            bins.iter().map(|b| b.display().to_string()).collect::<Vec<_>>().join(", ")
        ))
    })
}
