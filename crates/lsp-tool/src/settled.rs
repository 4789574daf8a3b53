//! What a write's settle found: the files over the write's bound, checked after its result
//! returned, reported at the head of the run's next result.

use schemars::JsonSchema;
use serde::Serialize;

use crate::diagnostics::{Diagnostic, count_phrase};

/// How many details a settled report lists.
const MAX_SHOWN: usize = 10;

/// What checking the files over a write's bound found after its result returned.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
pub struct SettledReport {
    /// The files whose write this settles.
    pub edited: Vec<String>,
    /// When that write was checked (`HH:MM:SS` UTC).
    pub at: String,
    /// How many files over the bound there were.
    pub files: usize,
    /// New diagnostics: exact in files the run's ledger knew, else those on lines that use a
    /// changed name (their state before the write was not taken).
    pub new: Vec<Diagnostic>,
    /// Files checked with nothing new.
    pub clean: Vec<String>,
    /// `path (why)` for each file whose diagnostics could not be had.
    pub not_verified: Vec<String>,
    /// Set when a later write or the run's end stopped the check: what was left.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<String>,
}

impl SettledReport {
    /// The text put at the head of the run's next result.
    pub fn render(&self) -> String {
        let edited = self.edited.join(", ");
        let mut lines = Vec::new();
        let mut broken: Vec<String> = Vec::new();
        for d in &self.new {
            if !broken.contains(&d.path) {
                broken.push(d.path.clone());
            }
        }
        if broken.is_empty() && self.not_verified.is_empty() && self.interrupted.is_none() {
            lines.push(format!(
                "Since your edit of {edited} ({}): the {} more file(s) that use what it changed were checked: nothing more.",
                self.at, self.files
            ));
        } else {
            let counts: Vec<String> = broken
                .iter()
                .map(|f| {
                    let of: Vec<Diagnostic> =
                        self.new.iter().filter(|d| &d.path == f).cloned().collect();
                    format!("{f} ({})", count_phrase(&of, "new"))
                })
                .collect();
            lines.push(format!(
                "Since your edit of {edited} ({}), {} more file(s) that use what it changed were checked: {} with new errors{}",
                self.at,
                self.files,
                broken.len(),
                if counts.is_empty() { String::new() } else { format!(": {}", counts.join(", ")) }
            ));
            lines.extend(self.new.iter().take(MAX_SHOWN).map(Diagnostic::render));
            if self.new.len() > MAX_SHOWN {
                lines.push(format!(
                    "[+{} more; call lsp {{\"action\": \"diagnostics\", \"file\": \"…\"}} on a file for all]",
                    self.new.len() - MAX_SHOWN
                ));
            }
            if !self.clean.is_empty() {
                lines.push(format!("no new errors in {}", self.clean.join(", ")));
            }
            if !self.not_verified.is_empty() {
                lines.push(format!("not verified: {}", self.not_verified.join(", ")));
            }
            if let Some(left) = &self.interrupted {
                lines.push(format!("stopped before the end: {left}"));
            }
        }
        lines.join("\n")
    }
}
