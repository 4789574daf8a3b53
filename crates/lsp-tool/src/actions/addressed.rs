//! The symbol a navigation action addresses: its document, position and span, as every
//! request of the action needs them.

use lsp_types::{Position, TextDocumentIdentifier, TextDocumentPositionParams};

/// Where the addressed symbol is, as every request of the action needs it.
pub(crate) struct Addressed {
    pub document: TextDocumentIdentifier,
    pub position: Position,
    pub end: Position,
    pub symbol: String,
    pub at: String,
}

impl Addressed {
    pub(crate) fn position_params(&self) -> TextDocumentPositionParams {
        TextDocumentPositionParams { text_document: self.document.clone(), position: self.position }
    }
}
