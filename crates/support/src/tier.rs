//! The permission tier: what a tool may do, and so which surfaces see it.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What a tool may do, and so which surfaces see it.
///
/// The order matters: a surface with ceiling `Write` shows `Read` and `Write` tools, and a
/// ceiling is lowered with `min`, never raised. The default is the lowest, `Read`.
#[derive(
    Debug,
    Default,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Tier {
    /// No side effects: nothing the repository controls runs, no file is left behind.
    #[default]
    Read,
    /// Changes files.
    Write,
    /// Starts or controls a process.
    Exec,
}

impl Tier {
    /// The lowercase name used in messages and schemas.
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Read => "read",
            Tier::Write => "write",
            Tier::Exec => "exec",
        }
    }

    /// Whether a caller with this ceiling may run code the repository controls (project-local
    /// binaries, build scripts): only an exec ceiling, since starting processes is what exec means.
    pub fn may_run_project_code(self) -> bool {
        self >= Tier::Exec
    }
}

impl fmt::Display for Tier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Tier {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "read" => Ok(Tier::Read),
            "write" => Ok(Tier::Write),
            "exec" => Ok(Tier::Exec),
            other => Err(format!("unknown tier `{other}`; use read, write or exec")),
        }
    }
}
