//! Crash-atomic group commits: several files change all together or not at all, even when the
//! process is killed at any instant.
//!
//! A commit writes an intent record to a journal folder outside the tree (one per root, under
//! the user's state directory), then temp files beside their targets (created and renamed
//! relative to the folder handles [`Root`] resolved, never by path), then hard-links each
//! existing target to a backup name, then marks the record committed — the commit point — and
//! renames. [`recover`](Journal::recover), run when any run opens the root, finishes a committed group (roll
//! forward) and undoes a prepared one (roll back), and removes every temp file and backup. A
//! group whose committing process is still alive is left alone: each record has a lock file
//! held with `flock` for as long as its commit runs.
//!
//! ```
//! use agent_tools_support::{fs::Root, journal::{self, Change, Expect}};
//! let dir = tempfile::tempdir().unwrap();
//! let state = tempfile::tempdir().unwrap();
//! let root = Root::open(dir.path()).unwrap();
//! let journal = journal::Journal::at(state.path(), &root).unwrap();
//! let a = root.confine("a.txt", "path").unwrap();
//! let b = root.confine("sub/b.txt", "path").unwrap();
//! journal.commit(&root, &[
//!     Change::write(a, b"one\n".to_vec(), Expect::Absent),
//!     Change::write(b, b"two\n".to_vec(), Expect::Anything),
//! ]).unwrap();
//! assert_eq!(std::fs::read_to_string(dir.path().join("sub/b.txt")).unwrap(), "two\n");
//! ```
#![allow(
    clippy::disallowed_methods,
    reason = "the journal is the mechanism that writes: its own folder, and temp files it renames by handle"
)]

use std::{
    ffi::OsString,
    fs::File,
    io::{Read, Write},
    os::{
        fd::{AsFd, OwnedFd},
        unix::ffi::{OsStrExt, OsStringExt},
    },
    path::{Path, PathBuf},
    sync::atomic::{AtomicUsize, Ordering},
};

use rustix::{
    fs::{AtFlags, FlockOperation, Mode, OFlags},
    io::Errno,
};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::{
    Error,
    fs::{RelPath, Root, Target, open_regular},
};

mod locks;

use self::locks::FolderLocks;
pub use self::locks::{FileLocks, lock_files};

/// Temp files and backups start with this, so a stray one is recognisable.
pub const TEMP_PREFIX: &str = ".agent-tools-";

/// What a file must hold at commit time for the group to go ahead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expect {
    /// No check.
    Anything,
    /// The file must not exist.
    Absent,
    /// The file must exist with contents of this SHA-256.
    Sha256([u8; 32]),
}

impl Expect {
    /// The expectation that a file still holds `contents` (or is absent, for `None`).
    pub fn holding(contents: Option<&[u8]>) -> Expect {
        match contents {
            Some(bytes) => Expect::Sha256(sha256(bytes)),
            None => Expect::Absent,
        }
    }
}

/// SHA-256 of `bytes`.
pub fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// SHA-256 of everything `reader` yields, read in blocks (for files too large to hold).
pub fn sha256_of(mut reader: impl Read) -> std::io::Result<[u8; 32]> {
    let mut hasher = Sha256::new();
    let mut block = vec![0u8; 1 << 16];
    loop {
        match reader.read(&mut block) {
            Ok(0) => return Ok(hasher.finalize().into()),
            Ok(n) => hasher.update(&block[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// One file's fate in a group: new contents, or deletion.
#[derive(Debug, Clone)]
pub struct Change {
    pub path: RelPath,
    /// `None` deletes the file.
    pub contents: Option<Vec<u8>>,
    pub expect: Expect,
}

impl Change {
    pub fn write(path: RelPath, contents: Vec<u8>, expect: Expect) -> Change {
        Change { path, contents: Some(contents), expect }
    }

    pub fn delete(path: RelPath, expect: Expect) -> Change {
        Change { path, contents: None, expect }
    }
}

/// What a commit did to one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Committed {
    /// The real path written (symlinks inside the root resolved).
    pub path: RelPath,
    /// Whether the file existed before.
    pub existed: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum State {
    Prepared,
    Committed,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Entry {
    /// Real path relative to the root, as bytes.
    path: Vec<u8>,
    /// Temp file name in the target's folder; `None` for a deletion.
    temp: Option<Vec<u8>>,
    /// Backup name (a hard link of the old file) in the same folder, when the file existed.
    backup: Option<Vec<u8>>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Record {
    root: PathBuf,
    state: State,
    entries: Vec<Entry>,
    /// Folders the group created, outermost first; removed again on roll back when empty.
    created_dirs: Vec<Vec<u8>>,
}

/// What [`recover`](Journal::recover) found and did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recovery {
    pub rolled_forward: usize,
    pub rolled_back: usize,
    /// Groups left alone because their process still runs.
    pub live: usize,
}

/// The journal folder of one root.
#[derive(Debug, Clone)]
pub struct Journal {
    dir: PathBuf,
}

/// The default state folder: `$AGENT_TOOLS_STATE_DIR`, else `$XDG_STATE_HOME/agent-tools`,
/// else `~/.local/state/agent-tools`.
pub fn default_state_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("AGENT_TOOLS_STATE_DIR") {
        return PathBuf::from(dir);
    }
    if let Some(dir) = std::env::var_os("XDG_STATE_HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir).join("agent-tools");
    }
    match std::env::var_os("HOME") {
        Some(home) => PathBuf::from(home).join(".local/state/agent-tools"),
        None => std::env::temp_dir()
            .join(format!("agent-tools-state-{}", rustix::process::getuid().as_raw())),
    }
}

impl Journal {
    /// The journal of `root` under the default state folder, after recovering every group a
    /// killed process left there, so no writer ever starts on a half-written tree.
    pub fn for_root(root: &Root) -> Result<Journal, Error> {
        let journal = Journal::at(&default_state_dir(), root)?;
        if let Err(e) = journal.recover(root) {
            tracing::warn!("recovering interrupted writes under {}: {e}", root.path().display());
        }
        Ok(journal)
    }

    /// The journal of `root` under `state_dir` (created, private to the user).
    pub fn at(state_dir: &Path, root: &Root) -> Result<Journal, Error> {
        let key: String = sha256(root.path().as_os_str().as_bytes())
            .iter()
            .take(8)
            .map(|b| format!("{b:02x}"))
            .collect();
        let dir = state_dir.join("journal").join(key);
        std::fs::create_dir_all(&dir)
            .map_err(|e| Error::Journal { dir: dir.clone(), message: e.to_string() })?;
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(
            state_dir.join("journal"),
            std::fs::Permissions::from_mode(0o700),
        );
        Ok(Journal { dir })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn journal_error(&self, message: impl std::fmt::Display) -> Error {
        Error::Journal { dir: self.dir.clone(), message: message.to_string() }
    }

    /// Applies every change or none. `arg` names the tool argument the paths came from.
    pub fn commit(&self, root: &Root, changes: &[Change]) -> Result<Vec<Committed>, Error> {
        self.commit_named(root, changes, "path")
    }

    /// [`Journal::commit`], with the argument name used in path errors.
    pub fn commit_named(
        &self,
        root: &Root,
        changes: &[Change],
        arg: &str,
    ) -> Result<Vec<Committed>, Error> {
        let id = uuid::Uuid::new_v4().simple().to_string();
        let lock = self.lock(&id)?;
        let mut created = Vec::new();
        let mut targets: Vec<Target> = Vec::with_capacity(changes.len());
        for change in changes {
            let creating = change.contents.is_some().then_some(&mut created);
            let target = root.target(&change.path, arg, creating)?;
            if targets.iter().any(|t| t.rel == target.rel) {
                return Err(Error::Duplicate { path: target.rel.to_string() });
            }
            targets.push(target);
        }
        let entries: Vec<Entry> = changes
            .iter()
            .zip(&targets)
            .enumerate()
            .map(|(n, (change, target))| Entry {
                path: target.rel.as_path().as_os_str().as_bytes().to_vec(),
                temp: change
                    .contents
                    .as_ref()
                    .map(|_| format!("{TEMP_PREFIX}{id}-{n}.tmp").into_bytes()),
                backup: target.mode.map(|_| format!("{TEMP_PREFIX}{id}-{n}.old").into_bytes()),
            })
            .collect();
        let mut record = Record {
            root: root.path().to_path_buf(),
            state: State::Prepared,
            entries,
            created_dirs: created
                .iter()
                .map(|d| d.as_path().as_os_str().as_bytes().to_vec())
                .collect(),
        };
        self.write_record(&id, &record)?;
        crash_point();

        let outcome = self.prepare_and_apply(root, changes, &targets, &mut record, &id);
        match outcome {
            Ok(()) => {
                for target in &targets {
                    let _ = rustix::fs::fsync(&target.dir);
                }
                for (entry, target) in record.entries.iter().zip(&targets) {
                    if let Some(backup) = &entry.backup {
                        let _ =
                            rustix::fs::unlinkat(&target.dir, backup.as_slice(), AtFlags::empty());
                    }
                }
                crash_point();
                self.remove_record(&id);
                drop(lock);
                Ok(changes
                    .iter()
                    .zip(&targets)
                    .map(|(_, t)| Committed { path: t.rel.clone(), existed: t.mode.is_some() })
                    .collect())
            }
            Err((err, applied)) => {
                roll_back(root, &record, &targets, applied);
                self.remove_record(&id);
                drop(lock);
                Err(err)
            }
        }
    }

    /// Temp files, the expectation check, backups, the commit point and the renames. On
    /// failure, how many renames were done, so the caller rolls back exactly those.
    fn prepare_and_apply(
        &self,
        root: &Root,
        changes: &[Change],
        targets: &[Target],
        record: &mut Record,
        id: &str,
    ) -> Result<(), (Error, usize)> {
        let fail = |e: Error| (e, 0);
        for ((change, target), entry) in changes.iter().zip(targets).zip(&record.entries) {
            if let (Some(contents), Some(temp)) = (&change.contents, &entry.temp) {
                write_temp(target, temp, contents).map_err(fail)?;
                crash_point();
            }
        }
        // From the check to the last rename, each folder is locked against every other writer
        // (other processes on the same tree included): a file cannot change between the check
        // that it still holds what was read and the rename that replaces it.
        let _folders = FolderLocks::take(targets).map_err(fail)?;
        for (change, target) in changes.iter().zip(targets) {
            check_expectation(target, &change.expect).map_err(fail)?;
        }
        for (entry, target) in record.entries.iter().zip(targets) {
            if let Some(backup) = &entry.backup {
                rustix::fs::linkat(
                    &target.dir,
                    &target.name,
                    &target.dir,
                    backup.as_slice(),
                    AtFlags::empty(),
                )
                .map_err(|e| fail(Error::io("keep a backup of", target.rel.to_string(), e)))?;
                crash_point();
            }
        }
        record.state = State::Committed;
        self.write_record(id, record).map_err(fail)?;
        crash_point();
        for (n, (entry, target)) in record.entries.iter().zip(targets).enumerate() {
            let step = match &entry.temp {
                Some(temp) => {
                    rustix::fs::renameat(&target.dir, temp.as_slice(), &target.dir, &target.name)
                }
                None => match rustix::fs::unlinkat(&target.dir, &target.name, AtFlags::empty()) {
                    Err(Errno::NOENT) => Ok(()),
                    other => other,
                },
            };
            step.map_err(|e| (Error::io("write", target.rel.to_string(), e), n))?;
            crash_point();
        }
        let _ = root;
        Ok(())
    }

    fn record_path(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.json"))
    }

    /// Holds `<id>.lock` with `flock` while a commit runs; recovery skips locked groups.
    /// The lock is made under another name and renamed into place once held, so recovery
    /// never finds an `<id>.lock` that is free while its commit runs, and may remove every
    /// free lock without a record (what a process killed before its record, or after removing
    /// it, leaves).
    fn lock(&self, id: &str) -> Result<File, Error> {
        let fresh = self.dir.join(format!("{id}.lock.new"));
        let path = self.dir.join(format!("{id}.lock"));
        let cannot = |what: &str, e: std::io::Error| {
            self.journal_error(format!("cannot {what} {}: {e}", path.display()))
        };
        // Another host's recovery may find the fresh file before it is locked, and remove it
        // as free: the rename then fails, and the lock is made again.
        let mut attempts = 0;
        loop {
            attempts += 1;
            let file = File::create(&fresh).map_err(|e| cannot("create", e))?;
            rustix::fs::flock(&file, FlockOperation::LockExclusive)
                .map_err(|e| self.journal_error(e))?;
            match std::fs::rename(&fresh, &path) {
                Ok(()) => {
                    crash_point();
                    return Ok(file);
                }
                // Each loss takes a recovery pass landing between two system calls of ours;
                // a hundred in a row do not happen, a few under load do.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && attempts < 100 => {
                    std::thread::yield_now();
                    continue;
                }
                Err(e) => return Err(cannot("create", e)),
            }
        }
    }

    fn write_record(&self, id: &str, record: &Record) -> Result<(), Error> {
        let bytes = serde_json::to_vec(record).map_err(|e| self.journal_error(e))?;
        let temp = self.dir.join(format!("{id}.json.tmp"));
        let result = (|| -> std::io::Result<()> {
            let mut file = File::create(&temp)?;
            file.write_all(&bytes)?;
            file.sync_all()?;
            std::fs::rename(&temp, self.record_path(id))?;
            File::open(&self.dir)?.sync_all()
        })();
        result.map_err(|e| {
            // A full disk fails the write: the half-written temp record must not stay behind.
            let _ = std::fs::remove_file(&temp);
            self.journal_error(format!("cannot write the intent record: {e}"))
        })
    }

    fn remove_record(&self, id: &str) {
        let _ = std::fs::remove_file(self.record_path(id));
        let _ = std::fs::remove_file(self.dir.join(format!("{id}.json.tmp")));
        crash_point();
        let _ = std::fs::remove_file(self.dir.join(format!("{id}.lock")));
    }

    /// Removes the locks no process holds whose group has no record (`ids` are the groups
    /// with one).
    fn remove_free_locks(&self, names: &[String], ids: &[String]) {
        for name in names {
            let id = name.strip_suffix(".lock.new").or_else(|| name.strip_suffix(".lock"));
            if id.is_none_or(|id| ids.iter().any(|i| i == id)) {
                continue;
            }
            let path = self.dir.join(name);
            let Ok(lock) = File::open(&path) else { continue };
            if rustix::fs::flock(&lock, FlockOperation::NonBlockingLockExclusive).is_ok() {
                let _ = std::fs::remove_file(&path);
            }
        }
    }

    /// Finishes or undoes every group a dead process left behind on `root`.
    pub fn recover(&self, root: &Root) -> Result<Recovery, Error> {
        let mut report = Recovery::default();
        let listing = std::fs::read_dir(&self.dir).map_err(|e| self.journal_error(e))?;
        let mut ids: Vec<String> = Vec::new();
        let mut locks: Vec<String> = Vec::new();
        for entry in listing.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some(id) = name.strip_suffix(".json").or_else(|| name.strip_suffix(".json.tmp"))
                && !ids.iter().any(|i| i == id)
            {
                ids.push(id.to_string());
            } else if name.ends_with(".lock") || name.ends_with(".lock.new") {
                locks.push(name);
            }
        }
        self.remove_free_locks(&locks, &ids);
        for id in ids {
            let lock_path = self.dir.join(format!("{id}.lock"));
            let Ok(lock) =
                File::options().create(true).truncate(false).write(true).open(&lock_path)
            else {
                continue;
            };
            if rustix::fs::flock(&lock, FlockOperation::NonBlockingLockExclusive).is_err() {
                report.live += 1;
                continue;
            }
            let record = std::fs::read(self.record_path(&id))
                .ok()
                .and_then(|bytes| serde_json::from_slice::<Record>(&bytes).ok());
            match record {
                Some(record) if record.root == root.path() => {
                    if finish(root, &record) {
                        report.rolled_forward += 1;
                    } else {
                        report.rolled_back += 1;
                    }
                }
                Some(_) => continue,
                // Killed while writing the first record: nothing in the tree was touched yet.
                None => {}
            }
            self.remove_record(&id);
            drop(lock);
        }
        Ok(report)
    }
}

/// Completes a committed record (true) or undoes a prepared one (false).
fn finish(root: &Root, record: &Record) -> bool {
    let forward = record.state == State::Committed;
    for entry in &record.entries {
        let Some(rel) = RelPath::new(PathBuf::from(OsString::from_vec(entry.path.clone()))) else {
            continue;
        };
        let (Some(parent), Some(name)) = (rel.parent(), rel.file_name()) else { continue };
        let Ok(dir) = root.dir(&parent, "path", None) else { continue };
        if forward {
            match &entry.temp {
                Some(temp) => {
                    // Already renamed when the temp is gone.
                    let _ = rustix::fs::renameat(&dir, temp.as_slice(), &dir, name);
                }
                None => {
                    // Deleted already when the backup is all that is left.
                    if entry.backup.as_ref().is_none_or(|b| exists(&dir, b)) {
                        let _ = rustix::fs::unlinkat(&dir, name, AtFlags::empty());
                    }
                }
            }
        } else if let Some(temp) = &entry.temp {
            let _ = rustix::fs::unlinkat(&dir, temp.as_slice(), AtFlags::empty());
        }
        if let Some(backup) = &entry.backup {
            let _ = rustix::fs::unlinkat(&dir, backup.as_slice(), AtFlags::empty());
        }
        let _ = rustix::fs::fsync(&dir);
    }
    if !forward {
        remove_created_dirs(root, &record.created_dirs);
    }
    forward
}

fn exists(dir: &OwnedFd, name: &[u8]) -> bool {
    rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW).is_ok()
}

fn remove_created_dirs(root: &Root, dirs: &[Vec<u8>]) {
    for dir in dirs.iter().rev() {
        let Some(rel) = RelPath::new(PathBuf::from(OsString::from_vec(dir.clone()))) else {
            continue;
        };
        let (Some(parent), Some(name)) = (rel.parent(), rel.file_name()) else { continue };
        if let Ok(parent) = root.dir(&parent, "path", None) {
            let _ = rustix::fs::unlinkat(&parent, name, AtFlags::REMOVEDIR);
        }
    }
}

/// Undoes a failed in-process commit: the first `applied` renames are reverted from their
/// backups, every temp and backup is removed, and new folders go again.
fn roll_back(root: &Root, record: &Record, targets: &[Target], applied: usize) {
    for (n, (entry, target)) in record.entries.iter().zip(targets).enumerate() {
        if n < applied {
            match &entry.backup {
                Some(backup) => {
                    let _ = rustix::fs::renameat(
                        &target.dir,
                        backup.as_slice(),
                        &target.dir,
                        &target.name,
                    );
                }
                None => {
                    let _ = rustix::fs::unlinkat(&target.dir, &target.name, AtFlags::empty());
                }
            }
        }
        if let Some(temp) = &entry.temp {
            let _ = rustix::fs::unlinkat(&target.dir, temp.as_slice(), AtFlags::empty());
        }
        if let Some(backup) = &entry.backup {
            let _ = rustix::fs::unlinkat(&target.dir, backup.as_slice(), AtFlags::empty());
        }
    }
    remove_created_dirs(root, &record.created_dirs);
}

fn write_temp(target: &Target, temp: &[u8], contents: &[u8]) -> Result<(), Error> {
    let shown = target.rel.to_string();
    let fd = rustix::fs::openat(
        &target.dir,
        temp,
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o600),
    )
    .map_err(|e| Error::io("create a temp file for", &shown, e))?;
    let mut file = File::from(fd);
    file.write_all(contents).map_err(|e| Error::io("write", &shown, e))?;
    let mode = target.mode.unwrap_or(0o644);
    rustix::fs::fchmod(file.as_fd(), Mode::from_raw_mode(mode))
        .map_err(|e| Error::io("set the mode of", &shown, e))?;
    file.sync_all().map_err(|e| Error::io("sync", &shown, e))
}

fn check_expectation(target: &Target, expect: &Expect) -> Result<(), Error> {
    if *expect == Expect::Anything {
        return Ok(());
    }
    let path = target.rel.to_string();
    let current = match rustix::fs::openat(
        &target.dir,
        &target.name,
        OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => Some(
            sha256_of(open_regular(&fd, &path, "path")?)
                .map_err(|e| Error::io("check what is in", &path, e))?,
        ),
        Err(Errno::NOENT) => None,
        Err(e) => return Err(Error::io("check what is in", &path, e)),
    };
    let why = match (expect, &current) {
        (Expect::Anything, _) | (Expect::Absent, None) => return Ok(()),
        (Expect::Absent, Some(_)) => "it was created meanwhile",
        (Expect::Sha256(_), None) => "it was deleted",
        (Expect::Sha256(want), Some(hash)) if hash == want => return Ok(()),
        (Expect::Sha256(_), Some(_)) => "its contents differ",
    };
    Err(Error::Changed { path, why: why.into() })
}

/// Test hook: the process kills itself with SIGKILL at the n-th step of a commit (1-based), so a
/// test can prove that recovery leaves all-old or all-new at every step. 0 (default) = never.
static CRASH_AT: AtomicUsize = AtomicUsize::new(0);
static STEPS: AtomicUsize = AtomicUsize::new(0);

#[doc(hidden)]
pub fn crash_at_step(step: usize) {
    STEPS.store(0, Ordering::SeqCst);
    CRASH_AT.store(step, Ordering::SeqCst);
}

fn crash_point() {
    let at = CRASH_AT.load(Ordering::Relaxed);
    if at != 0 && STEPS.fetch_add(1, Ordering::SeqCst) + 1 == at {
        let _ =
            rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::KILL);
    }
}

/// Writes one file atomically through the journal (old or new, never torn, even on SIGKILL).
pub fn write_file(
    journal: &Journal,
    root: &Root,
    rel: RelPath,
    contents: Vec<u8>,
) -> Result<Committed, Error> {
    let mut done = journal.commit(root, &[Change::write(rel, contents, Expect::Anything)])?;
    Ok(done.remove(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `cargo xtask soak --seed 38` found it: with the journal's disk full, a failed intent
    /// record left its `*.json.tmp` in the journal folder. `/dev/full` stands in for the full
    /// disk: every write to it fails with ENOSPC.
    #[test]
    fn an_intent_record_that_cannot_be_written_leaves_no_temp_file() {
        let (dir, state) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let root = Root::open(dir.path()).unwrap();
        let journal = Journal::at(state.path(), &root).unwrap();
        let temp = journal.dir.join("full.json.tmp");
        std::os::unix::fs::symlink("/dev/full", &temp).unwrap();
        let record = Record {
            root: dir.path().to_path_buf(),
            state: State::Prepared,
            entries: Vec::new(),
            created_dirs: Vec::new(),
        };
        let error = journal.write_record("full", &record).unwrap_err().to_string();
        assert!(error.contains("cannot write the intent record"), "{error}");
        assert!(std::fs::symlink_metadata(&temp).is_err(), "the temp record is left: {temp:?}");
    }
}
