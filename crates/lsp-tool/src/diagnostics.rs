//! Diagnostics in one shape (from pull, push or a project check), their filter, rendering, and
//! the per-run ledger that tells new diagnostics from known ones.

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{
    encoding::{ColumnUnit, convert_column},
    paths::display_relative,
};

/// How bad a diagnostic is.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
    Info,
    Hint,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
            Severity::Hint => "hint",
        }
    }

    fn from_lsp(s: Option<lsp_types::DiagnosticSeverity>) -> Severity {
        match s {
            Some(lsp_types::DiagnosticSeverity::WARNING) => Severity::Warning,
            Some(lsp_types::DiagnosticSeverity::INFORMATION) => Severity::Info,
            Some(lsp_types::DiagnosticSeverity::HINT) => Severity::Hint,
            // The protocol says a missing severity is the client's choice; errors are safest.
            _ => Severity::Error,
        }
    }
}

/// One diagnostic, positioned for people: 1-based line, 1-based character column.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Diagnostic {
    /// Absolute path of the file.
    #[serde(skip)]
    pub abs_path: PathBuf,
    /// Path relative to the run's root.
    pub path: String,
    /// 1-based line.
    pub line: u32,
    /// 1-based column, in characters.
    pub column: u32,
    pub severity: Severity,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    pub message: String,
    /// The text of the line it points at.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_line: Option<String>,
    /// Tagged `Unnecessary` (unused code, usually shown faded).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub unnecessary: bool,
}

impl Diagnostic {
    /// Converts a protocol diagnostic of `text` (the version it was computed for).
    pub fn from_lsp(
        d: &lsp_types::Diagnostic,
        abs_path: &Path,
        root: &Path,
        text: &str,
        encoding: ColumnUnit,
    ) -> Diagnostic {
        let line_idx = d.range.start.line as usize;
        let line_text = text.lines().nth(line_idx);
        let column = line_text.map_or(d.range.start.character, |l| {
            convert_column(l, d.range.start.character, encoding, ColumnUnit::Char)
        });
        let code = d.code.as_ref().map(|c| match c {
            lsp_types::NumberOrString::Number(n) => n.to_string(),
            lsp_types::NumberOrString::String(s) => s.clone(),
        });
        let unnecessary =
            d.tags.as_ref().is_some_and(|t| t.contains(&lsp_types::DiagnosticTag::UNNECESSARY));
        Diagnostic {
            abs_path: abs_path.to_path_buf(),
            path: display_relative(root, abs_path),
            line: d.range.start.line.saturating_add(1),
            column: column + 1,
            severity: Severity::from_lsp(d.severity),
            code,
            source: d.source.clone(),
            message: d.message.clone(),
            source_line: line_text.map(|l| l.trim_end().to_string()),
            unnecessary,
        }
    }

    /// Hints and diagnostics tagged "unnecessary" are left out unless asked for.
    pub fn is_shown(&self, include_hints: bool) -> bool {
        include_hints || (self.severity != Severity::Hint && !self.unnecessary)
    }

    /// `path:line:col severity [code] message`, then the source line indented.
    pub fn render(&self) -> String {
        let code = self.code.as_deref().map(|c| format!(" [{c}]")).unwrap_or_default();
        let message = normalize_message(&self.message);
        let mut out = format!(
            "{}:{}:{} {}{code} {message}",
            self.path,
            self.line,
            self.column,
            self.severity.as_str()
        );
        if let Some(line) = self.source_line.as_deref().filter(|l| !l.trim().is_empty()) {
            out.push_str(&format!("\n    {}", line.trim()));
        }
        out
    }

    pub(crate) fn key(&self) -> LedgerKey {
        LedgerKey {
            severity: self.severity,
            code: self.code.clone(),
            message: normalize_message(&self.message),
        }
    }
}

/// Collapses whitespace (multi-line messages become one line).
pub fn normalize_message(message: &str) -> String {
    message.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Sorts by path, line, column, severity.
pub fn sort(diags: &mut [Diagnostic]) {
    diags.sort_by(|a, b| {
        (&a.path, a.line, a.column, a.severity).cmp(&(&b.path, b.line, b.column, b.severity))
    });
}

/// Counts per severity, as `1 error, 2 warnings`.
pub fn count_phrase(diags: &[Diagnostic], adjective: &str) -> String {
    let mut parts = Vec::new();
    for severity in [Severity::Error, Severity::Warning, Severity::Info, Severity::Hint] {
        let n = diags.iter().filter(|d| d.severity == severity).count();
        if n == 0 {
            continue;
        }
        let noun = match (severity, n) {
            (Severity::Error, 1) => "error",
            (Severity::Error, _) => "errors",
            (Severity::Warning, 1) => "warning",
            (Severity::Warning, _) => "warnings",
            (Severity::Info, _) => "info",
            (Severity::Hint, 1) => "hint",
            (Severity::Hint, _) => "hints",
        };
        let adjective = if adjective.is_empty() { String::new() } else { format!("{adjective} ") };
        parts.push(format!("{n} {adjective}{noun}"));
    }
    parts.join(", ")
}

/// The ledger's identity of a diagnostic: position deliberately left out.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LedgerKey {
    pub severity: Severity,
    pub code: Option<String>,
    pub message: String,
}

/// What a ledger update found.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct LedgerDelta {
    /// Diagnostics whose key count went up, in file order.
    pub new: Vec<Diagnostic>,
    /// Diagnostics present that were already known (not repeated).
    pub known: usize,
    /// Diagnostics that disappeared.
    pub resolved: usize,
}

/// Per-run memory of the diagnostics reported, per file, keyed by (severity, code, message)
/// with counts. A diagnostic that only moved is not new; a second identical one is; one that
/// disappeared leaves the ledger, so its return is new again.
#[derive(Debug, Default)]
pub struct Ledger {
    files: HashMap<PathBuf, Vec<(LedgerKey, Option<String>)>>,
}

impl Ledger {
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether `path` has a baseline (it was recorded before).
    pub fn knows(&self, path: &Path) -> bool {
        self.files.contains_key(path)
    }

    /// Records `diags` as the file's state without reporting anything (the baseline before the
    /// first write of a run).
    pub fn baseline(&mut self, path: &Path, diags: &[Diagnostic]) {
        self.files.insert(
            path.to_path_buf(),
            diags.iter().map(|d| (d.key(), d.source_line.clone())).collect(),
        );
    }

    /// Replaces the file's state by `diags` and returns what is new.
    pub fn update(&mut self, path: &Path, diags: &[Diagnostic]) -> LedgerDelta {
        let delta = self.compare(path, diags);
        self.baseline(path, diags);
        delta
    }

    /// What would be new if the file's state became `diags`, without recording it (a preview
    /// of a change that is not written).
    pub fn compare(&self, path: &Path, diags: &[Diagnostic]) -> LedgerDelta {
        let old = self.files.get(path).cloned().unwrap_or_default();
        let keys: Vec<LedgerKey> = diags.iter().map(Diagnostic::key).collect();
        let mut unique: Vec<&LedgerKey> = Vec::new();
        for key in keys.iter().chain(old.iter().map(|(k, _)| k)) {
            if !unique.contains(&key) {
                unique.push(key);
            }
        }
        let mut delta = LedgerDelta::default();
        let mut new_indices = Vec::new();
        for key in unique {
            let group: Vec<usize> = (0..diags.len()).filter(|&j| keys[j] == *key).collect();
            let mut old_lines: Vec<&Option<String>> =
                old.iter().filter(|(k, _)| k == key).map(|(_, l)| l).collect();
            delta.resolved += old_lines.len().saturating_sub(group.len());
            let added = group.len().saturating_sub(old_lines.len());
            if added == 0 {
                continue;
            }
            // Prefer as "new" the ones whose line text was not there before.
            let mut unmatched = Vec::new();
            let mut matched = Vec::new();
            for &j in &group {
                match old_lines.iter().position(|l| **l == diags[j].source_line) {
                    Some(pos) => {
                        old_lines.remove(pos);
                        matched.push(j);
                    }
                    None => unmatched.push(j),
                }
            }
            let mut chosen: Vec<usize> = unmatched.into_iter().take(added).collect();
            while chosen.len() < added {
                match matched.pop() {
                    Some(j) => chosen.push(j),
                    None => break,
                }
            }
            new_indices.extend(chosen);
        }
        new_indices.sort_unstable();
        delta.new = new_indices.iter().map(|&j| diags[j].clone()).collect();
        delta.known = diags.len() - delta.new.len();
        delta
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn diag(line: u32, message: &str, source_line: &str) -> Diagnostic {
        Diagnostic {
            abs_path: PathBuf::from("/r/a.py"),
            path: "a.py".into(),
            line,
            column: 1,
            severity: Severity::Error,
            code: Some("reportX".into()),
            source: None,
            message: message.into(),
            source_line: Some(source_line.into()),
            unnecessary: false,
        }
    }

    #[test]
    fn a_moved_diagnostic_is_not_new_and_a_second_identical_one_is() {
        let path = Path::new("/r/a.py");
        let mut ledger = Ledger::new();
        ledger.baseline(path, &[]);
        let first = ledger.update(path, &[diag(3, "bad", "x = f()")]);
        assert_eq!(first.new.len(), 1);
        let moved = ledger.update(path, &[diag(7, "bad", "x = f()")]);
        assert_eq!((moved.new.len(), moved.known), (0, 1));
        let twice = ledger.update(path, &[diag(7, "bad", "x = f()"), diag(9, "bad", "y = f()")]);
        assert_eq!(twice.new.len(), 1);
        assert_eq!(twice.new[0].line, 9, "the one on the line not seen before is the new one");
        assert_eq!(twice.known, 1);
    }

    #[test]
    fn a_fixed_diagnostic_that_returns_is_new_again() {
        let path = Path::new("/r/a.py");
        let mut ledger = Ledger::new();
        ledger.baseline(path, &[diag(1, "old", "z")]);
        assert!(ledger.update(path, &[diag(1, "old", "z")]).new.is_empty());
        let fixed = ledger.update(path, &[]);
        assert_eq!(fixed.resolved, 1);
        assert_eq!(ledger.update(path, &[diag(1, "old", "z")]).new.len(), 1);
    }

    #[test]
    fn whitespace_in_messages_does_not_make_a_diagnostic_new() {
        let path = Path::new("/r/a.py");
        let mut ledger = Ledger::new();
        ledger.baseline(path, &[diag(1, "Type  \"int\"\n  is bad", "a")]);
        assert!(ledger.update(path, &[diag(4, "Type \"int\" is bad", "a")]).new.is_empty());
    }

    #[test]
    fn rendering_shows_position_severity_code_message_and_line() {
        assert_eq!(
            diag(3, "\"foo\" is not\n defined", "    print(foo)  ").render(),
            "a.py:3:1 error [reportX] \"foo\" is not defined\n    print(foo)"
        );
        let d = [
            diag(1, "a", ""),
            diag(2, "b", ""),
            Diagnostic { severity: Severity::Warning, ..diag(3, "c", "") },
        ];
        assert_eq!(count_phrase(&d, "new"), "2 new errors, 1 new warning");
    }
}
