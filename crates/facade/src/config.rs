//! `agent-tools.toml`: the one place for settings that differ by machine.
//!
//! Looked up in the run's root, then in the user's config directory
//! (`~/.config/agent-tools/agent-tools.toml`). Every setting has a default; an unknown key or
//! a wrong type is an error naming the key and the file.

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
    /// Where the configuration came from, if a file was found.
    #[serde(skip)]
    pub source: Option<PathBuf>,
}

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
}

impl Config {
    /// Parses `text` as the contents of `file`.
    pub fn parse(text: &str, file: &Path) -> Result<Config> {
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

    /// The candidate files, in lookup order.
    pub fn candidates(root: &Path) -> Vec<PathBuf> {
        let mut files = vec![root.join(CONFIG_FILE_NAME)];
        if let Some(dir) = dirs::config_dir() {
            files.push(dir.join("agent-tools").join(CONFIG_FILE_NAME));
        }
        files
    }

    /// Loads the first configuration file found, or the defaults if there is none.
    pub fn load(root: &Path) -> Result<Config> {
        for file in Self::candidates(root) {
            match std::fs::read_to_string(&file) {
                Ok(text) => return Self::parse(&text, &file),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => {
                    return Err(Error::Io {
                        what: format!("reading {}", file.display()),
                        source: e,
                    });
                }
            }
        }
        Ok(Config::default())
    }
}
