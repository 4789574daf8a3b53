//! A server's WorkspaceEdit, typed as lsp-types reads it, into ordered steps
//! (`documentChanges` preferred over `changes`).

use std::path::PathBuf;

use lsp_types::{
    DocumentChangeOperation, DocumentChanges, OneOf, ResourceOp, TextDocumentEdit, Uri,
    WorkspaceEdit,
};

use crate::paths::path_from_uri;

/// One text edit: the range in the server's column unit, and the new text.
pub(crate) type TextChange = (lsp_types::Range, String);

/// One step of a WorkspaceEdit, in order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum EditOp {
    Text { path: PathBuf, version: Option<i32>, edits: Vec<TextChange> },
    Create { path: PathBuf, overwrite: bool, ignore_if_exists: bool },
    Rename { from: PathBuf, to: PathBuf, overwrite: bool, ignore_if_exists: bool },
    Delete { path: PathBuf, ignore_if_not_exists: bool },
}

fn uri_path(uri: &Uri) -> Result<PathBuf, String> {
    path_from_uri(uri).ok_or_else(|| format!("a non-file uri {}", uri.as_str()))
}

fn text_op(edit: &TextDocumentEdit) -> Result<EditOp, String> {
    let edits = edit
        .edits
        .iter()
        .map(|e| match e {
            OneOf::Left(plain) => (plain.range, plain.new_text.clone()),
            OneOf::Right(annotated) => {
                (annotated.text_edit.range, annotated.text_edit.new_text.clone())
            }
        })
        .collect();
    Ok(EditOp::Text {
        path: uri_path(&edit.text_document.uri)?,
        version: edit.text_document.version,
        edits,
    })
}

fn resource_op(op: &ResourceOp) -> Result<EditOp, String> {
    Ok(match op {
        ResourceOp::Create(create) => {
            let options = create.options.as_ref();
            EditOp::Create {
                path: uri_path(&create.uri)?,
                overwrite: options.and_then(|o| o.overwrite) == Some(true),
                ignore_if_exists: options.and_then(|o| o.ignore_if_exists) == Some(true),
            }
        }
        ResourceOp::Rename(rename) => {
            let options = rename.options.as_ref();
            EditOp::Rename {
                from: uri_path(&rename.old_uri)?,
                to: uri_path(&rename.new_uri)?,
                overwrite: options.and_then(|o| o.overwrite) == Some(true),
                ignore_if_exists: options.and_then(|o| o.ignore_if_exists) == Some(true),
            }
        }
        ResourceOp::Delete(delete) => {
            let options = delete.options.as_ref();
            if options.and_then(|o| o.recursive) == Some(true) {
                return Err(
                    "the edit deletes a folder recursively, which this tool does not do".into()
                );
            }
            EditOp::Delete {
                path: uri_path(&delete.uri)?,
                ignore_if_not_exists: options.and_then(|o| o.ignore_if_not_exists) == Some(true),
            }
        }
    })
}

/// Reads a WorkspaceEdit (`documentChanges` preferred over `changes`) into ordered steps.
pub(crate) fn parse_workspace_edit(edit: &WorkspaceEdit) -> Result<Vec<EditOp>, String> {
    let mut ops = Vec::new();
    if let Some(changes) = &edit.document_changes {
        match changes {
            DocumentChanges::Edits(edits) => {
                for edit in edits {
                    ops.push(text_op(edit)?);
                }
            }
            DocumentChanges::Operations(list) => {
                for change in list {
                    ops.push(match change {
                        DocumentChangeOperation::Edit(edit) => text_op(edit)?,
                        DocumentChangeOperation::Op(op) => resource_op(op)?,
                    });
                }
            }
        }
    } else if let Some(changes) = &edit.changes {
        let mut sorted: Vec<_> = changes.iter().collect();
        sorted.sort_by_key(|(uri, _)| uri.as_str());
        for (uri, edits) in sorted {
            ops.push(EditOp::Text {
                path: uri_path(uri)?,
                version: None,
                edits: edits.iter().map(|e| (e.range, e.new_text.clone())).collect(),
            });
        }
    }
    Ok(ops)
}
