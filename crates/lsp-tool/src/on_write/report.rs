//! What a write's diagnostics check found, and its text for a model: new diagnostics, what
//! was checked (the written files and the files that use what they changed), what was not
//! and why. "No new errors" is said only when every file the change can affect was verified.

use schemars::JsonSchema;
use serde::Serialize;

use crate::diagnostics::{Diagnostic, count_phrase};

/// How many changed declarations the text names.
const SHOWN_NAMES: usize = 6;

/// The diagnostics a write introduced, over every file it changed and the files that use
/// what it changed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
pub struct WriteDiagnostics {
    /// New errors and warnings (count went up), written files first, then other files.
    pub new: Vec<Diagnostic>,
    /// Diagnostics that were there before and are not repeated.
    pub known: usize,
    /// Diagnostics that were there before the write and are gone (in any file checked).
    pub fixed: usize,
    /// The files in which they are gone.
    pub fixed_in: Vec<String>,
    /// Servers that answered.
    pub servers: Vec<String>,
    /// The declarations the write changed (their uses elsewhere were checked).
    pub changed: Vec<String>,
    /// Files other than the written ones that were checked and verified, nearest first.
    pub checked: Vec<String>,
    /// Files that use what the write changed but were not checked, and why (`path (why)`).
    pub not_checked: Vec<String>,
    /// How the files that use the change were found when the server could not say it all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub found_by_scan: Option<String>,
    /// `path (why)` for each file whose diagnostics could not be had in time.
    pub not_verified: Vec<String>,
    /// Files written for the first time in this run whose earlier content is unknown.
    pub baseline_unknown: Vec<String>,
    /// The longest deadline that applied to a file, counted from when its server had the
    /// new content (start-up is waited for separately), in milliseconds.
    pub deadline_ms: u64,
    /// How long the whole check took after the write, start-up included, in milliseconds.
    pub waited_ms: u64,
    /// How many new diagnostics the text lists.
    #[serde(skip)]
    pub max_shown: usize,
}

impl WriteDiagnostics {
    /// Whether every file the change can affect was verified.
    pub fn complete(&self) -> bool {
        self.not_verified.is_empty() && self.not_checked.is_empty()
    }

    /// The section appended to a write's text.
    pub fn render(&self) -> String {
        let mut lines = Vec::new();
        let known_note = if self.known > 0 {
            format!(" ({} already known, not repeated)", self.known)
        } else {
            String::new()
        };
        if !self.servers.is_empty() {
            let summary = match (self.new.is_empty(), self.complete()) {
                (true, true) => format!("no new errors or warnings{known_note}"),
                (true, false) => {
                    format!("no new errors or warnings in the files verified{known_note}")
                }
                (false, _) => format!("{}{known_note}", count_phrase(&self.new, "new")),
            };
            lines.push(format!(
                "The write was applied. Diagnostics ({}): {summary}",
                self.servers.join(", ")
            ));
            for d in self.new.iter().take(self.max_shown) {
                lines.push(d.render());
            }
            if self.new.len() > self.max_shown {
                lines.push(format!(
                    "[+{} more new diagnostics not shown; call lsp diagnostics on the file for all]",
                    self.new.len() - self.max_shown
                ));
            }
            if self.fixed > 0 {
                lines.push(format!(
                    "{} diagnostic(s) that were there before are gone ({})",
                    self.fixed,
                    self.fixed_in.join(", ")
                ));
            }
            if !self.checked.is_empty() {
                let mut uses = if self.changed.is_empty() {
                    "what it changed".to_string()
                } else {
                    let shown: Vec<String> =
                        self.changed.iter().take(SHOWN_NAMES).map(|n| format!("`{n}`")).collect();
                    shown.join(", ")
                };
                if self.changed.len() > SHOWN_NAMES {
                    uses.push_str(&format!(" and {} more", self.changed.len() - SHOWN_NAMES));
                }
                lines.push(format!(
                    "Also checked {} file(s) that use {uses}: {}",
                    self.checked.len(),
                    self.checked.join(", ")
                ));
            }
            if let Some(how) = &self.found_by_scan {
                lines.push(format!("(files that use it were also found by name: {how})"));
            }
            if !self.baseline_unknown.is_empty() {
                lines.push(format!(
                    "(first write to {} in this run and its earlier content is unknown: its current diagnostics were taken as the baseline)",
                    self.baseline_unknown.join(", ")
                ));
            }
        } else {
            lines.push("The write was applied.".into());
        }
        if !self.not_checked.is_empty() {
            lines.push(format!("not checked: {}", self.not_checked.join(", ")));
        }
        if !self.not_verified.is_empty() {
            lines.push(format!(
                "diagnostics not verified for {} (waited {} ms in all)",
                self.not_verified.join(", "),
                self.waited_ms
            ));
        }
        lines.join("\n")
    }
}
