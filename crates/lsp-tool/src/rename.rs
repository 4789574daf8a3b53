//! `lsp_rename`: `prepareRename`, a collision check, then the server's WorkspaceEdit applied
//! all or nothing through [`crate::workspace_edit`] (every document version and on-disk
//! content checked first, every new file content computed in memory, all files written
//! atomically, the changed files synced back to the server).

use std::{collections::BTreeMap, path::PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::{
    actions::{LspOutput, locate},
    error::LspError,
    names::check_new_name,
    paths::{display_relative, is_inside, path_from_uri, resolve_in_root, uri_from_path},
    server::Server,
    supervisor::{Supervisor, server_label},
    workspace_edit::{EditOp, parse_workspace_edit, plan_edit, stale_files},
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
