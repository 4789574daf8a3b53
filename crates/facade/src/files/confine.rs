//! Path confinement: every path a file tool touches stays inside the run's root.

use std::path::{Component, Path, PathBuf};

/// Resolves `arg` (relative to `root`, or absolute) to a path inside `root`.
///
/// Refuses `..` that climbs out, absolute paths elsewhere, and symlinks whose target leaves
/// the root. The error names the argument and says what would work.
pub fn resolve_in_root(root: &Path, arg: &str, arg_name: &str) -> Result<PathBuf, String> {
    if arg.trim().is_empty() {
        return Err(format!(
            "argument `{arg_name}` is empty; give a path relative to the root {}",
            root.display()
        ));
    }
    let canonical_root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let requested = Path::new(arg);
    let joined = if requested.is_absolute() {
        requested.to_path_buf()
    } else {
        canonical_root.join(requested)
    };
    let mut normalized = PathBuf::new();
    for component in joined.components() {
        match component {
            Component::ParentDir => {
                if !normalized.pop() {
                    return Err(outside(arg_name, arg, &canonical_root));
                }
            }
            Component::CurDir => {}
            other => normalized.push(other.as_os_str()),
        }
    }
    // `root` itself may be reached through a symlink; compare against both spellings.
    let inside = |p: &Path| p.starts_with(&canonical_root) || p.starts_with(root);
    if !inside(&normalized) {
        return Err(outside(arg_name, arg, &canonical_root));
    }
    // Resolve symlinks in the longest existing prefix; the target must stay inside.
    let mut existing = normalized.clone();
    let mut rest = Vec::new();
    while !existing.exists() {
        if std::fs::symlink_metadata(&existing).is_ok() {
            // A dangling symlink: refuse rather than create a file wherever it points.
            return Err(format!(
                "argument `{arg_name}`: {arg} is a symlink to a missing target; refusing to follow it"
            ));
        }
        match (existing.file_name().map(|n| n.to_os_string()), existing.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent.to_path_buf();
            }
            _ => break,
        }
    }
    let mut resolved = std::fs::canonicalize(&existing).map_err(|e| {
        format!("argument `{arg_name}`: cannot resolve {}: {e}", existing.display())
    })?;
    if !resolved.starts_with(&canonical_root) {
        return Err(format!(
            "argument `{arg_name}`: {arg} resolves through a symlink to {}, outside the run's root {}; \
             use a path inside the root",
            resolved.display(),
            canonical_root.display()
        ));
    }
    for name in rest.into_iter().rev() {
        resolved.push(name);
    }
    Ok(resolved)
}

fn outside(arg_name: &str, arg: &str, root: &Path) -> String {
    format!(
        "argument `{arg_name}`: {arg} is outside the run's root {}; use a path inside it (relative paths are resolved from the root)",
        root.display()
    )
}

/// `path` relative to `root` for messages, or the path itself if it is elsewhere.
pub fn display_relative(root: &Path, path: &Path) -> String {
    let canonical_root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    path.strip_prefix(&canonical_root)
        .or_else(|_| path.strip_prefix(root))
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| path.display().to_string())
}
