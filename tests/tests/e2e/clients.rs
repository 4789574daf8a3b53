//! The README's client snippets, read from the README itself. The blocks for VS Code, Cursor,
//! Zed and Goose, which cannot be installed here, are parsed and the server is started with the
//! command, arguments and environment each client would use, then driven by the official Python
//! SDK; Claude Code (`claude_code`) and Codex (`codex`) run for real, over stdio and HTTP, the
//! pinned releases and the newest (`newest`, installed from the npm registry at test time).
//! Every client's server is gone when its test ends.

mod claude_code;
mod cli;
mod codex;
mod newest;

use std::{
    path::Path,
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use serde_json::{Map, Value, json};

use crate::support::{
    Sdk, TempProject, assert_no_survivors, host_binary, require, run_driver, unique,
};
use cli::{on_path, stdout_of};

/// The placeholders the README's snippets use.
const BINARY: &str = "/path/to/agent-tools";
const PROJECT: &str = "/path/to/project";

/// The file every client reads through the server, by a path relative to `--root`.
const FILE: &str = "hello.txt";
const CONTENTS: &str = "hello from the project\n";

/// The server's address in the README's HTTP lines.
const HTTP_URL: &str = "http://127.0.0.1:8765/mcp";

/// A fenced block of the README's "Clients" section.
struct Snippet {
    /// The first line of the paragraph before the block (it names the client).
    label: String,
    /// The language after the opening fence.
    language: String,
    body: String,
}

/// The blocks of the README's "Clients" section, in order.
fn readme_snippets() -> Vec<Snippet> {
    let readme = Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md");
    let text = std::fs::read_to_string(&readme).expect("read README.md");
    let start = text.find("\n### Clients\n").expect("the README has a `### Clients` section");
    let section = &text[start + 1..];
    // The section ends at the next heading of its level or above (a `#` line inside a block is
    // a comment, not a heading).
    let end = ["\n## ", "\n### "]
        .iter()
        .filter_map(|heading| section[1..].find(heading).map(|i| i + 1))
        .min()
        .unwrap_or(section.len());
    let mut snippets = Vec::new();
    let mut paragraph_start = String::new();
    let mut previous_blank = true;
    let mut open: Option<Snippet> = None;
    for line in section[..end].lines() {
        if let Some(snippet) = open.as_mut() {
            if line.starts_with("```") {
                snippets.extend(open.take());
            } else {
                snippet.body.push_str(line);
                snippet.body.push('\n');
            }
            continue;
        }
        if let Some(language) = line.strip_prefix("```") {
            let label = paragraph_start.clone();
            open = Some(Snippet { label, language: language.to_string(), body: String::new() });
        } else if previous_blank && !line.trim().is_empty() {
            paragraph_start = line.to_string();
        }
        previous_blank = line.trim().is_empty();
    }
    snippets
}

/// The block whose paragraph starts with `label`.
fn readme_block(label: &str) -> Snippet {
    readme_snippets()
        .into_iter()
        .find(|s| s.label.starts_with(label))
        .unwrap_or_else(|| panic!("the README's Clients section has no block for {label}"))
}

/// The block for `client`, with the placeholders replaced by this test's binary and project.
fn snippet(client: &str, project: &Path) -> (Snippet, String) {
    let found = readme_block(client);
    let body = substitute(&found.body, project);
    (found, body)
}

fn substitute(text: &str, project: &Path) -> String {
    assert!(text.contains(BINARY), "the snippet does not name the binary as {BINARY}: {text}");
    text.replace(BINARY, &host_binary().display().to_string())
        .replace(PROJECT, &project.display().to_string())
}

/// The card the scripted models put to the operator.
fn question() -> Value {
    json!({"question": "Which cache?", "options": [{"label": "Redis"}, {"label": "SQLite"}]})
}

/// What a client starts: the program, its arguments and the environment it adds.
#[derive(Debug, PartialEq)]
struct Launch {
    command: String,
    args: Vec<String>,
    env: Map<String, Value>,
}

impl Launch {
    /// From a JSON object with the command, the arguments and the environment under these keys.
    fn from_object(entry: &Value, command: &str, args: &str, env: &str) -> Launch {
        let command = entry[command]
            .as_str()
            .unwrap_or_else(|| panic!("`{command}` is not a string in {entry}"))
            .to_string();
        let args = entry[args]
            .as_array()
            .unwrap_or_else(|| panic!("`{args}` is not a list in {entry}"))
            .iter()
            .map(|a| a.as_str().unwrap_or_else(|| panic!("a non-string argument: {a}")).to_string())
            .collect();
        let env = match &entry[env] {
            Value::Null => Map::new(),
            Value::Object(vars) => vars.clone(),
            other => panic!("`{env}` is not a map: {other}"),
        };
        Launch { command, args, env }
    }
}

/// Starts the server as a client would (in a folder of the client's own, not the project),
/// lists the tools and reads the project's file by a relative path through the official Python
/// SDK; then proves the server and everything it started are gone.
fn check_started_as_the_client(client: &str, launch: &Launch, project: &Path) {
    let Some(python) = Sdk::V1.python() else { return };
    let at_root = launch.args.windows(2).any(|w| w[0] == "--root" && Path::new(&w[1]) == project);
    assert!(
        at_root,
        "{client}: the arguments do not pass `--root {}`: {launch:?}",
        project.display()
    );
    let client_folder = TempProject::new(&[]);
    let marker = format!("e2e-clients-{}-{}", std::process::id(), unique());
    let mut env = launch.env.clone();
    env.insert("AGENT_TOOLS_E2E_MARKER".into(), json!(marker));
    env.insert("RUST_LOG".into(), json!("warn"));
    let mut server = vec![launch.command.clone()];
    server.extend(launch.args.iter().cloned());
    let script = json!({
        "server": server,
        "env": env,
        "cwd": client_folder.root,
        "steps": [{"op": "list_tools"}, {"op": "call", "tool": "read", "args": {"path": FILE}}],
    });
    let out = run_driver(&python, &script);
    let results = out["results"].as_array().expect("driver results");
    let names = crate::support::tool_names(&results[1]);
    for tool in ["read", "edit", "ast_grep", "lsp"] {
        assert!(names.contains(&tool), "{client}: {tool} is not listed: {names:?}");
    }
    let read = &results[2];
    let text = crate::support::text_of(read);
    assert_eq!(read["isError"], false, "{client}: read failed: {text}");
    assert!(text.contains(CONTENTS.trim_end()), "{client}: read the wrong file: {text}");
    assert_no_survivors(&marker, Duration::from_secs(15));
    assert_no_process_names(project);
}

/// No live process has `project` in its command line: whatever a client started is gone.
fn assert_no_process_names(project: &Path) {
    let needle = project.display().to_string();
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let alive: Vec<(u32, String)> = std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|entry| {
                let pid = entry.file_name().to_str()?.parse::<u32>().ok()?;
                let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
                if stat.split(") ").nth(1).is_some_and(|rest| rest.starts_with('Z')) {
                    return None; // exited; only its parent has not reaped it yet
                }
                let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
                let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
                cmdline.contains(&needle).then_some((pid, cmdline))
            })
            .collect();
        if alive.is_empty() {
            return;
        }
        assert!(Instant::now() < deadline, "processes naming the project survived: {alive:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The entry named `agent-tools` under `key` of a JSON snippet.
fn json_entry(client: &str, project: &Path, key: &str) -> Value {
    let (found, body) = snippet(client, project);
    assert_eq!(
        found.language, "json",
        "{client}'s block is plain JSON (the file takes no comments)"
    );
    let parsed: Value = serde_json::from_str(&body)
        .unwrap_or_else(|e| panic!("{client}'s block is not valid JSON ({e}):\n{body}"));
    let entry = parsed[key]["agent-tools"].clone();
    assert!(entry.is_object(), "{client}'s block has no `{key}.agent-tools`: {parsed}");
    entry
}

#[test]
fn the_vs_code_block_starts_the_server_at_the_opened_folder() {
    let project = TempProject::new(&[(FILE, CONTENTS)]);
    let entry = json_entry("VS Code", &project.root, "servers");
    assert_eq!(entry["type"], "stdio", "VS Code starts only `stdio` entries as processes: {entry}");
    // VS Code resolves `${workspaceFolder}` in the command, arguments and environment.
    let folder = project.root.display().to_string();
    let resolved: Value =
        serde_json::from_str(&entry.to_string().replace("${workspaceFolder}", &folder))
            .expect("still JSON");
    let launch = Launch::from_object(&resolved, "command", "args", "env");
    check_started_as_the_client("VS Code", &launch, &project.root);
}

#[test]
fn the_cursor_block_starts_the_server_at_the_root() {
    let project = TempProject::new(&[(FILE, CONTENTS)]);
    let entry = json_entry("Cursor", &project.root, "mcpServers");
    assert!(entry.get("url").is_none(), "a `url` makes Cursor connect instead of start: {entry}");
    let launch = Launch::from_object(&entry, "command", "args", "env");
    check_started_as_the_client("Cursor", &launch, &project.root);
}

#[test]
fn the_zed_block_starts_the_server_at_the_root() {
    let project = TempProject::new(&[(FILE, CONTENTS)]);
    let entry = json_entry("Zed", &project.root, "context_servers");
    assert!(
        entry.get("source").is_none_or(|s| s == "custom"),
        "Zed starts a command only for a custom server: {entry}"
    );
    assert!(
        entry["command"].is_string(),
        "Zed's custom server takes `command` as a string: {entry}"
    );
    let launch = Launch::from_object(&entry, "command", "args", "env");
    check_started_as_the_client("Zed", &launch, &project.root);
}

#[test]
fn the_goose_block_starts_the_server_at_the_root() {
    let project = TempProject::new(&[(FILE, CONTENTS)]);
    let (found, body) = snippet("Goose", &project.root);
    assert_eq!(found.language, "yaml");
    // A YAML 1.2 parser (the npm `yaml` package's CLI, in the test tools) reads it as Goose does.
    let yaml = on_path("yaml");
    if !require("the `yaml` CLI (npm `yaml`)", yaml.is_some(), "run `cargo xtask setup`") {
        return;
    }
    let Some(yaml) = yaml else { return };
    let mut cmd = Command::new(yaml);
    cmd.args(["--json", "--single", "--strict"]);
    let parsed = parse_yaml(cmd, &body);
    let entry = &parsed["extensions"]["agent-tools"];
    assert_eq!(entry["enabled"], true, "Goose starts only enabled extensions: {entry}");
    assert_eq!(entry["type"], "stdio", "{entry}");
    assert!(entry["name"].is_string(), "Goose requires the extension's `name`: {entry}");
    assert!(entry["timeout"].is_u64() || entry["timeout"].is_null(), "{entry}");
    let launch = Launch::from_object(entry, "cmd", "args", "envs");
    check_started_as_the_client("Goose", &launch, &project.root);
}

/// Runs a YAML-to-JSON command on `text`.
fn parse_yaml(mut cmd: Command, text: &str) -> Value {
    use std::io::Write;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the YAML parser");
    child.stdin.take().expect("stdin").write_all(text.as_bytes()).expect("write YAML");
    let output = child.wait_with_output().expect("YAML parser");
    let stdout = stdout_of(&output, "the YAML parser");
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}

#[test]
fn a_wrong_flag_in_a_snippet_fails_the_start_as_the_client_check() {
    if Sdk::V1.python().is_none() {
        return;
    }
    let project = TempProject::new(&[(FILE, CONTENTS)]);
    let mut launch = Launch::from_object(
        &json_entry("Cursor", &project.root, "mcpServers"),
        "command",
        "args",
        "env",
    );
    for arg in &mut launch.args {
        if arg == "--root" {
            *arg = "--rooot".into();
        }
    }
    launch.args.push("--root".into());
    launch.args.push(project.root.display().to_string());
    let failed =
        std::panic::catch_unwind(|| check_started_as_the_client("Cursor", &launch, &project.root));
    assert!(failed.is_err(), "the check passed a server started with an unknown flag");
}
