//! The locks a commit takes: `flock` on each folder it writes in (across processes), and one
//! async lock per file for the writers of one process.

use std::{
    collections::HashMap,
    os::fd::{AsFd, BorrowedFd},
    path::PathBuf,
    sync::{Arc, OnceLock, Weak},
    time::{Duration, Instant},
};

use rustix::{fs::FlockOperation, io::Errno};

use crate::{
    Error,
    fs::{RelPath, Root, Target},
};

/// How long a commit waits for another process's lock on a folder it writes in.
const FOLDER_LOCK_WAIT: Duration = Duration::from_secs(30);

/// `flock` held on each distinct folder a group writes in, released on drop. Folders are taken
/// in (device, inode) order, so two groups never wait for each other crosswise, and each only
/// once, as a second lock of the same folder by the same commit would wait for itself.
pub(super) struct FolderLocks<'a> {
    held: Vec<BorrowedFd<'a>>,
}

impl<'a> FolderLocks<'a> {
    pub(super) fn take(targets: &'a [Target]) -> Result<FolderLocks<'a>, Error> {
        let mut folders: Vec<((u64, u64), &'a Target)> = Vec::with_capacity(targets.len());
        for target in targets {
            let stat = rustix::fs::fstat(&target.dir)
                .map_err(|e| Error::io("inspect the folder of", target.rel.to_string(), e))?;
            folders.push(((stat.st_dev as u64, stat.st_ino as u64), target));
        }
        folders.sort_by_key(|(key, _)| *key);
        folders.dedup_by_key(|(key, _)| *key);
        let mut locks = FolderLocks { held: Vec::with_capacity(folders.len()) };
        for (_, target) in folders {
            lock_folder(target)?;
            locks.held.push(target.dir.as_fd());
        }
        Ok(locks)
    }
}

impl Drop for FolderLocks<'_> {
    fn drop(&mut self) {
        for fd in &self.held {
            let _ = rustix::fs::flock(fd, FlockOperation::Unlock);
        }
    }
}

/// Waits (with a deadline) for the exclusive lock of `target`'s folder.
fn lock_folder(target: &Target) -> Result<(), Error> {
    let started = Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        match rustix::fs::flock(&target.dir, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => return Ok(()),
            Err(Errno::WOULDBLOCK) | Err(Errno::INTR) => {}
            Err(e) => return Err(Error::io("lock the folder of", target.rel.to_string(), e)),
        }
        let waited = started.elapsed();
        if waited >= FOLDER_LOCK_WAIT {
            return Err(Error::Busy { path: target.rel.to_string(), waited });
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}

/// Writers of one process take turns per file: [`lock_files`] hands out one async lock per
/// real path, held from the read to the commit, so two calls editing one file both land (the
/// second reads what the first wrote). Across processes the commit's folder lock and its
/// expectation check keep a change from being lost.
#[derive(Debug)]
pub struct FileLocks {
    _held: Vec<tokio::sync::OwnedMutexGuard<()>>,
}

type LockTable = std::sync::Mutex<HashMap<PathBuf, Weak<tokio::sync::Mutex<()>>>>;

/// Waits until no other writer of this process holds any of `paths` (relative to `root`,
/// symlinks inside it resolved), then holds them all until the returned guard drops. Locks
/// are taken in path order, so two groups never wait for each other crosswise.
pub async fn lock_files(root: &Root, paths: &[RelPath]) -> FileLocks {
    static TABLE: OnceLock<LockTable> = OnceLock::new();
    let mut keys: Vec<PathBuf> = paths
        .iter()
        .map(|rel| root.join(&root.real(rel, "path").unwrap_or_else(|_| rel.clone())))
        .collect();
    keys.sort();
    keys.dedup();
    let mutexes: Vec<Arc<tokio::sync::Mutex<()>>> = {
        let mut table =
            TABLE.get_or_init(LockTable::default).lock().unwrap_or_else(|p| p.into_inner());
        table.retain(|_, weak| weak.strong_count() > 0);
        keys.into_iter()
            .map(|key| {
                let slot = table.entry(key).or_default();
                slot.upgrade().unwrap_or_else(|| {
                    let fresh = Arc::new(tokio::sync::Mutex::new(()));
                    *slot = Arc::downgrade(&fresh);
                    fresh
                })
            })
            .collect()
    };
    let mut held = Vec::with_capacity(mutexes.len());
    for mutex in mutexes {
        held.push(mutex.lock_owned().await);
    }
    FileLocks { _held: held }
}
