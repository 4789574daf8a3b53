//! The `[astgrep]` section of `agent-tools.toml`.

use serde::Deserialize;

use crate::walk::SearchOptions;

/// Settings for structural search; every field has a default.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AstgrepConfig {
    /// Files larger than this many bytes are skipped (and counted as not parsed).
    pub max_file_bytes: u64,
    /// Worker threads for directory walks; 0 means one per CPU.
    pub threads: usize,
    /// Steps the matcher may spend on one candidate node before it gives up and says so.
    pub step_budget: u64,
}

impl Default for AstgrepConfig {
    fn default() -> Self {
        let d = SearchOptions::default();
        AstgrepConfig {
            max_file_bytes: d.max_file_bytes,
            threads: d.threads,
            step_budget: d.step_budget,
        }
    }
}

impl AstgrepConfig {
    /// Search options from this configuration (a scope nobody cancels).
    pub fn options(&self) -> SearchOptions {
        SearchOptions {
            max_file_bytes: self.max_file_bytes,
            threads: self.threads,
            step_budget: self.step_budget.max(1),
            scope: Default::default(),
            cache: None,
        }
    }
}
