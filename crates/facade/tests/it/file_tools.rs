//! The reference file tools: numbered reads, atomic writes, exact edits, all-or-nothing patches,
//! and confinement to the run's root.

use std::os::unix::fs::PermissionsExt;

use agent_tools::SurfaceKind;
use agent_tools_support::fs::exchange;
use serde_json::{Value, json};

use crate::Project;

fn check(project: &Project, tool: &str, args: Value) -> (bool, String) {
    let result = project.call(SurfaceKind::Build, tool, args);
    (result.is_error, result.text)
}

#[test]
fn read_numbers_lines_and_honours_a_range() {
    let project = Project::new(&[("a.py", "one\ntwo\nthree\n")]);
    assert_eq!(
        check(&project, "read", json!({"path": "a.py"})),
        (false, "1\tone\n2\ttwo\n3\tthree\n".into())
    );
    assert_eq!(
        check(&project, "read", json!({"path": "a.py", "start_line": 2, "end_line": 2})),
        (
            false,
            "2\ttwo\n[a.py: showed lines 2-2 of 3; call read with start_line=3 to continue]\n"
                .into()
        )
    );
    let (err, text) = check(&project, "read", json!({"path": "a.py", "start_line": 9}));
    assert!(err);
    insta::assert_snapshot!(text, @"read: argument `start_line` is 9, but a.py has only 3 lines; use 1..=3");
}

#[test]
fn read_and_edit_refuse_binary_and_non_utf8_files() {
    let project = Project::new(&[]);
    std::fs::write(project.dir.path().join("bin.dat"), [0u8, 1, 2, 3]).unwrap();
    std::fs::write(project.dir.path().join("latin1.txt"), [b'a', 0xe9, b'\n']).unwrap();
    let (err, text) = check(&project, "read", json!({"path": "bin.dat"}));
    assert!(err);
    insta::assert_snapshot!(text, @"read: argument `path`: bin.dat is a binary file (4 bytes); these tools handle text only");
    let (err, text) = check(
        &project,
        "edit",
        json!({"path": "latin1.txt", "old_string": "a", "new_string": "b"}),
    );
    assert!(err);
    insta::assert_snapshot!(text, @"edit: argument `path`: latin1.txt is not valid UTF-8 (first bad byte at offset 1); these tools handle text only");
}

#[test]
fn paths_outside_the_root_are_refused() {
    let project = Project::new(&[("inside.txt", "ok\n")]);
    let (err, text) = check(&project, "read", json!({"path": "../etc/passwd"}));
    assert!(err);
    assert!(text.contains("is outside the run's root"), "{text}");
    let (err, text) = check(&project, "read", json!({"path": "/etc/passwd"}));
    assert!(err && text.contains("is outside the run's root"), "{text}");
    let (err, text) = check(&project, "write", json!({"path": "sub/../../x.txt", "content": "x"}));
    assert!(err && text.contains("is outside the run's root"), "{text}");
    let (err, _) = check(&project, "read", json!({"path": "sub/../inside.txt"}));
    assert!(!err);
}

#[test]
fn symlinks_that_leave_the_root_are_refused_and_inner_ones_work() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "secret\n").unwrap();
    let project = Project::new(&[("real.txt", "real\n")]);
    std::os::unix::fs::symlink(outside.path(), project.dir.path().join("escape")).unwrap();
    std::os::unix::fs::symlink(
        project.dir.path().join("real.txt"),
        project.dir.path().join("alias.txt"),
    )
    .unwrap();
    let (err, text) = check(&project, "read", json!({"path": "escape/secret.txt"}));
    assert!(err && text.contains("resolves through a symlink"), "{text}");
    let (err, text) = check(&project, "write", json!({"path": "escape/new.txt", "content": "x"}));
    assert!(err && text.contains("resolves through a symlink"), "{text}");
    assert!(!outside.path().join("new.txt").exists());
    assert_eq!(check(&project, "read", json!({"path": "alias.txt"})), (false, "1\treal\n".into()));
}

#[test]
fn write_is_atomic_and_keeps_permissions() {
    let project = Project::new(&[("run.sh", "#!/bin/sh\n")]);
    let script = project.dir.path().join("run.sh");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (err, text) =
        check(&project, "write", json!({"path": "run.sh", "content": "#!/bin/sh\necho hi\n"}));
    assert!(!err, "{text}");
    assert_eq!(text, "replaced run.sh (2 lines, 18 bytes)");
    assert_eq!(std::fs::metadata(&script).unwrap().permissions().mode() & 0o777, 0o755);
    let leftovers: Vec<_> = std::fs::read_dir(project.dir.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(".agent-tools-"))
        .collect();
    assert!(leftovers.is_empty(), "temp files left behind: {leftovers:?}");
}

#[test]
fn edit_replaces_one_exact_match_and_explains_absent_or_ambiguous_ones() {
    let project = Project::new(&[("a.rs", "let x = 1;\nlet y = 1;\n    let  z = 2;\n")]);
    let (err, text) = check(
        &project,
        "edit",
        json!({"path": "a.rs", "old_string": "= 1;", "new_string": "= 3;"}),
    );
    assert!(err);
    insta::assert_snapshot!(text, @"edit: argument `old_string` occurs 2 times in a.rs (lines 1, 2); include surrounding lines to make it unique, or set replace_all");
    let (err, text) = check(
        &project,
        "edit",
        json!({"path": "a.rs", "old_string": "let z = 2;", "new_string": "let z = 4;"}),
    );
    assert!(err);
    insta::assert_snapshot!(text, @"edit: argument `old_string` was not found in a.rs. A similar line differing in whitespace is at line 3. Read the file and copy the exact text, including indentation");
    let (err, text) = check(
        &project,
        "edit",
        json!({"path": "a.rs", "old_string": "let y = 1;", "new_string": "let y = 2;"}),
    );
    assert!(!err, "{text}");
    assert_eq!(text, "edited a.rs: 1 replacement at line 2");
    let (err, _) = check(
        &project,
        "edit",
        json!({"path": "a.rs", "old_string": "let", "new_string": "const", "replace_all": true}),
    );
    assert!(!err);
    assert_eq!(project.read("a.rs"), "const x = 1;\nconst y = 2;\n    const  z = 2;\n");
}

const TWO_FILE_PATCH: &str = "\
--- a/src/a.txt
+++ b/src/a.txt
@@ -1,3 +1,3 @@
 alpha
-beta
+BETA
 gamma
--- a/b.txt
+++ b/b.txt
@@ -1,2 +1,3 @@
 one
+one and a half
 two
--- /dev/null
+++ b/new.txt
@@ -0,0 +1,1 @@
+fresh
";

#[test]
fn apply_patch_changes_several_files_and_creates_new_ones() {
    let project = Project::new(&[("src/a.txt", "alpha\nbeta\ngamma\n"), ("b.txt", "one\ntwo\n")]);
    let (err, text) = check(&project, "apply_patch", json!({"patch": TWO_FILE_PATCH}));
    assert!(!err, "{text}");
    insta::assert_snapshot!(text, @r"
    applied patch to 3 file(s):
    patched src/a.txt (1 hunk)
    patched b.txt (1 hunk)
    created new.txt (1 hunk)
    ");
    assert_eq!(project.read("src/a.txt"), "alpha\nBETA\ngamma\n");
    assert_eq!(project.read("b.txt"), "one\none and a half\ntwo\n");
    assert_eq!(project.read("new.txt"), "fresh\n");
}

#[test]
fn apply_patch_is_all_or_nothing() {
    // The second file no longer holds what the patch expects: nothing may change, not even the first.
    let project = Project::new(&[("src/a.txt", "alpha\nbeta\ngamma\n"), ("b.txt", "uno\ndos\n")]);
    let (err, text) = check(&project, "apply_patch", json!({"patch": TWO_FILE_PATCH}));
    assert!(err);
    insta::assert_snapshot!(text, @r#"apply_patch: hunk 1 of b.txt (@@ -1,2 +1,3 @@) does not apply: its 2 original line(s) starting with "one" were not found at or after line 1; the file may differ from what the patch expects, read it again and regenerate the patch; no file was changed"#);
    assert_eq!(project.read("src/a.txt"), "alpha\nbeta\ngamma\n");
    assert_eq!(project.read("b.txt"), "uno\ndos\n");
    assert!(!project.dir.path().join("new.txt").exists());
}

#[test]
fn apply_patch_finds_hunks_that_moved_and_deletes_files() {
    let project = Project::new(&[("a.txt", "header\nextra\nalpha\nbeta\n"), ("gone.txt", "bye\n")]);
    let patch = "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n alpha\n-beta\n+BETA\n--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n";
    let (err, text) = check(&project, "apply_patch", json!({"patch": patch}));
    assert!(!err, "{text}");
    assert_eq!(project.read("a.txt"), "header\nextra\nalpha\nBETA\n");
    assert!(!project.dir.path().join("gone.txt").exists());
}

#[test]
fn apply_patch_rejects_text_that_is_not_a_diff() {
    let project = Project::new(&[]);
    let (err, text) = check(&project, "apply_patch", json!({"patch": "please change foo to bar"}));
    assert!(err);
    insta::assert_snapshot!(text, @"apply_patch: argument `patch`: no file sections found; expected a unified diff with `--- a/path`, `+++ b/path` and `@@ -l,n +l,n @@` hunks; no file was changed");
}

fn stray_temp_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        if entry.file_name().to_string_lossy().starts_with(".agent-tools-") {
            found.push(entry.path());
        }
        if entry.file_type().unwrap().is_dir() {
            found.extend(stray_temp_files(&entry.path()));
        }
    }
    found
}

#[test]
fn a_folder_swapped_for_an_outside_symlink_during_writes_never_gets_a_file_outside() {
    let outside = tempfile::tempdir().unwrap();
    let project = Project::new(&[("sub/e.txt", "n=0\n"), ("sub/p.txt", "a\n")]);
    std::os::unix::fs::symlink(outside.path(), project.dir.path().join("swap")).unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let racer = {
        let stop = stop.clone();
        let (sub, swap) = (project.dir.path().join("sub"), project.dir.path().join("swap"));
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let _ = exchange(&sub, &swap);
            }
        })
    };
    for n in 0..150 {
        project.call(
            SurfaceKind::Build,
            "write",
            json!({"path": format!("sub/w{n}.txt"), "content": "x"}),
        );
        project.call(
            SurfaceKind::Build,
            "edit",
            json!({"path": "sub/e.txt", "old_string": format!("n={n}\n"), "new_string": format!("n={}\n", n + 1)}),
        );
        let patch = format!("--- /dev/null\n+++ b/sub/p{n}.txt\n@@ -0,0 +1 @@\n+p\n");
        project.call(SurfaceKind::Build, "apply_patch", json!({"patch": patch}));
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    racer.join().unwrap();
    let leaked: Vec<_> =
        std::fs::read_dir(outside.path()).unwrap().flatten().map(|e| e.file_name()).collect();
    assert!(leaked.is_empty(), "files written outside the root: {leaked:?}");
    assert!(
        stray_temp_files(project.dir.path()).is_empty(),
        "{:?}",
        stray_temp_files(project.dir.path())
    );
}

#[test]
fn read_returns_the_lines_as_structured_content_too() {
    let project = Project::new(&[("a.py", "one\ntwo\nthree\n")]);
    let result = project.call(SurfaceKind::Plan, "read", json!({"path": "a.py", "start_line": 2}));
    assert_eq!(
        result.structured,
        Some(
            json!({"path": "a.py", "start_line": 2, "end_line": 3, "total_lines": 3, "content": "two\nthree\n"})
        )
    );
}

#[test]
fn writes_report_what_each_file_held_before() {
    use agent_tools::Before;
    let project = Project::new(&[("old.txt", "before\n")]);
    let result =
        project.call(SurfaceKind::Build, "write", json!({"path": "old.txt", "content": "after\n"}));
    assert_eq!(result.changed_files[0].before, Before::Contents(b"before\n".as_slice().into()));
    let result =
        project.call(SurfaceKind::Build, "write", json!({"path": "new.txt", "content": "x"}));
    assert_eq!(result.changed_files[0].before, Before::Absent);
}
