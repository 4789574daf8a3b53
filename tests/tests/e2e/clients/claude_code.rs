//! Claude Code for real: the README's `claude mcp add` lines (stdio and HTTP), its health check,
//! and tool calls it makes for a model scripted on loopback, offline.

use std::{
    io::{BufRead, BufReader},
    path::{Path, PathBuf},
    process::{Child, Command, Output, Stdio},
    time::Duration,
};

use serde_json::{Value, json};

use super::{
    CONTENTS, FILE, HTTP_URL, Launch, assert_no_process_names, check_started_as_the_client,
    cli::{client_env, http_host_with_token, on_path, run_cli, stdout_of},
    question, readme_block, snippet,
};
use crate::support::{Sdk, TempProject, assert_no_survivors, host_binary, require, unique};

/// Claude Code's binary, or `None` after a loud skip (a failure in CI).
fn claude_code() -> Option<PathBuf> {
    let found = on_path("claude");
    require("Claude Code (`claude`)", found.is_some(), "run `cargo xtask setup`")
        .then_some(found)?
}

/// Claude Code's environment: the sandboxed home, and everything that would reach the network
/// (updates, telemetry, error reports, anything not essential) switched off.
fn claude_env(cmd: &mut Command, home: &Path, marker: &str) {
    client_env(cmd, home, marker);
    cmd.env("DISABLE_AUTOUPDATER", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_ERROR_REPORTING", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1");
}

fn claude(claude: &Path, home: &Path, cwd: &Path, marker: &str, args: &[&str]) -> Output {
    let mut cmd = Command::new(claude);
    claude_env(&mut cmd, home, marker);
    cmd.args(args).current_dir(cwd);
    run_cli(cmd)
}

/// Runs a README line through `sh` as a user would (in `cwd`, with `env` exported).
fn shell_line(line: &str, home: &Path, cwd: &Path, marker: &str, env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new("sh");
    claude_env(&mut cmd, home, marker);
    cmd.arg("-c").arg(line).current_dir(cwd).envs(env.iter().copied());
    run_cli(cmd)
}

/// A local Anthropic Messages endpoint whose model makes the tool `calls` in turn
/// (`tests/py/scripted_model.py`).
struct ScriptedModel {
    child: Child,
    port: u16,
    log: PathBuf,
}

impl ScriptedModel {
    fn start(python: &Path, folder: &Path, calls: &Value) -> ScriptedModel {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("py/scripted_model.py");
        let log = folder.join("model-requests.jsonl");
        let mut child = Command::new(python)
            .arg(script)
            .arg(calls.to_string())
            .arg(&log)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the scripted model");
        let mut first = String::new();
        let _ = BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut first);
        let port =
            first.trim().parse().unwrap_or_else(|_| panic!("no port from the model: {first:?}"));
        ScriptedModel { child, port, log }
    }

    /// The tool results Claude Code sent back to the model, in call order, as JSON text: those
    /// of its last request, which carries the whole conversation.
    fn tool_results(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .map(|request| request["tool_results"].as_array().cloned().unwrap_or_default())
            .max_by_key(Vec::len)
            .unwrap_or_default()
            .iter()
            .map(Value::to_string)
            .collect()
    }
}

impl Drop for ScriptedModel {
    fn drop(&mut self) {
        drop(self.child.stdin.take()); // it serves until its stdin closes
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `claude -p` in `cwd` against a scripted model making `calls` (tools named
/// `mcp__agent-tools__…`, all allowed); returns Claude Code's events and the tool results it
/// passed to the model.
fn claude_print(
    claude_bin: &Path,
    python: &Path,
    home: &Path,
    cwd: &Path,
    marker: &str,
    calls: &[(&str, Value)],
) -> (Vec<Value>, Vec<String>) {
    let script: Vec<Value> = calls
        .iter()
        .map(|(tool, input)| json!({"name": format!("mcp__agent-tools__{tool}"), "input": input}))
        .collect();
    let allowed: Vec<String> =
        calls.iter().map(|(tool, _)| format!("mcp__agent-tools__{tool}")).collect();
    let model = ScriptedModel::start(python, home, &Value::from(script));
    let mut cmd = Command::new(claude_bin);
    claude_env(&mut cmd, home, marker);
    cmd.current_dir(cwd)
        .env("ANTHROPIC_BASE_URL", format!("http://127.0.0.1:{}", model.port))
        .env("ANTHROPIC_API_KEY", "sk-e2e-offline")
        .args(["-p", "Use the agent-tools tools.", "--output-format", "stream-json", "--verbose"])
        .args(["--allowedTools", &allowed.join(","), "--max-turns", "12"]);
    let printed = stdout_of(&run_cli(cmd), "claude -p");
    let events: Vec<Value> = printed.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let init = events.iter().find(|e| e["subtype"] == "init").expect("an init event");
    let servers = &init["mcp_servers"];
    assert!(
        servers.as_array().is_some_and(|s| s
            .iter()
            .any(|s| s["name"] == "agent-tools" && s["status"] == "connected")),
        "agent-tools is not connected in Claude Code: {servers}"
    );
    let last = events.last().expect("events");
    assert_eq!(last["subtype"], "success", "{last}");
    let results = model.tool_results();
    assert_eq!(results.len(), calls.len(), "Claude Code made every call: {results:?}\n{printed}");
    (events, results)
}

#[test]
fn claude_code_adds_the_readme_line_connects_and_calls_tools_for_a_model() {
    let Some(claude_bin) = claude_code() else { return };
    let Some(python) = Sdk::V1.python() else { return };
    let project = TempProject::new(&[(FILE, CONTENTS)]);
    let home = TempProject::new(&[]);
    let marker = format!("e2e-claude-{}-{}", std::process::id(), unique());
    let root = project.root.display().to_string();

    let (_, line) = snippet("Claude Code", &project.root);
    assert!(line.starts_with("claude mcp add ") && line.trim().lines().count() == 1, "{line}");
    stdout_of(&shell_line(&line, &home.root, &project.root, &marker, &[]), "claude mcp add");

    // `claude mcp get` health-checks the server: it starts it and connects.
    let got =
        claude(&claude_bin, &home.root, &project.root, &marker, &["mcp", "get", "agent-tools"]);
    let got = stdout_of(&got, "claude mcp get agent-tools");
    assert!(got.contains("Connected") && !got.contains("Failed"), "not connected:\n{got}");
    assert!(got.contains(&format!("Args: mcp --root {root}")), "{got}");

    // What Claude Code stored is what it starts.
    let stored = std::fs::read_to_string(home.root.join(".claude.json")).expect(".claude.json");
    let stored: Value = serde_json::from_str(&stored).expect("Claude Code's config is JSON");
    let entry = &stored["projects"][&root]["mcpServers"]["agent-tools"];
    assert_eq!(entry["type"], "stdio", "{entry}");
    let launch = Launch::from_object(entry, "command", "args", "env");
    check_started_as_the_client("Claude Code", &launch, &project.root);

    // A model asks for `read`, then a card. In print mode nobody can answer a card: Claude Code
    // dismisses it, which the model gets as a skip (a success), not as an error.
    let calls = [("read", json!({"path": FILE})), ("ask_user", question())];
    let (events, results) =
        claude_print(&claude_bin, &python, &home.root, &project.root, &marker, &calls);
    let init = events.iter().find(|e| e["subtype"] == "init").expect("an init event");
    let tools: Vec<&str> =
        init["tools"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    for tool in ["mcp__agent-tools__read", "mcp__agent-tools__edit", "mcp__agent-tools__ast_grep"] {
        assert!(tools.contains(&tool), "Claude Code does not offer {tool}: {tools:?}");
    }
    assert!(results[0].contains(CONTENTS.trim_end()), "the model got no file: {}", results[0]);
    assert!(
        results[1].contains(r#"\"status\":\"skipped\""#) && !results[1].contains("is_error\":true"),
        "a dismissed card is a skip: {}",
        results[1]
    );

    // A wrong flag fails the same health check.
    let binary = host_binary().display().to_string();
    let broken = ["mcp", "add", "broken", "--", &binary, "mcp", "--rooot", &root];
    stdout_of(
        &claude(&claude_bin, &home.root, &project.root, &marker, &broken),
        "claude mcp add broken",
    );
    let got = claude(&claude_bin, &home.root, &project.root, &marker, &["mcp", "get", "broken"]);
    let got = String::from_utf8_lossy(&got.stdout).into_owned();
    assert!(got.contains("Failed to connect"), "a server that exits 2 is reported: {got}");

    assert_no_survivors(&marker, Duration::from_secs(15));
    assert_no_process_names(&project.root);
}

#[test]
fn claude_code_connects_over_http_with_the_token_and_its_abandoned_session_ends() {
    let Some(claude_bin) = claude_code() else { return };
    let Some(python) = Sdk::V1.python() else { return };
    let detached = "[mcp]\nsession_detached_seconds = 1\n";
    let project = TempProject::new(&[(FILE, CONTENTS), ("agent-tools.toml", detached)]);
    let home = TempProject::new(&[]);
    let marker = format!("e2e-claude-http-{}-{}", std::process::id(), unique());
    let (host, token) = http_host_with_token(&project.root, &home.root);

    let block = readme_block("Over Streamable HTTP").body.replace(HTTP_URL, &host.url);
    let line = block.lines().find(|l| l.starts_with("claude ")).expect("a `claude` line");
    let env = [("AGENT_TOOLS_TOKEN", token.as_str())];
    stdout_of(&shell_line(line, &home.root, &project.root, &marker, &env), "claude mcp add");
    let got =
        claude(&claude_bin, &home.root, &project.root, &marker, &["mcp", "get", "agent-tools"]);
    let got = stdout_of(&got, "claude mcp get agent-tools");
    assert!(got.contains("Connected") && !got.contains("Failed"), "not connected:\n{got}");

    // A kernel of the session shows whether the session outlives Claude Code.
    let cell = json!({"code": "6 * 7", "description": "an e2e cell", "language": "python"});
    let calls = [("read", json!({"path": FILE})), ("eval", cell)];
    let (_, results) =
        claude_print(&claude_bin, &python, &home.root, &project.root, &marker, &calls);
    assert!(results[0].contains(CONTENTS.trim_end()), "the model got no file: {}", results[0]);
    assert!(results[1].contains("42"), "the model got no value: {}", results[1]);
    // Claude Code exits without deleting its session (no HTTP DELETE), dropping its standing
    // stream: the host ends the session after `session_detached_seconds`, kernel and all.
    host.assert_only_the_host_is_left();

    // Without the token, the same health check fails.
    let untokened = format!("claude mcp add --transport http untokened {}", host.url);
    stdout_of(&shell_line(&untokened, &home.root, &project.root, &marker, &[]), "mcp add");
    let got = claude(&claude_bin, &home.root, &project.root, &marker, &["mcp", "get", "untokened"]);
    let got = String::from_utf8_lossy(&got.stdout).into_owned();
    assert!(got.contains("Failed to connect"), "a request without the token is refused: {got}");

    host.stop();
    assert_no_process_names(&project.root);
}

/// What the model got of one tool result: the text of its text blocks, and the kinds of its
/// blocks.
fn model_got(result: &str) -> (String, Vec<String>) {
    let block: Value = serde_json::from_str(result).expect("a tool_result block is JSON");
    let blocks = match &block["content"] {
        Value::Array(blocks) => blocks.clone(),
        Value::String(text) => vec![json!({"type": "text", "text": text})],
        _ => Vec::new(),
    };
    let text = blocks.iter().filter_map(|b| b["text"].as_str()).collect::<Vec<_>>().join("\n");
    let kinds = blocks.iter().filter_map(|b| b["type"].as_str().map(str::to_string)).collect();
    (text, kinds)
}

#[test]
fn claude_codes_model_gets_a_long_read_and_a_large_search_cut_once_and_a_figure() {
    let Some(claude_bin) = claude_code() else { return };
    long_read_large_search_and_figure(&claude_bin);
}

/// Through Claude Code at `claude_bin` (the pinned release, or the newest): the model gets a
/// 3,519-line read (numbered lines) and a 500-match search cut once, alike in text and payload, and a figure as
/// an image.
pub(super) fn long_read_large_search_and_figure(claude_bin: &Path) {
    use crate::output_cap_over_mcp::{CAP, LINES, MATCHES, big_file, many_calls};
    let Some(python) = Sdk::V1.python() else { return };
    let project = TempProject::new(&[("big.rs", &big_file()), ("many.py", &many_calls())]);
    // The user's own config points the kernel at the test venv (with matplotlib).
    let user_config = format!("[eval]\npython = {:?}\n", python.display().to_string());
    let home = TempProject::new(&[(".config/agent-tools/agent-tools.toml", &user_config)]);
    let marker = format!("e2e-claude-cap-{}-{}", std::process::id(), unique());
    // The README line, run with this Claude Code.
    let (_, line) = snippet("Claude Code", &project.root);
    let line = line.replacen("claude ", &format!("{} ", claude_bin.display()), 1);
    stdout_of(&shell_line(&line, &home.root, &project.root, &marker, &[]), "claude mcp add");

    let figure = "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n\
                  plt.plot([1, 2, 3])\nplt.show()";
    let calls = [
        ("read", json!({"path": "big.rs"})),
        ("ast_grep", json!({"pattern": "print($X)", "path": "many.py", "max_results": 500})),
        ("eval", json!({"code": figure, "description": "a figure", "language": "python"})),
    ];
    let (_, results) =
        claude_print(claude_bin, &python, &home.root, &project.root, &marker, &calls);

    // The read reaches the model inline, as numbered lines: where it stops and how to go on.
    let (read, _) = model_got(&results[0]);
    let end = crate::output_cap_over_mcp::last_numbered_line(&read);
    assert!(end > 100 && end < 2000, "cut at line {end}: {read:.300}");
    assert!(
        read.lines().any(|l| l.trim_start().starts_with("1\t")),
        "numbered from line 1: {read:.300}"
    );
    assert!(read.contains(&format!("of {LINES}")), "{read:.300}");
    assert!(read.contains(&format!("start_line={}", end + 1)), "{read:.300}");
    assert!(read.chars().count() <= CAP + 1_000, "{} characters", read.chars().count());

    // The search too: whole matches, fewer than found, and the note saying so.
    let (search, _) = model_got(&results[1]);
    let payload: Value = serde_json::from_str(&search)
        .unwrap_or_else(|_| panic!("the model got no payload: {search:.300}"));
    let shown = payload["matches"].as_array().map_or(0, Vec::len);
    assert!(shown > 10 && shown < MATCHES, "{shown} matches");
    assert!(search.contains(&format!("showing {shown} of {MATCHES} matches")), "{search:.300}");

    // The figure reaches the model as an image beside the payload.
    let (cell, kinds) = model_got(&results[2]);
    assert!(kinds.iter().any(|k| k == "image"), "no image for the model: {kinds:?} {cell:.300}");

    assert_no_survivors(&marker, Duration::from_secs(15));
    assert_no_process_names(&project.root);
}
