//! `cargo xtask bench economy`: what an agent spends on the tasks of issue 40 in click's
//! `core.py` (3,825 lines; click from the test venv), in calls and characters sent (the
//! arguments) and received (the text a model reads), with the line/text forms beside the
//! name-path forms. Each call goes through `agent-tools call` (the debug host) on a fresh copy
//! of click, with the test venv's basedpyright. Serena is not run here (see BENCHMARKS.md).

#![allow(clippy::print_stdout)]

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

/// One task done one way: its calls, in order.
struct Form {
    task: &'static str,
    form: &'static str,
    calls: Vec<(&'static str, Value)>,
}

const NEW_BODY: &str = "def ensure_object(self, object_type: type[V]) -> V:\n    \
    rv = self.find_object(object_type)\n    if rv is None:\n        \
    self.obj = rv = object_type()\n    return rv";

const NEW_METHOD: &str = "def has_object(self, object_type: type[V]) -> bool:\n    \
    return self.find_object(object_type) is not None";

pub(crate) fn run(_args: &[String]) -> Result<()> {
    crate::run(crate::cargo().args(["build", "--quiet", "-p", "agent-tools-host"]))?;
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| crate::project_root().join("target"));
    let binary = target.join("debug").join("agent-tools");
    let click = click_source()?;
    let core = std::fs::read_to_string(click.join("core.py"))?;
    let (start, end) = lines_of(&core, "    def ensure_object(", "\n\n")?;
    let method: String =
        core.lines().skip(start - 1).take(end + 1 - start).collect::<Vec<_>>().join("\n");
    let tail: String = core.lines().skip(end - 2).take(3).collect::<Vec<_>>().join("\n");
    // The third `def main(` of `Command`: two `@overload` stubs come first.
    let main_at = core.match_indices("    def main(").nth(2).map(|(i, _)| i).context("def main")?;
    let main_start = core[..main_at].matches('\n').count() + 1;
    let core_py = "click/core.py";
    let forms = vec![
        Form {
            task: "read one method (`Command/main`)",
            form: "outline + line range",
            calls: vec![
                ("lsp", json!({"action": "symbols", "file": core_py, "query": "main"})),
                (
                    "read",
                    json!({"path": core_py, "start_line": main_start, "end_line": main_start + 120}),
                ),
            ],
        },
        Form {
            task: "read one method (`Command/main`)",
            form: "name path",
            calls: vec![("read", json!({"path": core_py, "symbol": "Command/main[3]"}))],
        },
        Form {
            task: "replace one method (`Context/ensure_object`)",
            form: "read range + old_string",
            calls: vec![
                ("read", json!({"path": core_py, "start_line": start, "end_line": end})),
                (
                    "edit",
                    json!({"path": core_py, "old_string": method, "new_string": indent(NEW_BODY)}),
                ),
            ],
        },
        Form {
            task: "replace one method (`Context/ensure_object`)",
            form: "name path",
            calls: vec![(
                "edit",
                json!({"path": core_py, "symbol": "Context/ensure_object", "new_string": NEW_BODY}),
            )],
        },
        Form {
            task: "add a method after it",
            form: "read range + old_string",
            calls: vec![
                ("read", json!({"path": core_py, "start_line": start, "end_line": end})),
                (
                    "edit",
                    json!({"path": core_py, "old_string": tail, "new_string": format!("{tail}\n\n{}", indent(NEW_METHOD))}),
                ),
            ],
        },
        Form {
            task: "add a method after it",
            form: "name path",
            calls: vec![(
                "edit",
                json!({"path": core_py, "symbol": "Context/ensure_object", "insert": "after", "new_string": NEW_METHOD}),
            )],
        },
        Form {
            task: "callers of `echo`",
            form: "references (line + text)",
            calls: vec![(
                "lsp",
                json!({"action": "references", "file": "click/utils.py", "line": 240, "symbol": "echo"}),
            )],
        },
        Form {
            task: "callers of `echo`",
            form: "incoming_calls (name path)",
            calls: vec![(
                "lsp",
                json!({"action": "incoming_calls", "file": "click/utils.py", "symbol": "echo"}),
            )],
        },
        Form {
            task: "find a symbol by name in the tree",
            form: "workspace symbols",
            calls: vec![("lsp", json!({"action": "symbols", "query": "ensure_object"}))],
        },
    ];
    println!(
        "click {} (core.py {} lines), agent-tools with basedpyright\n",
        click.display(),
        core.lines().count()
    );
    println!(
        "| task | form | calls | characters sent | characters received |\n|---|---|---|---|---|"
    );
    for form in &forms {
        let project = tempfile::tempdir()?;
        copy_dir(&click, &project.path().join("click"))?;
        std::fs::write(
            project.path().join("pyproject.toml"),
            "[project]\nname = \"bench\"\nversion = \"0\"\n",
        )?;
        let (mut sent, mut received) = (0, 0);
        for (tool, args) in &form.calls {
            let text = args.to_string();
            sent += text.chars().count();
            let answer = call(&binary, project.path(), tool, &text)?;
            received += answer.chars().count();
        }
        println!("| {} | {} | {} | {sent} | {received} |", form.task, form.form, form.calls.len());
    }
    Ok(())
}

/// One call through the host's command line; its text, as a model reads it.
fn call(binary: &Path, root: &Path, tool: &str, args: &str) -> Result<String> {
    let mut cmd = Command::new(binary);
    cmd.args(["call", tool, args, "--root"]).arg(root);
    let out = crate::setup::with_test_env(&mut cmd).output().context("agent-tools call")?;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    if !out.status.success() {
        bail!("{tool} {args} failed: {}{}", text, String::from_utf8_lossy(&out.stderr));
    }
    Ok(text)
}

/// click in the test venv (`cargo xtask setup` installs it).
fn click_source() -> Result<PathBuf> {
    let lib = crate::setup::venv().join("lib");
    for entry in std::fs::read_dir(&lib).with_context(|| format!("{}", lib.display()))?.flatten() {
        let click = entry.path().join("site-packages/click");
        if click.join("core.py").is_file() {
            return Ok(click);
        }
    }
    bail!("click is not in the test venv ({}); run `cargo xtask setup`", lib.display())
}

/// The 1-based first and last line of the text that starts with `start` and runs to `end`.
fn lines_of(text: &str, start: &str, end: &str) -> Result<(usize, usize)> {
    let at = text.find(start).with_context(|| format!("{start:?} is not in core.py"))?;
    let stop = text[at..].find(end).map_or(text.len(), |i| at + i);
    let first = text[..at].matches('\n').count() + 1;
    Ok((first, text[..stop].matches('\n').count() + 1))
}

/// `text` indented as a method of a class.
fn indent(text: &str) -> String {
    text.lines()
        .map(|l| if l.is_empty() { String::new() } else { format!("    {l}") })
        .collect::<Vec<_>>()
        .join("\n")
}

fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)?.flatten() {
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), target)?;
        }
    }
    Ok(())
}
