//! Confined access by handle: paths that leave the root are refused, symlinks inside it are
//! followed, and a folder swapped for a symlink during writes never redirects one outside.

use std::{
    os::unix::fs::symlink,
    path::Path,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
};

use agent_tools_support::{
    Error,
    fs::{Root, exchange},
    journal::{self, Change, Expect, Journal},
};

fn setup() -> (tempfile::TempDir, tempfile::TempDir, Root, Journal) {
    let tree = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let root = Root::open(tree.path()).unwrap();
    let journal = Journal::at(state.path(), &root).unwrap();
    (tree, state, root, journal)
}

fn temp_files(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with(journal::TEMP_PREFIX) {
            found.push(entry.path().display().to_string());
        }
        if entry.file_type().unwrap().is_dir() {
            found.extend(temp_files(&entry.path()));
        }
    }
    found
}

#[test]
fn paths_that_climb_out_or_name_another_place_are_refused_naming_the_argument() {
    let (_tree, _state, root, _) = setup();
    for bad in ["../x", "a/../../x", "/etc/passwd", ""] {
        let err = root.confine(bad, "path").unwrap_err().to_string();
        assert!(err.contains("argument `path`"), "{bad}: {err}");
    }
    let inside = format!("{}/a/./b", root.path().display());
    assert_eq!(root.confine(&inside, "path").unwrap().to_string(), "a/b");
    assert_eq!(root.confine("a/../b", "path").unwrap().to_string(), "b");
}

#[test]
fn a_symlink_inside_the_root_is_followed_and_one_leaving_it_is_refused() {
    let (tree, _state, root, journal) = setup();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret"), "s").unwrap();
    std::fs::write(tree.path().join("real.txt"), "old").unwrap();
    symlink("real.txt", tree.path().join("link.txt")).unwrap();
    symlink(outside.path(), tree.path().join("out")).unwrap();
    symlink(outside.path().join("secret"), tree.path().join("secret")).unwrap();

    symlink(root.path().join("real.txt"), tree.path().join("absolute.txt")).unwrap();
    let absolute = root.confine("absolute.txt", "path").unwrap();
    assert_eq!(root.read(&absolute, "path").unwrap(), b"old", "an absolute link inside the root");
    let link = root.confine("link.txt", "path").unwrap();
    assert_eq!(root.read(&link, "path").unwrap(), b"old");
    journal.commit(&root, &[Change::write(link, b"new".to_vec(), Expect::Anything)]).unwrap();
    assert_eq!(std::fs::read_to_string(tree.path().join("real.txt")).unwrap(), "new");
    assert!(std::fs::symlink_metadata(tree.path().join("link.txt")).unwrap().is_symlink());

    for escaping in ["out/secret", "secret", "out/new.txt"] {
        let rel = root.confine(escaping, "path").unwrap();
        let read = root.read(&rel, "path");
        assert!(
            matches!(read, Err(Error::Escapes { .. }) | Err(Error::NotFound { .. })),
            "{escaping}: {read:?}"
        );
        let write = journal.commit(&root, &[Change::write(rel, b"x".to_vec(), Expect::Anything)]);
        assert!(matches!(write, Err(Error::Escapes { .. })), "{escaping}: {write:?}");
    }
    assert_eq!(std::fs::read_to_string(outside.path().join("secret")).unwrap(), "s");
    assert!(!outside.path().join("new.txt").exists());
}

#[test]
fn a_group_whose_file_changed_since_staging_writes_nothing() {
    let (tree, _state, root, journal) = setup();
    std::fs::write(tree.path().join("a"), "a0").unwrap();
    std::fs::write(tree.path().join("b"), "b-changed").unwrap();
    let a = root.confine("a", "path").unwrap();
    let b = root.confine("b", "path").unwrap();
    let c = root.confine("new/dir/c", "path").unwrap();
    let err = journal
        .commit(
            &root,
            &[
                Change::write(a, b"a1".to_vec(), Expect::holding(Some(b"a0"))),
                Change::write(c, b"c1".to_vec(), Expect::Absent),
                Change::write(b, b"b1".to_vec(), Expect::holding(Some(b"b0"))),
            ],
        )
        .unwrap_err();
    assert!(matches!(err, Error::Changed { .. }), "{err}");
    assert_eq!(std::fs::read_to_string(tree.path().join("a")).unwrap(), "a0");
    assert!(!tree.path().join("new").exists(), "folders the group created are removed again");
    assert!(temp_files(tree.path()).is_empty());
}

#[test]
fn a_folder_swapped_for_a_symlink_in_a_tight_loop_never_redirects_a_write_outside() {
    let (tree, _state, root, journal) = setup();
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir(tree.path().join("sub")).unwrap();
    symlink(outside.path(), tree.path().join("swap")).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let racer = {
        let stop = stop.clone();
        let (sub, swap) = (tree.path().join("sub"), tree.path().join("swap"));
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let _ = exchange(&sub, &swap);
            }
        })
    };
    let mut written = 0;
    for n in 0..300 {
        let rel = root.confine(&format!("sub/f{n}.txt"), "path").unwrap();
        if journal.commit(&root, &[Change::write(rel, b"x".to_vec(), Expect::Anything)]).is_ok() {
            written += 1;
        }
    }
    stop.store(true, Ordering::Relaxed);
    racer.join().unwrap();
    let leaked: Vec<_> =
        std::fs::read_dir(outside.path()).unwrap().flatten().map(|e| e.path()).collect();
    assert!(leaked.is_empty(), "written outside the root: {leaked:?}");
    assert!(written > 0, "no write succeeded during the race");
    assert!(temp_files(tree.path()).is_empty(), "{:?}", temp_files(tree.path()));
}

#[test]
fn special_files_are_refused_by_their_handle_without_blocking() {
    let (tree, _state, root, journal) = setup();
    let fifo = tree.path().join("pipe");
    let path = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: `path` is a NUL-terminated path that outlives the call.
    assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o644) }, 0, "mkfifo");
    let _socket = std::os::unix::net::UnixListener::bind(tree.path().join("sock")).unwrap();
    for (name, kind) in [("pipe", "a FIFO (named pipe)"), ("sock", "a socket")] {
        let rel = root.confine(name, "path").unwrap();
        let refusal = Error::NotRegular { arg: "path".into(), path: name.into(), kind };
        assert_eq!(root.read(&rel, "path").unwrap_err(), refusal);
        assert_eq!(
            journal.commit(&root, &[Change::write(rel, b"x".to_vec(), Expect::Anything)]),
            Err(refusal)
        );
    }
    let devices = Root::open(Path::new("/dev")).unwrap();
    let zero = devices.confine("zero", "path").unwrap();
    assert_eq!(
        devices.read(&zero, "path").unwrap_err().to_string(),
        "argument `path`: zero is a character device, not a regular file; these tools read and \
         write regular files only"
    );
    assert!(temp_files(tree.path()).is_empty());
}

#[test]
fn a_file_replaced_by_a_fifo_after_it_was_read_is_refused_instead_of_blocking() {
    let (tree, _state, root, journal) = setup();
    std::fs::write(tree.path().join("a.txt"), "old").unwrap();
    let rel = root.confine("a.txt", "path").unwrap();
    let expect = Expect::holding(Some(b"old"));
    std::fs::remove_file(tree.path().join("a.txt")).unwrap();
    let path =
        std::ffi::CString::new(tree.path().join("a.txt").as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: `path` is a NUL-terminated path that outlives the call.
    assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o644) }, 0, "mkfifo");
    let err = journal.commit(&root, &[Change::write(rel, b"new".to_vec(), expect)]).unwrap_err();
    assert!(matches!(err, Error::NotRegular { .. }), "{err}");
}

/// Appends `line` to `rel` as a writer that reads, computes and commits would, reading again
/// whenever the commit says the file changed since it was read.
fn append(root: &Root, journal: &Journal, line: &str) {
    let rel = root.confine("log.txt", "path").unwrap();
    loop {
        let old = root.read(&rel, "path").unwrap();
        let mut new = old.clone();
        new.extend_from_slice(line.as_bytes());
        let change = Change::write(rel.clone(), new, Expect::holding(Some(&old)));
        match journal.commit(root, &[change]) {
            Ok(_) => return,
            Err(Error::Changed { .. }) => continue,
            Err(e) => panic!("{e}"),
        }
    }
}

#[test]
fn writers_with_their_own_handles_racing_on_one_file_never_lose_a_committed_change() {
    // Each thread opens the root and journal itself, as two host processes on one tree do.
    let tree = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    std::fs::write(tree.path().join("log.txt"), "").unwrap();
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let (tree, state) = (tree.path().to_path_buf(), state.path().to_path_buf());
            std::thread::spawn(move || {
                let root = Root::open(&tree).unwrap();
                let journal = Journal::at(&state, &root).unwrap();
                for n in 0..50 {
                    append(&root, &journal, &format!("{w}.{n}\n"));
                }
            })
        })
        .collect();
    for writer in writers {
        writer.join().unwrap();
    }
    let log = std::fs::read_to_string(tree.path().join("log.txt")).unwrap();
    assert_eq!(log.lines().count(), 200, "a committed append was lost:\n{log}");
    assert!(temp_files(tree.path()).is_empty());
}

#[test]
fn a_commit_never_fails_because_another_host_recovers_the_journal_meanwhile() {
    // A host that starts (or a session that opens) runs recovery, which removes the locks no
    // one holds: it must never take the lock a commit is making.
    let tree = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    std::fs::write(tree.path().join("log.txt"), "").unwrap();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let recovering = {
        let (tree, state, done) =
            (tree.path().to_path_buf(), state.path().to_path_buf(), done.clone());
        std::thread::spawn(move || {
            let root = Root::open(&tree).unwrap();
            let journal = Journal::at(&state, &root).unwrap();
            let mut rounds = 0;
            while !done.load(std::sync::atomic::Ordering::SeqCst) && rounds < 200_000 {
                journal.recover(&root).unwrap();
                rounds += 1;
            }
        })
    };
    let root = Root::open(tree.path()).unwrap();
    let journal = Journal::at(state.path(), &root).unwrap();
    for n in 0..1000 {
        append(&root, &journal, &format!("{n}\n"));
    }
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    recovering.join().unwrap();
    let log = std::fs::read_to_string(tree.path().join("log.txt")).unwrap();
    assert_eq!(log.lines().count(), 1000);
}

#[test]
fn writers_of_one_process_take_turns_per_real_file() {
    let (tree, _state, root, _journal) = setup();
    std::fs::write(tree.path().join("real.txt"), "x").unwrap();
    symlink("real.txt", tree.path().join("alias.txt")).unwrap();
    let (real, alias, other) = (
        root.confine("real.txt", "path").unwrap(),
        root.confine("alias.txt", "path").unwrap(),
        root.confine("other.txt", "path").unwrap(),
    );
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    runtime.block_on(async {
        let held = journal::lock_files(&root, std::slice::from_ref(&real)).await;
        let waiting = journal::lock_files(&root, std::slice::from_ref(&alias));
        tokio::pin!(waiting);
        let free = journal::lock_files(&root, std::slice::from_ref(&other));
        tokio::select! {
            biased;
            _ = &mut waiting => panic!("a second writer of real.txt (through a symlink) did not wait"),
            _ = free => {}
        }
        drop(held);
        waiting.await;
    });
}

#[test]
fn a_symlink_loop_is_called_a_loop_by_reads_and_writes() {
    let (tree, _state, root, journal) = setup();
    symlink("b", tree.path().join("a")).unwrap();
    symlink("a", tree.path().join("b")).unwrap();
    let rel = root.confine("a", "path").unwrap();
    let refusal = Error::SymlinkLoop { arg: "path".into(), path: "a".into() };
    assert_eq!(root.read(&rel, "path").unwrap_err(), refusal);
    let write = journal.commit(&root, &[Change::write(rel, b"x".to_vec(), Expect::Anything)]);
    let message = write.unwrap_err().to_string();
    assert!(message.contains("resolves through a symlink loop"), "{message}");
}
