//! The collision check of `lsp_rename`: a rename onto a name the symbol's scope already
//! declares is refused, where the server's outline of the declaring file shows it.

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::{
    error::LspError,
    paths::{display_relative, is_inside, path_from_uri},
    server::{Feature, Save, Server},
    supervisor::Supervisor,
};

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

/// Refuses a rename onto a name the symbol's scope already declares (where the server's
/// outline of the declaring file shows it).
pub(crate) async fn check_collision(
    sup: &Supervisor,
    server: &Server,
    position: &lsp_types::TextDocumentPositionParams,
    new_name: &str,
    at: &str,
    cancel: &CancellationToken,
) -> Result<(), LspError> {
    let mut decl_uri = Some(position.text_document.uri.as_str().to_string());
    let mut decl_pos = (position.position.line, position.position.character);
    if server.offers(Feature::Definition) {
        let params = lsp_types::GotoDefinitionParams {
            text_document_position_params: position.clone(),
            work_done_progress_params: Default::default(),
            partial_result_params: Default::default(),
        };
        let first = match server.call::<lsp_types::request::GotoDefinition>(params, cancel).await {
            Ok(Some(lsp_types::GotoDefinitionResponse::Scalar(l))) => Some((l.uri, l.range.start)),
            Ok(Some(lsp_types::GotoDefinitionResponse::Array(ls))) => {
                ls.into_iter().next().map(|l| (l.uri, l.range.start))
            }
            Ok(Some(lsp_types::GotoDefinitionResponse::Link(links))) => {
                links.into_iter().next().map(|l| (l.target_uri, l.target_selection_range.start))
            }
            _ => None,
        };
        if let Some((uri, start)) = first {
            decl_uri = Some(uri.as_str().to_string());
            decl_pos = (start.line, start.character);
        }
    }
    let Some(decl_uri) = decl_uri else { return Ok(()) };
    let Some(decl_path) = decl_uri.parse::<lsp_types::Uri>().ok().and_then(|u| path_from_uri(&u))
    else {
        return Ok(());
    };
    if !is_inside(sup.root(), &decl_path) || !server.offers(Feature::DocumentSymbols) {
        return Ok(());
    }
    let ext = decl_path.extension().and_then(|e| e.to_str()).unwrap_or("");
    if let Some(language) = server.def.language_of(ext) {
        let language = language.to_string();
        let _ = server.sync(&decl_path, &language, Save::Skip, sup.run_id()).await;
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
    let items: Vec<Value> = symbols.iter().filter_map(|s| serde_json::to_value(s).ok()).collect();
    if let Some(line) = sibling_named(&items, decl_pos, new_name) {
        return Err(LspError::Invalid(format!(
            "{at} cannot be renamed to `{new_name}`: {}:{line} already declares `{new_name}` in the same scope, and the two would collide; pick another name; nothing was changed",
            display_relative(sup.root(), &decl_path)
        )));
    }
    Ok(())
}
