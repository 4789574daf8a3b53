//! `lsp` by name path: a navigation action with `symbol` and no `line` addresses a declaration
//! by its name path (`Class/method`), found in the server's document symbols (gopls' `(*T).M`,
//! clangd's `A::b` and rust-analyzer's `impl Trait for T` read as `T/M`, `A/b` and `T`); the
//! enclosing name path of a caller or callee is found the same way.

use agent_tools_support::name_path::{self, Entry};
use lsp_types::{
    DocumentSymbol, DocumentSymbolParams, DocumentSymbolResponse, Position, Range,
    TextDocumentIdentifier, Uri, request::DocumentSymbolRequest,
};

use super::{addressed::Addressed, symbols::symbol_kind, *};

/// A document symbol with its name path.
pub(super) struct Named {
    pub name_path: String,
    pub name: String,
    pub kind: &'static str,
    /// The whole declaration, and its name.
    pub range: Range,
    pub selection: Range,
}

/// The names a server's symbol name stands for in a name path.
fn segments(name: &str) -> Vec<String> {
    let name = name.trim();
    // gopls: `(*Server).Start`, `(List[T]).Push`.
    if let Some((receiver, method)) = name.strip_prefix('(').and_then(|r| r.split_once(").")) {
        let receiver = receiver.trim_start_matches('*');
        let receiver = receiver.split('[').next().unwrap_or(receiver);
        return vec![receiver.to_string(), method.to_string()];
    }
    // rust-analyzer: `impl Display for Point<f64>`, `impl<T: Copy> Point<T>`: the type's name.
    if let Some(rest) = name.strip_prefix("impl").filter(|r| r.starts_with([' ', '<'])) {
        let rest = skip_generics(rest.trim_start());
        let ty = rest.rsplit_once(" for ").map_or(rest, |(_, t)| t).trim();
        let ty = ty.trim_start_matches('&').trim_start_matches("mut ").trim_start_matches("dyn ");
        let ty = ty.split('<').next().unwrap_or(ty);
        return vec![ty.rsplit("::").next().unwrap_or(ty).trim().to_string()];
    }
    // clangd: `Shape::area`, `geo::Box<T>::get` defined out of their class.
    if name.contains("::") && !name.starts_with("operator") {
        let base = name.split('(').next().unwrap_or(name);
        return base
            .split("::")
            .map(|s| s.split('<').next().unwrap_or(s).trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
    }
    vec![name.to_string()]
}

/// `text` after a leading `<…>` (balanced).
fn skip_generics(text: &str) -> &str {
    if !text.starts_with('<') {
        return text;
    }
    let mut depth = 0usize;
    for (i, c) in text.char_indices() {
        match c {
            '<' => depth += 1,
            '>' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return text[i + 1..].trim_start();
                }
            }
            _ => {}
        }
    }
    text
}

fn flatten(items: &[DocumentSymbol], path: &[String], out: &mut Vec<Named>) {
    for item in items {
        let mut names = path.to_vec();
        let own = segments(&item.name);
        names.extend(own.iter().cloned());
        out.push(Named {
            name_path: names.join("/"),
            name: own.last().cloned().unwrap_or_default(),
            kind: symbol_kind(item.kind),
            range: item.range,
            selection: item.selection_range,
        });
        flatten(item.children.as_deref().unwrap_or_default(), &names, out);
    }
}

/// The server's document symbols of `uri`, in its order, with name paths.
pub(super) async fn named_symbols(
    server: &Server,
    uri: Uri,
    cancel: &CancellationToken,
) -> Result<Vec<Named>, LspError> {
    let params = DocumentSymbolParams {
        text_document: TextDocumentIdentifier { uri },
        work_done_progress_params: Default::default(),
        partial_result_params: Default::default(),
    };
    let answer = server
        .call::<DocumentSymbolRequest>(params, cancel)
        .await
        .map_err(|e| request_failed(server, "symbols", e))?;
    let mut out = Vec::new();
    match answer {
        Some(DocumentSymbolResponse::Nested(items)) => flatten(&items, &[], &mut out),
        Some(DocumentSymbolResponse::Flat(items)) => {
            for item in items {
                let mut names: Vec<String> =
                    item.container_name.iter().flat_map(|c| segments(c)).collect();
                let own = segments(&item.name);
                names.extend(own.iter().cloned());
                let range = item.location.range;
                out.push(Named {
                    name_path: names.join("/"),
                    name: own.last().cloned().unwrap_or_default(),
                    kind: symbol_kind(item.kind),
                    range,
                    selection: range,
                });
            }
        }
        None => {}
    }
    Ok(out)
}

/// The name path of the declaration whose name starts at `at` (a call hierarchy item's
/// selection), else of the innermost one whose range holds it.
pub(super) fn enclosing(named: &[Named], at: Position) -> Option<&Named> {
    if let Some(exact) = named.iter().find(|n| n.selection.start == at) {
        return Some(exact);
    }
    named
        .iter()
        .filter(|n| n.range.start <= at && at <= n.range.end)
        .min_by_key(|n| (n.range.end.line - n.range.start.line, n.range.end.character))
}

/// The server, the synced document and the position of the declaration `symbol` (a name
/// path) names in `path`.
pub(crate) async fn address_by_name_path(
    sup: &Supervisor,
    path: &Path,
    symbol: &str,
    cancel: &CancellationToken,
) -> Result<(Arc<Server>, SyncedDoc, Addressed), LspError> {
    let shown = display_relative(sup.root(), path);
    let (_target, server, doc) = ready_doc(sup, path, cancel).await?;
    if !server.offers(Feature::DocumentSymbols) {
        return Err(LspError::Failed(format!(
            "`symbol` without `line` is a name path, looked up in the server's document \
             symbols, and {} offers none; give `line` and the text of `symbol` on it",
            server_label(&server)
        )));
    }
    wait_ready(sup, &server, Scope::File, "symbols", cancel).await?;
    let Some(uri) = uri_from_path(path) else {
        return Err(LspError::Invalid(format!("{shown} has no file URI")));
    };
    let named = named_symbols(&server, uri.clone(), cancel).await?;
    let entries: Vec<Entry<'_>> = named
        .iter()
        .map(|n| Entry {
            name_path: &n.name_path,
            name: &n.name,
            kind: n.kind,
            start_line: n.range.start.line as usize + 1,
            end_line: n.range.end.line as usize + 1,
        })
        .collect();
    let chosen = name_path::resolve(&entries, symbol, &[]).map(|i| &named[i]).map_err(|e| {
        LspError::Invalid(format!(
            "argument `symbol` (a name path, since `line` is left out): in {shown}, {e}"
        ))
    })?;
    let start = chosen.selection.start;
    let column = doc.text.lines().nth(start.line as usize).map_or(start.character, |l| {
        convert_column(l, start.character, server.encoding, ColumnUnit::Char)
    }) + 1;
    let addressed = Addressed {
        document: TextDocumentIdentifier { uri },
        position: start,
        end: chosen.selection.end,
        symbol: chosen.name_path.clone(),
        at: format!("`{}` at {shown}:{}:{column}", chosen.name_path, start.line + 1),
    };
    Ok((server, doc, addressed))
}

#[cfg(test)]
mod tests {
    use super::segments;

    #[test]
    fn server_names_read_as_name_path_segments() {
        assert_eq!(segments("(*Server).Start"), ["Server", "Start"]);
        assert_eq!(segments("(List[T]).Push"), ["List", "Push"]);
        assert_eq!(segments("impl fmt::Display for Point<f64>"), ["Point"]);
        assert_eq!(segments("impl<T: Copy> Point<T>"), ["Point"]);
        assert_eq!(segments("geo::Box<T>::get"), ["geo", "Box", "get"]);
        assert_eq!(segments("operator=="), ["operator=="]);
        assert_eq!(segments("ensure_object"), ["ensure_object"]);
    }
}
