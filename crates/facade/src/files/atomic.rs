//! Atomic writes: a temp file beside the target, then a rename; groups of files all or nothing.

use std::{
    io::Write,
    os::unix::fs::PermissionsExt,
    path::{Path, PathBuf},
};

/// Writes `contents` to `path` atomically, keeping the permissions of an existing file.
pub fn write_atomic(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    let temp = prepare(path, contents)?;
    temp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

fn prepare(path: &Path, contents: &[u8]) -> std::io::Result<tempfile::NamedTempFile> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut temp = tempfile::Builder::new().prefix(".agent-tools-").tempfile_in(dir)?;
    temp.write_all(contents)?;
    temp.as_file().sync_all()?;
    let mode = match std::fs::metadata(path) {
        Ok(meta) => meta.permissions().mode(),
        Err(_) => 0o644,
    };
    std::fs::set_permissions(temp.path(), std::fs::Permissions::from_mode(mode))?;
    Ok(temp)
}

/// One file's fate in a group write: new contents, or `None` to delete it.
#[derive(Debug, Clone)]
pub struct FileChange {
    pub path: PathBuf,
    pub new_contents: Option<Vec<u8>>,
}

/// Applies every change or none: temp files first, then renames; if a rename or delete fails,
/// the files already changed are restored from what they held before.
pub fn write_group(changes: &[FileChange]) -> std::io::Result<()> {
    let originals: Vec<Option<Vec<u8>>> =
        changes.iter().map(|c| std::fs::read(&c.path).ok()).collect();
    let mut prepared = Vec::with_capacity(changes.len());
    for change in changes {
        prepared.push(match &change.new_contents {
            Some(contents) => Some(prepare(&change.path, contents)?),
            None => None,
        });
    }
    let mut done = 0;
    let mut failure = None;
    for (change, temp) in changes.iter().zip(prepared) {
        let step = match temp {
            Some(temp) => temp.persist(&change.path).map(|_| ()).map_err(|e| e.error),
            None => std::fs::remove_file(&change.path),
        };
        if let Err(err) = step {
            failure = Some(err);
            break;
        }
        done += 1;
    }
    let Some(err) = failure else { return Ok(()) };
    for (change, original) in changes.iter().zip(&originals).take(done) {
        let _ = match original {
            Some(bytes) => write_atomic(&change.path, bytes),
            None => std::fs::remove_file(&change.path),
        };
    }
    Err(err)
}
