//! A server's WorkspaceEdit read into ordered steps (`documentChanges` or `changes`).

use std::path::PathBuf;

use serde_json::Value;

use crate::paths::path_from_uri;

/// One step of a WorkspaceEdit, in order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum EditOp {
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
pub(crate) fn parse_workspace_edit(edit: &Value) -> Result<Vec<EditOp>, String> {
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
