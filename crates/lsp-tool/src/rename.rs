//! `lsp_rename`: `prepareRename`, then the server's WorkspaceEdit applied all or nothing.
//!
//! Every document version and on-disk content is checked first, every new file content is
//! computed in memory, then all files are written atomically with rollback, and the changed
//! files are synced back to the server.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
};

use agent_tools_support::{
    Error as SupportError,
    fs::Root,
    journal::{Change, Expect, Journal},
};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::{
    actions::{LspOutput, locate},
    encoding::{ColumnUnit, byte_offset},
    error::LspError,
    names::check_new_name,
    on_write::{FileBefore, WrittenFile},
    paths::{display_relative, is_inside, path_from_uri, resolve_in_root, uri_from_path},
    server::Server,
    supervisor::{Supervisor, server_label},
    write_report::WriteDiagnostics,
};

/// Arguments of `lsp_rename`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RenameArgs {
    /// File where the symbol stands, relative to the workspace root.
    pub file: String,
    /// 1-based line of the symbol.
    pub line: u32,
    /// Text on that line that marks the symbol (whole-word match preferred).
    pub symbol: String,
    /// Which occurrence of `symbol` on the line, 1-based (default 1).
    #[serde(default)]
    pub occurrence: Option<u32>,
    /// The new name.
    pub new_name: String,
}

impl JsonSchema for RenameArgs {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "RenameArgs".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "object",
            "properties": {
                "file": {"type": "string"},
                "line": {"type": "integer", "minimum": 1},
                "symbol": {"type": "string"},
                "occurrence": {"type": "integer", "minimum": 1},
                "new_name": {"type": "string"}
            },
            "required": ["file", "line", "symbol", "new_name"],
            "additionalProperties": false
        })
    }
}

/// One step of a WorkspaceEdit, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum EditOp {
    Text { path: PathBuf, version: Option<i32>, edits: Vec<(Value, String)> },
    Create { path: PathBuf, overwrite: bool, ignore_if_exists: bool },
    Rename { from: PathBuf, to: PathBuf, overwrite: bool, ignore_if_exists: bool },
    Delete { path: PathBuf, ignore_if_not_exists: bool },
}

fn uri_path(value: Option<&Value>) -> Result<PathBuf, String> {
    let text = value.and_then(Value::as_str).ok_or("an edit without a uri")?;
    let uri: lsp_types::Uri = text.parse().map_err(|_| format!("an invalid uri {text}"))?;
    path_from_uri(&uri).ok_or_else(|| format!("a non-file uri {text}"))
}

fn text_edits(list: Option<&Value>) -> Vec<(Value, String)> {
    list.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|e| {
            (
                e.get("range").cloned().unwrap_or(Value::Null),
                e.get("newText").and_then(Value::as_str).unwrap_or("").to_string(),
            )
        })
        .collect()
}

/// Reads a WorkspaceEdit (`documentChanges` preferred over `changes`) into ordered steps.
pub fn parse_workspace_edit(edit: &Value) -> Result<Vec<EditOp>, String> {
    let mut ops = Vec::new();
    if let Some(changes) = edit.get("documentChanges").and_then(Value::as_array) {
        for change in changes {
            let flag = |k: &str| {
                change.pointer(&format!("/options/{k}")).and_then(Value::as_bool) == Some(true)
            };
            match change.get("kind").and_then(Value::as_str) {
                Some("create") => ops.push(EditOp::Create {
                    path: uri_path(change.get("uri"))?,
                    overwrite: flag("overwrite"),
                    ignore_if_exists: flag("ignoreIfExists"),
                }),
                Some("rename") => ops.push(EditOp::Rename {
                    from: uri_path(change.get("oldUri"))?,
                    to: uri_path(change.get("newUri"))?,
                    overwrite: flag("overwrite"),
                    ignore_if_exists: flag("ignoreIfExists"),
                }),
                Some("delete") => {
                    if flag("recursive") {
                        return Err(
                            "the edit deletes a folder recursively, which this tool does not do"
                                .into(),
                        );
                    }
                    ops.push(EditOp::Delete {
                        path: uri_path(change.get("uri"))?,
                        ignore_if_not_exists: flag("ignoreIfNotExists"),
                    })
                }
                Some(other) => return Err(format!("an unknown resource operation `{other}`")),
                None => ops.push(EditOp::Text {
                    path: uri_path(change.pointer("/textDocument/uri"))?,
                    version: change
                        .pointer("/textDocument/version")
                        .and_then(Value::as_i64)
                        .map(|v| v as i32),
                    edits: text_edits(change.get("edits")),
                }),
            }
        }
    } else if let Some(changes) = edit.get("changes").and_then(Value::as_object) {
        let mut sorted: Vec<(&String, &Value)> = changes.iter().collect();
        sorted.sort_by_key(|(k, _)| k.as_str());
        for (uri, edits) in sorted {
            ops.push(EditOp::Text {
                path: uri_path(Some(&Value::String(uri.clone())))?,
                version: None,
                edits: text_edits(Some(edits)),
            });
        }
    }
    Ok(ops)
}

fn offset_of(text: &str, line_starts: &[usize], pos: &Value, encoding: ColumnUnit) -> usize {
    let line = pos.get("line").and_then(Value::as_u64).unwrap_or(0) as usize;
    let character =
        pos.get("character").and_then(Value::as_u64).unwrap_or(0).min(u32::MAX as u64) as u32;
    let Some(&start) = line_starts.get(line) else { return text.len() };
    let end = line_starts.get(line + 1).copied().unwrap_or(text.len());
    let line_text = text[start..end].trim_end_matches('\n').trim_end_matches('\r');
    start + byte_offset(line_text, character, encoding)
}

/// Applies text edits (ranges in `encoding`) to `text`; overlapping edits are an error.
pub fn apply_text_edits(
    text: &str,
    edits: &[(Value, String)],
    encoding: ColumnUnit,
) -> Result<String, String> {
    let mut line_starts = vec![0];
    line_starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
    let mut spans: Vec<(usize, usize, usize, &str)> = edits
        .iter()
        .enumerate()
        .map(|(i, (range, new_text))| {
            let start =
                offset_of(text, &line_starts, range.get("start").unwrap_or(&Value::Null), encoding);
            let end =
                offset_of(text, &line_starts, range.get("end").unwrap_or(&Value::Null), encoding);
            (start, end.max(start), i, new_text.as_str())
        })
        .collect();
    spans.sort_by_key(|&(s, e, i, _)| (s, e, i));
    for pair in spans.windows(2) {
        if pair[1].0 < pair[0].1 {
            return Err("the server sent overlapping edits".into());
        }
    }
    let mut out = text.to_string();
    for &(start, end, _, new_text) in spans.iter().rev() {
        out.replace_range(start..end, new_text);
    }
    Ok(out)
}

/// The files whose edit ranges do not cover `old_name` in their current text: the server
/// computed the edit from a view of the file that is no longer on disk (a formatter, `git
/// checkout` or `sed` changed it). Files the server has open are checked by version instead.
pub(crate) fn stale_files(
    ops: &[EditOp],
    old_name: &str,
    encoding: ColumnUnit,
    is_open: &dyn Fn(&Path) -> bool,
) -> Vec<PathBuf> {
    let mut stale = Vec::new();
    for op in ops {
        let EditOp::Text { path, edits, .. } = op else { continue };
        if is_open(path) || stale.contains(path) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(path) else { continue };
        let mut line_starts = vec![0];
        line_starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        let covers = |(range, _): &(Value, String)| {
            let at = |k: &str| {
                offset_of(&text, &line_starts, range.get(k).unwrap_or(&Value::Null), encoding)
            };
            let (start, end) = (at("start"), at("end"));
            text.get(start..end.max(start)).is_some_and(|slice| slice.contains(old_name))
        };
        if !edits.iter().all(covers) {
            stale.push(path.clone());
        }
    }
    stale
}

/// One line per edit, for a model to see what a code action would change: `path:line:col
/// replace `old` with `new`` (texts cut to 60 characters), and the resource operations.
pub(crate) fn describe_ops(root: &Path, ops: &[EditOp], encoding: ColumnUnit) -> Vec<String> {
    let cut = |t: &str| {
        let one = t.replace('\n', "⏎");
        if one.chars().count() > 60 {
            one.chars().take(60).collect::<String>() + "…"
        } else {
            one
        }
    };
    let mut out = Vec::new();
    for op in ops {
        match op {
            EditOp::Text { path, edits, .. } => {
                let shown = display_relative(root, path);
                let text = crate::paths::read_source(path).unwrap_or_default();
                let mut line_starts = vec![0];
                line_starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
                for (range, new_text) in edits {
                    let at = |k: &str| {
                        offset_of(
                            &text,
                            &line_starts,
                            range.get(k).unwrap_or(&Value::Null),
                            encoding,
                        )
                    };
                    let (start, end) = (at("start"), at("end"));
                    let old = text.get(start..end.max(start)).unwrap_or("");
                    let line =
                        range.pointer("/start/line").and_then(Value::as_u64).unwrap_or(0) + 1;
                    let col = text[line_starts.get(line as usize - 1).copied().unwrap_or(0)
                        ..start.min(text.len())]
                        .chars()
                        .count()
                        + 1;
                    out.push(match (old.is_empty(), new_text.is_empty()) {
                        (true, _) => format!("{shown}:{line}:{col} insert `{}`", cut(new_text)),
                        (false, true) => format!("{shown}:{line}:{col} delete `{}`", cut(old)),
                        _ => format!(
                            "{shown}:{line}:{col} replace `{}` with `{}`",
                            cut(old),
                            cut(new_text)
                        ),
                    });
                }
            }
            EditOp::Create { path, .. } => {
                out.push(format!("create {}", display_relative(root, path)))
            }
            EditOp::Rename { from, to, .. } => out.push(format!(
                "rename {} → {}",
                display_relative(root, from),
                display_relative(root, to)
            )),
            EditOp::Delete { path, .. } => {
                out.push(format!("delete {}", display_relative(root, path)))
            }
        }
    }
    out
}

/// The planned result of a WorkspaceEdit: new content per file (`None` = delete) and edit counts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EditPlan {
    pub files: BTreeMap<PathBuf, Option<String>>,
    pub edits_per_file: BTreeMap<PathBuf, usize>,
    pub renamed: Vec<(PathBuf, PathBuf)>,
    pub created: Vec<PathBuf>,
    pub deleted: Vec<PathBuf>,
}

/// Computes every new file content in memory. `server_doc` gives the version and text the
/// server has for a path (if open); a version or content mismatch rejects the whole edit.
pub fn plan_edit(
    root: &Path,
    ops: &[EditOp],
    encoding: ColumnUnit,
    server_doc: &dyn Fn(&Path) -> Option<(i32, String)>,
) -> Result<EditPlan, String> {
    let mut plan = EditPlan::default();
    let current = |plan: &EditPlan, path: &Path| -> Result<Option<String>, String> {
        if let Some(state) = plan.files.get(path) {
            return Ok(state.clone());
        }
        match std::fs::read(path) {
            Ok(bytes) => String::from_utf8(bytes)
                .map(Some)
                .map_err(|_| format!("{} is not UTF-8 text", display_relative(root, path))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!("cannot read {}: {e}", display_relative(root, path))),
        }
    };
    let check_inside = |path: &Path| {
        if is_inside(root, path) {
            Ok(())
        } else {
            Err(format!("the edit touches {}, outside the workspace root", path.display()))
        }
    };
    for op in ops {
        match op {
            EditOp::Text { path, version, edits } => {
                check_inside(path)?;
                let shown = display_relative(root, path);
                let Some(text) = current(&plan, path)? else {
                    return Err(format!("the edit changes {shown}, which does not exist"));
                };
                if !plan.files.contains_key(path)
                    && let Some((open_version, open_text)) = server_doc(path)
                {
                    if let Some(v) = version
                        && *v != open_version
                    {
                        return Err(format!(
                            "{shown} is at version {open_version} but the edit was computed for version {v}"
                        ));
                    }
                    if open_text != text {
                        return Err(format!(
                            "{shown} changed on disk while the rename was computed"
                        ));
                    }
                }
                let new_text = apply_text_edits(&text, edits, encoding)
                    .map_err(|e| format!("{shown}: {e}"))?;
                *plan.edits_per_file.entry(path.clone()).or_default() += edits.len();
                plan.files.insert(path.clone(), Some(new_text));
            }
            EditOp::Create { path, overwrite, ignore_if_exists } => {
                check_inside(path)?;
                if current(&plan, path)?.is_some() {
                    if *overwrite {
                        plan.files.insert(path.clone(), Some(String::new()));
                    } else if !*ignore_if_exists {
                        return Err(format!(
                            "the edit creates {}, which exists",
                            display_relative(root, path)
                        ));
                    }
                    continue;
                }
                plan.files.insert(path.clone(), Some(String::new()));
                plan.created.push(path.clone());
            }
            EditOp::Rename { from, to, overwrite, ignore_if_exists } => {
                check_inside(from)?;
                check_inside(to)?;
                let Some(text) = current(&plan, from)? else {
                    return Err(format!(
                        "the edit renames {}, which does not exist",
                        display_relative(root, from)
                    ));
                };
                if current(&plan, to)?.is_some() && !*overwrite {
                    if *ignore_if_exists {
                        continue;
                    }
                    return Err(format!(
                        "the edit renames onto {}, which exists",
                        display_relative(root, to)
                    ));
                }
                plan.files.insert(from.clone(), None);
                plan.files.insert(to.clone(), Some(text));
                if let Some(n) = plan.edits_per_file.remove(from) {
                    plan.edits_per_file.insert(to.clone(), n);
                }
                plan.renamed.push((from.clone(), to.clone()));
            }
            EditOp::Delete { path, ignore_if_not_exists } => {
                check_inside(path)?;
                if path.is_dir() {
                    return Err(format!(
                        "the edit deletes the folder {}, which this tool does not do",
                        display_relative(root, path)
                    ));
                }
                if current(&plan, path)?.is_none() {
                    if *ignore_if_not_exists {
                        continue;
                    }
                    return Err(format!(
                        "the edit deletes {}, which does not exist",
                        display_relative(root, path)
                    ));
                }
                plan.files.insert(path.clone(), None);
                plan.deleted.push(path.clone());
            }
        }
    }
    // Drop files whose final content equals what is on disk.
    let unchanged: Vec<PathBuf> = plan
        .files
        .iter()
        .filter(|(p, state)| std::fs::read_to_string(p).ok() == **state)
        .map(|(p, _)| p.clone())
        .collect();
    for p in unchanged {
        plan.files.remove(&p);
    }
    Ok(plan)
}

/// Writes the plan as one crash-atomic group through support's journal: every path is
/// resolved beneath `root` by handle (a folder swapped for a symlink cannot redirect a write),
/// each file must still hold what it held when read here, and after a crash at any instant the
/// next start on the root rolls the group forward or back. All files change, or none does.
pub fn write_plan(root: &Path, plan: &EditPlan) -> Result<(), String> {
    let handle = Root::open(root).map_err(|e| e.to_string())?;
    let journal = Journal::for_root(&handle).map_err(|e| e.to_string())?;
    let mut changes = Vec::new();
    for (path, state) in &plan.files {
        let rel = handle
            .relative_of(path)
            .ok_or_else(|| format!("{} is outside the workspace root", path.display()))?;
        let before = match handle.read(&rel, "file") {
            Ok(bytes) => Some(bytes),
            Err(SupportError::NotFound { .. }) => None,
            Err(e) => return Err(e.to_string()),
        };
        let expect = Expect::holding(before.as_deref());
        changes.push(match state {
            Some(text) => Change::write(rel, text.clone().into_bytes(), expect),
            None => Change::delete(rel, expect),
        });
    }
    journal.commit_named(&handle, &changes, "file").map(|_| ()).map_err(|e| e.to_string())
}

/// How many edited files of one rename get a baseline from their earlier content.
const MAX_BASELINES: usize = 10;

/// One file a rename edited.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct RenamedFile {
    pub path: String,
    pub edits: usize,
}

/// The result of `lsp_rename`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct RenameReport {
    /// `symbol` at `path:line:col`.
    pub at: String,
    pub new_name: String,
    pub edits: usize,
    pub files: Vec<RenamedFile>,
    /// `old → new` for files the edit renamed.
    pub moved: Vec<String>,
    pub created: Vec<String>,
    pub deleted: Vec<String>,
    /// What the rename did to the project's diagnostics.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diagnostics: Option<WriteDiagnostics>,
}

impl RenameReport {
    /// The model-facing text.
    pub fn render(&self) -> String {
        if self.files.is_empty() && self.moved.is_empty() {
            return format!("rename of {} to `{}` changes nothing", self.at, self.new_name);
        }
        let mut lines = vec![format!(
            "renamed {} to `{}`: {} edit(s) in {} file(s)",
            self.at,
            self.new_name,
            self.edits,
            self.files.len()
        )];
        for f in &self.files {
            lines.push(format!("  {}: {} edit(s)", f.path, f.edits));
        }
        lines.extend(self.moved.iter().map(|m| format!("  renamed file {m}")));
        lines.extend(self.created.iter().map(|p| format!("  created {p}")));
        lines.extend(self.deleted.iter().map(|p| format!("  deleted {p}")));
        if let Some(d) = &self.diagnostics {
            lines.push(String::new());
            lines.push(d.render());
        }
        lines.join("\n")
    }
}

/// The identifier at byte `start` of `line` (what a rename replaces).
fn identifier_at(line: &str, start: usize) -> &str {
    let rest = &line[start..];
    let end = rest
        .char_indices()
        .find(|(_, c)| !(c.is_alphanumeric() || *c == '_' || *c == '$'))
        .map_or(rest.len(), |(i, _)| i);
    &rest[..end]
}

/// A hierarchical document symbol's name, range and children.
fn symbol_parts(item: &Value) -> (String, (u32, u32), (u32, u32), Vec<Value>) {
    let pos = |ptr: &str| {
        let p = item.pointer(ptr);
        let n = |k: &str| p.and_then(|p| p.get(k)).and_then(Value::as_u64).unwrap_or(0) as u32;
        (n("line"), n("character"))
    };
    (
        item.get("name").and_then(Value::as_str).unwrap_or("").to_string(),
        pos("/range/start"),
        pos("/range/end"),
        item.get("children").and_then(Value::as_array).cloned().unwrap_or_default(),
    )
}

/// The name of a sibling of the symbol declared at `at` that already is `new_name`, with its
/// line, in a hierarchical `documentSymbol` answer.
fn sibling_named(items: &[Value], at: (u32, u32), new_name: &str) -> Option<u32> {
    for item in items {
        let (_, start, end, children) = symbol_parts(item);
        if start <= at && at <= end && !children.is_empty() {
            if let Some(line) = sibling_named(&children, at, new_name) {
                return Some(line);
            }
            let inside = children.iter().any(|c| {
                let (_, s, e, _) = symbol_parts(c);
                s <= at && at <= e
            });
            if inside {
                return children
                    .iter()
                    .find(|c| symbol_parts(c).0 == new_name)
                    .map(|c| symbol_parts(c).1.0 + 1);
            }
        }
    }
    let declares = items.iter().any(|c| {
        let (_, s, e, _) = symbol_parts(c);
        s <= at && at <= e
    });
    if declares {
        return items
            .iter()
            .find(|c| symbol_parts(c).0 == new_name)
            .map(|c| symbol_parts(c).1.0 + 1);
    }
    None
}

impl Supervisor {
    /// Refuses a rename onto a name the symbol's scope already declares (where the server's
    /// outline of the declaring file shows it).
    async fn check_collision(
        &self,
        server: &Server,
        position: &lsp_types::TextDocumentPositionParams,
        new_name: &str,
        at: &str,
        cancel: &CancellationToken,
    ) -> Result<(), LspError> {
        let mut decl_uri = Some(position.text_document.uri.as_str().to_string());
        let mut decl_pos = (position.position.line, position.position.character);
        if server.supports("definitionProvider") {
            let params = lsp_types::GotoDefinitionParams {
                text_document_position_params: position.clone(),
                work_done_progress_params: Default::default(),
                partial_result_params: Default::default(),
            };
            let first =
                match server.call::<lsp_types::request::GotoDefinition>(params, cancel).await {
                    Ok(Some(lsp_types::GotoDefinitionResponse::Scalar(l))) => {
                        Some((l.uri, l.range.start))
                    }
                    Ok(Some(lsp_types::GotoDefinitionResponse::Array(ls))) => {
                        ls.into_iter().next().map(|l| (l.uri, l.range.start))
                    }
                    Ok(Some(lsp_types::GotoDefinitionResponse::Link(links))) => links
                        .into_iter()
                        .next()
                        .map(|l| (l.target_uri, l.target_selection_range.start)),
                    _ => None,
                };
            if let Some((uri, start)) = first {
                decl_uri = Some(uri.as_str().to_string());
                decl_pos = (start.line, start.character);
            }
        }
        let Some(decl_uri) = decl_uri else { return Ok(()) };
        let Some(decl_path) =
            decl_uri.parse::<lsp_types::Uri>().ok().and_then(|u| path_from_uri(&u))
        else {
            return Ok(());
        };
        if !is_inside(self.root(), &decl_path) || !server.supports("documentSymbolProvider") {
            return Ok(());
        }
        let ext = decl_path.extension().and_then(|e| e.to_str()).unwrap_or("");
        if let Some(language) = server.def.language_of(ext) {
            let language = language.to_string();
            let _ = server.sync(&decl_path, &language, false, self.run_id()).await;
        }
        let Ok(uri) = decl_uri.parse::<lsp_types::Uri>() else { return Ok(()) };
        let params = lsp_types::DocumentSymbolParams {
            text_document: lsp_types::TextDocumentIdentifier { uri },
            work_done_progress_params: Default::default(),
            partial_result_params: Default::default(),
        };
        // Flat SymbolInformation has no scopes to compare.
        let Ok(Some(lsp_types::DocumentSymbolResponse::Nested(symbols))) =
            server.call::<lsp_types::request::DocumentSymbolRequest>(params, cancel).await
        else {
            return Ok(());
        };
        let items: Vec<Value> =
            symbols.iter().filter_map(|s| serde_json::to_value(s).ok()).collect();
        if let Some(line) = sibling_named(&items, decl_pos, new_name) {
            return Err(LspError::Invalid(format!(
                "{at} cannot be renamed to `{new_name}`: {}:{line} already declares `{new_name}` in the same scope, and the two would collide; pick another name; nothing was changed",
                display_relative(self.root(), &decl_path)
            )));
        }
        Ok(())
    }

    /// Runs one `lsp_rename` call.
    pub async fn rename(
        &self,
        args: RenameArgs,
        cancel: &CancellationToken,
    ) -> Result<LspOutput, LspError> {
        let path = resolve_in_root(self.root(), &args.file, "file").map_err(LspError::Invalid)?;
        let shown = display_relative(self.root(), &path);
        if !path.is_file() {
            return Err(LspError::Invalid(format!(
                "argument `file`: {} is not an existing file",
                args.file
            )));
        }
        if args.new_name.trim().is_empty() {
            return Err(LspError::Invalid("argument `new_name` is empty".into()));
        }
        let text = crate::paths::read_source(&path)
            .map_err(|e| LspError::Invalid(format!("cannot read {shown}: {e}")))?;
        locate(&text, &shown, args.line, &args.symbol, args.occurrence)?;
        let target = self.target_for(&path)?;
        check_new_name(&target.language_id, &args.new_name).map_err(LspError::Invalid)?;
        let server = self.server(&target, cancel).await?;
        server.resync_open().await;
        let doc = server
            .sync(&path, &target.language_id, false, self.run_id())
            .await
            .map_err(LspError::Failed)?;
        let located = locate(&doc.text, &shown, args.line, &args.symbol, args.occurrence)?;
        let old_name = identifier_at(&located.line_text, located.start).to_string();
        if old_name == args.new_name {
            return Err(LspError::Invalid(format!(
                "argument `new_name`: `{old_name}` is already the symbol's name; nothing was changed"
            )));
        }
        let label = server_label(&server);
        if !server.supports("renameProvider") {
            return Err(LspError::Failed(format!("{label} does not offer rename")));
        }
        let budget = std::time::Duration::from_millis(self.config().ready_timeout_ms);
        server.wait_ready(crate::server::Scope::Project, std::time::Instant::now() + budget, cancel).await.map_err(|busy| {
            LspError::NotReady(format!(
                "rename: not ready: the server is {busy}; nothing was changed; try again shortly"
            ))
        })?;
        let Some(uri) = uri_from_path(&path) else {
            return Err(LspError::Invalid(format!("{shown} has no file URI")));
        };
        let position = lsp_types::TextDocumentPositionParams {
            text_document: lsp_types::TextDocumentIdentifier { uri },
            position: lsp_types::Position {
                line: located.line,
                character: located.start_in(server.encoding),
            },
        };
        let col = located.display_column();
        let at = format!("`{}` at {shown}:{}:{col}", args.symbol, args.line);
        let fail = |what: &str, e: crate::transport::RequestError| {
            LspError::Failed(format!("rename of {at}: {what} failed: {e}; nothing was changed"))
        };
        let prepare =
            server.capabilities.pointer("/renameProvider/prepareProvider").and_then(Value::as_bool)
                == Some(true);
        if prepare {
            let answer = server
                .call::<lsp_types::request::PrepareRenameRequest>(position.clone(), cancel)
                .await;
            match answer {
                Ok(None) => {
                    return Err(LspError::Invalid(format!(
                        "{at} cannot be renamed: {label} says there is no renameable symbol there; nothing was changed"
                    )));
                }
                Ok(_) => {}
                Err(crate::transport::RequestError::Server { message, .. }) => {
                    return Err(LspError::Invalid(format!(
                        "{at} cannot be renamed: {message}; nothing was changed"
                    )));
                }
                Err(e) => return Err(fail("prepareRename", e)),
            }
        }
        self.check_collision(&server, &position, &args.new_name, &at, cancel).await?;
        // The server may have read a file before something outside the tools changed it. An
        // edit whose ranges no longer cover the old name was computed from that stale view:
        // open those files (the server then has exactly what is on disk) and ask once more;
        // if it is still stale, refuse.
        let mut attempt = 0;
        let (ops, open) = loop {
            attempt += 1;
            let params = lsp_types::RenameParams {
                text_document_position: position.clone(),
                new_name: args.new_name.clone(),
                work_done_progress_params: Default::default(),
            };
            let edit = server.call::<lsp_types::request::Rename>(params, cancel).await.map_err(
                |e| match e {
                    crate::transport::RequestError::Server { message, .. } => {
                        LspError::Invalid(format!(
                            "{at} cannot be renamed to `{}`: {message}; nothing was changed",
                            args.new_name
                        ))
                    }
                    other => fail("rename", other),
                },
            )?;
            let Some(edit) = edit.and_then(|e| serde_json::to_value(e).ok()) else {
                return Err(LspError::Invalid(format!(
                    "{at}: {label} returned no edit; nothing was changed"
                )));
            };
            let ops = parse_workspace_edit(&edit).map_err(|e| {
                LspError::Failed(format!(
                    "rename of {at}: the server's edit has {e}; nothing was changed"
                ))
            })?;
            // Snapshot what the server has for every document the edit touches.
            let mut open = BTreeMap::new();
            for op in &ops {
                if let EditOp::Text { path, .. } = op
                    && let Some(doc) = server.open_doc(path).await
                {
                    open.insert(path.clone(), doc);
                }
            }
            let stale = stale_files(&ops, &old_name, server.encoding, &|p| open.contains_key(p));
            if stale.is_empty() {
                break (ops, open);
            }
            let names: Vec<String> =
                stale.iter().map(|p| display_relative(self.root(), p)).collect();
            if attempt >= 2 {
                return Err(LspError::Failed(format!(
                    "rename of {at} refused: {label}'s edit does not match the current content of {} (changed on disk since the server read it); nothing was changed. Try again, or `reload` the server",
                    names.join(", ")
                )));
            }
            let events: Vec<(PathBuf, u8)> = stale.iter().map(|p| (p.clone(), 2)).collect();
            server.files_changed(&events).await;
            for p in &stale {
                let ext = p.extension().and_then(|e| e.to_str()).unwrap_or("");
                let language =
                    server.def.language_of(ext).unwrap_or(&target.language_id).to_string();
                server.sync(p, &language, false, self.run_id()).await.map_err(LspError::Failed)?;
            }
            let _ = server
                .wait_ready(
                    crate::server::Scope::Project,
                    std::time::Instant::now() + budget,
                    cancel,
                )
                .await;
        };
        let plan = plan_edit(self.root(), &ops, server.encoding, &|p| open.get(p).cloned())
            .map_err(|e| {
                LspError::Failed(format!("rename of {at} rejected: {e}; nothing was changed"))
            })?;
        let mut report = RenameReport {
            at: at.clone(),
            new_name: args.new_name.clone(),
            edits: plan.edits_per_file.values().sum(),
            files: plan
                .edits_per_file
                .iter()
                .map(|(p, n)| RenamedFile { path: display_relative(self.root(), p), edits: *n })
                .collect(),
            moved: plan
                .renamed
                .iter()
                .map(|(a, b)| {
                    format!(
                        "{} → {}",
                        display_relative(self.root(), a),
                        display_relative(self.root(), b)
                    )
                })
                .collect(),
            created: plan.created.iter().map(|p| display_relative(self.root(), p)).collect(),
            deleted: plan.deleted.iter().map(|p| display_relative(self.root(), p)).collect(),
            diagnostics: None,
        };
        if plan.files.is_empty() {
            let text = report.render();
            return Ok(LspOutput::new(text, serde_json::to_value(&report).unwrap_or_default()));
        }
        report.diagnostics =
            self.commit_edit(&server, &plan, &format!("rename of {at}"), cancel).await?;
        let text = report.render();
        let mut out = LspOutput::new(text, serde_json::to_value(&report).unwrap_or_default());
        out.changed_files = plan.files.keys().cloned().collect();
        Ok(out)
    }
}

impl Supervisor {
    /// Writes a planned WorkspaceEdit (all or nothing), tells `server` about every change and
    /// returns the diagnostics it introduced; `what` names the operation in errors.
    pub(crate) async fn commit_edit(
        &self,
        server: &Server,
        plan: &EditPlan,
        what: &str,
        cancel: &CancellationToken,
    ) -> Result<Option<WriteDiagnostics>, LspError> {
        // Baselines cost a server round each: the first files get one, a large rename's rest
        // take their current diagnostics as the baseline (and say so).
        let before: Vec<WrittenFile> = plan
            .files
            .keys()
            .enumerate()
            .map(|(i, p)| WrittenFile {
                path: p.clone(),
                before: match std::fs::read(p) {
                    Ok(_) if i >= MAX_BASELINES => FileBefore::Unknown,
                    Ok(bytes) => FileBefore::Contents(bytes.into()),
                    Err(_) => FileBefore::Absent,
                },
            })
            .collect();
        write_plan(self.root(), plan).map_err(|e| {
            LspError::Failed(format!("{what}: writing failed ({e}); no file was changed"))
        })?;
        // Tell the server what changed: deleted files are closed, and a watched-file event
        // covers all. The edited files' new content goes out, all of it before any answer is
        // taken, in the diagnostics check below (which keeps them open, so servers with a
        // lazily updated index, such as clangd, answer the next question from it).
        let mut events = Vec::new();
        for (changed, state) in &plan.files {
            match state {
                Some(_) => {
                    let created = plan.created.contains(changed)
                        || plan.renamed.iter().any(|(_, to)| to == changed);
                    events.push((changed.clone(), if created { 1 } else { 2 }));
                }
                None => {
                    server.close(changed).await;
                    events.push((changed.clone(), 3));
                }
            }
        }
        server.files_changed(&events).await;
        if !plan.renamed.is_empty() {
            let files: Vec<lsp_types::FileRename> = plan
                .renamed
                .iter()
                .filter_map(|(a, b)| {
                    Some(lsp_types::FileRename {
                        old_uri: uri_from_path(a)?.as_str().to_string(),
                        new_uri: uri_from_path(b)?.as_str().to_string(),
                    })
                })
                .collect();
            let params = lsp_types::RenameFilesParams { files };
            server.notify::<lsp_types::notification::DidRenameFiles>(params).await;
        }
        let written: Vec<WrittenFile> = before.into_iter().filter(|f| f.path.is_file()).collect();
        Ok(self.diagnostics_after_write(&written, cancel).await)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn range(l1: u32, c1: u32, l2: u32, c2: u32) -> Value {
        json!({"start": {"line": l1, "character": c1}, "end": {"line": l2, "character": c2}})
    }

    #[test]
    fn text_edits_apply_from_the_end_with_utf16_columns() {
        let text = "s = \"é🙂\"; old(old)\nold\n";
        let edits = vec![
            (range(0, 11, 0, 14), "new".to_string()),
            (range(0, 15, 0, 18), "new".to_string()),
            (range(1, 0, 1, 3), "new".to_string()),
        ];
        assert_eq!(
            apply_text_edits(text, &edits, ColumnUnit::Utf16).unwrap(),
            "s = \"é🙂\"; new(new)\nnew\n"
        );
        let overlapping =
            vec![(range(0, 0, 0, 5), "a".to_string()), (range(0, 3, 0, 6), "b".to_string())];
        assert!(apply_text_edits(text, &overlapping, ColumnUnit::Utf16).is_err());
    }

    #[test]
    fn a_stale_version_rejects_the_whole_edit_and_nothing_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join("a.py"), "x = 1\n").unwrap();
        std::fs::write(root.join("b.py"), "print(x)\n").unwrap();
        let edit = json!({"documentChanges": [
            {"textDocument": {"uri": uri_from_path(&root.join("a.py")).unwrap().as_str(), "version": 1}, "edits": [{"range": range(0,0,0,1), "newText": "y"}]},
            {"textDocument": {"uri": uri_from_path(&root.join("b.py")).unwrap().as_str(), "version": 3}, "edits": [{"range": range(0,6,0,7), "newText": "y"}]},
        ]});
        let ops = parse_workspace_edit(&edit).unwrap();
        let b = root.join("b.py");
        let err = plan_edit(&root, &ops, ColumnUnit::Utf16, &|p| {
            (p == b).then(|| (4, "print(x)\n".to_string()))
        })
        .unwrap_err();
        assert_eq!(err, "b.py is at version 4 but the edit was computed for version 3");
        let plan = plan_edit(&root, &ops, ColumnUnit::Utf16, &|_| None).unwrap();
        write_plan(&root, &plan).unwrap();
        assert_eq!(std::fs::read_to_string(root.join("a.py")).unwrap(), "y = 1\n");
        assert_eq!(std::fs::read_to_string(root.join("b.py")).unwrap(), "print(y)\n");
    }

    #[test]
    fn resource_operations_create_rename_and_delete_files() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join("old.ts"), "export const a = 1;\n").unwrap();
        std::fs::write(root.join("gone.ts"), "").unwrap();
        let u = |n: &str| uri_from_path(&root.join(n)).unwrap().as_str().to_string();
        let edit = json!({"documentChanges": [
            {"kind": "rename", "oldUri": u("old.ts"), "newUri": u("new.ts")},
            {"textDocument": {"uri": u("new.ts"), "version": null}, "edits": [{"range": range(0,13,0,14), "newText": "b"}]},
            {"kind": "create", "uri": u("made.ts")},
            {"kind": "delete", "uri": u("gone.ts")},
        ]});
        let plan =
            plan_edit(&root, &parse_workspace_edit(&edit).unwrap(), ColumnUnit::Utf16, &|_| None)
                .unwrap();
        write_plan(&root, &plan).unwrap();
        assert!(!root.join("old.ts").exists() && !root.join("gone.ts").exists());
        assert_eq!(std::fs::read_to_string(root.join("new.ts")).unwrap(), "export const b = 1;\n");
        assert_eq!(std::fs::read_to_string(root.join("made.ts")).unwrap(), "");
    }

    #[test]
    fn a_folder_swapped_for_a_symlink_out_of_the_root_cannot_redirect_the_write() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let (root, outside) = (base.join("root"), base.join("outside"));
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(root.join("a.py"), "x = 1\n").unwrap();
        std::fs::write(outside.join("b.py"), "x = 1\n").unwrap();
        std::os::unix::fs::symlink(&outside, root.join("sub")).unwrap();
        let mut plan = EditPlan::default();
        plan.files.insert(root.join("a.py"), Some("y = 1\n".into()));
        plan.files.insert(root.join("sub/b.py"), Some("y = 1\n".into()));
        assert!(write_plan(&root, &plan).is_err());
        assert_eq!(std::fs::read_to_string(outside.join("b.py")).unwrap(), "x = 1\n");
        assert_eq!(
            std::fs::read_to_string(root.join("a.py")).unwrap(),
            "x = 1\n",
            "all or nothing"
        );
    }

    #[test]
    fn an_edit_outside_the_root_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap().join("inner");
        std::fs::create_dir_all(&root).unwrap();
        let ops = vec![EditOp::Create {
            path: root.parent().unwrap().join("x.py"),
            overwrite: false,
            ignore_if_exists: false,
        }];
        assert!(
            plan_edit(&root, &ops, ColumnUnit::Utf16, &|_| None)
                .unwrap_err()
                .contains("outside the workspace root")
        );
    }
}
