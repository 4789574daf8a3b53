//! Confined file access by handle, not by path.
//!
//! A [`Root`] holds an open handle of the run's root directory. Every path is resolved beneath
//! that handle with `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)` (symlinks are followed
//! only while they stay inside the root), or, on kernels without `openat2`, by a
//! component-by-component `O_NOFOLLOW` walk that refuses symlinks. Writes create their temp
//! file in, and rename it within, the directory handle they resolved (see [`crate::journal`]),
//! so a folder swapped for a symlink between the check and the write cannot redirect them:
//! there is no second lookup by path.
//!
//! ```
//! use agent_tools_support::fs::Root;
//! let dir = tempfile::tempdir().unwrap();
//! let root = Root::open(dir.path()).unwrap();
//! assert!(root.confine("../etc/passwd", "path").is_err());
//! let rel = root.confine("src/lib.rs", "path").unwrap();
//! assert_eq!(rel.to_string(), "src/lib.rs");
//! ```

use std::{
    ffi::{OsStr, OsString},
    fmt,
    fs::File,
    io::Read,
    os::{
        fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd},
        unix::ffi::OsStrExt,
    },
    path::{Component, Path, PathBuf},
    sync::atomic::{AtomicBool, Ordering},
};

use rustix::{
    fs::{AtFlags, FileType, Mode, OFlags, ResolveFlags},
    io::Errno,
};

use crate::Error;

/// How many symlinks a write may follow to reach its real target.
const MAX_SYMLINK_HOPS: usize = 40;

/// A path relative to a [`Root`]: normal components only (no `..`, no root, no prefix).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct RelPath(PathBuf);

impl RelPath {
    /// `path` if it is relative and made of normal components (`.` is dropped).
    pub fn new(path: impl AsRef<Path>) -> Option<RelPath> {
        let mut out = PathBuf::new();
        for component in path.as_ref().components() {
            match component {
                Component::Normal(name) => out.push(name),
                Component::CurDir => {}
                _ => return None,
            }
        }
        Some(RelPath(out))
    }

    pub fn as_path(&self) -> &Path {
        &self.0
    }

    /// The root itself.
    pub fn is_root(&self) -> bool {
        self.0.as_os_str().is_empty()
    }

    pub fn file_name(&self) -> Option<&OsStr> {
        self.0.file_name()
    }

    /// The parent folder; the root's parent is `None`.
    pub fn parent(&self) -> Option<RelPath> {
        if self.is_root() {
            return None;
        }
        Some(RelPath(self.0.parent().map(Path::to_path_buf).unwrap_or_default()))
    }

    pub fn join(&self, name: impl AsRef<Path>) -> Option<RelPath> {
        RelPath::new(self.0.join(name))
    }

    /// Lexically resolves `link` (a symlink's text) found in this folder; `None` if it climbs out.
    fn resolve_link(&self, link: &Path, root: &Path) -> Option<RelPath> {
        let (mut out, rest) = if link.is_absolute() {
            (PathBuf::new(), link.strip_prefix(root).ok()?.to_path_buf())
        } else {
            (self.0.clone(), link.to_path_buf())
        };
        for component in rest.components() {
            match component {
                Component::Normal(name) => out.push(name),
                Component::CurDir => {}
                Component::ParentDir => {
                    if !out.pop() {
                        return None;
                    }
                }
                _ => return None,
            }
        }
        Some(RelPath(out))
    }
}

impl fmt::Display for RelPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_root() { f.write_str(".") } else { write!(f, "{}", self.0.display()) }
    }
}

/// What a path names, without following a final symlink out of the root.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
    Other,
}

/// The run's root, held open: every access below goes through this handle.
#[derive(Debug)]
pub struct Root {
    fd: OwnedFd,
    path: PathBuf,
}

/// A resolved write target: the real folder (held open), the file's name in it, and its real
/// path relative to the root.
#[derive(Debug)]
pub(crate) struct Target {
    pub(crate) dir: OwnedFd,
    pub(crate) name: OsString,
    pub(crate) rel: RelPath,
    /// The target's current mode when it exists (a write keeps it).
    pub(crate) mode: Option<u32>,
}

impl Root {
    /// Opens `path` (canonicalised) as a root.
    pub fn open(path: &Path) -> Result<Root, Error> {
        let shown = path.display().to_string();
        let path =
            std::fs::canonicalize(path).map_err(|e| Error::io("open the root", &shown, e))?;
        let fd = rustix::fs::open(
            &path,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| Error::io("open the root", &shown, e))?;
        Ok(Root { fd, path })
    }

    /// The root's canonical path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Checks a path argument lexically: relative to the root, or absolute inside it, with no
    /// `..` that climbs out. Symlinks are judged later, at access, by the kernel.
    pub fn confine(&self, arg: &str, arg_name: &str) -> Result<RelPath, Error> {
        if arg.trim().is_empty() {
            return Err(Error::EmptyPath { arg: arg_name.into(), root: self.path.clone() });
        }
        let outside =
            || Error::Outside { arg: arg_name.into(), path: arg.into(), root: self.path.clone() };
        let requested = Path::new(arg);
        let relative = if requested.is_absolute() {
            self.strip_root(requested).ok_or_else(outside)?
        } else {
            requested.to_path_buf()
        };
        let mut out = PathBuf::new();
        for component in relative.components() {
            match component {
                Component::Normal(name) => out.push(name),
                Component::CurDir => {}
                Component::ParentDir => {
                    if !out.pop() {
                        return Err(outside());
                    }
                }
                _ => return Err(outside()),
            }
        }
        Ok(RelPath(out))
    }

    /// `abs` relative to the root, if it is lexically inside it.
    pub fn relative_of(&self, abs: &Path) -> Option<RelPath> {
        RelPath::new(self.strip_root(abs)?)
    }

    fn strip_root(&self, abs: &Path) -> Option<PathBuf> {
        abs.strip_prefix(&self.path).ok().map(Path::to_path_buf)
    }

    /// The absolute path of `rel`, for messages and for handing to other programs.
    pub fn join(&self, rel: &RelPath) -> PathBuf {
        self.path.join(&rel.0)
    }

    /// Opens the regular file `rel` for reading, following symlinks only while they stay
    /// inside the root. Anything else (a folder, FIFO, socket or device) is refused by its
    /// handle before it is opened for reading, so no call can block on a pipe nobody writes.
    pub fn open_file(&self, rel: &RelPath, arg: &str) -> Result<File, Error> {
        let fd = self
            .open_beneath(rel, OFlags::PATH)
            .map_err(|e| self.map_errno(e, rel, arg, "read"))?;
        open_regular(&fd, &rel.to_string(), arg)
    }

    /// Reads the whole file `rel`.
    pub fn read(&self, rel: &RelPath, arg: &str) -> Result<Vec<u8>, Error> {
        let mut file = self.open_file(rel, arg)?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(|e| Error::io("read", rel.to_string(), e))?;
        Ok(bytes)
    }

    /// What `rel` is, or `None` if it does not exist (a symlink leaving the root is an error).
    pub fn kind(&self, rel: &RelPath, arg: &str) -> Result<Option<Kind>, Error> {
        match self.open_beneath(rel, OFlags::PATH) {
            Ok(fd) => {
                let stat =
                    rustix::fs::fstat(&fd).map_err(|e| Error::io("inspect", rel.to_string(), e))?;
                Ok(Some(match FileType::from_raw_mode(stat.st_mode) {
                    FileType::RegularFile => Kind::File,
                    FileType::Directory => Kind::Dir,
                    _ => Kind::Other,
                }))
            }
            Err(Errno::NOENT) => {
                // A dangling symlink also reads as missing; refuse it rather than create a file
                // wherever it points.
                if self.is_symlink(rel) {
                    return Err(Error::DanglingSymlink { arg: arg.into(), path: rel.to_string() });
                }
                Ok(None)
            }
            Err(e) => Err(self.map_errno(e, rel, arg, "inspect")),
        }
    }

    fn is_symlink(&self, rel: &RelPath) -> bool {
        let (Some(parent), Some(name)) = (rel.parent(), rel.file_name()) else { return false };
        let Ok(dir) = self.open_beneath(&parent, OFlags::PATH | OFlags::DIRECTORY) else {
            return false;
        };
        rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW)
            .is_ok_and(|s| FileType::from_raw_mode(s.st_mode) == FileType::Symlink)
    }

    /// The real path of `rel` relative to the root: symlinks inside the root resolved.
    pub fn real(&self, rel: &RelPath, arg: &str) -> Result<RelPath, Error> {
        match self.open_beneath(rel, OFlags::PATH) {
            Ok(fd) => self.rel_of_fd(fd.as_fd(), rel, arg),
            Err(Errno::NOENT) => Ok(self.target(rel, arg, None)?.rel),
            Err(e) => Err(self.map_errno(e, rel, arg, "resolve")),
        }
    }

    /// Resolves a file to write: its real folder (created when `created` is given, recording
    /// each new folder), its name there, and its real path. A final symlink is followed while
    /// it stays inside the root, so writing through it changes its target, not the link.
    pub(crate) fn target(
        &self,
        rel: &RelPath,
        arg: &str,
        mut created: Option<&mut Vec<RelPath>>,
    ) -> Result<Target, Error> {
        let mut rel = rel.clone();
        for _ in 0..MAX_SYMLINK_HOPS {
            let (Some(parent), Some(name)) =
                (rel.parent(), rel.file_name().map(OsStr::to_os_string))
            else {
                return Err(Error::IsDirectory { arg: arg.into(), path: rel.to_string() });
            };
            let dir = self.dir(&parent, arg, created.as_deref_mut())?;
            let real_parent = self.rel_of_fd(dir.as_fd(), &parent, arg)?;
            match rustix::fs::statat(&dir, &name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(stat) => match FileType::from_raw_mode(stat.st_mode) {
                    FileType::Symlink => {
                        let link = rustix::fs::readlinkat(&dir, &name, Vec::new())
                            .map_err(|e| Error::io("read the symlink", rel.to_string(), e))?;
                        let link = PathBuf::from(OsStr::from_bytes(link.as_bytes()));
                        rel = real_parent.resolve_link(&link, &self.path).ok_or_else(|| {
                            Error::Escapes {
                                arg: arg.into(),
                                path: rel.to_string(),
                                root: self.path.clone(),
                            }
                        })?;
                    }
                    FileType::Directory => {
                        return Err(Error::IsDirectory { arg: arg.into(), path: rel.to_string() });
                    }
                    FileType::RegularFile => {
                        let rel = real_parent.join(&name).unwrap_or_default();
                        return Ok(Target { dir, name, rel, mode: Some(stat.st_mode & 0o7777) });
                    }
                    other => {
                        return Err(Error::NotRegular {
                            arg: arg.into(),
                            path: rel.to_string(),
                            kind: kind_name(other),
                        });
                    }
                },
                Err(Errno::NOENT) => {
                    let rel = real_parent.join(&name).unwrap_or_default();
                    return Ok(Target { dir, name, rel, mode: None });
                }
                Err(e) => return Err(self.map_errno(e, &rel, arg, "inspect")),
            }
        }
        Err(Error::SymlinkLoop { arg: arg.into(), path: rel.to_string() })
    }

    /// Opens the folder `rel` beneath the root, creating missing folders when `created` is given.
    pub(crate) fn dir(
        &self,
        rel: &RelPath,
        arg: &str,
        mut created: Option<&mut Vec<RelPath>>,
    ) -> Result<OwnedFd, Error> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY;
        match self.open_beneath(rel, flags) {
            Ok(fd) => return Ok(fd),
            Err(Errno::NOENT) if created.is_some() => {}
            Err(Errno::NOTDIR) => {
                return Err(Error::io("open the folder", rel.to_string(), Errno::NOTDIR));
            }
            Err(e) => return Err(self.map_errno(e, rel, arg, "open the folder")),
        }
        // Create one missing component at a time, each inside a folder already held open.
        let mut prefix = RelPath::default();
        let mut current = self
            .open_beneath(&prefix, flags)
            .map_err(|e| self.map_errno(e, &prefix, arg, "open"))?;
        for component in rel.0.components() {
            let name = component.as_os_str();
            let next = prefix.join(name).unwrap_or_default();
            current = match self.open_beneath(&next, flags) {
                Ok(fd) => fd,
                Err(Errno::NOENT) => {
                    match rustix::fs::mkdirat(&current, name, Mode::from_raw_mode(0o755)) {
                        Ok(()) => {
                            if let Some(list) = created.as_deref_mut() {
                                list.push(
                                    self.rel_of_fd(current.as_fd(), &prefix, arg)?
                                        .join(name)
                                        .unwrap_or_default(),
                                );
                            }
                        }
                        Err(Errno::EXIST) => {}
                        Err(e) => return Err(Error::io("create the folder", next.to_string(), e)),
                    }
                    self.open_beneath(&next, flags)
                        .map_err(|e| self.map_errno(e, &next, arg, "open the folder"))?
                }
                Err(e) => return Err(self.map_errno(e, &next, arg, "open the folder")),
            };
            prefix = next;
        }
        Ok(current)
    }

    /// The real path of an open folder or file relative to the root, from `/proc/self/fd`.
    fn rel_of_fd(&self, fd: BorrowedFd<'_>, rel: &RelPath, arg: &str) -> Result<RelPath, Error> {
        let link = std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd()))
            .map_err(|e| Error::io("resolve (is /proc mounted?)", rel.to_string(), e))?;
        self.relative_of(&link).ok_or_else(|| Error::Escapes {
            arg: arg.into(),
            path: rel.to_string(),
            root: self.path.clone(),
        })
    }

    /// `openat2` beneath the root; where it refuses an absolute symlink that points inside the
    /// root (`RESOLVE_BENEATH` rejects every absolute link), or where the kernel lacks it, the
    /// path is resolved here and opened by an `O_NOFOLLOW` walk, so nothing swapped in later
    /// is followed.
    pub(crate) fn open_beneath(&self, rel: &RelPath, flags: OFlags) -> Result<OwnedFd, Errno> {
        static NO_OPENAT2: AtomicBool = AtomicBool::new(false);
        let flags = flags | OFlags::CLOEXEC;
        let path: &Path = if rel.is_root() { Path::new(".") } else { &rel.0 };
        if !NO_OPENAT2.load(Ordering::Relaxed) {
            let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
            let mut attempt = 0;
            loop {
                match rustix::fs::openat2(&self.fd, path, flags, Mode::empty(), resolve) {
                    // The kernel saw a concurrent rename and refused to guess: try again.
                    Err(Errno::AGAIN) if attempt < 16 => attempt += 1,
                    Err(Errno::NOSYS) => {
                        NO_OPENAT2.store(true, Ordering::Relaxed);
                        break;
                    }
                    Err(Errno::XDEV) => break,
                    other => return other,
                }
            }
        }
        let real = self.resolve_by_hand(rel)?;
        self.open_nofollow(&real, flags)
    }

    /// Follows symlinks one component at a time, keeping the path inside the root.
    fn resolve_by_hand(&self, rel: &RelPath) -> Result<Vec<OsString>, Errno> {
        let mut pending: Vec<OsString> =
            rel.0.components().rev().map(|c| c.as_os_str().to_os_string()).collect();
        let mut real: Vec<OsString> = Vec::new();
        let mut hops = 0;
        while let Some(name) = pending.pop() {
            if name == ".." {
                real.pop().ok_or(Errno::XDEV)?;
                continue;
            }
            if name == "." {
                continue;
            }
            let dir =
                self.open_nofollow(&real, OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC)?;
            let stat = match rustix::fs::statat(&dir, &name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(stat) => stat,
                // A missing last part is the caller's business (ENOENT); a missing middle too.
                Err(e) => return if e == Errno::NOENT { Err(Errno::NOENT) } else { Err(e) },
            };
            if FileType::from_raw_mode(stat.st_mode) != FileType::Symlink {
                real.push(name);
                continue;
            }
            hops += 1;
            if hops > MAX_SYMLINK_HOPS {
                return Err(Errno::LOOP);
            }
            let link = rustix::fs::readlinkat(&dir, &name, Vec::new())?;
            let link = PathBuf::from(OsStr::from_bytes(link.as_bytes()));
            let rest = if link.is_absolute() {
                real.clear();
                link.strip_prefix(&self.path).map_err(|_| Errno::XDEV)?.to_path_buf()
            } else {
                link
            };
            for component in rest.components().rev() {
                match component {
                    Component::Normal(n) => pending.push(n.to_os_string()),
                    Component::ParentDir => pending.push("..".into()),
                    Component::CurDir => {}
                    _ => return Err(Errno::XDEV),
                }
            }
        }
        Ok(real)
    }

    /// Opens a symlink-free path component by component, refusing any symlink met.
    fn open_nofollow(&self, names: &[OsString], flags: OFlags) -> Result<OwnedFd, Errno> {
        let step = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::NOFOLLOW;
        let Some((last, middle)) = names.split_last() else {
            return rustix::fs::openat(&self.fd, ".", flags, Mode::empty());
        };
        let mut current = rustix::fs::openat(&self.fd, ".", step, Mode::empty())?;
        for name in middle {
            current = rustix::fs::openat(&current, name, step, Mode::empty())?;
        }
        rustix::fs::openat(&current, last, flags | OFlags::NOFOLLOW, Mode::empty())
    }

    fn map_errno(&self, errno: Errno, rel: &RelPath, arg: &str, what: &'static str) -> Error {
        match errno {
            Errno::NOENT => Error::NotFound { arg: arg.into(), path: rel.to_string() },
            Errno::XDEV => {
                Error::Escapes { arg: arg.into(), path: rel.to_string(), root: self.path.clone() }
            }
            Errno::LOOP => Error::SymlinkLoop { arg: arg.into(), path: rel.to_string() },
            Errno::ISDIR => Error::IsDirectory { arg: arg.into(), path: rel.to_string() },
            other => Error::io(what, rel.to_string(), other),
        }
    }
}

/// Reads the whole regular file at `path`, which may lie outside any root (a library's source a
/// server pointed to): it is opened as a handle, its type checked on that handle, and only a
/// regular file is read, so a FIFO, socket or device is refused at once instead of blocking.
/// `arg` names the argument in errors.
pub fn read_regular(path: &Path, arg: &str) -> Result<Vec<u8>, Error> {
    let shown = path.display().to_string();
    let fd = rustix::fs::open(path, OFlags::PATH | OFlags::CLOEXEC, Mode::empty())
        .map_err(|e| Error::io("read", &shown, e))?;
    let mut file = open_regular(&fd, &shown, arg)?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).map_err(|e| Error::io("read", &shown, e))?;
    Ok(bytes)
}

/// Opens the file behind `path_fd` (an `O_PATH` handle) for reading if it is a regular file:
/// the type is read from the handle, and the reopen through `/proc/self/fd` reaches that same
/// inode (with `O_NONBLOCK`, so even a type the check missed cannot block). `shown` names it in
/// errors.
pub(crate) fn open_regular(path_fd: &OwnedFd, shown: &str, arg: &str) -> Result<File, Error> {
    let stat = rustix::fs::fstat(path_fd).map_err(|e| Error::io("inspect", shown, e))?;
    match FileType::from_raw_mode(stat.st_mode) {
        FileType::RegularFile => {}
        FileType::Directory => {
            return Err(Error::IsDirectory { arg: arg.into(), path: shown.into() });
        }
        other => {
            return Err(Error::NotRegular {
                arg: arg.into(),
                path: shown.into(),
                kind: kind_name(other),
            });
        }
    }
    let fd = rustix::fs::open(
        format!("/proc/self/fd/{}", path_fd.as_raw_fd()),
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| {
        let what = if e == Errno::NOENT { "read (is /proc mounted?)" } else { "read" };
        Error::io(what, shown, e)
    })?;
    Ok(File::from(fd))
}

/// How an error names a file type that is not a regular file.
fn kind_name(kind: FileType) -> &'static str {
    match kind {
        FileType::Fifo => "a FIFO (named pipe)",
        FileType::Socket => "a socket",
        FileType::CharacterDevice => "a character device",
        FileType::BlockDevice => "a block device",
        FileType::Directory => "a directory",
        FileType::Symlink => "a symlink",
        _ => "a special file",
    }
}

/// Swaps two names atomically (`renameat2(RENAME_EXCHANGE)`), as a process racing a tool would:
/// the tests of every writer use it to swap a folder for a symlink in a tight loop.
pub fn exchange(a: &Path, b: &Path) -> std::io::Result<()> {
    rustix::fs::renameat_with(
        rustix::fs::CWD,
        a,
        rustix::fs::CWD,
        b,
        rustix::fs::RenameFlags::EXCHANGE,
    )
    .map_err(Into::into)
}
