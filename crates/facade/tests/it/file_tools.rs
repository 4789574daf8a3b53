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
    let (_, one) = check(&project, "write", json!({"path": "one.txt", "content": "x"}));
    assert_eq!(one, "created one.txt (1 line, 1 byte)", "one is singular");
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
fn read_content_is_the_files_exact_text_and_the_numbered_text_says_crlf() {
    let project = Project::new(&[
        ("dos.txt", "one\r\ntwo\r\nlast"),
        ("mixed.txt", "a\nb\r\n"),
        ("unix.txt", "x\ny"),
    ]);
    let result = project.call(SurfaceKind::Plan, "read", json!({"path": "dos.txt"}));
    assert_eq!(result.structured.as_ref().unwrap()["content"], "one\r\ntwo\r\nlast");
    assert_eq!(result.text, "1\tone\n2\ttwo\n3\tlast\n[dos.txt: lines end in CRLF (\\r\\n)]\n");
    let result = project.call(
        SurfaceKind::Plan,
        "read",
        json!({"path": "dos.txt", "start_line": 2, "end_line": 2}),
    );
    assert_eq!(result.structured.as_ref().unwrap()["content"], "two\r\n");
    let result = project.call(SurfaceKind::Plan, "read", json!({"path": "mixed.txt"}));
    assert_eq!(result.structured.as_ref().unwrap()["content"], "a\nb\r\n");
    let result = project.call(SurfaceKind::Plan, "read", json!({"path": "unix.txt"}));
    assert_eq!(result.structured.as_ref().unwrap()["content"], "x\ny", "no newline added");
    assert_eq!(result.text, "1\tx\n2\ty\n");
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

/// Runs `calls` at once on one registry (one run, as parallel tool calls of one client).
fn call_concurrently(project: &Project, calls: Vec<(&'static str, Value)>) -> Vec<(bool, String)> {
    let registry = agent_tools::RegistryBuilder::new().with_reference_file_tools().build();
    let surface = registry.surface(SurfaceKind::Build);
    let run = agent_tools::RunInfo::new(project.dir.path());
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        let tasks: Vec<_> = calls
            .into_iter()
            .map(|(tool, args)| {
                let (surface, ctx) = (surface.clone(), surface.context(&run, None));
                tokio::spawn(async move { surface.call(&ctx, tool, args).await })
            })
            .collect();
        let mut results = Vec::new();
        for task in tasks {
            let result = task.await.unwrap();
            results.push((result.is_error, result.text));
        }
        results
    })
}

/// An edit that puts `marker` before the last line, which every such edit keeps.
fn insert_edit(marker: &str) -> Value {
    json!({"path": "log.txt", "old_string": "end\n", "new_string": format!("{marker}\nend\n")})
}

#[test]
fn concurrent_edits_of_one_file_in_one_run_all_land() {
    let project = Project::new(&[("log.txt", "start\nend\n")]);
    let calls = (0..24).map(|n| ("edit", insert_edit(&format!("edit {n}")))).collect();
    for (err, text) in call_concurrently(&project, calls) {
        assert!(!err, "{text}");
    }
    let log = project.read("log.txt");
    for n in 0..24 {
        assert!(log.contains(&format!("edit {n}\n")), "edit {n} was lost:\n{log}");
    }
}

#[test]
fn concurrent_patches_edits_and_writes_of_one_file_all_land_in_turn() {
    let project = Project::new(&[("log.txt", "start\nend\n"), ("other.txt", "x\n")]);
    let mut calls = Vec::new();
    for n in 0..8 {
        let patch = format!(
            "--- a/log.txt\n+++ b/log.txt\n@@ -1,1 +1,2 @@\n start\n+patch {n}\n--- a/other.txt\n+++ b/other.txt\n@@ -1,1 +1,2 @@\n x\n+patch {n}\n"
        );
        calls.push(("apply_patch", json!({"patch": patch})));
        calls.push(("edit", insert_edit(&format!("edit {n}"))));
        calls.push(("write", json!({"path": format!("w{n}.txt"), "content": "w\n"})));
    }
    for (err, text) in call_concurrently(&project, calls) {
        assert!(!err, "{text}");
    }
    let (log, other) = (project.read("log.txt"), project.read("other.txt"));
    for n in 0..8 {
        assert!(log.contains(&format!("patch {n}\n")), "patch {n} was lost:\n{log}");
        assert!(log.contains(&format!("edit {n}\n")), "edit {n} was lost:\n{log}");
        assert!(other.contains(&format!("patch {n}\n")), "patch {n} was lost:\n{other}");
    }
}

#[test]
fn special_files_are_refused_at_once_by_every_file_tool() {
    let project = Project::new(&[("ok.txt", "fine\n")]);
    let fifo = project.dir.path().join("pipe");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status().expect("run mkfifo");
    assert!(made.success(), "mkfifo");
    let _socket = std::os::unix::net::UnixListener::bind(project.dir.path().join("sock")).unwrap();
    for (name, kind) in [("pipe", "a FIFO (named pipe)"), ("sock", "a socket")] {
        let patch = format!("--- a/{name}\n+++ b/{name}\n@@ -1 +1 @@\n-a\n+b\n");
        let calls = vec![
            ("read", json!({"path": name})),
            ("write", json!({"path": name, "content": "x"})),
            ("edit", json!({"path": name, "old_string": "a", "new_string": "b"})),
            ("apply_patch", json!({"patch": patch})),
            ("read", json!({"path": "ok.txt"})),
        ];
        let results = call_concurrently(&project, calls);
        for (err, text) in &results[..4] {
            assert!(*err, "{text}");
            assert!(text.contains(&format!("{name} is {kind}, not a regular file")), "{text}");
        }
        assert_eq!(results[4], (false, "1\tfine\n".to_string()));
    }
    assert!(std::os::unix::fs::FileTypeExt::is_fifo(
        &std::fs::metadata(&fifo).unwrap().file_type()
    ));
}

#[test]
fn read_of_a_huge_sparse_file_answers_from_its_first_block() {
    let project = Project::new(&[]);
    let file = std::fs::File::create(project.dir.path().join("big.img")).unwrap();
    file.set_len(3 << 30).unwrap();
    let (err, text) = check(&project, "read", json!({"path": "big.img", "end_line": 3}));
    assert!(err);
    assert_eq!(
        text,
        "read: argument `path`: big.img is a binary file (3221225472 bytes); these tools handle text only"
    );
    let (err, text) =
        check(&project, "edit", json!({"path": "big.img", "old_string": "a", "new_string": "b"}));
    assert!(err && text.contains("is a binary file (3221225472 bytes)"), "{text}");
}

#[test]
fn read_of_a_huge_text_file_reads_only_the_lines_it_shows() {
    let project = Project::new(&[]);
    // Text lines, then gigabytes of a hole: reading past the first lines would take long and
    // could not tell the line count.
    let mut file = std::fs::File::create(project.dir.path().join("huge.log")).unwrap();
    let text: String = ["one\n", "two\n", "three\n"].concat() + &"more text\n".repeat(1000);
    std::io::Write::write_all(&mut file, text.as_bytes()).unwrap();
    file.set_len(4 << 30).unwrap();
    let result =
        project.call(SurfaceKind::Plan, "read", json!({"path": "huge.log", "end_line": 3}));
    assert!(!result.is_error, "{}", result.text);
    assert_eq!(
        result.text,
        "1\tone\n2\ttwo\n3\tthree\n[huge.log: showed lines 1-3 of a file of 4294967296 bytes with more lines; call read with start_line=4 to continue]\n"
    );
    assert_eq!(
        result.structured,
        Some(
            json!({"path": "huge.log", "start_line": 1, "end_line": 3, "content": "one\ntwo\nthree\n",
                "note": "[huge.log: showed lines 1-3 of a file of 4294967296 bytes with more lines; call read with start_line=4 to continue]"})
        )
    );
}

#[test]
fn read_of_a_line_of_gigabytes_cuts_it_without_reading_to_its_end() {
    let project = Project::new(&[]);
    // Line 3 is 10,000 characters (the first block is text) and then a 4 GiB hole with no
    // newline: reading it to its end to count the lines would read 4 GiB.
    let mut file = std::fs::File::create(project.dir.path().join("hole.log")).unwrap();
    let text = format!("one\ntwo\n{}", "x".repeat(10_000));
    std::io::Write::write_all(&mut file, text.as_bytes()).unwrap();
    file.set_len(4 << 30).unwrap();
    let result =
        project.call(SurfaceKind::Plan, "read", json!({"path": "hole.log", "start_line": 2}));
    assert!(!result.is_error, "{}", result.text);
    let structured = result.structured.as_ref().expect("the payload");
    assert_eq!(structured.get("total_lines"), None, "the line count needs the whole file");
    let note = structured["note"].as_str().unwrap_or_default();
    assert!(note.contains("of a file of 4294967296 bytes with more lines"), "{note}");
    assert!(result.text.starts_with("2\ttwo\n"), "{}", &result.text[..100]);
}

#[test]
fn read_of_a_large_text_file_shows_the_range_asked_and_counts_lines_nearby() {
    let lines: String = (1..=300_000).map(|n| format!("line {n}\n")).collect();
    let project = Project::new(&[("large.txt", &lines)]);
    assert_eq!(
        check(&project, "read", json!({"path": "large.txt", "start_line": 299_999})),
        (false, "299999\tline 299999\n300000\tline 300000\n".into())
    );
    let (err, text) = check(&project, "read", json!({"path": "large.txt", "end_line": 3}));
    assert!(!err);
    assert_eq!(
        text,
        "1\tline 1\n2\tline 2\n3\tline 3\n[large.txt: showed lines 1-3 of 300000; call read with start_line=4 to continue]\n"
    );
    let result = project.call(SurfaceKind::Plan, "read", json!({"path": "large.txt"}));
    assert!(result.text.contains("showed lines 1-2000 of 300000; call read with start_line=2001"));
}

#[test]
fn read_cuts_a_line_longer_than_one_read_shows_and_says_where_to_go_on() {
    let long = "x".repeat(3 << 20);
    let project = Project::new(&[("min.js", &format!("{long}\nnext\n"))]);
    let result = project.call(SurfaceKind::Plan, "read", json!({"path": "min.js"}));
    assert!(!result.is_error);
    // One line over the output cap: cut to what fits, in the text and the payload alike.
    let structured = result.structured.as_ref().expect("the payload, cut like the text");
    let content = structured["content"].as_str().unwrap();
    assert!(content.len() > 30_000 && content.len() < 40_000, "{} bytes", content.len());
    assert_eq!(structured["end_line"], 1);
    assert_eq!(structured["total_lines"], 2);
    let note = structured["note"].as_str().unwrap();
    assert!(note.contains("line 1 is longer than the 40000-character output cap"), "{note}");
    assert!(note.contains("start_line=2"), "{note}");
    assert!(result.text.chars().count() <= 40_000);
    assert!(result.text.contains(&content[content.len() - 100..]), "the same part of the line");
    assert!(result.text.trim_end().ends_with(note), "{}", &result.text[result.text.len() - 300..]);
    assert_eq!(
        check(&project, "read", json!({"path": "min.js", "start_line": 2})),
        (false, "2\tnext\n".into())
    );
}

#[test]
fn write_over_a_file_too_large_to_load_replaces_it_without_loading_it() {
    use agent_tools::Before;
    let project = Project::new(&[]);
    let file = std::fs::File::create(project.dir.path().join("huge.bin")).unwrap();
    file.set_len(65 << 20).unwrap();
    let result = project.call(
        SurfaceKind::Build,
        "write",
        json!({"path": "huge.bin", "content": "small\n"}),
    );
    assert!(!result.is_error, "{}", result.text);
    assert_eq!(result.changed_files[0].before, Before::Unknown);
    assert_eq!(project.read("huge.bin"), "small\n");
}
