//! The soak's projects (a Python package with callers, a small C project with a header and a
//! program to debug, a worker command) and its seeded random mix of calls over them; and what
//! every file of a project may hold, for the all-old-or-all-new check.

use std::path::Path;

use anyhow::Result;
use serde_json::{Value, json};

/// A small seeded generator (splitmix64): the same seed gives the same choices.
pub(super) struct Rng(u64);

impl Rng {
    pub(super) fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub(super) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n`.
    pub(super) fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    /// Milliseconds in `low..high`.
    pub(super) fn millis(&mut self, low: u64, high: u64) -> std::time::Duration {
        std::time::Duration::from_millis(low + self.below(high - low))
    }

    pub(super) fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

/// Which family of tools a call exercises (and which processes serve it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Family {
    Files,
    Lsp,
    AstGrep,
    Eval,
    Debug,
    Workers,
}

impl Family {
    pub(super) fn of(tool: &str) -> Family {
        match tool {
            "lsp" | "lsp_rename" => Family::Lsp,
            "ast_grep" | "ast_edit" | "resolve" => Family::AstGrep,
            "eval" => Family::Eval,
            "debug" => Family::Debug,
            t if t.starts_with("vibe_") => Family::Workers,
            _ => Family::Files,
        }
    }
}

const MAIN_PY: &str = "from pkg.shapes import area, perimeter\n\n\
total: float = area(2.0) + perimeter(3.0)\nprint(total)\n";
/// A type error on line 3 (a float into a str), for diagnostics on write.
const MAIN_PY_BROKEN: &str = "from pkg.shapes import area, perimeter\n\n\
total: str = area(2.0) + perimeter(3.0)\nprint(total)\n";
const MAIN_C: &str = "#include \"geom.h\"\n\nint main(void) {\n    return square(3) - 9;\n}\n";
const MAIN_C_BROKEN: &str =
    "#include \"geom.h\"\n\nint main(void) {\n    return square(3) - nine;\n}\n";
/// The program the debug calls stop in (line 4 is in the loop).
const LOOP_PY: &str = "def run() -> int:\n    total = 0\n    for i in range(5):\n        \
total += i\n    return total\n\n\nprint(run())\n";
const REPORT_PY: &str = "print(\"area\")\nprint(\"perimeter\", 2)\n";
/// `report.py` once a staged `print` → `log` edit was accepted.
const REPORT_PY_LOGGED: &str = "log(\"area\")\nlog(\"perimeter\", 2)\n";
/// The C program the debug calls stop in (line 5 is in the loop).
const LOOP_C: &str = "int main(void) {\n    int total = 0;\n    for (int i = 0; i < 5; i++) {\n        \
int step = i * 2;\n        total += step;\n    }\n    return total - 20;\n}\n";
/// The two names `lsp_rename` swaps `factor` between, in three files at once.
pub(super) const RENAMED: [&str; 2] = ["factor", "ratio"];
/// The files that name it, with `{}` where the name goes.
const RENAME_FILES: &[(&str, &str)] = &[
    ("pkg/scale.py", "def {}(x: float) -> float:\n    return x * 2.0\n"),
    ("pkg/uses_a.py", "from pkg.scale import {}\n\nA = {}(1.0)\n"),
    ("pkg/uses_b.py", "from pkg.scale import {}\n\nB = {}(2.0) + {}(3.0)\n"),
];
/// The worker command of `vibe_spawn`: reads its briefing, works a little, answers.
const WORKER_SH: &str = "brief=$(cat)\nsleep 1\necho \"done: $brief\"\n";
const CONFIG_TOML: &str =
    "[vibe]\nenabled = true\nslots = 2\n\n[vibe.fast]\ncommand = \"sh ./soak_worker.sh\"\n";

/// Writes the soak's project into `root`; `python` runs the project's `.venv/bin/python`.
pub(super) fn write_project(root: &Path, python: &Path) -> Result<()> {
    let files: &[(&str, &str)] = &[
        ("pyproject.toml", "[project]\nname = \"soakpkg\"\nversion = \"0.1.0\"\n"),
        ("pkg/__init__.py", ""),
        (
            "pkg/shapes.py",
            "def area(side: float) -> float:\n    return side * side\n\n\n\
             def perimeter(side: float) -> float:\n    return 4 * side\n",
        ),
        ("pkg/main.py", MAIN_PY),
        ("pkg/other.py", "from pkg.shapes import area\n\nHALF = area(1.0) / 2\n"),
        ("pkg/counter.py", "COUNT = 0\n"),
        ("pkg/loop.py", LOOP_PY),
        ("pkg/report.py", REPORT_PY),
        ("native/compile_flags.txt", "-Iinclude\n-std=c11\n"),
        ("native/include/geom.h", "#pragma once\n\nint square(int x);\n"),
        ("native/geom.c", "#include \"geom.h\"\n\nint square(int x) { return x * x; }\n"),
        ("native/main.c", MAIN_C),
        ("native/loop.c", LOOP_C),
        ("soak_worker.sh", WORKER_SH),
        ("agent-tools.toml", CONFIG_TOML),
    ];
    let renamed: Vec<(&str, String)> =
        RENAME_FILES.iter().map(|(path, text)| (*path, text.replace("{}", RENAMED[0]))).collect();
    let files: Vec<(&str, &str)> = files
        .iter()
        .copied()
        .chain(renamed.iter().map(|(path, text)| (*path, text.as_str())))
        .collect();
    for (path, contents) in &files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap_or(root))?;
        std::fs::write(path, contents)?;
    }
    let venv_python = root.join(".venv/bin/python");
    std::fs::create_dir_all(root.join(".venv/bin"))?;
    std::fs::write(&venv_python, format!("#!/bin/sh\nexec {} \"$@\"\n", python.display()))?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(venv_python, std::fs::Permissions::from_mode(0o755))?;
    let compiled = std::process::Command::new("cc")
        .args(["-g", "-O0", "-o", "loop", "loop.c"])
        .current_dir(root.join("native"))
        .status();
    if !compiled.is_ok_and(|s| s.success()) {
        anyhow::bail!("cannot compile the soak's C program with cc (apt-get install gcc)");
    }
    Ok(())
}

/// Whether every file the soak writes holds one of the contents a whole write could leave
/// (all old or all new), and the renamed symbol is one name in all its files: `Err` names the
/// first file that does not.
pub(super) fn check_files(root: &Path) -> Result<(), String> {
    let read =
        |path: &str| std::fs::read_to_string(root.join(path)).map_err(|e| format!("{path}: {e}"));
    let allowed: &[(&str, &[&str])] = &[
        ("pkg/main.py", &[MAIN_PY, MAIN_PY_BROKEN]),
        ("native/main.c", &[MAIN_C, MAIN_C_BROKEN]),
        ("pkg/report.py", &[REPORT_PY, REPORT_PY_LOGGED]),
    ];
    for (path, contents) in allowed {
        let text = read(path)?;
        if !contents.contains(&text.as_str()) {
            return Err(format!("{path} is neither old nor new: {text:?}"));
        }
    }
    let counter = read("pkg/counter.py")?;
    let number = counter.strip_prefix("COUNT = ").and_then(|r| r.strip_suffix('\n'));
    if number.is_none_or(|n| n.parse::<u64>().is_err()) {
        return Err(format!("pkg/counter.py is torn: {counter:?}"));
    }
    renamed_name(root).map(|_| ())
}

/// The name the rename files all use now; `Err` when they disagree (a rename half applied).
pub(super) fn renamed_name(root: &Path) -> Result<&'static str, String> {
    let mut texts = Vec::new();
    for (path, _) in RENAME_FILES {
        texts.push(std::fs::read_to_string(root.join(path)).map_err(|e| format!("{path}: {e}"))?);
    }
    for name in RENAMED {
        let whole =
            RENAME_FILES.iter().zip(&texts).all(|((_, t), text)| *text == t.replace("{}", name));
        if whole {
            return Ok(name);
        }
    }
    Err(format!("the rename files disagree (a rename half applied): {texts:?}"))
}

/// One call of a step.
pub(super) struct Call {
    pub(super) tool: &'static str,
    pub(super) args: Value,
}

fn call(tool: &'static str, args: Value) -> Call {
    Call { tool, args }
}

/// What a step of a session does with its calls.
pub(super) enum Step {
    /// The calls one after the other.
    Calls(Vec<Call>),
    /// One slow call, cancelled after a while, then what ends what it may have started.
    Cancelled(Call, Option<Call>),
    /// A staged `ast_edit`, accepted or discarded with the edit id its result names.
    StagedEdit { stage: Call, accept: bool },
    /// `lsp_rename` of the renamed symbol to its other name, in all its files or none.
    Rename,
    /// `vibe_spawn`, then `vibe_wait` for it (or `vibe_kill` it when `kill`).
    Worker { spawn: Call, kill: bool },
}

/// A session's state that its next steps depend on.
pub(super) struct Workload {
    pub(super) rng: Rng,
    counter: u64,
    /// The last edit failed: the next one writes the counter file whole again.
    counter_unknown: bool,
    note: u64,
}

impl Workload {
    pub(super) fn new(seed: u64) -> Workload {
        Workload { rng: Rng::new(seed), counter: 0, counter_unknown: false, note: 0 }
    }

    /// The next step, drawn with fixed weights.
    pub(super) fn next_step(&mut self) -> Step {
        match self.rng.below(100) {
            0..=12 => Step::Calls(vec![self.write()]),
            13..=19 => Step::Calls(vec![self.edit()]),
            20..=36 => Step::Calls(vec![self.lsp()]),
            37..=41 => Step::Rename,
            42..=50 => Step::Calls(vec![self.ast_grep()]),
            51..=57 => self.staged_edit(),
            58..=71 => Step::Calls(vec![self.eval()]),
            72..=79 => Step::Calls(self.debug()),
            80..=86 => self.worker(),
            _ => {
                let slow = self.slow();
                let cleanup = (slow.tool == "debug")
                    .then(|| call("debug", json!({"operation": "terminate"})));
                Step::Cancelled(slow, cleanup)
            }
        }
    }

    fn write(&mut self) -> Call {
        let broken = self.rng.below(3) == 0;
        if self.rng.below(2) == 0 {
            let content = if broken { MAIN_PY_BROKEN } else { MAIN_PY };
            call("write", json!({"path": "pkg/main.py", "content": content}))
        } else {
            let content = if broken { MAIN_C_BROKEN } else { MAIN_C };
            call("write", json!({"path": "native/main.c", "content": content}))
        }
    }

    /// An edit failed or its answer was lost: the counter file's contents are unknown.
    pub(super) fn forget_counter(&mut self) {
        self.counter_unknown = true;
    }

    fn edit(&mut self) -> Call {
        if std::mem::take(&mut self.counter_unknown) {
            let content = format!("COUNT = {}\n", self.counter);
            return call("write", json!({"path": "pkg/counter.py", "content": content}));
        }
        let old = format!("COUNT = {}", self.counter);
        self.counter += 1;
        let new = format!("COUNT = {}", self.counter);
        call("edit", json!({"path": "pkg/counter.py", "old_string": old, "new_string": new}))
    }

    fn lsp(&mut self) -> Call {
        let choices = [
            json!({"action": "hover", "file": "pkg/main.py", "line": 3, "symbol": "area"}),
            json!({"action": "definition", "file": "pkg/main.py", "line": 3, "symbol": "perimeter"}),
            json!({"action": "references", "file": "pkg/shapes.py", "line": 1, "symbol": "area"}),
            json!({"action": "diagnostics", "file": "pkg/main.py"}),
            json!({"action": "symbols", "file": "pkg/shapes.py"}),
            json!({"action": "hover", "file": "native/main.c", "line": 4, "symbol": "square"}),
            json!({"action": "definition", "file": "native/main.c", "line": 4, "symbol": "square"}),
            json!({"action": "diagnostics", "file": "native/main.c"}),
        ];
        call("lsp", self.rng.pick(&choices).clone())
    }

    fn ast_grep(&mut self) -> Call {
        let choices = [
            json!({"pattern": "area($X)", "path": "pkg", "language": "python"}),
            json!({"pattern": "def $F($$$P) -> float: $$$B", "path": "pkg", "language": "python"}),
            json!({"pattern": "square($X)", "path": "native", "language": "c"}),
        ];
        call("ast_grep", self.rng.pick(&choices).clone())
    }

    fn staged_edit(&mut self) -> Step {
        // report.py is written back first, so that the edit always has its matches.
        let accept = self.rng.below(2) == 0;
        let stage = call(
            "ast_edit",
            json!({"pattern": "print($$$A)", "rewrite": "log($$$A)", "path": "pkg/report.py"}),
        );
        if self.rng.below(2) == 0 {
            return Step::Calls(vec![
                call("write", json!({"path": "pkg/report.py", "content": REPORT_PY})),
                stage,
            ]);
        }
        Step::StagedEdit { stage, accept }
    }

    fn eval(&mut self) -> Call {
        self.note += 1;
        let n = self.rng.below(10_000);
        let code = match self.rng.below(5) {
            0 => format!("sum(range({n}))"),
            1 => "tool('read', {'path': 'pkg/main.py'})['text'][:40]".to_string(),
            2 => format!(
                "tool('write', {{'path': 'notes/n{}.txt', 'content': 'cell {n}\\n'}}) and 'ok'",
                self.note % 5
            ),
            3 => format!("kept = globals().get('kept', 0) + {n}\nkept"),
            _ => {
                let code = if n.is_multiple_of(2) {
                    "(await tool('read', {path: 'pkg/main.py'})).total_lines".to_string()
                } else {
                    format!("{n} + 1")
                };
                return call(
                    "eval",
                    json!({"code": code, "description": "a soak cell", "language": "javascript"}),
                );
            }
        };
        call("eval", json!({"code": code, "description": "a soak cell"}))
    }

    fn worker(&mut self) -> Step {
        self.note += 1;
        let spawn = call(
            "vibe_spawn",
            json!({"brief": format!("Soak task {}.", self.note), "label": "soak worker"}),
        );
        Step::Worker { spawn, kill: self.rng.below(4) == 0 }
    }

    /// A Python session (debugpy) or a C one (lldb-dap), stopped at a breakpoint in a loop.
    fn debug(&mut self) -> Vec<Call> {
        let (file, line, program, expression) = if self.rng.below(2) == 0 {
            ("pkg/loop.py", 4, "pkg/loop.py", "total + i")
        } else {
            ("native/loop.c", 5, "native/loop", "total + step")
        };
        let mut calls = vec![
            call("debug", json!({"operation": "breakpoints", "file": file, "lines": [line]})),
            call("debug", json!({"operation": "launch", "program": program, "wait_seconds": 60})),
        ];
        if self.rng.below(2) == 0 {
            calls.push(call("debug", json!({"operation": "evaluate", "expression": expression})));
        }
        if self.rng.below(2) == 0 {
            calls.push(call("debug", json!({"operation": "continue", "wait_seconds": 30})));
        }
        calls.push(call("debug", json!({"operation": "terminate"})));
        calls
    }

    /// A call slow enough to be cancelled in the middle.
    fn slow(&mut self) -> Call {
        match self.rng.below(3) {
            0 => call(
                "eval",
                json!({"code": "import time\ntime.sleep(4)\n'slept'", "description": "a slow cell"}),
            ),
            1 => call(
                "debug",
                json!({"operation": "launch", "program": "pkg/loop.py", "wait_seconds": 60}),
            ),
            _ => call(
                "lsp",
                json!({"action": "references", "file": "pkg/shapes.py", "line": 1, "symbol": "area"}),
            ),
        }
    }

    /// A call to drop the connection in the middle of.
    pub(super) fn interrupted(&mut self) -> Call {
        self.slow()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_half_applied_rename_and_a_torn_file_are_caught() {
        let dir = tempfile::tempdir().expect("temp dir");
        write_project(dir.path(), Path::new("/usr/bin/python3")).expect("the soak's project");
        assert_eq!(check_files(dir.path()), Ok(()));
        assert_eq!(renamed_name(dir.path()), Ok("factor"));
        let uses_b = dir.path().join("pkg/uses_b.py");
        std::fs::write(&uses_b, "from pkg.scale import ratio\n\nB = ratio(2.0) + ratio(3.0)\n")
            .expect("write");
        let half = check_files(dir.path()).expect_err("a rename in one file of three");
        assert!(half.contains("half applied"), "{half}");
        std::fs::write(&uses_b, RENAME_FILES[2].1.replace("{}", "factor")).expect("write");
        std::fs::write(dir.path().join("pkg/main.py"), &MAIN_PY[..20]).expect("write");
        let torn = check_files(dir.path()).expect_err("a torn file");
        assert!(torn.starts_with("pkg/main.py is neither old nor new"), "{torn}");
    }
}
