//! Paths: `file://` URIs, confinement to the run's root, and paths shown relative to it.

use std::{
    path::{Component, Path, PathBuf},
    str::FromStr,
};

use lsp_types::Uri;

/// The `file://` URI of an absolute path.
pub(crate) fn uri_from_path(path: &Path) -> Option<Uri> {
    let url = url::Url::from_file_path(path).ok()?;
    Uri::from_str(url.as_str()).ok()
}

/// The path of a `file://` URI; `None` for other schemes.
pub(crate) fn path_from_uri(uri: &Uri) -> Option<PathBuf> {
    let url = url::Url::parse(uri.as_str()).ok()?;
    if url.scheme() != "file" {
        return None;
    }
    url.to_file_path().ok()
}

/// Removes `.` and `..` without touching the file system.
fn normalize(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    Some(out)
}

/// Resolves a user-given path (relative to `root`, or absolute) to a path inside `root`,
/// following symlinks of the existing part; the error says what would work.
pub(crate) fn resolve_in_root(root: &Path, arg: &str, arg_name: &str) -> Result<PathBuf, String> {
    if arg.trim().is_empty() {
        return Err(format!("argument `{arg_name}` is empty; give a path relative to the root"));
    }
    let requested = Path::new(arg);
    let joined =
        if requested.is_absolute() { requested.to_path_buf() } else { root.join(requested) };
    let outside = || {
        format!(
            "argument `{arg_name}`: {arg} is outside the run's root {}; use a path inside it",
            root.display()
        )
    };
    let normalized = normalize(&joined).ok_or_else(outside)?;
    if !normalized.starts_with(root) {
        return Err(outside());
    }
    let resolved = match std::fs::canonicalize(&normalized) {
        Ok(p) => p,
        Err(_) => normalized,
    };
    if !resolved.starts_with(root) {
        return Err(format!(
            "argument `{arg_name}`: {arg} resolves through a symlink to {}, outside the run's root",
            resolved.display()
        ));
    }
    Ok(resolved)
}

/// True when `path` (absolute, normalised) lies inside `root`.
pub(crate) fn is_inside(root: &Path, path: &Path) -> bool {
    normalize(path).is_some_and(|p| p.starts_with(root))
}

/// `path` relative to `root` for output, or the absolute path when it lies elsewhere.
pub(crate) fn display_relative(root: &Path, path: &Path) -> String {
    match path.strip_prefix(root) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
        Ok(rel) => rel.display().to_string(),
        Err(_) => path.display().to_string(),
    }
}

/// The UTF-8 text of the regular file at `path`; None for anything else (missing, not UTF-8, a
/// FIFO or device, which is never opened for reading, so nothing blocks on it).
pub(crate) fn read_text(path: &Path) -> Option<String> {
    let bytes = agent_tools_support::fs::read_regular(path, "file").ok()?;
    String::from_utf8(bytes).ok()
}

/// Reads a source file as text: UTF-8, or Latin-1 when its first two lines carry a coding
/// declaration naming it (PEP 263: `# -*- coding: latin-1 -*-`). Any other encoding is an
/// error that names it.
pub(crate) fn read_source(path: &Path) -> Result<String, String> {
    // Only a regular file is read: a FIFO or a device is refused at once instead of blocking.
    let bytes = agent_tools_support::fs::read_regular(path, "file").map_err(|e| e.to_string())?;
    let bytes = match String::from_utf8(bytes) {
        Ok(text) => return Ok(text),
        Err(e) => e.into_bytes(),
    };
    let head: Vec<u8> = bytes
        .split(|b| *b == b'\n')
        .take(2)
        .flat_map(|l| l.iter().copied().chain([b'\n']))
        .collect();
    let head = String::from_utf8_lossy(&head).to_ascii_lowercase();
    let declared = head.find("coding").and_then(|i| {
        let rest = head[i + 6..].trim_start_matches([':', '=']).trim_start();
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.'))
            .collect();
        (!name.is_empty() && matches!(head.as_bytes().get(i + 6), Some(b':' | b'=')))
            .then_some(name)
    });
    match declared.as_deref() {
        Some("latin-1" | "latin1" | "iso-8859-1" | "iso8859-1" | "l1" | "iso-latin-1") => {
            Ok(bytes.iter().map(|&b| b as char).collect())
        }
        Some(other) => Err(format!(
            "it is not UTF-8 and its declared encoding `{other}` is not supported (UTF-8 and Latin-1 are)"
        )),
        None => Err("it is not UTF-8 text and declares no encoding".into()),
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods, reason = "tests write their fixtures by path")]
mod tests {
    use super::*;

    #[test]
    fn latin1_source_with_a_coding_declaration_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("old.py");
        std::fs::write(&file, b"# -*- coding: latin-1 -*-\nname = '\xe9t\xe9'\n").unwrap();
        assert_eq!(
            read_source(&file).unwrap(),
            "# -*- coding: latin-1 -*-\nname = '\u{e9}t\u{e9}'\n"
        );
        std::fs::write(&file, b"name = '\xe9'\n").unwrap();
        assert!(read_source(&file).unwrap_err().contains("declares no encoding"));
        std::fs::write(&file, b"# coding=koi8-r\nx = '\xe9'\n").unwrap();
        assert!(read_source(&file).unwrap_err().contains("`koi8-r` is not supported"));
    }

    #[test]
    fn uris_round_trip_paths_with_spaces_and_accents() {
        let path = Path::new("/tmp/a dir/é.py");
        let uri = uri_from_path(path).unwrap();
        assert_eq!(uri.as_str(), "file:///tmp/a%20dir/%C3%A9.py");
        assert_eq!(path_from_uri(&uri).unwrap(), path);
    }

    #[test]
    fn paths_that_climb_out_of_the_root_are_refused() {
        let root = Path::new("/nonexistent-root");
        assert!(resolve_in_root(root, "../etc/passwd", "file").unwrap_err().contains("outside"));
        assert!(resolve_in_root(root, "/etc/passwd", "file").unwrap_err().contains("outside"));
        assert_eq!(resolve_in_root(root, "a/../b.py", "file").unwrap(), root.join("b.py"));
    }
}
