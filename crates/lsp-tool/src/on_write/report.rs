//! What a write's diagnostics check found, and its text for a model: one line per file with
//! new diagnostics (nearest first) before any detail, details capped per file so that one
//! file's many errors cannot hide another's, what was checked clean, what was not and why.
//! "No new errors" is said only when every file the change can affect was verified.

use schemars::JsonSchema;
use serde::Serialize;

use crate::diagnostics::{Diagnostic, count_phrase};

/// How many changed declarations the text names.
const SHOWN_NAMES: usize = 6;
/// How many details one file shows at most, whatever the total cap leaves.
const MAX_SHOWN_PER_FILE: usize = 5;

/// Whether the change was written or only proposed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// The write happened; the ledger now holds its diagnostics.
    #[default]
    Applied,
    /// A dry run: nothing was written, and the servers have the disk's content again.
    Preview,
}

/// The diagnostics a write introduced, over every file it changed and the files that use
/// what it changed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
pub struct WriteDiagnostics {
    /// Written, or a preview of what writing would introduce.
    pub mode: Mode,
    /// New errors and warnings (count went up), written files first, then other files.
    pub new: Vec<Diagnostic>,
    /// Per file with new diagnostics, nearest first: the file and how many.
    pub files: Vec<FileCount>,
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
    /// How the files that use the change were looked for.
    pub searched: Vec<String>,
    /// Files that use what the write changed but were not checked, and why (`path (why)`).
    pub not_checked: Vec<String>,
    /// Files that use what the write changed over the bound of `max_files`: checked after
    /// this result, their findings at the head of the run's next result.
    pub settling: Vec<String>,
    /// How the files that use the change were found when the server could not say it all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub found_by_scan: Option<String>,
    /// `path: why` for each written file whose effect on other files could not be determined.
    pub undetermined: Vec<String>,
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
    /// The bound on files checked within the result.
    #[serde(skip)]
    pub max_files: usize,
}

/// One file's count of new diagnostics.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct FileCount {
    /// Path relative to the run's root.
    pub path: String,
    /// How many new diagnostics it has.
    pub new: usize,
    /// How many of them the text lists.
    pub shown: usize,
}

impl WriteDiagnostics {
    /// Whether every file the change can affect was verified.
    pub fn complete(&self) -> bool {
        self.not_verified.is_empty()
            && self.not_checked.is_empty()
            && self.undetermined.is_empty()
            && self.settling.is_empty()
    }

    /// Groups the new diagnostics by file, nearest first (the order they were found in), and
    /// decides how many of each the text lists: a fair share of `max_shown` per file, at
    /// most [`MAX_SHOWN_PER_FILE`], at least one while the total allows.
    pub(crate) fn count_files(&mut self) {
        let mut files: Vec<FileCount> = Vec::new();
        for d in &self.new {
            match files.iter_mut().find(|f| f.path == d.path) {
                Some(f) => f.new += 1,
                None => files.push(FileCount { path: d.path.clone(), new: 1, shown: 0 }),
            }
        }
        let share = (self.max_shown / files.len().max(1)).clamp(1, MAX_SHOWN_PER_FILE);
        let mut left = self.max_shown;
        for f in &mut files {
            f.shown = f.new.min(share).min(left);
            left -= f.shown;
        }
        // What the fair share left over goes to the nearest files first.
        for f in &mut files {
            let more = (f.new - f.shown).min(left).min(MAX_SHOWN_PER_FILE.saturating_sub(f.shown));
            f.shown += more;
            left -= more;
        }
        self.files = files;
    }

    /// The section appended to a write's text.
    pub fn render(&self) -> String {
        let mut lines = Vec::new();
        let (opening, what) = match self.mode {
            Mode::Applied => ("The write was applied.", "Diagnostics"),
            Mode::Preview => ("Nothing was written.", "Diagnostics the change would bring"),
        };
        if self.servers.is_empty() {
            lines.push(opening.into());
        } else {
            lines.push(format!(
                "{opening} {what} ({}): {}",
                self.servers.join(", "),
                self.summary()
            ));
            self.render_new(&mut lines);
            self.render_checked(&mut lines);
        }
        if !self.undetermined.is_empty() {
            lines.push(format!(
                "not determined which other files it affects: {} (they were not checked)",
                self.undetermined.join("; ")
            ));
        }
        if !self.not_checked.is_empty() {
            lines.push(format!("not checked: {}", self.not_checked.join(", ")));
        }
        if !self.settling.is_empty() {
            let when = match self.mode {
                Mode::Applied => {
                    "checked after this result; what they show comes at the head of the next result"
                }
                Mode::Preview => "not checked by a preview",
            };
            lines.push(format!(
                "{} more file(s) that use it, over the bound of {} per write ([lsp.on_write] max_files), {when}: {}",
                self.settling.len(),
                self.max_files,
                self.settling.join(", ")
            ));
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

    /// `2 new errors in 2 files (1 already known, not repeated)`, or why nothing new is said.
    fn summary(&self) -> String {
        let known = if self.known > 0 {
            format!(" ({} already known, not repeated)", self.known)
        } else {
            String::new()
        };
        let in_files = match self.files.len() {
            0 | 1 => String::new(),
            n => format!(" in {n} files"),
        };
        match (self.new.is_empty(), self.complete()) {
            (true, true) => format!("no new errors or warnings{known}"),
            (true, false) => format!("no new errors or warnings in the files verified{known}"),
            (false, _) => format!("{}{in_files}{known}", count_phrase(&self.new, "new")),
        }
    }

    /// One line per file with new diagnostics, then each file's details up to its share, then
    /// the files whose details were cut and the call that shows them.
    fn render_new(&self, lines: &mut Vec<String>) {
        let counted = self.counted();
        if counted.len() > 1 {
            for f in &counted {
                let of_file: Vec<Diagnostic> =
                    self.new.iter().filter(|d| d.path == f.path).cloned().collect();
                lines.push(format!("  {}: {}", f.path, count_phrase(&of_file, "new")));
            }
        }
        for f in &counted {
            lines.extend(
                self.new.iter().filter(|d| d.path == f.path).take(f.shown).map(Diagnostic::render),
            );
        }
        let cut: Vec<&FileCount> = counted.iter().filter(|f| f.shown < f.new).collect();
        if let Some(first) = cut.first() {
            let named: Vec<String> = cut
                .iter()
                .map(|f| format!("{} ({} of {})", f.path, f.new - f.shown, f.new))
                .collect();
            lines.push(format!(
                "[details not shown: {}; call lsp {{\"action\": \"diagnostics\", \"file\": \"{}\"}} for each file]",
                named.join(", "),
                first.path
            ));
        }
        if self.fixed > 0 {
            lines.push(format!(
                "{} diagnostic(s) that were there before are gone ({})",
                self.fixed,
                self.fixed_in.join(", ")
            ));
        }
    }

    /// The per-file counts, computed here when [`WriteDiagnostics::count_files`] was not run.
    fn counted(&self) -> Vec<FileCount> {
        if !self.files.is_empty() || self.new.is_empty() {
            return self.files.clone();
        }
        let mut copy = self.clone();
        copy.count_files();
        copy.files
    }

    /// What was checked clean, how the files were found, and whose baseline was unknown.
    fn render_checked(&self, lines: &mut Vec<String>) {
        let uses = self.changed_names();
        let clean: Vec<&String> =
            self.checked.iter().filter(|c| !self.files.iter().any(|f| &f.path == *c)).collect();
        let broken = self.checked.len() - clean.len();
        if !clean.is_empty() {
            let also = if broken > 0 { " other" } else { "" };
            let names: Vec<&str> = clean.iter().map(|c| c.as_str()).collect();
            lines.push(format!(
                "No new errors in {}{also} checked file(s) that use {uses}: {}",
                clean.len(),
                names.join(", ")
            ));
        } else if self.checked.is_empty() && !self.changed.is_empty() && self.complete() {
            let how = if self.searched.is_empty() {
                String::new()
            } else {
                format!(" ({} found none)", self.searched.join(" and "))
            };
            lines.push(format!("No other file uses {uses}{how}."));
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
    }

    /// What this write's check found that its preview (a dry run or a proposal of the same
    /// change) did not, and what the preview found that is no longer so.
    pub fn since_preview(&self, preview: &WriteDiagnostics) -> String {
        let same = |a: &Diagnostic, b: &Diagnostic| {
            a.path == b.path && a.line == b.line && a.key() == b.key()
        };
        let more: Vec<&Diagnostic> =
            self.new.iter().filter(|d| !preview.new.iter().any(|p| same(d, p))).collect();
        let gone: Vec<&Diagnostic> =
            preview.new.iter().filter(|p| !self.new.iter().any(|d| same(d, p))).collect();
        if more.is_empty() && gone.is_empty() {
            return "(the same as its preview showed: nothing changed since)".into();
        }
        let list = |ds: &[&Diagnostic]| {
            let shown: Vec<String> =
                ds.iter().map(|d| format!("{}:{}", d.path, d.line)).take(10).collect();
            shown.join(", ")
        };
        let mut parts = Vec::new();
        if !more.is_empty() {
            parts.push(format!("{} not in its preview ({})", more.len(), list(&more)));
        }
        if !gone.is_empty() {
            parts.push(format!("{} of its preview no longer there ({})", gone.len(), list(&gone)));
        }
        format!("Since its preview: {}.", parts.join("; "))
    }

    /// `` `a`, `b` and 3 more ``, or "what it changed".
    fn changed_names(&self) -> String {
        if self.changed.is_empty() {
            return "what it changed".to_string();
        }
        let shown: Vec<String> =
            self.changed.iter().take(SHOWN_NAMES).map(|n| format!("`{n}`")).collect();
        let mut uses = shown.join(", ");
        if self.changed.len() > SHOWN_NAMES {
            uses.push_str(&format!(" and {} more", self.changed.len() - SHOWN_NAMES));
        }
        uses
    }
}
