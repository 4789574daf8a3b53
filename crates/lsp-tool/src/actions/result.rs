//! The typed result of every `lsp` action: the structured content is the value serialized
//! (tagged by `action`), the text is [`LspResult::render`] of the same value, so the two never
//! say different things.

use schemars::JsonSchema;
use serde::Serialize;

use super::{MAX_DIAGNOSTICS, MAX_SHOWN_EDITS, ShownLocation, page_note};
use crate::{diagnostics::Diagnostic, supervisor::RootStatus};

/// What one `lsp` call found.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(tag = "action", rename_all = "snake_case")]
// MCP wants an object schema at the top: every variant is one.
#[schemars(extend("type" = "object"))]
pub enum LspResult {
    Definition(Locations),
    TypeDefinition(Locations),
    Implementation(Locations),
    References(Locations),
    Hover(HoverAnswer),
    CodeActions(CodeActionList),
    IncomingCalls(Calls),
    OutgoingCalls(Calls),
    Symbols(SymbolsAnswer),
    Diagnostics(DiagnosticsAnswer),
    Status(StatusAnswer),
    Reload(ReloadAnswer),
}

/// Locations of a definition, type, implementations or references, one page of them.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Locations {
    pub symbol: String,
    /// `` `symbol` at path:line:col `` as the text names it.
    pub at: String,
    /// The server that answered.
    pub server: String,
    pub total: usize,
    pub offset: usize,
    pub locations: Vec<ShownLocation>,
    /// What the server was still busy with when it answered (the answer may be partial).
    pub partial: Option<String>,
    /// Importers naming the symbol that the server left out, also when asked again.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<String>,
}

/// Calls into or out of a symbol, one page of them.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Calls {
    /// The symbol's name path, or its text on the line.
    pub symbol: String,
    pub at: String,
    pub server: String,
    pub total: usize,
    pub offset: usize,
    pub calls: Vec<CallRow>,
    /// What the server was still busy with when it answered (the answer may be partial).
    pub partial: Option<String>,
}

/// One call: where (the call site of an incoming call, the callee's declaration of an outgoing
/// one), and the caller or callee by name path.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct CallRow {
    pub path: String,
    pub line: u32,
    pub column: u32,
    pub name_path: String,
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// A symbol's signature and documentation.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct HoverAnswer {
    pub symbol: String,
    pub at: String,
    pub server: String,
    /// The hover text (Markdown), `null` when the server has none.
    pub hover: Option<String>,
}

/// The code actions offered at a position.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CodeActionList {
    pub at: String,
    pub server: String,
    pub actions: Vec<CodeActionItem>,
}

/// One code action; `index` is what `lsp_code_action` takes.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CodeActionItem {
    pub index: usize,
    pub title: String,
    pub kind: String,
    pub preferred: bool,
    /// Why it does not apply here, when the server says so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disabled: Option<String>,
    /// The edits it would make, one line each.
    pub changes: Vec<String>,
}

/// Workspace symbols matching a query, or a file's outline.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum SymbolsAnswer {
    Workspace(WorkspaceSymbols),
    Outline(Outline),
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct WorkspaceSymbols {
    pub query: String,
    pub total: usize,
    pub offset: usize,
    pub symbols: Vec<WorkspaceSymbolRow>,
    /// What limited the search (a server not ready, no index, a second try).
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct WorkspaceSymbolRow {
    pub name: String,
    pub kind: String,
    pub container: Option<String>,
    pub path: String,
    pub line: u32,
    pub column: u32,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Outline {
    pub path: String,
    pub total: usize,
    pub offset: usize,
    pub symbols: Vec<OutlineRow>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct OutlineRow {
    /// Nesting depth (0: top level).
    pub depth: usize,
    pub line: u32,
    pub column: u32,
    pub kind: String,
    pub name: String,
    pub detail: String,
}

/// One file's diagnostics, or the project check's.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum DiagnosticsAnswer {
    File(FileDiagnostics),
    Project(ProjectCheckReport),
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct FileDiagnostics {
    pub path: String,
    pub server: String,
    /// `push` or `pull`.
    pub mode: String,
    /// Diagnostics shown in all (`diagnostics` holds at most the first 100).
    pub total: usize,
    /// `2 errors, 1 warning` of all shown.
    pub summary: String,
    /// Hints and unused-code notes left out (`include_hints` shows them).
    pub hidden: usize,
    pub diagnostics: Vec<Diagnostic>,
}

/// One checker run (or one that was not run).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct CheckRunReport {
    /// The command line, without paths of private files.
    pub command: String,
    /// Project root relative to the run's root.
    pub root: String,
    /// `ok`, `failed` (the checker itself failed) or `not_run`.
    pub outcome: String,
    pub diagnostics: usize,
    /// Why it failed or did not run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// The result of `diagnostics "*"`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ProjectCheckReport {
    pub runs: Vec<CheckRunReport>,
    /// Languages present that have no checker here, and why.
    pub notes: Vec<String>,
    pub total: usize,
    /// `2 errors, 1 warning` of all found (`diagnostics` holds at most the first 100).
    pub summary: String,
    pub diagnostics: Vec<Diagnostic>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct StatusAnswer {
    pub root: String,
    pub servers: Vec<RootStatus>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ReloadAnswer {
    pub reloaded: Vec<Reloaded>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Reloaded {
    pub server: String,
    pub languages: String,
    pub root: String,
    /// The server that now runs, as `name version`.
    pub label: String,
    pub pid: u32,
    /// Other runs of the host that use the same server.
    pub shared_with: usize,
}

impl LspResult {
    /// The text of the result, complete on its own.
    pub fn render(&self) -> String {
        match self {
            LspResult::Definition(l) => l.render("definition"),
            LspResult::TypeDefinition(l) => l.render("type definition"),
            LspResult::Implementation(l) => l.render("implementation"),
            LspResult::References(l) => l.render("references"),
            LspResult::Hover(h) => h.render(),
            LspResult::CodeActions(c) => c.render(),
            LspResult::IncomingCalls(c) => c.render("caller(s) of", "calls"),
            LspResult::OutgoingCalls(c) => c.render("callee(s) of", "callees"),
            LspResult::Symbols(SymbolsAnswer::Workspace(w)) => w.render(),
            LspResult::Symbols(SymbolsAnswer::Outline(o)) => o.render(),
            LspResult::Diagnostics(DiagnosticsAnswer::File(f)) => f.render(),
            LspResult::Diagnostics(DiagnosticsAnswer::Project(p)) => p.render(),
            LspResult::Status(s) => s.render(),
            LspResult::Reload(r) => r.render(),
        }
    }
}

impl Locations {
    fn render(&self, what: &str) -> String {
        if self.total == 0 {
            let state = match &self.partial {
                Some(busy) => {
                    format!("still {busy}: files it has not reached may hold it; ask again shortly")
                }
                None => "ready".to_string(),
            };
            let mut out = format!("no {what} found for {} ({}, {state})", self.at, self.server);
            out.push_str(&self.left_out_note());
            return out;
        }
        let mut out = match what {
            "references" => format!("{} reference(s) to {}:", self.total, self.at),
            _ => format!("{what} of {}:", self.at),
        };
        for loc in &self.locations {
            out.push('\n');
            out.push_str(&loc.render());
        }
        if let Some(note) = page_note(self.offset, self.locations.len(), self.total) {
            out.push('\n');
            out.push_str(&note);
        }
        if let Some(busy) = &self.partial {
            out.push_str(&format!(
                "\n(may be partial: the server is still {busy}; ask again shortly for the full answer)"
            ));
        }
        out.push_str(&self.left_out_note());
        out
    }

    /// The importers the server left out, or nothing.
    fn left_out_note(&self) -> String {
        if self.left_out.is_empty() {
            return String::new();
        }
        format!(
            "\n(incomplete: {} import the symbol's file and name `{}` through that import, but the server left them out, also when asked again with them open; search them by name)",
            self.left_out.join(", "),
            self.symbol
        )
    }
}

impl Calls {
    fn render(&self, heading: &str, what: &str) -> String {
        if self.total == 0 {
            let state = match &self.partial {
                Some(busy) => format!("still {busy}; ask again shortly"),
                None => "ready".to_string(),
            };
            return format!("no {what} found for {} ({}, {state})", self.at, self.server);
        }
        let mut out = format!("{} {heading} {}:", self.total, self.at);
        for call in &self.calls {
            out.push_str(&format!(
                "\n{}:{}:{}  {}",
                call.path, call.line, call.column, call.name_path
            ));
            if let Some(text) = call.text.as_deref().map(str::trim).filter(|t| !t.is_empty()) {
                out.push_str(&format!("  {text}"));
            }
        }
        if let Some(note) = page_note(self.offset, self.calls.len(), self.total) {
            out.push('\n');
            out.push_str(&note);
        }
        if let Some(busy) = &self.partial {
            out.push_str(&format!(
                "\n(may be partial: the server is still {busy}; ask again shortly for the full answer)"
            ));
        }
        out
    }
}

impl HoverAnswer {
    fn render(&self) -> String {
        match &self.hover {
            Some(text) => format!("hover for {}:\n{text}", self.at),
            None => format!("no hover information for {} ({})", self.at, self.server),
        }
    }
}

impl CodeActionList {
    fn render(&self) -> String {
        if self.actions.is_empty() {
            return format!("no code actions offered for {} ({})", self.at, self.server);
        }
        let mut lines = vec![format!(
            "{} code action(s) offered for {} (apply one with lsp_code_action and its number):",
            self.actions.len(),
            self.at
        )];
        let mut disabled = 0;
        for action in &self.actions {
            if action.disabled.is_some() {
                disabled += 1;
                continue;
            }
            let mut line = format!("{}. {} ({})", action.index, action.title, action.kind);
            if action.preferred {
                line.push_str(" [preferred]");
            }
            lines.push(line);
            lines.extend(action.changes.iter().take(MAX_SHOWN_EDITS).map(|c| format!("   {c}")));
            if action.changes.len() > MAX_SHOWN_EDITS {
                lines.push(format!("   [+{} more edits]", action.changes.len() - MAX_SHOWN_EDITS));
            }
        }
        if disabled > 0 {
            lines.push(format!("({disabled} more not applicable here, not listed)"));
        }
        lines.join("\n")
    }
}

impl WorkspaceSymbols {
    fn render(&self) -> String {
        let mut out = if self.total == 0 {
            format!("no workspace symbols match `{}`", self.query)
        } else {
            format!("{} workspace symbol(s) matching `{}`:", self.total, self.query)
        };
        for s in &self.symbols {
            let container = s
                .container
                .as_deref()
                .filter(|c| !c.is_empty())
                .map(|c| format!(" in {c}"))
                .unwrap_or_default();
            out.push_str(&format!(
                "\n{}:{}:{} {} {}{container}",
                s.path, s.line, s.column, s.kind, s.name
            ));
        }
        if let Some(note) = page_note(self.offset, self.symbols.len(), self.total) {
            out.push('\n');
            out.push_str(&note);
        }
        for note in &self.notes {
            out.push_str(&format!("\nnote: {}", note.lines().next().unwrap_or("")));
        }
        out
    }
}

impl Outline {
    fn render(&self) -> String {
        let mut out = if self.total == 0 {
            format!("no symbols in {}", self.path)
        } else {
            format!("{} symbol(s) in {}:", self.total, self.path)
        };
        for s in &self.symbols {
            let detail = if s.detail.is_empty() {
                String::new()
            } else {
                format!(" — {}", s.detail.lines().next().unwrap_or(""))
            };
            out.push_str(&format!(
                "\n{}{}:{} {} {}{detail}",
                "  ".repeat(s.depth),
                s.line,
                s.column,
                s.kind,
                s.name
            ));
        }
        if let Some(note) = page_note(self.offset, self.symbols.len(), self.total) {
            out.push('\n');
            out.push_str(&note);
        }
        out
    }
}

impl FileDiagnostics {
    fn render(&self) -> String {
        let hidden_note = if self.hidden > 0 {
            format!(
                " ({} hint(s) or unused-code notes left out; include_hints shows them)",
                self.hidden
            )
        } else {
            String::new()
        };
        if self.total == 0 {
            return format!(
                "no errors or warnings in {} ({}, {} diagnostics of the current content){hidden_note}",
                self.path, self.server, self.mode
            );
        }
        let mut out = format!(
            "{} in {} ({}, {}){hidden_note}:",
            self.summary, self.path, self.server, self.mode
        );
        for d in self.diagnostics.iter().take(MAX_DIAGNOSTICS) {
            out.push('\n');
            out.push_str(&d.render());
        }
        let shown = self.diagnostics.len().min(MAX_DIAGNOSTICS);
        if self.total > shown {
            out.push_str(&format!("\n[+{} more not shown]", self.total - shown));
        }
        out
    }
}

impl ProjectCheckReport {
    /// The model-facing text.
    pub fn render(&self) -> String {
        let failed = self.runs.iter().filter(|r| r.outcome != "ok").count();
        let ok = self.runs.len() - failed;
        let mut out = if self.runs.is_empty() {
            "project check: nothing could run".to_string()
        } else if failed > 0 && ok == 0 {
            "project check FAILED: no checker completed, so nothing is known about errors".into()
        } else if self.total == 0 && failed == 0 {
            "project check: no errors or warnings".into()
        } else if self.total == 0 {
            format!(
                "project check: no errors or warnings where it ran; {failed} run(s) failed or did not run"
            )
        } else {
            format!(
                "project check: {} ({} in total){}",
                self.summary,
                self.total,
                if failed > 0 {
                    format!("; {failed} run(s) failed or did not run")
                } else {
                    String::new()
                }
            )
        };
        for run in &self.runs {
            out.push_str(&format!(
                "\n{}: `{}` in {}",
                run.outcome.replace('_', " "),
                run.command,
                run.root
            ));
            match (&run.detail, run.outcome.as_str()) {
                (Some(detail), _) => out.push_str(&format!(": {detail}")),
                (None, _) => out.push_str(&format!(" ({} diagnostics)", run.diagnostics)),
            }
        }
        for d in self.diagnostics.iter().take(MAX_DIAGNOSTICS) {
            out.push('\n');
            out.push_str(&d.render());
        }
        let shown = self.diagnostics.len().min(MAX_DIAGNOSTICS);
        if self.total > shown {
            out.push_str(&format!(
                "\n[+{} more not shown; {} in total]",
                self.total - shown,
                self.total
            ));
        }
        for note in &self.notes {
            out.push_str(&format!("\nnote: {note}"));
        }
        out
    }
}

impl StatusAnswer {
    fn render(&self) -> String {
        let mut out = format!("lsp status for {}:", self.root);
        if self.servers.is_empty() {
            out.push_str(
                "\nno source files of a language with a configured server were found (scanned 4 levels deep); \
                 servers start on first use of a file",
            );
        }
        for row in &self.servers {
            out.push('\n');
            out.push_str(&row.render());
        }
        out
    }
}

impl ReloadAnswer {
    fn render(&self) -> String {
        if self.reloaded.is_empty() {
            return "no server is running, so nothing was reloaded; servers start on first use"
                .into();
        }
        let lines: Vec<String> = self
            .reloaded
            .iter()
            .map(|r| {
                let mut line = format!(
                    "reloaded the {} server for root {}: {} (pid {}) is running",
                    r.languages, r.root, r.label, r.pid
                );
                if r.shared_with > 0 {
                    line.push_str(&format!(
                        "; the server is shared with {} other run(s) of this host: they see \
                         the restart too, and their files are sent to it again on their next call",
                        r.shared_with
                    ));
                }
                line
            })
            .collect();
        lines.join("\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn locations(total: usize, left_out: &[&str]) -> Locations {
        let shown = ShownLocation {
            path: "use1.py".into(),
            line: 3,
            column: 7,
            text: Some("print(area(1))".into()),
        };
        Locations {
            symbol: "area".into(),
            at: "`area` at lib.py:1:5".into(),
            server: "basedpyright".into(),
            total,
            offset: 0,
            locations: if total > 0 { vec![shown] } else { Vec::new() },
            partial: None,
            left_out: left_out.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn references_the_server_left_out_are_named_after_the_ones_it_gave() {
        insta::assert_snapshot!(locations(1, &["use2.py", "use3.py"]).render("references"), @r"
        1 reference(s) to `area` at lib.py:1:5:
        use1.py:3:7  print(area(1))
        (incomplete: use2.py, use3.py import the symbol's file and name `area` through that import, but the server left them out, also when asked again with them open; search them by name)
        ");
        insta::assert_snapshot!(locations(0, &["use2.py"]).render("references"), @r"
        no references found for `area` at lib.py:1:5 (basedpyright, ready)
        (incomplete: use2.py import the symbol's file and name `area` through that import, but the server left them out, also when asked again with them open; search them by name)
        ");
        assert!(!locations(1, &[]).render("references").contains("incomplete"));
    }
}
