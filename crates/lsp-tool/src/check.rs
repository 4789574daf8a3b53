//! The project check behind `diagnostics "*"`: the language's own checker in machine-readable
//! mode, parsed into the same diagnostic shape as the server's.

use std::{
    path::{Path, PathBuf},
    process::Stdio,
    time::Duration,
};

use agent_tools_support::process::{self, Spawned};
use serde_json::Value;
use tokio::io::AsyncReadExt;
use tokio_util::sync::CancellationToken;

use crate::{
    diagnostics::{Diagnostic, Severity},
    encoding::{ColumnUnit, convert_column},
    paths::display_relative,
};

/// How long a checker's tree gets between SIGTERM and SIGKILL once its run is over.
const TEARDOWN_GRACE: Duration = Duration::from_millis(500);

/// The output formats a check can have.
pub const FORMATS: &[&str] = &["pyright-json", "tsc", "go", "cargo-json", "dart-machine"];

/// What one check run produced.
#[derive(Debug, Clone)]
pub struct CheckRun {
    pub command: String,
    pub diagnostics: Vec<Diagnostic>,
    /// Set when the output held nothing parseable although the command failed.
    pub unparsed_failure: Option<String>,
}

/// Runs `program args` in `dir` with `env` added, bounded by `timeout` and `cancel`; returns
/// stdout, stderr and the exit code. The checker runs in its own process group, forked from
/// the host-lifetime spawner thread, so it dies with the host and its whole group is killed
/// on timeout or cancellation.
pub async fn run_command(
    capsule: &dyn agent_tools_support::capsule::Capsule,
    program: &Path,
    args: &[String],
    dir: &Path,
    env: &[(String, String)],
    timeout: Duration,
    cancel: &CancellationToken,
) -> Result<(String, String, Option<i32>), String> {
    let args: Vec<std::ffi::OsString> = args.iter().map(Into::into).collect();
    let mut command = tokio::process::Command::from(capsule.command(program.as_os_str(), &args));
    command
        .envs(env.iter().map(|(k, v)| (k, v)))
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let Spawned { mut child, group } = process::spawn(command)
        .await
        .map_err(|e| format!("cannot start {}: {e}", program.display()))?;
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let read = async {
        let mut out = String::new();
        let mut err = String::new();
        let (a, b) = tokio::join!(
            async {
                if let Some(s) = stdout.as_mut() {
                    let _ = s.read_to_string(&mut out).await;
                }
            },
            async {
                if let Some(s) = stderr.as_mut() {
                    let _ = s.read_to_string(&mut err).await;
                }
            }
        );
        let _ = (a, b);
        let status = child.wait().await.ok().and_then(|s| s.code());
        (out, err, status)
    };
    let outcome = tokio::select! {
        r = read => Ok(r),
        _ = tokio::time::sleep(timeout) => {
            Err(format!("the check did not finish within {} s and was stopped", timeout.as_secs()))
        }
        _ = cancel.cancelled() => Err("cancelled".into()),
    };
    // Whatever the checker started (tsc workers, go vet's children) ends with it.
    group.terminate(TEARDOWN_GRACE).await;
    outcome
}

fn file_text(path: &Path) -> String {
    crate::paths::read_text(path).unwrap_or_default()
}

fn make(
    root: &Path,
    run_root: &Path,
    file: &str,
    line: u32,
    column: u32,
    unit: ColumnUnit,
    severity: Severity,
    code: Option<String>,
    message: String,
) -> Diagnostic {
    let abs = if Path::new(file).is_absolute() { PathBuf::from(file) } else { root.join(file) };
    let abs = std::fs::canonicalize(&abs).unwrap_or(abs);
    let text = file_text(&abs);
    let line_text = text.lines().nth(line.saturating_sub(1) as usize);
    let column = line_text.map_or(column, |l| {
        convert_column(l, column.saturating_sub(1), unit, ColumnUnit::Char) + 1
    });
    Diagnostic {
        path: display_relative(run_root, &abs),
        abs_path: abs,
        line,
        column,
        severity,
        code,
        source: None,
        message,
        source_line: line_text.map(|l| l.trim_end().to_string()),
        unnecessary: false,
    }
}

fn severity_word(word: &str) -> Severity {
    match word.to_ascii_lowercase().as_str() {
        "warning" | "warn" => Severity::Warning,
        "information" | "info" | "note" | "help" => Severity::Info,
        "hint" => Severity::Hint,
        _ => Severity::Error,
    }
}

/// Parses a check's output in `format`; `root` is the directory it ran in.
pub fn parse(
    format: &str,
    stdout: &str,
    stderr: &str,
    root: &Path,
    run_root: &Path,
) -> Vec<Diagnostic> {
    match format {
        "pyright-json" => from_pyright_json(stdout, stderr, root, run_root),
        "tsc" => from_tsc(stdout, stderr, root, run_root),
        "go" => from_go(stdout, stderr, root, run_root),
        "cargo-json" => from_cargo_json(stdout, stderr, root, run_root),
        "dart-machine" => from_dart_machine(stdout, stderr, root, run_root),
        _ => Vec::new(),
    }
}

/// Diagnostics of basedpyright's or pyright's `--outputjson`.
fn from_pyright_json(stdout: &str, _stderr: &str, root: &Path, run_root: &Path) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let Ok(json) = serde_json::from_str::<Value>(stdout) else { return out };
    for d in json.get("generalDiagnostics").and_then(Value::as_array).into_iter().flatten() {
        let s = |k: &str| d.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let pos = |k: &str| {
            d.pointer(&format!("/range/start/{k}")).and_then(Value::as_u64).unwrap_or(0) as u32
        };
        let rule = d.get("rule").and_then(Value::as_str).map(str::to_string);
        out.push(make(
            root,
            run_root,
            &s("file"),
            pos("line") + 1,
            pos("character") + 1,
            ColumnUnit::Utf16,
            severity_word(&s("severity")),
            rule,
            s("message"),
        ));
    }
    out
}

/// Diagnostics of tsc's `file(line,col): error TSxxxx: message` lines.
fn from_tsc(stdout: &str, stderr: &str, root: &Path, run_root: &Path) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    // src/a.ts(3,5): error TS2322: Type 'number' is not assignable to type 'string'.
    for line in stdout.lines().chain(stderr.lines()) {
        if line.starts_with(' ') {
            if let Some(last) = out.last_mut() {
                let last: &mut Diagnostic = last;
                last.message.push('\n');
                last.message.push_str(line.trim());
            }
            continue;
        }
        let Some((loc, rest)) = line.split_once("): ") else { continue };
        let Some((file, pos)) = loc.rsplit_once('(') else { continue };
        let mut nums = pos.split(',').filter_map(|n| n.trim().parse::<u32>().ok());
        let (Some(l), Some(c)) = (nums.next(), nums.next()) else { continue };
        let Some((head, message)) = rest.split_once(": ") else { continue };
        let mut words = head.split_whitespace();
        let severity = severity_word(words.next().unwrap_or("error"));
        let code = words.next().map(str::to_string);
        out.push(make(
            root,
            run_root,
            file,
            l,
            c,
            ColumnUnit::Utf16,
            severity,
            code,
            message.to_string(),
        ));
    }
    out
}

/// Diagnostics of `go build`/`go vet`'s `file:line:col: message` lines.
fn from_go(stdout: &str, stderr: &str, root: &Path, run_root: &Path) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    // ./main.go:5:2: undefined: foo   (also prefixed with `vet: `)
    for line in stderr.lines().chain(stdout.lines()) {
        let line = line.trim_start_matches("vet: ").trim();
        let mut parts = line.splitn(4, ':');
        let (Some(file), Some(l), Some(c), Some(message)) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let (Ok(l), Ok(c)) = (l.parse::<u32>(), c.parse::<u32>()) else { continue };
        if !file.ends_with(".go") {
            continue;
        }
        out.push(make(
            root,
            run_root,
            file,
            l,
            c,
            ColumnUnit::Utf8,
            Severity::Error,
            None,
            message.trim().to_string(),
        ));
    }
    out
}

/// Diagnostics of cargo's `--message-format=json` compiler messages.
fn from_cargo_json(stdout: &str, _stderr: &str, root: &Path, run_root: &Path) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for line in stdout.lines() {
        let Ok(json) = serde_json::from_str::<Value>(line) else { continue };
        if json.get("reason").and_then(Value::as_str) != Some("compiler-message") {
            continue;
        }
        let Some(m) = json.get("message") else { continue };
        let level = m.get("level").and_then(Value::as_str).unwrap_or("error");
        if level.starts_with("failure") {
            continue;
        }
        let spans = m.get("spans").and_then(Value::as_array).cloned().unwrap_or_default();
        let Some(span) = spans.iter().find(|s| s.get("is_primary") == Some(&Value::Bool(true)))
        else {
            continue;
        };
        let n = |k: &str| span.get(k).and_then(Value::as_u64).unwrap_or(1) as u32;
        out.push(make(
            root,
            run_root,
            span.get("file_name").and_then(Value::as_str).unwrap_or(""),
            n("line_start"),
            n("column_start"),
            ColumnUnit::Char,
            severity_word(level),
            m.pointer("/code/code").and_then(Value::as_str).map(str::to_string),
            m.get("message").and_then(Value::as_str).unwrap_or("").to_string(),
        ));
    }
    out
}

/// Diagnostics of `dart analyze --format=machine`'s `|`-separated lines.
fn from_dart_machine(stdout: &str, stderr: &str, root: &Path, run_root: &Path) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    // ERROR|COMPILE_TIME_ERROR|UNDEFINED_IDENTIFIER|/abs/file.dart|3|5|3|Undefined name 'x'.
    for line in stdout.lines().chain(stderr.lines()) {
        let parts: Vec<&str> = line.splitn(8, '|').collect();
        if parts.len() != 8 {
            continue;
        }
        let (Ok(l), Ok(c)) = (parts[4].parse::<u32>(), parts[5].parse::<u32>()) else {
            continue;
        };
        out.push(make(
            root,
            run_root,
            parts[3],
            l,
            c,
            ColumnUnit::Utf16,
            severity_word(parts[0]),
            Some(parts[2].to_ascii_lowercase()),
            parts[7].to_string(),
        ));
    }
    out
}

#[cfg(test)]
#[allow(clippy::disallowed_methods, reason = "tests write their fixtures by path")]
mod tests {
    use super::*;

    fn root() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join("a.py"), "s = \"é🙂\"; print(undefined_name)\n").unwrap();
        std::fs::write(root.join("a.ts"), "let x: string = 1;\n").unwrap();
        std::fs::write(root.join("main.go"), "package main\n\nfunc main() { foo() }\n").unwrap();
        (dir, root)
    }

    #[test]
    fn pyright_json_is_parsed_with_utf16_columns_converted() {
        let (_d, root) = root();
        let out = format!(
            r#"{{"generalDiagnostics":[{{"file":"{}","severity":"error","message":"\"undefined_name\" is not defined","range":{{"start":{{"line":0,"character":17}},"end":{{"line":0,"character":31}}}},"rule":"reportUndefinedVariable"}}]}}"#,
            root.join("a.py").display()
        );
        let diags = parse("pyright-json", &out, "", &root, &root);
        assert_eq!(diags.len(), 1);
        assert_eq!(
            diags[0].render(),
            "a.py:1:17 error [reportUndefinedVariable] \"undefined_name\" is not defined\n    s = \"é🙂\"; print(undefined_name)"
        );
    }

    #[test]
    fn tsc_and_go_text_output_is_parsed() {
        let (_d, root) = root();
        let tsc = "a.ts(1,5): error TS2322: Type 'number' is not assignable to type 'string'.\n";
        let d = parse("tsc", tsc, "", &root, &root);
        assert_eq!(
            d[0].render(),
            "a.ts:1:5 error [TS2322] Type 'number' is not assignable to type 'string'.\n    let x: string = 1;"
        );
        let go = "# example.com/m\nvet: ./main.go:3:15: undefined: foo\n";
        let d = parse("go", "", go, &root, &root);
        assert_eq!(d.len(), 1);
        assert_eq!((d[0].path.as_str(), d[0].line, d[0].column), ("main.go", 3, 15));
    }

    #[test]
    fn cargo_json_and_dart_machine_output_is_parsed() {
        let (_d, root) = root();
        let cargo = r#"{"reason":"compiler-message","message":{"level":"error","message":"mismatched types","code":{"code":"E0308"},"spans":[{"file_name":"a.py","line_start":1,"column_start":2,"is_primary":true}]}}"#;
        let d = parse("cargo-json", cargo, "", &root, &root);
        assert_eq!((d[0].code.as_deref(), d[0].column), (Some("E0308"), 2));
        let dart = "WARNING|STATIC_WARNING|DEAD_CODE|a.py|1|1|3|Dead code.\n";
        let d = parse("dart-machine", dart, "", &root, &root);
        assert_eq!((d[0].severity, d[0].message.as_str()), (Severity::Warning, "Dead code."));
    }
}
