//! `agent-tools.toml`: the one place for settings that differ by machine.
//!
//! Two files, merged: the user's (`$AGENT_TOOLS_CONFIG`, else
//! `~/.config/agent-tools/agent-tools.toml`), then the project's (`agent-tools.toml` in the run's
//! root) on top. Every setting has a default; an unknown key or a wrong type is an error naming
//! the key and the file.
//!
//! The project file is written by whoever wrote the repository, so it is not trusted: unless the
//! user trusts the project (`--trust-project`, or its folder listed in `[trust] projects` of the
//! user's file), it may set only the keys of [`UNTRUSTED_PROJECT_KEYS`] — limits and timeouts,
//! never a command, a binary folder, server settings or the approval policy. Other keys it sets
//! are ignored and listed in [`Config::ignored_project_keys`].

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::{
    error::{Error, Result},
    surface::DEFAULT_MAX_OUTPUT_CHARS,
};

pub const CONFIG_FILE_NAME: &str = "agent-tools.toml";

/// The whole configuration; each family adds its own section as it lands.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub output: OutputConfig,
    pub mcp: McpConfig,
    /// `[eval]`: interpreter, inactivity budget, output caps, launcher prefix.
    #[cfg(feature = "eval")]
    pub eval: agent_tools_eval::EvalConfig,
    /// `[astgrep]`: file size limit, walk threads, matcher step budget.
    #[cfg(feature = "astgrep")]
    pub astgrep: agent_tools_astgrep::AstgrepConfig,
    /// `[debug]`: session time limit, stop wait, adapter command overrides.
    #[cfg(feature = "debug")]
    pub debug: agent_tools_debug::DebugConfig,
    /// `[approval]`: which calls need an operator's approval (default none).
    pub approval: crate::approval::ApprovalConfig,
    /// `[ask]`: how long a question card waits for the operator.
    #[cfg(feature = "ask")]
    pub ask: agent_tools_ask::AskConfig,
    /// `[vibe]`: vibe mode, slots, timers and the worker commands per tier.
    #[cfg(feature = "vibe")]
    pub vibe: agent_tools_vibe::VibeConfig,
    /// `[lsp]`: timeouts, restart cap, extra binary folders, diagnostics on write, servers.
    #[cfg(feature = "lsp")]
    pub lsp: agent_tools_lsp::LspConfig,
    /// `[trust]`: projects whose own `agent-tools.toml` may set everything (user file only).
    pub trust: TrustConfig,
    /// `[capsule]`: the sandbox the run's exec-tier processes start in (user file only, or a
    /// trusted project's).
    pub capsule: crate::capsule::CapsuleConfig,
    /// Where the configuration came from: the project file if there is one, else the user's.
    #[serde(skip)]
    pub source: Option<PathBuf>,
    /// Whether the project's own file was trusted in full.
    #[serde(skip)]
    pub project_trusted: bool,
    /// Keys of an untrusted project file that were ignored, dotted (`lsp.servers.python.commands`).
    #[serde(skip)]
    pub ignored_project_keys: Vec<String>,
}

/// `[trust]` in the user's file.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct TrustConfig {
    /// Project folders (and their subfolders) whose own `agent-tools.toml` is trusted in full.
    pub projects: Vec<PathBuf>,
}

/// Keys an untrusted project file may set (`*` = any key below): limits and timeouts only.
pub const UNTRUSTED_PROJECT_KEYS: &[&str] = &[
    "output.*",
    "mcp.surface",
    "astgrep.*",
    "ask.*",
    "lsp.request_timeout_ms",
    "lsp.startup_timeout_ms",
    "lsp.ready_timeout_ms",
    "lsp.diagnostics_timeout_ms",
    "lsp.max_restarts_per_minute",
    "lsp.check_timeout_ms",
    "lsp.on_write.*",
    "debug.ttl_seconds",
    "debug.stop_wait_seconds",
    "eval.inactivity_seconds",
    "eval.grace_seconds",
    "eval.max_output_chars",
    "eval.max_images",
    "eval.js_memory_limit_mb",
    "eval.ipython",
    "eval.javascript",
    "vibe.enabled",
    "vibe.slots",
    "vibe.stall_seconds",
    "vibe.budget_seconds",
];

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct OutputConfig {
    /// Cap on the model-facing text of one tool result, in characters.
    pub max_chars: usize,
}

impl Default for OutputConfig {
    fn default() -> Self {
        OutputConfig { max_chars: DEFAULT_MAX_OUTPUT_CHARS }
    }
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct McpConfig {
    /// Surface served when `--surface` is not given: `build` or `plan`.
    pub surface: Option<String>,
    /// `mcp --http`: a file holding the bearer token clients must send (`--token-file` wins).
    pub http_token_file: Option<PathBuf>,
    /// `mcp --http`: a session idle this long ends, with its run (default 1800).
    pub session_idle_seconds: Option<u64>,
    /// `mcp --http`: a session whose client dropped its connection without deleting it ends
    /// this long after, unless the client comes back (default 120).
    pub session_detached_seconds: Option<u64>,
    /// `mcp --http`: the largest request body accepted (default 16 MiB).
    pub max_body_bytes: Option<usize>,
    /// `mcp --http`: a connection must send a request's headers within this (default 10).
    pub header_timeout_seconds: Option<u64>,
    /// `mcp --http`: a request must send its whole body within this (default 30).
    pub body_timeout_seconds: Option<u64>,
    /// `mcp --http`: connections held at once, all peers together (default 256).
    pub max_connections: Option<usize>,
    /// `mcp --http`: connections that have sent a request held at once for one peer address
    /// (default 64).
    pub max_connections_per_peer: Option<usize>,
}

impl Config {
    /// Parses `text` as the contents of `file`.
    pub fn parse(text: &str, file: &Path) -> Result<Config> {
        if let Ok(table) = toml::from_str::<toml::Table>(text)
            && table.get("eval").and_then(|e| e.get("launcher")).is_some()
        {
            return Err(Error::Config {
                file: file.to_path_buf(),
                message: "eval.launcher was replaced by the run's capsule: write [capsule] kind =                           \"prefix\" with prefix = [...], or kind = \"bwrap\" for a bubblewrap                           sandbox"
                    .into(),
            });
        }
        let mut config: Config = toml::from_str(text).map_err(|e| Error::Config {
            file: file.to_path_buf(),
            message: e.message().to_string()
                + &e.span()
                    .map(|s| format!(" (at line {})", text[..s.start].matches('\n').count() + 1))
                    .unwrap_or_default(),
        })?;
        if config.output.max_chars < 1000 {
            return Err(Error::Config {
                file: file.to_path_buf(),
                message: format!(
                    "output.max_chars = {} is too small; use at least 1000",
                    config.output.max_chars
                ),
            });
        }
        config.source = Some(file.to_path_buf());
        Ok(config)
    }

    /// The user's file: `$AGENT_TOOLS_CONFIG`, else `~/.config/agent-tools/agent-tools.toml`.
    pub fn user_file() -> Option<PathBuf> {
        if let Some(file) = std::env::var_os("AGENT_TOOLS_CONFIG").filter(|f| !f.is_empty()) {
            return Some(PathBuf::from(file));
        }
        dirs::config_dir().map(|dir| dir.join("agent-tools").join(CONFIG_FILE_NAME))
    }

    /// Loads the user's and the project's files, the project's as untrusted unless the user's
    /// `[trust] projects` lists it.
    pub fn load(root: &Path) -> Result<Config> {
        Self::load_trusting(root, false)
    }

    /// [`Config::load`]; `trust_project` (`--trust-project`) trusts the project's file in full.
    pub fn load_trusting(root: &Path, trust_project: bool) -> Result<Config> {
        let user_file = Self::user_file();
        let project_file = root.join(CONFIG_FILE_NAME);
        let user = match &user_file {
            Some(file) if *file != project_file => read_table(file)?,
            _ => None,
        };
        let mut project = read_table(&project_file)?;
        let user_config = match &user {
            Some(table) => Some(Self::parse_value(
                toml::Value::Table(table.clone()),
                user_file.as_deref().unwrap_or(&project_file),
            )?),
            None => None,
        };
        let listed = user_config.as_ref().is_some_and(|c| c.trust.covers(root));
        let trusted = trust_project || listed;
        let mut ignored = Vec::new();
        if let Some(table) = &mut project {
            // Validate the project file alone first, so its errors name it.
            Self::parse_value(toml::Value::Table(table.clone()), &project_file)?;
            table.remove("trust");
            if !trusted {
                filter_untrusted(table, "", &mut ignored);
            }
        }
        let source = if project.is_some() {
            Some(project_file.clone())
        } else {
            user_file.clone().filter(|_| user.is_some())
        };
        let mut merged = user.unwrap_or_default();
        if let Some(table) = project {
            merge(&mut merged, table);
        }
        let shown = source.clone().unwrap_or(project_file);
        let mut config = Self::parse_value(toml::Value::Table(merged), &shown)?;
        config.source = source;
        config.project_trusted = trusted;
        config.ignored_project_keys = ignored;
        if !config.ignored_project_keys.is_empty() {
            tracing::warn!(
                "{}: ignored {} (an untrusted project file may not set commands or policies; \
                 trust it with --trust-project or [trust] projects in the user's file)",
                shown.display(),
                config.ignored_project_keys.join(", ")
            );
        }
        Ok(config)
    }

    fn parse_value(value: toml::Value, file: &Path) -> Result<Config> {
        let text = toml::to_string(&value).unwrap_or_default();
        Self::parse(&text, file)
    }

    /// Sets what a run's surface ceiling allows: code the repository controls (project-local
    /// binaries, build scripts) runs only under an exec ceiling, or where the user trusts the
    /// project; otherwise read means read.
    pub fn apply_ceiling(&mut self, ceiling: crate::Tier) {
        let _ = ceiling;
        #[cfg(feature = "lsp")]
        {
            self.lsp.allow_project_code = ceiling >= crate::Tier::Exec || self.project_trusted;
        }
    }
}

impl TrustConfig {
    /// Whether `root` is one of the trusted projects or inside one.
    pub fn covers(&self, root: &Path) -> bool {
        self.projects.iter().any(|p| {
            let p = match (p.strip_prefix("~"), dirs::home_dir()) {
                (Ok(rest), Some(home)) => home.join(rest),
                _ => p.clone(),
            };
            let p = std::fs::canonicalize(&p).unwrap_or(p);
            root.starts_with(&p)
        })
    }
}

/// The TOML table of `file`, or `None` if it does not exist.
fn read_table(file: &Path) -> Result<Option<toml::Table>> {
    let text = match std::fs::read_to_string(file) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::Io { what: format!("reading {}", file.display()), source: e }),
    };
    // Parse through `Config` first so a syntax or key error names the file and line.
    Config::parse(&text, file)?;
    toml::from_str(&text)
        .map(Some)
        .map_err(|e| Error::Config { file: file.to_path_buf(), message: e.message().to_string() })
}

/// Removes every key an untrusted project file may not set, recording it.
fn filter_untrusted(table: &mut toml::Table, prefix: &str, ignored: &mut Vec<String>) {
    let keys: Vec<String> = table.keys().cloned().collect();
    for key in keys {
        let path = if prefix.is_empty() { key.clone() } else { format!("{prefix}.{key}") };
        if allowed(&path) {
            continue;
        }
        let below = UNTRUSTED_PROJECT_KEYS.iter().any(|k| k.starts_with(&format!("{path}.")));
        match table.get_mut(&key) {
            Some(toml::Value::Table(inner)) if below => {
                filter_untrusted(inner, &path, ignored);
                if inner.is_empty() {
                    table.remove(&key);
                }
            }
            _ => {
                table.remove(&key);
                ignored.push(path);
            }
        }
    }
}

fn allowed(path: &str) -> bool {
    UNTRUSTED_PROJECT_KEYS.iter().any(|pattern| match pattern.strip_suffix(".*") {
        Some(section) => path.starts_with(&format!("{section}.")),
        None => *pattern == path,
    })
}

/// Lays `top` over `base`: tables merge key by key, anything else is replaced.
fn merge(base: &mut toml::Table, top: toml::Table) {
    for (key, value) in top {
        match (base.get_mut(&key), value) {
            (Some(toml::Value::Table(below)), toml::Value::Table(above)) => merge(below, above),
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}
