//! The README's client snippets, read from the README itself. Claude Code and Codex run for
//! real: Claude Code adds the README's line, health-checks the server and calls `read` and
//! `ask_user` for a (scripted, local) model; Codex parses the README's config and its MCP client
//! lists the tools and calls them through `codex app-server`. The blocks for VS Code, Cursor, Zed
//! and Goose, which cannot be installed here, are parsed and the server is started with the
//! command, arguments and environment each client would use, then driven by the official Python
//! SDK. Every client's server is gone when the test ends.

use std::{
    io::{BufRead, BufReader, Read},
    path::{Path, PathBuf},
    process::{Child, Command, Output, Stdio},
    time::{Duration, Instant},
};

use serde_json::{Map, Value, json};

use crate::support::{
    Sdk, TempProject, assert_no_survivors, host_binary, require, run_driver, unique,
};

/// The placeholders the README's snippets use.
const BINARY: &str = "/path/to/agent-tools";
const PROJECT: &str = "/path/to/project";

/// The file every client reads through the server, by a path relative to `--root`.
const FILE: &str = "hello.txt";
const CONTENTS: &str = "hello from the project\n";

/// No client call may take longer than this; a hung CLI fails the test instead of hanging it.
const CLI_TIMEOUT: Duration = Duration::from_secs(120);

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

/// The block for `client`, with the placeholders replaced by this test's binary and project.
fn snippet(client: &str, project: &Path) -> (Snippet, String) {
    let found = readme_snippets()
        .into_iter()
        .find(|s| s.label.starts_with(client))
        .unwrap_or_else(|| panic!("the README's Clients section has no block for {client}"));
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

/// `name` on PATH (the test environment puts the npm tools there).
fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(name)).find(|p| p.is_file())
}

/// Runs `cmd` to its end with a deadline; a CLI still running after it is killed and fails.
fn run_cli(mut cmd: Command) -> Output {
    let described = format!("{cmd:?}");
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("start {described}: {e}"));
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let deadline = Instant::now() + CLI_TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the CLI") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{described} did not finish within {CLI_TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let output = Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    };
    if !output.stderr.is_empty() {
        eprintln!("{described} stderr:\n{}", String::from_utf8_lossy(&output.stderr));
    }
    output
}

fn drain(pipe: Option<impl Read + Send + 'static>) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut bytes);
        }
        bytes
    })
}

fn stdout_of(output: &Output, what: &str) -> String {
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{what} failed ({}):\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// A client's home, XDG folders and nothing else of the real environment but PATH, so no CLI
/// reads or writes the real home; `marker` goes to every process the client starts.
fn client_env(cmd: &mut Command, home: &Path, marker: &str) {
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env("XDG_STATE_HOME", home.join(".local/state"))
        .env("AGENT_TOOLS_STATE_DIR", home.join(".local/state/agent-tools"))
        .env("AGENT_TOOLS_E2E_MARKER", marker)
        .env("RUST_LOG", "warn");
}

/// Claude Code, with everything that would reach the network switched off.
fn claude(claude: &Path, home: &Path, cwd: &Path, marker: &str, args: &[&str]) -> Output {
    let mut cmd = Command::new(claude);
    client_env(&mut cmd, home, marker);
    cmd.args(args)
        .current_dir(cwd)
        .env("DISABLE_AUTOUPDATER", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_ERROR_REPORTING", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1");
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

#[test]
fn claude_code_adds_the_readme_line_connects_and_calls_tools_for_a_model() {
    let claude_bin = on_path("claude");
    if !require("Claude Code (`claude`)", claude_bin.is_some(), "run `cargo xtask setup`") {
        return;
    }
    let Some(claude_bin) = claude_bin else { return };
    let Some(python) = Sdk::V1.python() else { return };
    let project = TempProject::new(&[(FILE, CONTENTS)]);
    let home = TempProject::new(&[]);
    let marker = format!("e2e-claude-{}-{}", std::process::id(), unique());
    let root = project.root.display().to_string();

    let (_, line) = snippet("Claude Code", &project.root);
    let words: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(
        words[..3],
        ["claude", "mcp", "add"],
        "the Claude Code block is one `claude mcp add`"
    );
    let added = claude(&claude_bin, &home.root, &project.root, &marker, &words[1..]);
    stdout_of(&added, "the README's `claude mcp add`");

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

    // A model (scripted, on loopback) asks for `read`, then a card; Claude Code calls both over
    // MCP. In print mode nobody can answer a card: Claude Code dismisses it, which the model
    // gets as a skip (a success), not as an error.
    let calls = json!([
        {"name": "mcp__agent-tools__read", "input": {"path": FILE}},
        {"name": "mcp__agent-tools__ask_user", "input": question()},
    ]);
    let model = ScriptedModel::start(&python, &home.root, &calls);
    let base_url = format!("http://127.0.0.1:{}", model.port);
    let mut cmd = Command::new(&claude_bin);
    client_env(&mut cmd, &home.root, &marker);
    cmd.current_dir(&project.root)
        .env("DISABLE_AUTOUPDATER", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_ERROR_REPORTING", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("ANTHROPIC_BASE_URL", &base_url)
        .env("ANTHROPIC_API_KEY", "sk-e2e-offline")
        .args(["-p", "Read hello.txt.", "--output-format", "stream-json", "--verbose"])
        .args(["--allowedTools", "mcp__agent-tools__read,mcp__agent-tools__ask_user"])
        .args(["--max-turns", "5"]);
    let printed = stdout_of(&run_cli(cmd), "claude -p");
    let events: Vec<Value> = printed.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let init = events.iter().find(|e| e["subtype"] == "init").expect("an init event");
    assert!(
        init["mcp_servers"].as_array().is_some_and(|s| s
            .iter()
            .any(|s| s["name"] == "agent-tools" && s["status"] == "connected")),
        "agent-tools is not connected in Claude Code: {}",
        init["mcp_servers"]
    );
    let tools: Vec<&str> =
        init["tools"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    for tool in ["mcp__agent-tools__read", "mcp__agent-tools__edit", "mcp__agent-tools__ast_grep"] {
        assert!(tools.contains(&tool), "Claude Code does not offer {tool}: {tools:?}");
    }
    let results = model.tool_results();
    assert_eq!(results.len(), 2, "Claude Code made both calls: {results:?}\n{printed}");
    assert!(
        results[0].contains("hello from the project"),
        "the tool result Claude Code passed to the model lacks the file: {}\n{printed}",
        results[0]
    );
    assert!(
        results[1].contains(r#"\"status\":\"skipped\""#) && !results[1].contains("is_error\":true"),
        "a dismissed card is a skip: {}",
        results[1]
    );
    let last = events.last().expect("events");
    assert_eq!(last["subtype"], "success", "{last}");
    drop(model);

    // A wrong flag fails the same health check.
    let broken = [
        "mcp",
        "add",
        "broken",
        "--",
        &host_binary().display().to_string(),
        "mcp",
        "--rooot",
        &root,
    ]
    .map(str::to_string);
    let broken: Vec<&str> = broken.iter().map(String::as_str).collect();
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

/// Codex with its home in `home/.codex` and a model provider on a closed loopback port, so
/// nothing it does leaves the machine.
fn codex_home(home: &Path, mcp_config: &str) -> PathBuf {
    let codex_home = home.join(".codex");
    std::fs::create_dir_all(&codex_home).expect("mkdir CODEX_HOME");
    let config = format!(
        "model_provider = \"offline\"\n\n{mcp_config}\n[model_providers.offline]\n\
         name = \"offline\"\nbase_url = \"http://127.0.0.1:9/v1\"\n"
    );
    std::fs::write(codex_home.join("config.toml"), config).expect("write config.toml");
    codex_home
}

fn codex(codex: &Path, home: &Path, codex_home: &Path, marker: &str, args: &[&str]) -> Output {
    let mut cmd = Command::new(codex);
    client_env(&mut cmd, home, marker);
    cmd.args(args).current_dir(home).env("CODEX_HOME", codex_home);
    run_cli(cmd)
}

/// Codex's own reading of its config: the `transport` of `codex mcp get agent-tools --json`.
fn codex_transport(codex_bin: &Path, home: &Path, codex_home: &Path, marker: &str) -> Value {
    let got = codex(codex_bin, home, codex_home, marker, &["mcp", "get", "agent-tools", "--json"]);
    let got: Value = serde_json::from_str(&stdout_of(&got, "codex mcp get --json"))
        .expect("codex mcp get --json prints JSON");
    got["transport"].clone()
}

/// Runs `tests/py/codex_app_server.py`: Codex's status of the server, a `read` and a card
/// through it.
fn codex_app_server(
    python: &Path,
    codex_bin: &Path,
    home: &Path,
    codex_home: &Path,
    marker: &str,
    project: &Path,
) -> Value {
    // Codex passes a server only a few variables of its own environment; these two are more.
    let forward =
        "mcp_servers.agent-tools.env_vars=[\"AGENT_TOOLS_E2E_MARKER\", \"AGENT_TOOLS_CONFIG\"]";
    // The user's own agent-tools config asks before every write.
    let user_config = home.join("agent-tools.toml");
    std::fs::write(&user_config, "[approval]\npolicy = \"before_write\"\n").expect("user config");
    let mut cmd = Command::new(python);
    client_env(&mut cmd, home, marker);
    let script = json!({
        "codex": [codex_bin, "app-server", "-c", forward],
        "cwd": project,
        "env": {
            "PATH": std::env::var("PATH").unwrap_or_default(),
            "HOME": home,
            "CODEX_HOME": codex_home,
            "AGENT_TOOLS_E2E_MARKER": marker,
            "AGENT_TOOLS_CONFIG": user_config,
        },
        "server": "agent-tools",
        "calls": [
            {"tool": "read", "args": {"path": FILE}},
            {"tool": "ask_user", "args": question()},
            {"tool": "write", "args": {"path": "written.txt", "content": "x\n"}},
        ],
        "timeout": CLI_TIMEOUT.as_secs() / 2,
    });
    let file = home.join("codex-script.json");
    std::fs::write(&file, script.to_string()).expect("write the app-server script");
    let driver = Path::new(env!("CARGO_MANIFEST_DIR")).join("py/codex_app_server.py");
    cmd.arg(driver).arg(&file);
    let out = stdout_of(&run_cli(cmd), "the codex app-server driver");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("driver output is not JSON ({e}): {out}"))
}

#[test]
fn codex_parses_the_readme_config_lists_the_tools_and_calls_them() {
    let codex_bin = on_path("codex");
    if !require("Codex (`codex`)", codex_bin.is_some(), "run `cargo xtask setup`") {
        return;
    }
    let Some(codex_bin) = codex_bin else { return };
    let Some(python) = Sdk::V1.python() else { return };
    let project = TempProject::new(&[(FILE, CONTENTS)]);
    let home = TempProject::new(&[]);
    let marker = format!("e2e-codex-{}-{}", std::process::id(), unique());

    let (found, config) = snippet("Codex", &project.root);
    assert_eq!(found.language, "toml");
    let home_one = home.root.join("one");
    let config_home = codex_home(&home_one, &config);
    let transport = codex_transport(&codex_bin, &home_one, &config_home, &marker);
    assert_eq!(transport["type"], "stdio", "{transport}");
    let launch = Launch::from_object(&transport, "command", "args", "env");
    assert_eq!(launch.command, host_binary().display().to_string());
    check_started_as_the_client("Codex", &launch, &project.root);

    // The one-line alternative in the same paragraph gives Codex the same server.
    let one_liner = substitute(
        found.label.split('`').find(|s| s.starts_with("codex mcp add")).expect("a `codex mcp add`"),
        &project.root,
    );
    let home_two = home.root.join("two");
    let added_home = codex_home(&home_two, "");
    let words: Vec<&str> = one_liner.split_whitespace().collect();
    stdout_of(&codex(&codex_bin, &home_two, &added_home, &marker, &words[1..]), "codex mcp add");
    assert_eq!(codex_transport(&codex_bin, &home_two, &added_home, &marker), transport);

    // Codex's MCP client starts the server, lists its tools and calls `read`.
    let out =
        codex_app_server(&python, &codex_bin, &home_one, &config_home, &marker, &project.root);
    let status = &out["status"];
    assert!(status["toolsError"].is_null(), "Codex could not start the server: {status}");
    assert_eq!(status["serverInfo"]["name"], "agent-tools", "{status}");
    for tool in ["read", "edit", "ast_grep", "lsp"] {
        assert!(status["tools"].get(tool).is_some(), "Codex lists no {tool}: {status}");
    }
    let read = &out["calls"][0]["result"];
    assert_eq!(read["isError"], false, "{}", out["calls"][0]);
    assert!(
        read["content"][0]["text"].as_str().is_some_and(|t| t.contains(CONTENTS.trim_end())),
        "{read}"
    );
    // Codex 0.171 shows its app-server client no card from an MCP server: it cancels it itself,
    // which the model gets as a skip (a success), not as an error.
    let card = &out["calls"][1]["result"];
    assert_eq!(card["isError"], false, "{}", out["calls"][1]);
    assert_eq!(card["structuredContent"]["status"], "skipped", "{card}");
    // An approval card is dismissed the same way, and a dismissed approval denies the write.
    let write = &out["calls"][2]["result"];
    assert_eq!(write["isError"], true, "{}", out["calls"][2]);
    let text = write["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("approval denied"), "{text}");
    assert!(!project.root.join("written.txt").exists(), "a denied write wrote the file");
    assert_eq!(out["exit"], 0, "the app server ends when its client does: {out}");

    // A wrong flag is what Codex reports, not a server with no tools.
    let broken = config.replace("\"--root\"", "\"--rooot\"");
    let broken_home = codex_home(&home.root.join("broken"), &broken);
    let out = codex_app_server(
        &python,
        &codex_bin,
        &home.root.join("broken"),
        &broken_home,
        &marker,
        &project.root,
    );
    assert!(out["status"]["toolsError"].is_string(), "a server that exits 2 is reported: {out}");

    assert_no_survivors(&marker, Duration::from_secs(15));
    assert_no_process_names(&project.root);
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
