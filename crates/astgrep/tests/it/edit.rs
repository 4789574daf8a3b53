//! `ast_edit` and `resolve`: staging, diffs, indentation, nesting, syntax checks, stale rejection.

use std::path::Path;

use agent_tools_astgrep::{
    EditRequest, EditStore, Proposal, ResolveAction, ResolveRequest, SearchOptions,
    render_proposal, render_resolution,
};

use crate::support;
use support::project;

/// Stages `pattern` → `rewrite` under `root` in `store`.
fn check(
    store: &EditStore,
    root: &Path,
    pattern: &str,
    rewrite: &str,
    path: Option<&str>,
    lang: Option<&str>,
) -> Result<Proposal, String> {
    let req = EditRequest {
        pattern: Some(pattern.into()),
        rule: None,
        rewrite: Some(rewrite.into()),
        path: path.map(Into::into),
        language: lang.map(Into::into),
        context: None,
    };
    store.propose(root, &req, &SearchOptions::default()).map_err(|e| e.to_string())
}

fn resolve(store: &EditStore, id: &str, action: ResolveAction) -> Result<String, String> {
    store
        .resolve(&ResolveRequest { edit_id: id.into(), action })
        .map(|r| render_resolution(&r))
        .map_err(|e| e.to_string())
}

fn read(root: &Path, file: &str) -> String {
    std::fs::read_to_string(root.join(file)).expect("read")
}

const A_RS: &str = "fn a() {\n    let x = foo().unwrap();\n    let y = bar.unwrap();\n}\n";
const B_RS: &str = "fn b() {\n    q.unwrap();\n}\n";

#[test]
fn an_edit_is_staged_with_a_diff_and_written_only_on_accept() {
    let dir = project(&[("src/a.rs", A_RS), ("src/b.rs", B_RS)]);
    let store = EditStore::new();
    let p = check(
        &store,
        dir.path(),
        "$A.unwrap()",
        "$A.expect(\"checked\")",
        Some("src"),
        Some("rust"),
    )
    .unwrap();
    assert_eq!(p.edit_id.as_deref(), Some("edit_1"));
    assert_eq!((p.replacements, p.files.len()), (3, 2));
    insta::assert_snapshot!("proposal", render_proposal(&p));
    assert_eq!(read(dir.path(), "src/a.rs"), A_RS, "nothing is written before accept");
    let text = resolve(&store, "edit_1", ResolveAction::Accept).unwrap();
    assert_eq!(text, "accepted edit_1: wrote 3 replacements to 2 files: src/a.rs, src/b.rs");
    assert_eq!(read(dir.path(), "src/b.rs"), "fn b() {\n    q.expect(\"checked\");\n}\n");
    let err = resolve(&store, "edit_1", ResolveAction::Accept).unwrap_err();
    assert!(err.contains("`edit_1` was already accepted"), "{err}");
}

#[test]
fn a_stale_file_rejects_the_whole_edit_and_writes_nothing() {
    let dir = project(&[("src/a.rs", A_RS), ("src/b.rs", B_RS)]);
    let store = EditStore::new();
    let p = check(&store, dir.path(), "$A.unwrap()", "$A?", Some("src"), Some("rust")).unwrap();
    let id = p.edit_id.unwrap();
    let changed = "fn b() {\n    q.unwrap(); // edited meanwhile\n}\n";
    std::fs::write(dir.path().join("src/b.rs"), changed).unwrap();
    let err = resolve(&store, &id, ResolveAction::Accept).unwrap_err();
    assert!(
        err.contains("1 of 2 files changed since the edit was staged: src/b.rs (changed)"),
        "{err}"
    );
    assert!(err.contains("call ast_edit again"), "{err}");
    assert_eq!(read(dir.path(), "src/a.rs"), A_RS);
    assert_eq!(read(dir.path(), "src/b.rs"), changed);
    let err = resolve(&store, &id, ResolveAction::Accept).unwrap_err();
    assert!(err.contains("already rejected"), "{err}");
}

#[test]
fn discard_drops_the_edit_and_unknown_ids_are_named() {
    let dir = project(&[("a.py", "print(1)\n")]);
    let store = EditStore::new();
    let p = check(&store, dir.path(), "print($X)", "log($X)", None, Some("python")).unwrap();
    let id = p.edit_id.unwrap();
    let text = resolve(&store, &id, ResolveAction::Discard).unwrap();
    assert_eq!(text, "discarded edit_1 (1 replacement in 1 file); nothing was written");
    assert_eq!(read(dir.path(), "a.py"), "print(1)\n");
    let err = resolve(&store, "edit_1", ResolveAction::Discard).unwrap_err();
    assert!(err.contains("already discarded"), "{err}");
    let err = resolve(&store, "edit_7", ResolveAction::Accept).unwrap_err();
    assert!(err.contains("unknown edit_id `edit_7`; no edit is staged in this run"), "{err}");
    check(&store, dir.path(), "print($X)", "log($X)", None, Some("python")).unwrap();
    let err = resolve(&store, "bogus", ResolveAction::Accept).unwrap_err();
    assert!(err.contains("staged in this run: edit_2"), "{err}");
}

#[test]
fn multi_line_rewrites_keep_the_indentation_of_the_match() {
    let src =
        "class C:\n    def m(self):\n        if ok:\n            run(a,\n                b)\n";
    let dir = project(&[("m.py", src)]);
    let store = EditStore::new();
    let p = check(
        &store,
        dir.path(),
        "run($$$ARGS)",
        "try:\n    run($$$ARGS)\nexcept E:\n    pass",
        Some("m.py"),
        None,
    )
    .unwrap();
    assert!(p.files[0].new_syntax_error.is_none(), "{:?}", p.files);
    resolve(&store, p.edit_id.as_deref().unwrap(), ResolveAction::Accept).unwrap();
    assert_eq!(
        read(dir.path(), "m.py"),
        "class C:\n    def m(self):\n        if ok:\n            try:\n                run(a,\n                    b)\n            except E:\n                pass\n"
    );
}

#[test]
fn nested_matches_keep_the_outermost_and_say_how_many_were_skipped() {
    let dir = project(&[("n.js", "f(f(1));\nf(2);\n")]);
    let store = EditStore::new();
    let p = check(&store, dir.path(), "f($X)", "g($X)", Some("n.js"), None).unwrap();
    assert_eq!((p.replacements, p.skipped_nested), (2, 1));
    let text = render_proposal(&p);
    assert!(
        text.contains("[1 nested or overlapping match inside a rewritten match was left as is"),
        "{text}"
    );
    resolve(&store, "edit_1", ResolveAction::Accept).unwrap();
    assert_eq!(read(dir.path(), "n.js"), "g(f(1));\ng(2);\n");
}

#[test]
fn a_rewrite_that_breaks_the_syntax_is_flagged_with_file_and_line() {
    let dir = project(&[("s.rs", "fn m() {\n    a.unwrap();\n}\n")]);
    let store = EditStore::new();
    let p = check(&store, dir.path(), "$A.unwrap()", "$A.unwrap(", Some("s.rs"), None).unwrap();
    assert_eq!(p.files[0].new_syntax_error.as_deref(), Some("s.rs:2:13"), "{:?}", p.files);
    assert!(
        render_proposal(&p)
            .contains("[warning: the rewrite introduces a syntax error at s.rs:2:13]")
    );
}

#[test]
fn rewrite_errors_and_empty_results() {
    let dir = project(&[("a.py", "print(1)\n")]);
    let store = EditStore::new();
    let err = check(&store, dir.path(), "print($X)", "log($Y)", None, Some("python")).unwrap_err();
    assert!(err.contains("`$Y` is not bound by the pattern; the pattern binds $X"), "{err}");
    let err = check(&store, dir.path(), "print($_)", "log($_)", None, Some("python")).unwrap_err();
    assert!(err.contains("binds nothing"), "{err}");
    let p = check(&store, dir.path(), "input($X)", "log($X)", None, Some("python")).unwrap();
    assert!(p.edit_id.is_none());
    let text = render_proposal(&p);
    assert!(text.starts_with("(nothing staged)"), "{text}");
    assert!(store.staged_ids().is_empty());
}

#[test]
fn a_long_diff_is_cut_with_a_note_but_fully_staged() {
    let src: String = (0..400).map(|i| format!("print({i})\n")).collect();
    let dir = project(&[("big.py", &src)]);
    let store = EditStore::new();
    let p = check(&store, dir.path(), "print($X)", "log($X)", Some("big.py"), None).unwrap();
    assert_eq!(p.replacements, 400);
    let text = render_proposal(&p);
    assert!(text.contains("[diff cut: showed 300 of"), "{text}");
    assert!(text.contains("the staged edit holds all of it. Files: big.py (400)]"), "{text}");
    resolve(&store, "edit_1", ResolveAction::Accept).unwrap();
    assert_eq!(read(dir.path(), "big.py"), src.replace("print(", "log("));
}

#[test]
fn a_rewrite_that_changes_nothing_stages_nothing_and_says_so() {
    let dir = project(&[("a.py", "print(1)\nprint(2)\n")]);
    let store = EditStore::new();
    let p = check(&store, dir.path(), "print($X)", "print($X)", None, Some("python")).unwrap();
    assert!(p.edit_id.is_none());
    let text = render_proposal(&p);
    assert!(
        text.contains("2 matches in `.`, but the rewrite leaves the code exactly as it is"),
        "{text}"
    );
}

/// Names of the files under `dir`, recursively, relative to it.
fn tree(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(path);
            } else {
                out.push(path.strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    out.sort();
    out
}

#[test]
fn accept_never_writes_outside_the_root_when_a_folder_became_a_symlink_after_staging() {
    let dir = project(&[("root/stage/t.py", "print(1)\n"), ("outside/t.py", "print(1)\n")]);
    let root = dir.path().join("root");
    let outside = dir.path().join("outside");
    let store = EditStore::new();
    let staged = check(&store, &root, "print($X)", "log($X)", Some("stage/t.py"), None).unwrap();
    assert_eq!(staged.edit_id.as_deref(), Some("edit_1"));
    // The folder is swapped for a symlink to an outside folder holding identical bytes.
    std::fs::rename(root.join("stage"), dir.path().join("stage.moved")).unwrap();
    std::os::unix::fs::symlink(&outside, root.join("stage")).unwrap();
    let err = resolve(&store, "edit_1", ResolveAction::Accept).unwrap_err();
    assert!(
        err.contains("no longer inside the root") && err.contains("Nothing was written"),
        "{err}"
    );
    assert_eq!(read(&outside, "t.py"), "print(1)\n");
    assert_eq!(tree(&outside), ["t.py"]);
}

#[test]
fn accept_racing_a_folder_swap_puts_no_file_outside_the_root() {
    let dir = project(&[("root/sub/t.py", "print(1)\n"), ("outside/t.py", "print(1)\n")]);
    let root = dir.path().join("root");
    let outside = dir.path().join("outside");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapper = std::thread::spawn({
        let (root, outside, stop) = (root.clone(), outside.clone(), stop.clone());
        let parked = dir.path().join("sub.parked");
        move || {
            let mut swaps = 0u32;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                // sub → symlink to outside, then back: the window a racing write could use.
                if std::fs::rename(root.join("sub"), &parked).is_ok() {
                    let _ = std::os::unix::fs::symlink(&outside, root.join("sub"));
                    std::thread::yield_now();
                    let _ = std::fs::remove_file(root.join("sub"));
                    let _ = std::fs::rename(&parked, root.join("sub"));
                    swaps += 1;
                    // Mostly a real folder, so stagings succeed and accepts race the swap.
                    std::thread::sleep(std::time::Duration::from_micros(300));
                }
            }
            swaps
        }
    });
    let store = EditStore::new();
    let mut accepted = 0;
    for i in 0..200 {
        // Alternate the rewrite so every round has something to write.
        let (from, to) =
            if i % 2 == 0 { ("print($X)", "log($X)") } else { ("log($X)", "print($X)") };
        // Stage while `sub` is the real folder (bounded wait), so the race is against accept.
        for _ in 0..10_000 {
            if std::fs::symlink_metadata(root.join("sub")).is_ok_and(|m| m.is_dir()) {
                break;
            }
            std::thread::yield_now();
        }
        let Ok(p) = check(&store, &root, from, to, Some("sub"), Some("python")) else { continue };
        let Some(id) = p.edit_id else { continue };
        if resolve(&store, &id, ResolveAction::Accept).is_ok() {
            accepted += 1;
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    assert!(swaps > 0, "the folder was never swapped");
    assert_eq!(read(&outside, "t.py"), "print(1)\n", "a write went outside the root");
    assert_eq!(tree(&outside), ["t.py"], "files appeared outside the root");
    let leftovers: Vec<String> =
        tree(&root).into_iter().filter(|f| f.contains(".agent-tools-")).collect();
    assert!(leftovers.is_empty(), "temp files left: {leftovers:?}");
    // Accepts did go through between swaps, so the loop exercised the write path.
    assert!(accepted > 0, "no accept of 200 was written ({swaps} swaps)");
}

/// Issue 27: one match rewritten to 100,000 lines gives one hunk, built from the replaced range
/// (a whole-file line diff of that took 100 s, and 300 ms with a deadline and coarser hunks):
/// the three lines of context before it, the removed line, every added line, and the context
/// after it; the staged file is the rewrite.
#[test]
fn a_match_rewritten_to_100k_lines_gives_the_exact_hunk() {
    let source = "def f():\n    pass\n\nmarker()\nprint(1)\n";
    let dir = project(&[("one.py", source)]);
    let store = EditStore::new();
    let rewrite = vec!["x = 1"; 100_000].join("\n");
    let p =
        check(&store, dir.path(), "marker()", &rewrite, Some("one.py"), Some("python")).unwrap();
    assert_eq!(p.replacements, 1);
    let added: String = (0..100_000).map(|_| "+x = 1\n").collect();
    let expected = format!(
        "--- a/one.py\n+++ b/one.py\n@@ -1,5 +1,100004 @@\n def f():\n     pass\n \n-marker()\n{added} print(1)\n"
    );
    assert!(p.diff == expected, "diff starts {:?}", &p.diff[..p.diff.len().min(300)]);
    assert_eq!(p.files[0].new_syntax_error, None);
    resolve(&store, "edit_1", ResolveAction::Accept).unwrap();
    assert_eq!(read(dir.path(), "one.py"), format!("def f():\n    pass\n\n{rewrite}\nprint(1)\n"));
}
