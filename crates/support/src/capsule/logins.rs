//! The login and configuration files of the agent CLIs a worker may run, so that a worker's
//! capsule shows exactly those of the CLI its command names (read-only) and passes its key
//! variables, while the rest of the home stays private.

use std::path::{Path, PathBuf};

/// An agent CLI a worker command may run: its program name, the paths under the home it reads
/// its login and settings from, and the environment variables that carry its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkerLogin {
    /// The program's file name (`claude`).
    pub program: &'static str,
    /// Paths relative to the home folder.
    pub home_paths: &'static [&'static str],
    /// Variables passed in when set on the host.
    pub env: &'static [&'static str],
}

/// The agent CLIs whose logins a worker's capsule knows.
pub const WORKER_LOGINS: &[WorkerLogin] = &[
    WorkerLogin {
        program: "claude",
        home_paths: &[".claude", ".claude.json", ".config/claude"],
        env: &["ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "CLAUDE_CODE_OAUTH_TOKEN"],
    },
    WorkerLogin {
        program: "codex",
        home_paths: &[".codex"],
        env: &["OPENAI_API_KEY", "OPENAI_BASE_URL", "CODEX_HOME"],
    },
    WorkerLogin {
        program: "gemini",
        home_paths: &[".gemini"],
        env: &["GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_CLOUD_PROJECT"],
    },
    WorkerLogin {
        program: "opencode",
        home_paths: &[".config/opencode", ".local/share/opencode"],
        env: &["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY"],
    },
    WorkerLogin {
        program: "cursor-agent",
        home_paths: &[".cursor", ".config/cursor"],
        env: &["CURSOR_API_KEY"],
    },
    WorkerLogin { program: "goose", home_paths: &[".config/goose"], env: &["GOOSE_PROVIDER"] },
    WorkerLogin {
        program: "aider",
        home_paths: &[".aider.conf.yml"],
        env: &["ANTHROPIC_API_KEY", "OPENAI_API_KEY"],
    },
];

impl WorkerLogin {
    /// The CLI a word of a command names (`claude`, `/usr/local/bin/claude`), if a known one.
    pub fn named(word: &str) -> Option<&'static WorkerLogin> {
        let word = word.trim_matches(|c| c == '"' || c == '\'');
        let name = Path::new(word).file_name()?.to_str()?;
        WORKER_LOGINS.iter().find(|login| login.program == name)
    }

    /// The CLIs the words of a worker command name, each once, in the order named.
    pub fn in_command<'a>(words: impl IntoIterator<Item = &'a str>) -> Vec<&'static WorkerLogin> {
        let mut found: Vec<&'static WorkerLogin> = Vec::new();
        for login in words.into_iter().filter_map(WorkerLogin::named) {
            if !found.contains(&login) {
                found.push(login);
            }
        }
        found
    }

    /// Its paths under `home` that exist, each with why it is shown.
    pub fn paths(&self, home: &Path) -> Vec<(PathBuf, String)> {
        self.home_paths
            .iter()
            .map(|p| home.join(p))
            .filter(|p| p.symlink_metadata().is_ok())
            .map(|p| (p, format!("the login of the worker CLI `{}`", self.program)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_names_the_clis_it_runs_by_any_word_and_path() {
        let words = "exec env X=1 /usr/local/bin/claude -p --model claude-sonnet claude";
        let found = WorkerLogin::in_command(words.split_whitespace());
        assert_eq!(found.iter().map(|l| l.program).collect::<Vec<_>>(), ["claude"]);
        assert!(WorkerLogin::in_command(["sh", "./worker.sh"]).is_empty());
        assert_eq!(WorkerLogin::named("'codex'").map(|l| l.program), Some("codex"));
    }
}
