//! Files changed on disk under a tree, seen through inotify and read on demand.
//!
//! A [`FolderWatch`] holds one inotify descriptor with a watch per folder (not recursive: the
//! caller decides which folders count, so `node_modules` or `.git` cost nothing). Nothing runs
//! in the background: events wait in the kernel's queue until [`FolderWatch::changes`] drains
//! them, so the answer that needs them is the one that reads them, and a change made the
//! moment before a call is never missed by a thread that had not woken yet. A folder created
//! inside a watched one is watched from then on, and what it already holds is reported as
//! created.
//!
//! ```
//! use agent_tools_support::watch::{FileChange, FolderWatch};
//! let dir = tempfile::tempdir().unwrap();
//! let watch = FolderWatch::new(64, |_| true).unwrap();
//! watch.watch(dir.path()).unwrap();
//! std::fs::write(dir.path().join("a.txt"), "x").unwrap();
//! let seen = watch.changes();
//! assert_eq!(seen.files.get(&dir.path().join("a.txt")), Some(&FileChange::Created));
//! ```

use std::{
    collections::{BTreeMap, HashMap},
    ffi::OsStr,
    io,
    mem::MaybeUninit,
    os::{fd::OwnedFd, unix::ffi::OsStrExt},
    path::{Path, PathBuf},
};

use std::sync::{Mutex, MutexGuard, PoisonError};

use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};

/// What happened to a file, coalesced since the last [`FolderWatch::changes`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileChange {
    Created,
    Changed,
    Deleted,
}

impl FileChange {
    /// `later` after `self`: a file created then changed is still new; one deleted and made
    /// again is changed.
    fn then(self, later: FileChange) -> FileChange {
        match (self, later) {
            (FileChange::Created, FileChange::Changed) => FileChange::Created,
            (FileChange::Deleted, FileChange::Created) => FileChange::Changed,
            (_, later) => later,
        }
    }
}

/// What [`FolderWatch::changes`] saw.
#[derive(Debug, Default)]
pub struct Changes {
    /// Files (not folders) with what happened to them.
    pub files: BTreeMap<PathBuf, FileChange>,
    /// The kernel's queue overflowed (or a folder could not be watched): some changes are
    /// missing, and whatever relies on them should look at the disk again.
    pub incomplete: bool,
}

struct State {
    folders: HashMap<i32, PathBuf>,
    pending: Changes,
}

/// A watch over chosen folders; see the module docs.
pub struct FolderWatch {
    fd: OwnedFd,
    max_folders: usize,
    keep: Box<dyn Fn(&Path) -> bool + Send + Sync>,
    state: Mutex<State>,
}

impl std::fmt::Debug for FolderWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FolderWatch").field("folders", &self.lock().folders.len()).finish()
    }
}

const EVENTS: WatchFlags = WatchFlags::CLOSE_WRITE
    .union(WatchFlags::MODIFY)
    .union(WatchFlags::CREATE)
    .union(WatchFlags::DELETE)
    .union(WatchFlags::MOVED_FROM)
    .union(WatchFlags::MOVED_TO)
    .union(WatchFlags::ONLYDIR)
    .union(WatchFlags::DONT_FOLLOW)
    .union(WatchFlags::EXCL_UNLINK);

impl FolderWatch {
    /// A watch of at most `max_folders` folders; a folder created later is watched when
    /// `keep` says so.
    pub fn new(
        max_folders: usize,
        keep: impl Fn(&Path) -> bool + Send + Sync + 'static,
    ) -> io::Result<FolderWatch> {
        let fd = inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK)?;
        Ok(FolderWatch {
            fd,
            max_folders,
            keep: Box::new(keep),
            state: Mutex::new(State { folders: HashMap::new(), pending: Changes::default() }),
        })
    }

    /// The state; a panic elsewhere must not stop the watch, so a poisoned lock is taken.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Watches `folder` (its entries, not its subfolders).
    pub fn watch(&self, folder: &Path) -> io::Result<()> {
        let mut state = self.lock();
        self.watch_locked(&mut state, folder)
    }

    fn watch_locked(&self, state: &mut State, folder: &Path) -> io::Result<()> {
        if state.folders.len() >= self.max_folders {
            state.pending.incomplete = true;
            return Err(io::Error::other(format!(
                "{}: not watched, the watch is full (its bound is {})",
                folder.display(),
                self.max_folders
            )));
        }
        let wd = inotify::add_watch(&self.fd, folder, EVENTS)?;
        state.folders.insert(wd, folder.to_path_buf());
        Ok(())
    }

    /// How many folders are watched.
    pub fn folders(&self) -> usize {
        self.lock().folders.len()
    }

    /// Everything seen since the last call.
    pub fn changes(&self) -> Changes {
        let mut state = self.lock();
        let mut created_folders = Vec::new();
        let mut buf = [MaybeUninit::<u8>::uninit(); 16 * 1024];
        let mut reader = inotify::Reader::new(&self.fd, &mut buf);
        loop {
            let event = match reader.next() {
                Ok(event) => event,
                Err(rustix::io::Errno::AGAIN) => break,
                Err(rustix::io::Errno::INTR) => continue,
                Err(_) => {
                    state.pending.incomplete = true;
                    break;
                }
            };
            let flags = event.events();
            if flags.contains(ReadFlags::QUEUE_OVERFLOW) {
                state.pending.incomplete = true;
                continue;
            }
            if flags.contains(ReadFlags::IGNORED) {
                state.folders.remove(&event.wd());
                continue;
            }
            let (Some(folder), Some(name)) = (state.folders.get(&event.wd()), event.file_name())
            else {
                continue;
            };
            let path = folder.join(OsStr::from_bytes(name.to_bytes()));
            let change = if flags.intersects(ReadFlags::CREATE | ReadFlags::MOVED_TO) {
                FileChange::Created
            } else if flags.intersects(ReadFlags::DELETE | ReadFlags::MOVED_FROM) {
                FileChange::Deleted
            } else {
                FileChange::Changed
            };
            if flags.contains(ReadFlags::ISDIR) {
                if change == FileChange::Created {
                    created_folders.push(path);
                }
                continue;
            }
            record(&mut state.pending, path, change);
        }
        // What a new folder held before its watch began is reported as created.
        while let Some(folder) = created_folders.pop() {
            if !(self.keep)(&folder) || self.watch_locked(&mut state, &folder).is_err() {
                continue;
            }
            let Ok(entries) = std::fs::read_dir(&folder) else { continue };
            for entry in entries.flatten() {
                let path = entry.path();
                match entry.file_type() {
                    Ok(t) if t.is_dir() => created_folders.push(path),
                    Ok(_) => record(&mut state.pending, path, FileChange::Created),
                    Err(_) => {}
                }
            }
        }
        std::mem::take(&mut state.pending)
    }
}

fn record(pending: &mut Changes, path: PathBuf, change: FileChange) {
    let merged = pending.files.get(&path).map_or(change, |before| before.then(change));
    pending.files.insert(path, merged);
}

#[cfg(test)]
#[allow(clippy::disallowed_methods, reason = "tests write their fixtures by path")]
mod tests {
    use super::*;

    fn watched(dir: &Path) -> FolderWatch {
        let watch = FolderWatch::new(16, |p| !p.ends_with("node_modules")).expect("inotify");
        watch.watch(dir).expect("watch");
        watch
    }

    #[test]
    fn writes_renames_and_deletes_are_seen_coalesced() {
        let dir = tempfile::tempdir().expect("temp");
        let old = dir.path().join("old.py");
        std::fs::write(&old, "a").expect("write");
        let watch = watched(dir.path());
        std::fs::write(&old, "b").expect("write");
        let tmp = dir.path().join(".new.tmp");
        std::fs::write(&tmp, "c").expect("write");
        let new = dir.path().join("new.py");
        std::fs::rename(&tmp, &new).expect("rename");
        std::fs::write(&new, "d").expect("write");
        let seen = watch.changes();
        assert_eq!(seen.files.get(&old), Some(&FileChange::Changed));
        assert_eq!(seen.files.get(&new), Some(&FileChange::Created));
        assert_eq!(seen.files.get(&tmp), Some(&FileChange::Deleted));
        assert!(!seen.incomplete);
        std::fs::remove_file(&old).expect("remove");
        let seen = watch.changes();
        assert_eq!(seen.files.get(&old), Some(&FileChange::Deleted));
        assert_eq!(seen.files.len(), 1, "only what happened since: {:?}", seen.files);
        assert!(watch.changes().files.is_empty());
    }

    #[test]
    fn a_new_folder_is_watched_and_what_it_held_is_reported() {
        let dir = tempfile::tempdir().expect("temp");
        let watch = watched(dir.path());
        let pkg = dir.path().join("pkg/sub");
        std::fs::create_dir_all(&pkg).expect("mkdir");
        std::fs::write(pkg.join("a.py"), "x").expect("write");
        std::fs::create_dir_all(dir.path().join("node_modules")).expect("mkdir");
        let seen = watch.changes();
        assert_eq!(seen.files.get(&pkg.join("a.py")), Some(&FileChange::Created), "{seen:?}");
        assert_eq!(watch.folders(), 3, "the root, pkg and pkg/sub; node_modules is not kept");
        std::fs::write(pkg.join("a.py"), "y").expect("write");
        assert_eq!(watch.changes().files.get(&pkg.join("a.py")), Some(&FileChange::Changed));
    }

    #[test]
    fn past_its_bound_a_watch_says_it_is_incomplete() {
        let dir = tempfile::tempdir().expect("temp");
        let watch = FolderWatch::new(1, |_| true).expect("inotify");
        watch.watch(dir.path()).expect("watch");
        let err = watch.watch(&dir.path().join(".")).expect_err("bound");
        assert!(err.to_string().contains("the watch is full"), "{err}");
        assert!(watch.changes().incomplete);
    }
}
