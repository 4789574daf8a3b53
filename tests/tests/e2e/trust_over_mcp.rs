//! Read means read: on the plan surface, a hostile repository's own binaries, build scripts and
//! configured commands never run, and the tree is byte-identical after the calls. And a host
//! killed in the middle of a 20-file `resolve` leaves, after the next start, all old or all new;
//! hosts killed in the middle of writes leave, after the next start, nothing in the journal.

use std::{
    collections::BTreeMap,
    os::unix::fs::PermissionsExt,
    path::{Path, PathBuf},
};

use serde_json::json;

use crate::support::{McpScript, RawHost, TempProject, text_of};

/// Every file under `dir` with its bytes, symlinks as their targets.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        for entry in std::fs::read_dir(&current).into_iter().flatten().flatten() {
            let path = entry.path();
            let kind = entry.file_type().unwrap();
            let rel = path.strip_prefix(dir).unwrap().to_path_buf();
            if kind.is_dir() {
                out.insert(rel, b"<dir>".to_vec());
                pending.push(path);
            } else if kind.is_symlink() {
                out.insert(
                    rel,
                    std::fs::read_link(&path).unwrap().into_os_string().into_encoded_bytes(),
                );
            } else {
                out.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    out
}

/// A repository that tries to run its own code through every door a read tool might open.
fn hostile_repository(canary: &Path) -> TempProject {
    let trap = |name: &str| format!("#!/bin/sh\ntouch '{}/{name}'\nexit 1\n", canary.display());
    let files: Vec<(String, String)> = vec![
        ("pyproject.toml".into(), "[project]\nname = \"app\"\nversion = \"0.1.0\"\n".into()),
        (
            "app.py".into(),
            "def greet(name: str) -> str:\n    return 'hi ' + name\n\ngreet(1)\n".into(),
        ),
        (".venv/bin/python".into(), trap("venv-python")),
        (".venv/bin/basedpyright-langserver".into(), trap("venv-basedpyright-langserver")),
        (".venv/bin/basedpyright".into(), trap("venv-basedpyright")),
        (".venv/bin/pyright-langserver".into(), trap("venv-pyright-langserver")),
        // A virtual environment the project's pyright configuration names: read, never run.
        ("pyrightconfig.json".into(), "{\"venvPath\": \"envs\", \"venv\": \"hostile\"}\n".into()),
        ("envs/hostile/pyvenv.cfg".into(), "home = /usr/bin\n".into()),
        ("envs/hostile/bin/python".into(), trap("pyrightconfig-venv-python")),
        ("envs/hostile/bin/python3".into(), trap("pyrightconfig-venv-python3")),
        // Volta would run the project's own copy of a direct dependency's binary, and the
        // Node a `volta` key pins (or `extends` from another file).
        (
            "package.json".into(),
            "{\"name\": \"app\", \"version\": \"1.0.0\", \"volta\": {\"node\": \"99.0.0\", \
             \"extends\": \"./volta.json\"}, \"devDependencies\": \
             {\"typescript-language-server\": \"*\", \"typescript\": \"*\"}}\n"
                .into(),
        ),
        ("volta.json".into(), "{\"volta\": {\"node\": \"98.0.0\"}}\n".into()),
        (
            "tsconfig.json".into(),
            "{\"compilerOptions\": {\"strict\": true, \"incremental\": true}}\n".into(),
        ),
        ("index.ts".into(), "export const n: number = 'x';\n".into()),
        ("node_modules/.bin/tsc".into(), trap("node-tsc")),
        ("node_modules/.bin/typescript-language-server".into(), trap("node-tsls")),
        (
            "Cargo.toml".into(),
            "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n".into(),
        ),
        (
            "build.rs".into(),
            format!(
                "fn main() {{ std::fs::write(\"{}/build-rs\", \"ran\").unwrap(); }}\n",
                canary.display()
            ),
        ),
        ("src/main.rs".into(), "fn main() { let x: u32 = \"no\"; }\n".into()),
        ("main.c".into(), "int main(void) { return undefined_name; }\n".into()),
        (
            "compile_commands.json".into(),
            "[{\"directory\": \".\", \"file\": \"main.c\", \"command\": \"cc -c main.c\"}]\n"
                .into(),
        ),
        (
            "agent-tools.toml".into(),
            format!(
                "[lsp]\nextra_paths = [\".venv/bin\"]\n\
                 [lsp.servers.python]\ncommands = [[\"{c}/../trap.sh\"]]\ncheck_commands = [[\"{c}/../trap.sh\"]]\n\
                 [vibe]\nenabled = true\n[vibe.fast]\ncommand = [\"sh\", \"-c\", \"touch {c}/vibe-command\"]\n\
                 read_only_command = [\"sh\", \"-c\", \"touch {c}/vibe-read-only\"]\n",
                c = canary.display()
            ),
        ),
    ];
    let borrowed: Vec<(&str, &str)> = files.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    let project = TempProject::new(&borrowed);
    for dir in [".venv/bin", "envs/hostile/bin", "node_modules/.bin"] {
        for entry in std::fs::read_dir(project.root.join(dir)).unwrap().flatten() {
            std::fs::set_permissions(entry.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }
    project
}

#[test]
fn the_plan_surface_runs_nothing_the_repository_controls_and_leaves_the_tree_as_it_was() {
    let canary = TempProject::new(&[]);
    let trap = canary.root.as_path().join("../trap.sh");
    let project = hostile_repository(canary.root.as_path());
    let before = snapshot(&project.root);
    // The user's own configuration: none (the project's file is all there is, and untrusted).
    let user = TempProject::new(&[]);
    // SAFETY: nextest runs each test in a process of its own; no other thread reads it.
    unsafe { std::env::set_var("AGENT_TOOLS_CONFIG", user.root.join("none.toml")) };

    let script = McpScript::untrusted(&project.root, &["--surface", "plan", "--vibe"])
        .list_tools()
        .call("lsp", json!({"action": "status"}))
        .call("lsp", json!({"action": "diagnostics", "file": "app.py"}))
        .call("lsp", json!({"action": "hover", "file": "app.py", "line": 1, "symbol": "greet"}))
        .call("lsp", json!({"action": "diagnostics", "file": "*"}))
        .call("lsp", json!({"action": "diagnostics", "file": "index.ts"}))
        .call("lsp", json!({"action": "diagnostics", "file": "main.c"}))
        .call("lsp", json!({"action": "symbols", "query": "greet"}))
        .call("ast_grep", json!({"pattern": "greet($X)", "path": "app.py"}))
        .call("read", json!({"path": "app.py"}))
        .call("vibe_spawn", json!({"brief": "look around", "label": "scout"}))
        .call("vibe_list", json!({}));
    let Some(out) = script.run_and_end() else { return };
    let results = crate::support::results(out);
    let names = crate::support::tool_names(&results[1]);
    assert!(!names.contains(&"write") && !names.contains(&"eval"), "{names:?}");

    let ran: Vec<String> = std::fs::read_dir(canary.root.as_path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    let texts: Vec<&str> = results.iter().map(text_of).collect();
    assert!(ran.is_empty(), "the plan surface ran repository code: {ran:?}\nresults: {texts:#?}");
    assert!(!trap.exists());
    let after = snapshot(&project.root);
    let changed: Vec<_> =
        after.keys().chain(before.keys()).filter(|k| before.get(*k) != after.get(*k)).collect();
    assert!(changed.is_empty(), "read calls changed the tree: {changed:?}");
}

#[test]
fn a_host_killed_during_a_20_file_resolve_leaves_all_old_or_all_new_after_the_next_start() {
    let files: Vec<(String, String)> =
        (0..20).map(|n| (format!("pkg/m{n:02}.py"), format!("value = old_name({n})\n"))).collect();
    let borrowed: Vec<(&str, &str)> = files.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    let state = TempProject::new(&[]);
    // SAFETY: nextest runs each test in a process of its own; no other thread reads it.
    unsafe { std::env::set_var("AGENT_TOOLS_STATE_DIR", &state.root) };
    let mut saw = (false, false);
    let waits_ms = [0u64, 1, 2, 4, 8, 16, 32, 64];
    for trial in 0..=waits_ms.len() {
        let project = TempProject::new(&borrowed);
        let marker = format!("trust-kill-{}-{trial}", std::process::id());
        let mut host = RawHost::start(&project.root, &marker, &[]);
        host.initialize();
        let staged = host.call(2, "ast_edit", json!({"pattern": "old_name($N)", "rewrite": "new_name($N)", "path": "pkg", "language": "python"}));
        let staged_text = staged.to_string();
        // The id is `edit_` and a number (not the `edit_id` that names it).
        let edit_id = staged_text
            .match_indices("edit_")
            .map(|(at, _)| &staged_text[at + 5..])
            .find(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
            .map(|rest| {
                format!(
                    "edit_{}",
                    rest.chars().take_while(char::is_ascii_digit).collect::<String>()
                )
            })
            .expect("an edit id in the ast_edit result");
        let accept = json!({"edit_id": edit_id, "action": "accept"});
        match waits_ms.get(trial) {
            // Kill at a different instant each trial, from at once to well into the commit.
            Some(wait) => {
                host.send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                    "params": {"name": "resolve", "arguments": accept}}));
                std::thread::sleep(std::time::Duration::from_millis(*wait));
            }
            // The last trial lets it finish.
            None => {
                host.call(3, "resolve", accept);
            }
        }
        let _ = host.child.kill();
        let _ = host.child.wait();

        // The next start of a run on this root recovers before anything else.
        let mut next = RawHost::start(&project.root, &format!("{marker}-next"), &[]);
        next.initialize();
        next.call(2, "read", json!({"path": "pkg/m00.py"}));
        let _ = next.child.kill();
        let _ = next.child.wait();

        let contents: Vec<String> = files
            .iter()
            .map(|(p, _)| std::fs::read_to_string(project.root.join(p)).unwrap())
            .collect();
        let all_old = contents.iter().all(|c| c.contains("old_name"));
        let all_new = contents.iter().all(|c| c.contains("new_name"));
        assert!(all_old || all_new, "trial {trial}: torn tree: {contents:?}");
        let strays = temp_files_in(&project.root.join("pkg"));
        assert!(strays.is_empty(), "trial {trial}: temp files left: {strays:?}");
        saw.0 |= all_old;
        saw.1 |= all_new;
        let left = journal_leftovers(&state.root);
        assert!(left.is_empty(), "trial {trial}: the journal kept {left:?}");
    }
    assert!(saw.1, "at least one trial let the commit finish");
}

/// The writers' temp files and backups left in `dir` (a finished or recovered commit leaves none).
fn temp_files_in(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(".agent-tools-"))
        .collect()
}

/// What is left in the journal folders under `state`: intent records, their temp files and
/// lock files (a recovered journal holds none).
fn journal_leftovers(state: &Path) -> Vec<String> {
    let mut left = Vec::new();
    for folder in std::fs::read_dir(state.join("journal")).into_iter().flatten().flatten() {
        for entry in std::fs::read_dir(folder.path()).into_iter().flatten().flatten() {
            left.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    left.sort();
    left
}

#[test]
fn hosts_killed_in_the_middle_of_writes_leave_no_journal_lock_after_the_next_start() {
    let state = TempProject::new(&[]);
    // SAFETY: nextest runs each test in a process of its own; no other thread reads it.
    unsafe { std::env::set_var("AGENT_TOOLS_STATE_DIR", &state.root) };
    let project = TempProject::new(&[("a.txt", "a\n")]);
    let mut killed_mid_commit = 0;
    for trial in 0..40u64 {
        let marker = format!("journal-kill-{}-{trial}", std::process::id());
        let mut host = RawHost::start(&project.root, &marker, &[]);
        host.initialize();
        // Eight writes back to back (each one journal commit, with its lock), killed with
        // SIGKILL from at once to a few milliseconds in: some die holding a lock.
        for n in 0..8u64 {
            let args = json!({"path": format!("f{n}.txt"), "content": format!("trial {trial}\n")});
            host.send(json!({"jsonrpc": "2.0", "id": 10 + n, "method": "tools/call",
                "params": {"name": "write", "arguments": args}}));
        }
        std::thread::sleep(std::time::Duration::from_micros(500 * (trial % 12)));
        let _ = host.child.kill();
        let _ = host.child.wait();
        if !journal_leftovers(&state.root).is_empty() {
            killed_mid_commit += 1;
        }

        // The next start on the root recovers: no lock, record or temp file is left.
        let mut next = RawHost::start(&project.root, &format!("{marker}-next"), &[]);
        next.initialize();
        let wrote = next.call(2, "write", json!({"path": "a.txt", "content": "after\n"}));
        assert_eq!(wrote["isError"], false, "trial {trial}: {wrote}");
        assert!(next.finish().success());
        let left = journal_leftovers(&state.root);
        assert!(left.is_empty(), "trial {trial}: the journal kept {left:?}");
        let strays = temp_files_in(&project.root);
        assert!(strays.is_empty(), "trial {trial}: temp files left: {strays:?}");
    }
    // Not a bound on timing: only that the kills did land inside commits at all, so the test
    // exercised what it is about.
    assert!(killed_mid_commit > 0, "no kill landed inside a commit");
}
