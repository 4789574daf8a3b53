//! `cargo xtask bench files`: the inputs issue 27 found slow, ours through an MCP session of the
//! release host (stdio, time from sending the call to its answer) against the command-line tool
//! that does the same:
//!
//! - the first 3 lines of a 2 GiB sparse file: `read` with `end_line: 3` against `head -n 3`,
//!   and the host's peak memory (`VmHWM`) after it;
//! - one match rewritten to 100,000 lines: `ast_edit` + `resolve` (accept) against
//!   `ast-grep scan --rule` with that `fix` and `-U`;
//! - every line of a Python file rewritten (`print($A)` to `log($A)`): side by side at 10,000
//!   lines, and ours alone at 100,000 (ast-grep's `-U` grows with the square of a file's
//!   matches: 27 s at 20,000 here).
//!
//! Both sides must leave the same file, or the bench fails. Files are made afresh for every run;
//! the median of `--runs N` (default 5) is reported. Needs `cargo xtask setup` (ast-grep).

#![allow(clippy::print_stdout)]

use std::{
    io::{BufRead, BufReader, Write},
    path::{Path, PathBuf},
    process::{Child, ChildStdin, ChildStdout, Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

/// Lines of the big rewrite (one match) and of the file whose every line is rewritten.
const LINES: usize = 100_000;
/// Lines of the every-line rewrite that both tools run.
const SIDE_BY_SIDE_LINES: usize = 10_000;
/// Size of the sparse file.
const SPARSE_BYTES: u64 = 2 << 30;

pub(crate) fn run(args: &[String]) -> Result<()> {
    let runs = match args.iter().position(|a| a == "--runs") {
        Some(i) => args.get(i + 1).context("a number after --runs")?.parse().context("--runs")?,
        None => 5,
    };
    crate::run(crate::cargo().args(["build", "--quiet", "--release", "-p", "agent-tools-host"]))?;
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| crate::project_root().join("target"));
    let binary = target.join("release").join("agent-tools");
    let ast_grep = super::bench_astgrep::ast_grep()?;

    println!("{runs} runs each, median wall time; ours in one MCP session of the release host\n");
    println!("| case | ours | reference | ratio |\n|---|---|---|---|");
    let (ours, reference, peak) = sparse_read(&binary, runs)?;
    row("`read` of lines 1-3 of a 2 GiB sparse file vs `head -n 3`", ours, reference);
    let (ours, reference) = rewrite_one_match(&binary, &ast_grep, runs)?;
    row("one match rewritten to 100,000 lines vs `ast-grep scan -U`", ours, reference);
    let (ours, reference) = rewrite_every_line(&binary, &ast_grep, SIDE_BY_SIDE_LINES, runs)?;
    row("every line of 10,000 rewritten vs `ast-grep run -U`", ours, reference);
    let (ours, _) = rewrite_every_line(&binary, &ast_grep, LINES, runs.min(3))?;
    println!("| every line of 100,000 rewritten (ours alone) | {} | | |", ms(ours));
    println!("\nhost peak memory (VmHWM) after the sparse reads: {peak} MiB");
    Ok(())
}

fn row(case: &str, ours: Duration, reference: Duration) {
    let ratio = ours.as_secs_f64() / reference.as_secs_f64().max(1e-9);
    println!("| {case} | {} | {} | {ratio:.2}x |", ms(ours), ms(reference));
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times.get(times.len() / 2).copied().unwrap_or_default()
}

/// Wall time of `cmd`, which must succeed.
fn timed(cmd: &mut Command) -> Result<Duration> {
    let start = Instant::now();
    let out = cmd.stdout(Stdio::null()).stderr(Stdio::piped()).output()?;
    let took = start.elapsed();
    if !out.status.success() {
        bail!("{cmd:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(took)
}

fn sparse_read(binary: &Path, runs: usize) -> Result<(Duration, Duration, u64)> {
    let dir = tempfile::tempdir()?;
    let file = dir.path().join("sparse.log");
    let lines: String = (1..=1000).map(|n| format!("line {n}\n")).collect();
    std::fs::write(&file, lines)?;
    std::fs::File::options().write(true).open(&file)?.set_len(SPARSE_BYTES)?;
    let mut session = Session::start(binary, dir.path())?;
    let (mut ours, mut reference) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        let (result, took) = session.call("read", json!({"path": "sparse.log", "end_line": 3}))?;
        if !result["content"][0]["text"].as_str().unwrap_or("").starts_with("1\tline 1\n") {
            bail!("read of the sparse file: {result}");
        }
        ours.push(took);
        reference.push(timed(Command::new("head").arg("-n").arg("3").arg(&file))?);
    }
    let peak = session.peak_mib()?;
    Ok((median(ours), median(reference), peak))
}

/// `ast_edit` with `args`, then `resolve` accept of what it staged: the time of both.
fn edit_and_accept(session: &mut Session, args: Value) -> Result<Duration> {
    let (proposal, staged) = session.call("ast_edit", args)?;
    // A proposal over the output cap comes as cut text only; its first line names the edit.
    let text = proposal["content"][0]["text"].as_str().unwrap_or_default();
    let named = text.split("edit_id \"").nth(1).and_then(|rest| rest.split('"').next());
    let Some(id) = proposal["structuredContent"]["edit_id"].as_str().or(named) else {
        bail!("ast_edit staged nothing: {}", &text[..text.len().min(500)]);
    };
    let (resolved, accepted) =
        session.call("resolve", json!({"edit_id": id, "action": "accept"}))?;
    if resolved["isError"] != false {
        bail!("resolve: {resolved}");
    }
    Ok(staged + accepted)
}

/// The same file after our rewrite and after ast-grep's, or an error saying how they differ.
fn same_result(ours: &Path, theirs: &Path) -> Result<()> {
    let (a, b) = (std::fs::read_to_string(ours)?, std::fs::read_to_string(theirs)?);
    if a != b {
        bail!(
            "the rewrites differ: ours {} lines, ast-grep's {} lines ({} / {})",
            a.lines().count(),
            b.lines().count(),
            ours.display(),
            theirs.display()
        );
    }
    Ok(())
}

fn rewrite_one_match(binary: &Path, ast_grep: &Path, runs: usize) -> Result<(Duration, Duration)> {
    let dir = tempfile::tempdir()?;
    let (ours_dir, theirs_dir) = (dir.path().join("ours"), dir.path().join("theirs"));
    std::fs::create_dir_all(&ours_dir)?;
    std::fs::create_dir_all(&theirs_dir)?;
    let rewrite = vec!["x = 1"; LINES].join("\n");
    let rule = dir.path().join("rule.yml");
    std::fs::write(&rule, super::bench_astgrep::expansion_rule(&rewrite))?;
    let mut session = Session::start(binary, &ours_dir)?;
    let (mut ours, mut reference) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        let source = "def f():\n    pass\n\nmarker()\n";
        std::fs::write(ours_dir.join("one.py"), source)?;
        std::fs::write(theirs_dir.join("one.py"), source)?;
        ours.push(edit_and_accept(
            &mut session,
            json!({"pattern": "marker()", "rewrite": rewrite, "path": "one.py",
                "language": "python"}),
        )?);
        reference.push(timed(
            Command::new(ast_grep)
                .args(["scan", "--rule"])
                .arg(&rule)
                .arg("-U")
                .arg(theirs_dir.join("one.py")),
        )?);
        same_result(&ours_dir.join("one.py"), &theirs_dir.join("one.py"))?;
    }
    Ok((median(ours), median(reference)))
}

fn rewrite_every_line(
    binary: &Path,
    ast_grep: &Path,
    lines: usize,
    runs: usize,
) -> Result<(Duration, Duration)> {
    let dir = tempfile::tempdir()?;
    let (ours_dir, theirs_dir) = (dir.path().join("ours"), dir.path().join("theirs"));
    std::fs::create_dir_all(&ours_dir)?;
    std::fs::create_dir_all(&theirs_dir)?;
    let source: String = (0..lines).map(|n| format!("print({n})\n")).collect();
    let side_by_side = lines <= SIDE_BY_SIDE_LINES;
    let mut session = Session::start(binary, &ours_dir)?;
    let (mut ours, mut reference) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        std::fs::write(ours_dir.join("big.py"), &source)?;
        ours.push(edit_and_accept(
            &mut session,
            json!({"pattern": "print($A)", "rewrite": "log($A)", "path": "big.py",
                "language": "python"}),
        )?);
        if side_by_side {
            std::fs::write(theirs_dir.join("big.py"), &source)?;
            reference.push(timed(
                Command::new(ast_grep)
                    .args(["run", "-p", "print($A)", "-r", "log($A)", "-l", "python", "-U"])
                    .arg(theirs_dir.join("big.py")),
            )?);
            same_result(&ours_dir.join("big.py"), &theirs_dir.join("big.py"))?;
        }
    }
    Ok((median(ours), median(reference)))
}

/// An `agent-tools mcp` host over stdio, initialized, that answers one call at a time.
struct Session {
    child: Child,
    /// `None` once dropped: closing it ends the host's session.
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Session {
    fn start(binary: &Path, root: &Path) -> Result<Session> {
        let mut child = Command::new(binary)
            .args(["mcp", "--root"])
            .arg(root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("start {}", binary.display()))?;
        let stdin = child.stdin.take().context("the host's stdin")?;
        let stdout = BufReader::new(child.stdout.take().context("the host's stdout")?);
        let mut session = Session { child, stdin: Some(stdin), stdout, next_id: 1 };
        session.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "bench-files", "version": "0"}}),
        )?;
        session.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
        Ok(session)
    }

    fn send(&mut self, message: &Value) -> Result<()> {
        let stdin = self.stdin.as_mut().context("the host's stdin is closed")?;
        writeln!(stdin, "{message}")?;
        stdin.flush()?;
        Ok(())
    }

    /// Sends a request; its answer and the time from sending to the answer.
    fn request(&mut self, method: &str, params: Value) -> Result<(Value, Duration)> {
        let id = self.next_id;
        self.next_id += 1;
        let start = Instant::now();
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        let mut line = String::new();
        loop {
            line.clear();
            if self.stdout.read_line(&mut line)? == 0 {
                bail!("the host closed its stdout before answering {method}");
            }
            let message: Value = serde_json::from_str(&line).context("a JSON-RPC line")?;
            if message["id"] == id && message.get("method").is_none() {
                return Ok((message, start.elapsed()));
            }
        }
    }

    /// Calls `tool`: the tool result and the time it took.
    fn call(&mut self, tool: &str, args: Value) -> Result<(Value, Duration)> {
        let (answer, took) =
            self.request("tools/call", json!({"name": tool, "arguments": args}))?;
        Ok((answer["result"].clone(), took))
    }

    fn peak_mib(&self) -> Result<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))?;
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map(|kib| kib >> 10)
            .context("no VmHWM in the host's status")
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // The end of its input ends the host's session, and the host exits.
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}
