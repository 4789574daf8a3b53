//! What the test files share: a temporary project written from (path, contents) pairs.

/// A temporary directory holding `files` (parent directories are created).
pub(crate) fn project<C: AsRef<[u8]>>(files: &[(&str, C)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    for (path, contents) in files {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, contents).expect("write");
    }
    dir
}
