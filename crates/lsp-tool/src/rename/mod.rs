//! `lsp_rename`: `prepareRename`, a collision check, then the server's WorkspaceEdit applied
//! all or nothing through [`crate::workspace_edit`] (every document version and on-disk
//! content checked first, every new file content computed in memory, all files written
//! atomically, the changed files synced back to the server).

mod collision;
mod report;

use std::{collections::BTreeMap, path::PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub use self::report::{RenameReport, RenamedFile};
use crate::{
    actions::{LspOutput, locate},
    error::LspError,
    names::check_new_name,
    paths::{display_relative, resolve_in_root, uri_from_path},
    server::Save,
    supervisor::{Supervisor, server_label},
    workspace_edit::{EditOp, parse_workspace_edit, plan_edit, stale_files},
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

/// The identifier at byte `start` of `line` (what a rename replaces).
fn identifier_at(line: &str, start: usize) -> &str {
    let rest = &line[start..];
    let end = rest
        .char_indices()
        .find(|(_, c)| !(c.is_alphanumeric() || *c == '_' || *c == '$'))
        .map_or(rest.len(), |(i, _)| i);
    &rest[..end]
}

impl Supervisor {
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
            .sync(&path, &target.language_id, Save::Skip, self.run_id())
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
            let events: Vec<(PathBuf, lsp_types::FileChangeType)> =
                stale.iter().map(|p| (p.clone(), lsp_types::FileChangeType::CHANGED)).collect();
            server.files_changed(&events).await;
            for p in &stale {
                let ext = p.extension().and_then(|e| e.to_str()).unwrap_or("");
                let language =
                    server.def.language_of(ext).unwrap_or(&target.language_id).to_string();
                server
                    .sync(p, &language, Save::Skip, self.run_id())
                    .await
                    .map_err(LspError::Failed)?;
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
