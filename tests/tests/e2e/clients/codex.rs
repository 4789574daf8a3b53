//! Codex for real: the README's config as `codex mcp get` parses it, the `codex mcp add` lines
//! (stdio and HTTP), and Codex's own MCP client listing and calling the tools through
//! `codex app-server` (`tests/py/codex_app_server.py`), which needs no model.

use std::{
    path::{Path, PathBuf},
    process::{Command, Output},
    time::Duration,
};

use serde_json::{Value, json};

use super::{
    CONTENTS, FILE, HTTP_URL, Launch, assert_no_process_names, check_started_as_the_client,
    cli::{CLI_TIMEOUT, client_env, http_host_with_token, on_path, run_cli, stdout_of},
    question, readme_block, snippet, substitute,
};
use crate::support::{Sdk, TempProject, assert_no_survivors, host_binary, require, unique};

/// One Codex installation of a test: its binary, a sandboxed home with `CODEX_HOME` in it, and
/// the marker every process it starts inherits.
struct Codex {
    bin: PathBuf,
    home: PathBuf,
    marker: String,
}

impl Codex {
    /// Codex in `home` with `mcp_config` in its `config.toml`, and a model provider on a closed
    /// loopback port, so nothing it does leaves the machine. `None` after a loud skip.
    fn new(home: &Path, mcp_config: &str, marker: &str) -> Option<Codex> {
        let found = on_path("codex");
        let bin = require("Codex (`codex`)", found.is_some(), "run `cargo xtask setup`")
            .then_some(found)??;
        Some(Codex::with_bin(bin, home, mcp_config, marker))
    }

    /// [`Codex::new`] with the Codex at `bin` (the newest release, installed by a test).
    fn with_bin(bin: PathBuf, home: &Path, mcp_config: &str, marker: &str) -> Codex {
        let codex = Codex { bin, home: home.to_path_buf(), marker: marker.to_string() };
        std::fs::create_dir_all(codex.codex_home()).expect("mkdir CODEX_HOME");
        let config = format!(
            "model_provider = \"offline\"\n\n{mcp_config}\n[model_providers.offline]\n\
             name = \"offline\"\nbase_url = \"http://127.0.0.1:9/v1\"\n"
        );
        std::fs::write(codex.codex_home().join("config.toml"), config).expect("config.toml");
        codex
    }

    fn codex_home(&self) -> PathBuf {
        self.home.join(".codex")
    }

    fn env(&self, cmd: &mut Command) {
        client_env(cmd, &self.home, &self.marker);
        cmd.env("CODEX_HOME", self.codex_home()).current_dir(&self.home);
    }

    fn run(&self, args: &[&str]) -> Output {
        let mut cmd = Command::new(&self.bin);
        self.env(&mut cmd);
        cmd.args(args);
        run_cli(cmd)
    }

    /// Runs a README line through `sh` as a user would, with `env` exported.
    fn shell_line(&self, line: &str, env: &[(&str, &str)]) -> Output {
        let mut cmd = Command::new("sh");
        self.env(&mut cmd);
        cmd.arg("-c").arg(line).envs(env.iter().copied());
        run_cli(cmd)
    }

    /// Codex's own reading of its config: the `transport` of `codex mcp get agent-tools --json`.
    fn transport(&self) -> Value {
        let got = self.run(&["mcp", "get", "agent-tools", "--json"]);
        let got: Value = serde_json::from_str(&stdout_of(&got, "codex mcp get --json"))
            .expect("codex mcp get --json prints JSON");
        got["transport"].clone()
    }

    /// Codex's status of the server and the `calls` (tool, arguments) through its MCP client,
    /// in a thread whose folder is `cwd`; `env` is exported to the app server and `overrides`
    /// are its `-c` settings.
    fn app_server(
        &self,
        python: &Path,
        cwd: &Path,
        calls: &[(&str, Value)],
        env: &[(&str, &str)],
        overrides: &[&str],
    ) -> Value {
        let mut argv = vec![self.bin.display().to_string(), "app-server".into()];
        for setting in overrides {
            argv.extend(["-c".to_string(), setting.to_string()]);
        }
        let mut exported = json!({
            "PATH": std::env::var("PATH").unwrap_or_default(),
            "HOME": self.home,
            "CODEX_HOME": self.codex_home(),
            "AGENT_TOOLS_E2E_MARKER": self.marker,
        });
        for (name, value) in env {
            exported[*name] = json!(value);
        }
        let calls: Vec<Value> =
            calls.iter().map(|(tool, args)| json!({"tool": tool, "args": args})).collect();
        let script = json!({
            "codex": argv,
            "cwd": cwd,
            "env": exported,
            "server": "agent-tools",
            "calls": calls,
            "timeout": CLI_TIMEOUT.as_secs() / 2,
        });
        let file = self.home.join(format!("codex-script-{}.json", unique()));
        std::fs::write(&file, script.to_string()).expect("write the app-server script");
        let driver = Path::new(env!("CARGO_MANIFEST_DIR")).join("py/codex_app_server.py");
        let mut cmd = Command::new(python);
        self.env(&mut cmd);
        cmd.arg(driver).arg(&file);
        let out = stdout_of(&run_cli(cmd), "the codex app-server driver");
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
    }
}

/// The text of the first content block of the `i`th call's result in the driver's output.
fn call_text(out: &Value, i: usize) -> &str {
    out["calls"][i]["result"]["content"][0]["text"].as_str().unwrap_or_default()
}

fn assert_listed(out: &Value) {
    let status = &out["status"];
    assert!(status["toolsError"].is_null(), "Codex could not start the server: {status}");
    assert_eq!(status["serverInfo"]["name"], "agent-tools", "{status}");
    for tool in ["read", "edit", "ast_grep", "lsp"] {
        assert!(status["tools"].get(tool).is_some(), "Codex lists no {tool}: {status}");
    }
    assert_eq!(out["exit"], 0, "the app server ends when its client does: {out}");
}

#[test]
fn codex_parses_the_readme_config_lists_the_tools_and_calls_them() {
    let Some(python) = Sdk::V1.python() else { return };
    let project = TempProject::new(&[(FILE, CONTENTS)]);
    let home = TempProject::new(&[]);
    let marker = format!("e2e-codex-{}-{}", std::process::id(), unique());

    let (found, config) = snippet("Codex", &project.root);
    assert_eq!(found.language, "toml");
    let Some(codex) = Codex::new(&home.root.join("one"), &config, &marker) else { return };
    let transport = codex.transport();
    assert_eq!(transport["type"], "stdio", "{transport}");
    let launch = Launch::from_object(&transport, "command", "args", "env");
    assert_eq!(launch.command, host_binary().display().to_string());
    check_started_as_the_client("Codex", &launch, &project.root);

    // The one-line alternative in the same paragraph gives Codex the same server.
    let one_liner =
        found.label.split('`').find(|s| s.starts_with("codex mcp add")).expect("`codex mcp add`");
    let Some(added) = Codex::new(&home.root.join("two"), "", &marker) else { return };
    stdout_of(&added.shell_line(&substitute(one_liner, &project.root), &[]), "codex mcp add");
    assert_eq!(added.transport(), transport);

    // Codex's MCP client starts the server, lists its tools and calls them. The user's own
    // agent-tools config asks before every write; Codex passes a server only a few variables
    // of its environment, so the test adds its marker and that config.
    let user_config = home.root.join("agent-tools.toml");
    std::fs::write(&user_config, "[approval]\npolicy = \"before_write\"\n").expect("user config");
    let user_config = user_config.display().to_string();
    let forward =
        "mcp_servers.agent-tools.env_vars=[\"AGENT_TOOLS_E2E_MARKER\", \"AGENT_TOOLS_CONFIG\"]";
    let calls = [
        ("read", json!({"path": FILE})),
        ("ask_user", question()),
        ("write", json!({"path": "written.txt", "content": "x\n"})),
    ];
    let env = [("AGENT_TOOLS_CONFIG", user_config.as_str())];
    let out = codex.app_server(&python, &project.root, &calls, &env, &[forward]);
    assert_listed(&out);
    assert_eq!(out["calls"][0]["result"]["isError"], false, "{}", out["calls"][0]);
    assert!(call_text(&out, 0).contains(CONTENTS.trim_end()), "{}", out["calls"][0]);
    // Codex 0.171 shows its app-server client no card from an MCP server: it cancels it itself,
    // which the model gets as a skip (a success), not as an error.
    let card = &out["calls"][1]["result"];
    assert_eq!(card["isError"], false, "{}", out["calls"][1]);
    assert_eq!(card["structuredContent"]["status"], "skipped", "{card}");
    // An approval card is dismissed the same way, and a dismissed approval denies the write.
    assert_eq!(out["calls"][2]["result"]["isError"], true, "{}", out["calls"][2]);
    assert!(call_text(&out, 2).contains("approval denied"), "{}", out["calls"][2]);
    assert!(!project.root.join("written.txt").exists(), "a denied write wrote the file");

    // A wrong flag is what Codex reports, not a server with no tools.
    let broken = config.replace("\"--root\"", "\"--rooot\"");
    let Some(broken) = Codex::new(&home.root.join("broken"), &broken, &marker) else { return };
    let out = broken.app_server(&python, &project.root, &[], &[], &[forward]);
    assert!(out["status"]["toolsError"].is_string(), "a server that exits 2 is reported: {out}");

    assert_no_survivors(&marker, Duration::from_secs(15));
    assert_no_process_names(&project.root);
}

#[test]
fn codex_connects_over_http_with_the_token_and_deletes_its_session() {
    let Some(python) = Sdk::V1.python() else { return };
    let project = TempProject::new(&[(FILE, CONTENTS)]);
    let home = TempProject::new(&[]);
    let marker = format!("e2e-codex-http-{}-{}", std::process::id(), unique());
    let (host, token) = http_host_with_token(&project.root, &home.root);
    let Some(codex) = Codex::new(&home.root.join("codex"), "", &marker) else { return };

    let block = readme_block("Over Streamable HTTP").body.replace(HTTP_URL, &host.url);
    let line = block.lines().find(|l| l.starts_with("codex ")).expect("a `codex` line");
    stdout_of(&codex.shell_line(line, &[]), "codex mcp add --url");
    let transport = codex.transport();
    assert_eq!(transport["url"], host.url.as_str(), "{transport}");

    // Codex reads the token from its own environment when it connects.
    let cell = json!({"code": "6 * 7", "description": "an e2e cell", "language": "python"});
    let calls = [("read", json!({"path": FILE})), ("eval", cell)];
    let env = [("AGENT_TOOLS_TOKEN", token.as_str())];
    let out = codex.app_server(&python, &project.root, &calls, &env, &[]);
    assert_listed(&out);
    assert!(call_text(&out, 0).contains(CONTENTS.trim_end()), "{}", out["calls"][0]);
    assert!(call_text(&out, 1).contains("42"), "{}", out["calls"][1]);
    // Codex deletes its sessions when it ends: their runs, the kernel included, are gone.
    host.assert_only_the_host_is_left();

    // With a wrong token, Codex gets no tools.
    let out = codex.app_server(&python, &project.root, &[], &[("AGENT_TOOLS_TOKEN", "wrong")], &[]);
    assert!(out["status"]["toolsError"].is_string(), "a wrong token is refused: {out}");

    host.stop();
    assert_no_process_names(&project.root);
}

#[test]
fn codex_gets_a_figure_as_an_image_block_and_a_long_read_and_search_cut_alike() {
    let Some(codex_bin) = on_path("codex") else {
        require("Codex (`codex`)", false, "run `cargo xtask setup`");
        return;
    };
    figure_long_read_and_large_search(&codex_bin);
}

/// Through Codex at `codex_bin` (the pinned release, or the newest): a figure comes as an image
/// block without structured content (Codex would show only that), and a 3,519-line read and a
/// 500-match search come cut once, the payload (what Codex shows its model) and the text alike.
pub(super) fn figure_long_read_and_large_search(codex_bin: &Path) {
    use crate::output_cap_over_mcp::{
        CAP, LINES, MATCHES, big_file, last_numbered_line, many_calls,
    };
    let Some(python) = Sdk::V1.python() else { return };
    let project =
        TempProject::new(&[(FILE, CONTENTS), ("big.rs", &big_file()), ("many.py", &many_calls())]);
    let home = TempProject::new(&[]);
    let marker = format!("e2e-codex-figure-{}-{}", std::process::id(), unique());
    let (host, token) = http_host_with_token(&project.root, &home.root);
    let codex = Codex::with_bin(codex_bin.to_path_buf(), &home.root.join("codex"), "", &marker);
    let block = readme_block("Over Streamable HTTP").body.replace(HTTP_URL, &host.url);
    let line = block.lines().find(|l| l.starts_with("codex ")).expect("a `codex` line");
    let line = line.replacen("codex ", &format!("{} ", codex_bin.display()), 1);
    stdout_of(&codex.shell_line(&line, &[]), "codex mcp add --url");

    // Codex passes its model only the structured content of a result that has some, and so
    // drops the image blocks beside it: a result with a figure comes without it.
    let figure = "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n\
                  plt.plot([1, 2, 3])\nplt.show()";
    let calls = [
        ("eval", json!({"code": figure, "description": "a figure", "language": "python"})),
        ("read", json!({"path": FILE})),
        ("read", json!({"path": "big.rs"})),
        ("ast_grep", json!({"pattern": "print($X)", "path": "many.py", "max_results": 500})),
    ];
    let env = [("AGENT_TOOLS_TOKEN", token.as_str())];
    let out = codex.app_server(&python, &project.root, &calls, &env, &[]);
    assert_listed(&out);
    let figure = &out["calls"][0]["result"];
    assert_eq!(figure["isError"], false, "{figure}");
    let kinds: Vec<&str> = figure["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|block| block["type"].as_str())
        .collect();
    assert_eq!(kinds, ["text", "image"], "{figure}");
    assert!(figure["structuredContent"].is_null(), "the image would be lost: {figure}");
    assert!(call_text(&out, 0).contains("[image 1"), "the text names the figure: {figure}");
    // `read` is text only, so Codex shows its model the numbered lines.
    let read = &out["calls"][1]["result"];
    assert!(read["structuredContent"].is_null(), "{read}");
    assert!(call_text(&out, 1).starts_with("1\t"), "{read}");

    // The long read: within the cap, cut at a whole line, saying how to go on.
    let long = &out["calls"][2]["result"];
    assert_eq!(long["isError"], false, "{long}");
    let text = call_text(&out, 2);
    assert!(text.chars().count() <= CAP, "a read over the cap");
    let end = last_numbered_line(text);
    assert!(end > 100 && end < 2000, "cut at line {end}");
    assert!(text.contains(&format!("of {LINES}")), "{text:.300}");
    assert!(text.contains(&format!("start_line={}", end + 1)), "{text:.300}");

    // The large search: whole matches, the same in both, and a note saying how many.
    let search = &out["calls"][3]["result"];
    let payload = &search["structuredContent"];
    assert!(payload.to_string().chars().count() <= CAP, "a payload over the cap");
    let shown = payload["matches"].as_array().map_or(0, Vec::len);
    assert!(shown > 10 && shown < MATCHES, "{shown} matches");
    let in_text = call_text(&out, 3).lines().filter(|l| l.starts_with("many.py:")).count();
    assert_eq!(in_text, shown, "the text shows the same matches");
    assert!(payload.to_string().contains(&format!("showing {shown} of {MATCHES} matches")));

    host.stop();
    assert_no_process_names(&project.root);
}
