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
