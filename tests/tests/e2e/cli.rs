//! The host's `call` and `status` commands as a shell user sees them: output and exit codes.

use std::process::Command;

use crate::support::{TempProject, host_binary};

fn check(project: &TempProject, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(host_binary())
        .args(args)
        .arg("--root")
        .arg(&project.root)
        .output()
        .expect("run the host");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn call_prints_the_text_and_exits_zero() {
    let project = TempProject::new(&[("a.txt", "hello\n")]);
    let (code, stdout, _) = check(&project, &["call", "read", r#"{"path": "a.txt"}"#]);
    assert_eq!((code, stdout.as_str()), (0, "1\thello\n"));
}

#[test]
fn call_exits_one_when_the_tool_fails() {
    let project = TempProject::new(&[]);
    let (code, _, stderr) = check(&project, &["call", "read", r#"{"path": "missing.txt"}"#]);
    assert_eq!(code, 1);
    assert_eq!(stderr.trim(), "read: argument `path`: missing.txt does not exist");
}

#[test]
fn call_exits_two_for_usage_errors() {
    let project = TempProject::new(&[]);
    let (code, _, stderr) = check(&project, &["call", "read", "not json"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("ARGS is not valid JSON"), "{stderr}");
    let (code, _, stderr) = check(&project, &["call", "frobnicate", "{}"]);
    // Not a terminal here: nobody could answer a card, so nothing waits for one.
    assert_eq!(code, 2);
    assert!(stderr.contains("unknown tool `frobnicate`"), "{stderr}");
    let (code, _, stderr) =
        check(&project, &["call", "write", r#"{"path": "x", "content": ""}"#, "--surface", "plan"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("write-tier tool"), "{stderr}");
}

#[test]
fn call_with_json_prints_the_whole_result() {
    let project = TempProject::new(&[("a.txt", "hello\n")]);
    let (code, stdout, _) = check(&project, &["call", "read", r#"{"path": "a.txt"}"#, "--json"]);
    assert_eq!(code, 0);
    let value: serde_json::Value = serde_json::from_str(&stdout).expect("json");
    assert_eq!(value["is_error"], false);
    assert_eq!(value["structured"]["total_lines"], 1);
}

#[test]
fn a_bad_config_file_is_a_usage_error_naming_the_key() {
    let project = TempProject::new(&[("agent-tools.toml", "[output]\nmax_chars = \"lots\"\n")]);
    let (code, _, stderr) = check(&project, &["call", "read", r#"{"path": "agent-tools.toml"}"#]);
    assert_eq!(code, 2);
    assert!(stderr.contains("agent-tools.toml") && stderr.contains("invalid type"), "{stderr}");
}

#[test]
fn status_reports_every_family() {
    let project = TempProject::new(&[]);
    let (code, stdout, _) = check(&project, &["status", "--json"]);
    assert_eq!(code, 0);
    let report: serde_json::Value = serde_json::from_str(&stdout).expect("json");
    let families: Vec<&str> = report["families"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["family"].as_str().unwrap())
        .collect();
    for family in ["ask", "astgrep", "debug", "eval", "files", "lsp", "vibe"] {
        assert!(families.contains(&family), "status lacks {family}: {families:?}");
    }
}

#[test]
fn status_on_the_plan_surface_names_the_tools_its_ceiling_hides() {
    let project = TempProject::new(&[]);
    let (code, stdout, _) = check(&project, &["status", "--surface", "plan", "--json"]);
    assert_eq!(code, 0);
    let report: serde_json::Value = serde_json::from_str(&stdout).expect("json");
    assert!(report["surface"].as_str().unwrap().starts_with("plan"), "{report}");
    let files = report["families"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["family"] == "files")
        .expect("files family");
    let shown: Vec<&str> =
        files["tools"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
    let hidden: Vec<&str> =
        files["hidden"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
    assert!(shown.contains(&"read") && !shown.contains(&"write"), "{files}");
    assert!(hidden.contains(&"write (write)"), "{files}");
}

/// `status` asks the run's own language-server supervisor, so it reports the setup that run
/// would use: a server in the project's `.venv` on a surface that may run project code, and
/// not on the plan surface, where project code never runs.
#[test]
fn status_reports_the_language_server_the_run_itself_would_start() {
    let project = TempProject::new(&[
        ("pyproject.toml", "[project]\nname = \"p\"\n"),
        ("main.py", "print(1)\n"),
        (".venv/bin/basedpyright-langserver", "#!/bin/sh\necho 'basedpyright 1.0.0'\n"),
    ]);
    let server = project.root.join(".venv/bin/basedpyright-langserver");
    std::fs::set_permissions(&server, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let python_line = |surface: &str| {
        // No server on PATH, so only the project's own could serve Python.
        let out = Command::new(host_binary())
            .args(["status", "--surface", surface, "--json", "--root"])
            .arg(&project.root)
            .env("PATH", "/usr/bin:/bin")
            .output()
            .expect("run the host");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        let report: serde_json::Value = serde_json::from_str(&stdout).expect("json");
        let lsp = report["families"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["family"] == "lsp")
            .expect("lsp family")
            .clone();
        lsp["details"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|d| d.as_str())
            .find(|d| d.starts_with("python"))
            .unwrap_or_else(|| panic!("no python line on {surface}: {lsp}"))
            .to_string()
    };
    let build = python_line("build");
    assert!(build.contains(".venv/bin/basedpyright-langserver"), "build: {build}");
    let plan = python_line("plan");
    assert!(!plan.contains(".venv/bin/basedpyright-langserver"), "plan: {plan}");
}

/// `status` asks the run's own kernels, which start in the run's capsule: behind a prefix that
/// runs nothing, the interpreter is reported as not running there, not as the host's Python.
#[test]
fn status_reports_the_interpreter_as_the_runs_capsule_sees_it() {
    let project = TempProject::new(&[(
        "refuse.sh",
        "#!/bin/sh\necho 'refused by the capsule' >&2\nexit 1\n",
    )]);
    let wrapper = project.root.join("refuse.sh");
    std::fs::set_permissions(&wrapper, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let config = project.root.join("user.toml");
    std::fs::write(
        &config,
        format!("[capsule]\nkind = \"prefix\"\nprefix = [{:?}]\n", wrapper.display().to_string()),
    )
    .expect("user config");
    let out = Command::new(host_binary())
        .args(["status", "--json", "--root"])
        .arg(&project.root)
        .env("AGENT_TOOLS_CONFIG", &config)
        .output()
        .expect("run the host");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_str(&stdout).expect("json");
    let eval = report["families"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["family"] == "eval")
        .expect("eval family")
        .clone();
    let python = eval["details"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|d| d.as_str())
        .find(|d| d.starts_with("python"))
        .unwrap_or_else(|| panic!("no python line: {eval}"))
        .to_string();
    assert!(!python.contains("(Python 3"), "the host's interpreter, not the capsule's: {python}");
    assert!(python.contains("does not run") || python.contains("unavailable"), "{python}");
}

#[test]
fn a_result_that_cannot_be_written_is_an_error_not_a_silent_success() {
    let project = TempProject::new(&[("a.txt", "hello\n")]);
    // /dev/full is Linux's; elsewhere there is no device that always fails to write.
    if !cfg!(target_os = "linux") {
        return;
    }
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").expect("/dev/full");
    for args in [&["call", "read", r#"{"path": "a.txt"}"#][..], &["status", "--json"]] {
        let out = Command::new(host_binary())
            .args(args)
            .arg("--root")
            .arg(&project.root)
            .stdout(full.try_clone().expect("dup /dev/full"))
            .output()
            .expect("run the host");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{args:?}: {stderr}");
        assert!(stderr.contains("cannot write the result to stdout"), "{args:?}: {stderr}");
    }
}

#[test]
fn integers_written_as_whole_floats_are_accepted() {
    let project = TempProject::new(&[("a.txt", "one\ntwo\nthree\nfour\n")]);
    for args in [
        r#"{"path": "a.txt", "start_line": 2.0, "end_line": 3}"#,
        r#"{"path": "a.txt", "start_line": 2, "end_line": 3e0}"#,
        r#"{"path": "a.txt", "start_line": 0.2e1, "end_line": 30e-1}"#,
    ] {
        let (code, stdout, stderr) = check(&project, &["call", "read", args]);
        assert_eq!(code, 0, "{args}: {stderr}");
        assert!(stdout.starts_with("2\ttwo\n3\tthree\n[a.txt: showed lines 2-3 of 4"), "{stdout}");
    }
    // 1e3 is 1000: past the last line, so the read goes to the end.
    let (code, stdout, stderr) = check(
        &project,
        &["call", "read", r#"{"path": "a.txt", "start_line": 3.0, "end_line": 1e3}"#],
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout.trim_end(), "3\tthree\n4\tfour", "{stdout}");
    let (code, _, stderr) =
        check(&project, &["call", "read", r#"{"path": "a.txt", "start_line": 2.5}"#]);
    assert_eq!(code, 1, "a fraction is still refused");
    assert!(stderr.contains("start_line"), "the argument is named: {stderr}");
}
