//! A group commit killed by SIGKILL at any step leaves, after recovery, all files old or all
//! new, and no temp file or backup behind.

use std::{path::Path, process::Command};

use agent_tools_support::{
    fs::Root,
    journal::{self, Change, Expect, Journal},
};

const FILES: usize = 20;

fn names() -> Vec<String> {
    (0..FILES).map(|n| format!("pkg/m{n:02}.py")).collect()
}

/// The child side: when the variables are set, commit 20 files and die at the given step.
#[test]
fn crash_child() {
    let (Some(tree), Some(state), Some(step)) = (
        std::env::var_os("CRASH_TREE"),
        std::env::var_os("CRASH_STATE"),
        std::env::var("CRASH_STEP").ok(),
    ) else {
        return;
    };
    let root = Root::open(Path::new(&tree)).unwrap();
    let journal = Journal::at(Path::new(&state), &root).unwrap();
    let mut changes: Vec<Change> = names()
        .iter()
        .map(|n| {
            let rel = root.confine(n, "path").unwrap();
            Change::write(rel, b"new\n".to_vec(), Expect::holding(Some(b"old\n")))
        })
        .collect();
    // One file deleted and one created, so both kinds of step are crossed.
    changes[3].contents = None;
    changes.push(Change::write(
        root.confine("pkg/sub/created.py", "path").unwrap(),
        b"new\n".to_vec(),
        Expect::Absent,
    ));
    journal::crash_at_step(step.parse().unwrap());
    journal.commit(&root, &changes).unwrap();
}

fn leftovers(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with(journal::TEMP_PREFIX) {
            found.push(name);
        }
        if entry.file_type().unwrap().is_dir() {
            found.extend(leftovers(&entry.path()));
        }
    }
    found
}

#[test]
fn a_sigkill_at_every_step_of_a_20_file_commit_recovers_to_all_old_or_all_new() {
    let me = std::env::current_exe().unwrap();
    let mut saw_old = false;
    let mut saw_new = false;
    let mut step = 1;
    loop {
        let tree = tempfile::tempdir().unwrap();
        let state = tempfile::tempdir().unwrap();
        std::fs::create_dir(tree.path().join("pkg")).unwrap();
        for name in names() {
            std::fs::write(tree.path().join(name), "old\n").unwrap();
        }
        let status = Command::new(&me)
            .args([
                "--exact",
                &crate::harness_name(module_path!(), "crash_child"),
                "--nocapture",
                "--test-threads",
                "1",
            ])
            .env("CRASH_TREE", tree.path())
            .env("CRASH_STATE", state.path())
            .env("CRASH_STEP", step.to_string())
            .status()
            .unwrap();
        let completed = status.success();
        // The next run on this root recovers.
        let root = Root::open(tree.path()).unwrap();
        Journal::at(state.path(), &root).unwrap().recover(&root).unwrap();

        let contents: Vec<Option<String>> =
            names().iter().map(|n| std::fs::read_to_string(tree.path().join(n)).ok()).collect();
        let created = std::fs::read_to_string(tree.path().join("pkg/sub/created.py")).ok();
        let all_old = contents.iter().all(|c| c.as_deref() == Some("old\n"))
            && created.is_none()
            && !tree.path().join("pkg/sub").exists();
        let all_new = contents
            .iter()
            .enumerate()
            .all(|(i, c)| if i == 3 { c.is_none() } else { c.as_deref() == Some("new\n") })
            && created.as_deref() == Some("new\n");
        assert!(all_old || all_new, "step {step}: torn tree: {contents:?} created={created:?}");
        assert!(
            leftovers(tree.path()).is_empty(),
            "step {step}: left {:?}",
            leftovers(tree.path())
        );
        let journal_files = std::fs::read_dir(state.path().join("journal"))
            .unwrap()
            .flatten()
            .flat_map(|d| std::fs::read_dir(d.path()).unwrap().flatten())
            .count();
        assert_eq!(journal_files, 0, "step {step}: journal not cleaned");
        saw_old |= all_old;
        saw_new |= all_new;
        if completed {
            assert!(all_new, "a commit that returned must leave all new");
            break;
        }
        assert!(step < 200, "the commit never completed");
        step += 1;
    }
    assert!(
        saw_old && saw_new,
        "the steps crossed the commit point (old {saw_old}, new {saw_new})"
    );
    assert!(step > FILES * 2, "every file's steps were crossed ({step} steps)");
}
