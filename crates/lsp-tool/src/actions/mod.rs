//! The `lsp` tool: its arguments, the twelve actions, line + symbol addressing, and the rendering
//! of every answer as `path:line:col` with the source line.

mod addressed;
mod args;
mod calls;
mod cut;
mod left_out;
mod name_path;
mod navigation;
mod project_check;
mod result;
mod status;
mod symbols;

pub use args::LspArgs;
use navigation::navigation_action;
pub(crate) use navigation::offered_code_actions;
use project_check::project_check;
use status::{reload_action, status_action};
use symbols::symbols_action;

pub use result::{
    CallRow, Calls, CheckRunReport, CodeActionItem, CodeActionList, DiagnosticsAnswer,
    FileDiagnostics, HoverAnswer, Locations, LspResult, Outline, OutlineRow, ProjectCheckReport,
    ReloadAnswer, Reloaded, StatusAnswer, SymbolsAnswer, WorkspaceSymbolRow, WorkspaceSymbols,
};

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
    sync::Arc,
    time::{Duration, Instant},
};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::{
    diagnostics::{self, Diagnostic},
    discover,
    encoding::{ColumnUnit, convert_column},
    error::LspError,
    paths::{display_relative, path_from_uri, resolve_in_root, uri_from_path},
    server::{DiagnosticMode, DiagnosticsWait, Feature, Save, Scope, Server, SyncedDoc},
    supervisor::{Supervisor, Target, server_label},
    transport::RequestError,
};

/// Most references listed.
pub const MAX_REFERENCES: usize = 50;
/// Most workspace symbols listed.
pub const MAX_WORKSPACE_SYMBOLS: usize = 100;
/// Most document symbols listed.
pub const MAX_DOCUMENT_SYMBOLS: usize = 200;
/// Most definitions/implementations listed.
pub(crate) const MAX_LOCATIONS: usize = 50;
/// Most diagnostics listed by `diagnostics`.
pub const MAX_DIAGNOSTICS: usize = 100;
/// Code actions whose edit is resolved for the listing.
const MAX_RESOLVED_ACTIONS: usize = 10;
/// Edits shown per code action.
const MAX_SHOWN_EDITS: usize = 10;
/// Most characters of a hover shown.
pub(crate) const MAX_HOVER_CHARS: usize = 4000;

/// What `lsp` should do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Errors and warnings of `file`; with `file: "*"` the project check runs instead.
    Diagnostics,
    /// Where the symbol at `file`/`line`/`symbol` is declared.
    Definition,
    /// Where its type is declared.
    TypeDefinition,
    /// Concrete implementations of an interface or abstract method.
    Implementation,
    /// Every use (at most 50).
    References,
    /// Signature and doc comment.
    Hover,
    /// Workspace symbol search with `query` (at most 100), or the outline of `file` (at most 200).
    Symbols,
    /// Quick fixes the server offers at the symbol (listed, not applied).
    CodeActions,
    /// Who calls the symbol: each call site with the caller's name path (at most 50).
    IncomingCalls,
    /// What the symbol calls: each callee where it is declared (at most 50).
    OutgoingCalls,
    /// Which servers run, for which roots, and why a language has none.
    Status,
    /// Restart the server of `file`'s root (or every running server).
    Reload,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Diagnostics => "diagnostics",
            Action::Definition => "definition",
            Action::TypeDefinition => "type_definition",
            Action::Implementation => "implementation",
            Action::References => "references",
            Action::Hover => "hover",
            Action::Symbols => "symbols",
            Action::CodeActions => "code_actions",
            Action::IncomingCalls => "incoming_calls",
            Action::OutgoingCalls => "outgoing_calls",
            Action::Status => "status",
            Action::Reload => "reload",
        }
    }

    /// What the answer of a navigation action depends on: references span the project; the
    /// others are answered from the open file and what it names.
    fn scope(self) -> Scope {
        match self {
            Action::References | Action::Implementation | Action::IncomingCalls => Scope::Project,
            _ => Scope::File,
        }
    }

    fn navigation(self) -> Option<(Feature, &'static str)> {
        // (feature, what)
        match self {
            Action::Definition => Some((Feature::Definition, "definition")),
            Action::TypeDefinition => Some((Feature::TypeDefinition, "type definition")),
            Action::Implementation => Some((Feature::Implementation, "implementation")),
            Action::References => Some((Feature::References, "references")),
            Action::Hover => Some((Feature::Hover, "hover")),
            Action::CodeActions => Some((Feature::CodeActions, "code actions")),
            Action::IncomingCalls => Some((Feature::CallHierarchy, "incoming calls")),
            Action::OutgoingCalls => Some((Feature::CallHierarchy, "outgoing calls")),
            _ => None,
        }
    }
}

/// What a call produced: text for the model, data for programs, files written, and the
/// answer both were rendered from (for a host that shows fewer of its items under a cap).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LspOutput {
    pub text: String,
    pub structured: Value,
    pub changed_files: Vec<PathBuf>,
    pub answer: Option<Answer>,
}

/// The answer behind an [`LspOutput`] (`lsp` actions; reports of writes have none).
#[derive(Debug, Clone)]
pub struct Answer(pub LspResult);

impl PartialEq for Answer {
    fn eq(&self, other: &Self) -> bool {
        serde_json::to_value(&self.0).ok() == serde_json::to_value(&other.0).ok()
    }
}

impl LspOutput {
    /// A report's text and the same report as data (`lsp_rename`, `lsp_code_action`).
    pub(crate) fn new(text: String, structured: Value) -> Self {
        LspOutput { text, structured, changed_files: Vec::new(), answer: None }
    }

    /// The text and the data of `result`: one value, rendered once.
    pub fn from_result(result: LspResult) -> Self {
        LspOutput {
            text: result.render(),
            structured: serde_json::to_value(&result).unwrap_or_default(),
            changed_files: Vec::new(),
            answer: Some(Answer(result)),
        }
    }
}

/// A symbol found on a line.
#[derive(Debug, Clone, PartialEq)]
pub struct Located {
    /// 0-based line.
    pub line: u32,
    /// Byte range of the match on the line.
    pub start: usize,
    pub end: usize,
    pub occurrence: usize,
    pub of: usize,
    pub line_text: String,
}

impl Located {
    /// The match's start column in `unit` (a server's position encoding, or characters).
    pub fn start_in(&self, unit: ColumnUnit) -> u32 {
        convert_column(&self.line_text, self.start as u32, ColumnUnit::Utf8, unit)
    }

    /// The match's end column in `unit`.
    pub fn end_in(&self, unit: ColumnUnit) -> u32 {
        convert_column(&self.line_text, self.end as u32, ColumnUnit::Utf8, unit)
    }

    /// The 1-based character column a person reads in `file:line:column`.
    pub fn display_column(&self) -> u32 {
        self.start_in(ColumnUnit::Char) + 1
    }
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$'
}

/// Finds `symbol` on 1-based `line` of `text`: whole-word matches first, else substrings; the
/// `occurrence`-th (1-based). Never guesses: a symbol not on the line is an error that shows
/// the line and where nearby the symbol does occur.
pub(crate) fn locate(
    text: &str,
    shown: &str,
    line: u32,
    symbol: &str,
    occurrence: Option<u32>,
) -> Result<Located, LspError> {
    let lines: Vec<&str> = text.lines().collect();
    if line == 0 || line as usize > lines.len() {
        return Err(LspError::Invalid(format!(
            "line {line} is outside {shown}, which has {} lines",
            lines.len()
        )));
    }
    if symbol.trim().is_empty() {
        return Err(LspError::Invalid(format!(
            "argument `symbol` is empty; give the text on line {line} that names the symbol. Line {line} reads: `{}`",
            lines[line as usize - 1].trim()
        )));
    }
    let line_text = lines[line as usize - 1];
    let matches = |l: &str| -> (Vec<(usize, usize)>, bool) {
        let all: Vec<(usize, usize)> =
            l.match_indices(symbol).map(|(i, m)| (i, i + m.len())).collect();
        let whole: Vec<(usize, usize)> = all
            .iter()
            .copied()
            .filter(|&(s, e)| {
                let before_ok = !symbol.starts_with(is_ident)
                    || l[..s].chars().next_back().is_none_or(|c| !is_ident(c));
                let after_ok = !symbol.ends_with(is_ident)
                    || l[e..].chars().next().is_none_or(|c| !is_ident(c));
                before_ok && after_ok
            })
            .collect();
        if whole.is_empty() { (all, false) } else { (whole, true) }
    };
    let (found, _whole) = matches(line_text);
    if found.is_empty() {
        let lo = line.saturating_sub(3).max(1);
        let hi = (line + 3).min(lines.len() as u32);
        let nearby: Vec<String> = (lo..=hi)
            .filter(|&n| n != line && lines[n as usize - 1].contains(symbol))
            .map(|n| n.to_string())
            .collect();
        let hint = if nearby.is_empty() {
            "it does not occur within 3 lines either; read the file to find the right line"
                .to_string()
        } else {
            format!("it occurs on line {} nearby", nearby.join(", "))
        };
        return Err(LspError::Invalid(format!(
            "`{symbol}` does not occur on line {line} of {shown}, which reads: `{}`; {hint}",
            line_text.trim()
        )));
    }
    let n = occurrence.unwrap_or(1).max(1) as usize;
    if n > found.len() {
        return Err(LspError::Invalid(format!(
            "line {line} of {shown} has {} occurrence(s) of `{symbol}`; occurrence {n} does not exist",
            found.len()
        )));
    }
    let (mut start, end) = found[n - 1];
    // A dotted symbol (`self.type`, `os.path.join`) addresses its last part, the attribute.
    if let Some(dot) = line_text[start..end].rfind('.')
        && line_text[start + dot + 1..end].starts_with(is_ident)
    {
        start += dot + 1;
    }
    // Point at the identifier, not at punctuation the symbol text may begin with.
    if let Some((offset, _)) = line_text[start..end].char_indices().find(|(_, c)| is_ident(*c)) {
        start += offset;
    }
    Ok(Located {
        line: line - 1,
        start,
        end,
        occurrence: n,
        of: found.len(),
        line_text: line_text.to_string(),
    })
}

/// The note under a page of `total` results that starts at `offset` and shows `shown`.
fn page_note(offset: usize, shown: usize, total: usize) -> Option<String> {
    if offset >= total && total > 0 {
        return Some(format!("[offset {offset} is past the end: {total} in total]"));
    }
    (offset > 0 || offset + shown < total).then(|| {
        let more = if offset + shown < total {
            format!("; call again with offset={} for more", offset + shown)
        } else {
            String::new()
        };
        format!("[showing {}–{} of {total}{more}]", offset + 1, offset + shown)
    })
}

/// Reads files for source lines, once per call.
struct SourceCache {
    files: HashMap<PathBuf, Option<String>>,
}

impl SourceCache {
    fn new() -> Self {
        SourceCache { files: HashMap::new() }
    }

    fn line(&mut self, path: &Path, line: u32) -> Option<String> {
        let text = self
            .files
            .entry(path.to_path_buf())
            .or_insert_with(|| crate::paths::read_source(path).ok());
        text.as_ref()?.lines().nth(line as usize).map(|l| l.trim_end().to_string())
    }
}

/// A location as shown: `path:line:col` and the source line.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ShownLocation {
    pub path: String,
    pub line: u32,
    pub column: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

impl ShownLocation {
    fn render(&self) -> String {
        match self.text.as_deref().map(str::trim).filter(|t| !t.is_empty()) {
            Some(t) => format!("{}:{}:{}  {t}", self.path, self.line, self.column),
            None => format!("{}:{}:{}", self.path, self.line, self.column),
        }
    }
}

fn show_location(
    root: &Path,
    uri: &lsp_types::Uri,
    start: lsp_types::Position,
    encoding: ColumnUnit,
    cache: &mut SourceCache,
) -> Option<ShownLocation> {
    let path = path_from_uri(uri)?;
    let text = cache.line(&path, start.line);
    let column = text.as_deref().map_or(start.character, |t| {
        convert_column(t, start.character, encoding, ColumnUnit::Char)
    });
    Some(ShownLocation {
        path: display_relative(root, &path),
        line: start.line + 1,
        column: column + 1,
        text,
    })
}

/// Location | Location[] | LocationLink[] → shown locations, each once.
fn shown_locations(
    root: &Path,
    answer: &lsp_types::GotoDefinitionResponse,
    encoding: ColumnUnit,
    cache: &mut SourceCache,
) -> Vec<ShownLocation> {
    use lsp_types::GotoDefinitionResponse as Answer;
    let starts: Vec<(&lsp_types::Uri, lsp_types::Position)> = match answer {
        Answer::Scalar(l) => vec![(&l.uri, l.range.start)],
        Answer::Array(ls) => ls.iter().map(|l| (&l.uri, l.range.start)).collect(),
        Answer::Link(links) => {
            links.iter().map(|l| (&l.target_uri, l.target_selection_range.start)).collect()
        }
    };
    let mut out: Vec<ShownLocation> = Vec::new();
    for (uri, start) in starts {
        if let Some(s) = show_location(root, uri, start, encoding, cache)
            && !out.contains(&s)
        {
            out.push(s);
        }
    }
    out
}

fn request_failed(server: &Server, what: &str, e: RequestError) -> LspError {
    match e {
        RequestError::Timeout(d) => LspError::Failed(format!(
            "{what}: the {} server ({}) did not answer within {} ms; it may be overloaded or stuck. \
             Try again, or `reload` it",
            server.def.display_languages(),
            server_label(server),
            d.as_millis()
        )),
        RequestError::Closed => LspError::Failed(format!(
            "{what}: the {} server ({}) exited while answering ({}); the next call restarts it",
            server.def.display_languages(),
            server_label(server),
            server.exit_status().unwrap_or_else(|| "connection closed".into())
        )),
        RequestError::Cancelled => LspError::Failed(format!("{what}: cancelled")),
        RequestError::Server { code, message } => {
            LspError::Failed(format!("{what}: the server answered with error {code}: {message}"))
        }
        shape @ RequestError::Shape { .. } => LspError::Failed(format!(
            "{what}: {shape} ({}); try `reload`, or report the server's version",
            server_label(server)
        )),
    }
}

fn file_arg(sup: &Supervisor, args: &LspArgs) -> Result<PathBuf, LspError> {
    let Some(file) = args.file.as_deref() else {
        return Err(LspError::Invalid(format!(
            "action `{}` needs argument `file` (a path relative to the workspace root)",
            args.action.as_str()
        )));
    };
    let path = resolve_in_root(sup.root(), file, "file").map_err(LspError::Invalid)?;
    if path.is_dir() {
        return Err(LspError::Invalid(format!(
            "argument `file`: {file} is a directory; name a source file"
        )));
    }
    if !path.exists() {
        return Err(LspError::Invalid(format!("argument `file`: {file} does not exist")));
    }
    Ok(path)
}

/// Runs one `lsp` call; the structured data is an [`LspResult`], the text its rendering.
pub(crate) async fn call(
    sup: &Supervisor,
    args: LspArgs,
    cancel: &CancellationToken,
) -> Result<LspOutput, LspError> {
    match args.action {
        Action::Status => status_action(sup).await,
        Action::Reload => reload_action(sup, &args, cancel).await,
        Action::Diagnostics if args.file.as_deref() == Some("*") => {
            project_check(sup, cancel).await
        }
        Action::Diagnostics => diagnostics_action(sup, &args, cancel).await,
        Action::Symbols => symbols_action(sup, &args, cancel).await,
        _ => navigation_action(sup, &args, cancel).await,
    }
}

/// Starts (or finds) the server of `path` and brings every open document up to date.
async fn ready_doc(
    sup: &Supervisor,
    path: &Path,
    cancel: &CancellationToken,
) -> Result<(Target, Arc<Server>, SyncedDoc), LspError> {
    let target = sup.target_for(path)?;
    let server = sup.server(&target, cancel).await?;
    server.resync_open().await;
    // Sent again when another file changed since: its last diagnostics may predate that.
    let doc = server
        .current(path, &target.language_id, None, sup.run_id())
        .await
        .map_err(LspError::Failed)?;
    Ok((target, server, doc))
}

async fn wait_ready(
    sup: &Supervisor,
    server: &Server,
    scope: Scope,
    what: &str,
    cancel: &CancellationToken,
) -> Result<(), LspError> {
    let budget = Duration::from_millis(sup.config().ready_timeout_ms);
    server
        .wait_ready(scope, Instant::now() + budget, cancel)
        .await
        .map_err(|why| why.into_error(what, &server.def.display_languages(), budget))
}

async fn diagnostics_action(
    sup: &Supervisor,
    args: &LspArgs,
    cancel: &CancellationToken,
) -> Result<LspOutput, LspError> {
    let path = file_arg(sup, args)?;
    let shown = display_relative(sup.root(), &path);
    let (_target, server, mut doc) = ready_doc(sup, &path, cancel).await?;
    let started = Instant::now();
    let deadline = started + Duration::from_millis(sup.config().diagnostics_timeout_ms);
    let label = server_label(&server);
    // A push server that stays silent about a version is sent it again once, a third of
    // the way in (clangd, busy indexing right after a close and reopen, can drop one).
    let nudge = started + (deadline - started) / 3;
    let mut first = server.diagnostics(&doc, nudge, cancel).await;
    if matches!(first, Err(DiagnosticsWait::Timeout { .. }))
        && server.diagnostic_mode() == DiagnosticMode::Push
        && let Some(again) = server.touch(&path, sup.run_id()).await
    {
        doc = again;
        first = server.diagnostics(&doc, deadline, cancel).await;
    } else if matches!(first, Err(DiagnosticsWait::Timeout { .. })) {
        first = server.diagnostics(&doc, deadline, cancel).await;
    }
    let items = match first {
        Ok(items) => items,
        Err(DiagnosticsWait::Timeout { indexing, .. }) => {
            return Err(LspError::NotReady(format!(
                "diagnostics of {shown}: not verified: {label} sent none for this version within {} ms{}; \
                 this is not the same as \"no errors\". Try again shortly",
                started.elapsed().as_millis(),
                indexing.map(|i| format!(" (server {i})")).unwrap_or_default()
            )));
        }
        Err(e) => return Err(LspError::Failed(format!("diagnostics of {shown}: {e}"))),
    };
    let mut all: Vec<Diagnostic> = items
        .iter()
        .map(|d| Diagnostic::from_lsp(d, &path, sup.root(), &doc.text, server.encoding))
        .collect();
    diagnostics::sort(&mut all);
    let hidden = all.iter().filter(|d| !d.is_shown(args.include_hints)).count();
    let mut shown_diags: Vec<Diagnostic> =
        all.into_iter().filter(|d| d.is_shown(args.include_hints)).collect();
    let summary = diagnostics::count_phrase(&shown_diags, "");
    let total = shown_diags.len();
    shown_diags.truncate(MAX_DIAGNOSTICS);
    Ok(LspOutput::from_result(LspResult::Diagnostics(DiagnosticsAnswer::File(FileDiagnostics {
        path: shown,
        server: label,
        mode: server.diagnostic_mode().as_str().to_string(),
        total,
        summary,
        hidden,
        diagnostics: shown_diags,
    }))))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "def valid_id(id):\n    return id(id) + valid_id\n";

    #[test]
    fn a_whole_word_match_is_preferred_over_a_substring() {
        let l = locate(TEXT, "a.py", 2, "id", None).unwrap();
        assert_eq!((l.start, l.of), (11, 2), "`id(id)`, not `valid_id`");
        let second = locate(TEXT, "a.py", 2, "id", Some(2)).unwrap();
        assert_eq!(second.start, 14);
    }

    #[test]
    fn a_substring_is_used_when_no_whole_word_matches() {
        let l = locate(TEXT, "a.py", 1, "valid", None).unwrap();
        assert_eq!(l.start, 4);
    }

    #[test]
    fn a_symbol_not_on_the_line_is_an_error_showing_the_line_and_where_it_is() {
        let err = locate(TEXT, "a.py", 1, "return", None).unwrap_err().to_string();
        assert_eq!(
            err,
            "`return` does not occur on line 1 of a.py, which reads: `def valid_id(id):`; it occurs on line 2 nearby"
        );
        let err = locate(TEXT, "a.py", 9, "x", None).unwrap_err().to_string();
        assert_eq!(err, "line 9 is outside a.py, which has 2 lines");
        let err = locate(TEXT, "a.py", 1, "id", Some(3)).unwrap_err().to_string();
        assert!(err.contains("has 1 occurrence(s) of `id`; occurrence 3 does not exist"), "{err}");
    }

    #[test]
    fn a_dotted_symbol_addresses_the_attribute() {
        let l = locate("        self.type = kind\n", "a.py", 1, "self.type", None).unwrap();
        assert_eq!((l.start, &l.line_text[l.start..l.end]), (13, "type"));
    }

    #[test]
    fn the_position_skips_leading_punctuation_of_the_symbol() {
        let l = locate("x = obj.method()\n", "a.py", 1, ".method", None).unwrap();
        assert_eq!(l.start, 8);
    }
}
