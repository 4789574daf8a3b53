//! `incoming_calls` and `outgoing_calls`: `textDocument/prepareCallHierarchy` at the addressed
//! symbol, then `callHierarchy/incomingCalls` (each call site, with the caller's name path,
//! asked again with the importers the server left out open) or `callHierarchy/outgoingCalls`
//! (each callee where it is declared, with its name path).

use std::collections::HashMap;

use lsp_types::{
    CallHierarchyIncomingCall, CallHierarchyIncomingCallsParams, CallHierarchyItem,
    CallHierarchyOutgoingCallsParams, CallHierarchyPrepareParams, Range, Uri,
    request::{CallHierarchyIncomingCalls, CallHierarchyOutgoingCalls, CallHierarchyPrepare},
};

use super::{
    addressed::Addressed,
    left_out::asked_with_importers_open,
    name_path::{Named, enclosing, named_symbols},
    result::{CallRow, Calls},
    *,
};

/// Files whose document symbols are asked for to name callers and callees; past them a caller
/// is named as the server names it.
const MAX_NAMED_FILES: usize = 10;

/// A JSON-RPC "method not found".
const METHOD_NOT_FOUND: i64 = -32601;

/// The calls into (or out of) the addressed symbol, one page of them.
pub(crate) async fn call_hierarchy(
    sup: &Supervisor,
    server: &Server,
    args: &LspArgs,
    addressed: Addressed,
    what: &str,
    busy: Option<LspError>,
    cancel: &CancellationToken,
) -> Result<LspResult, LspError> {
    let failed = |e: RequestError| match e {
        RequestError::Server { code, .. } if code == METHOD_NOT_FOUND => LspError::Failed(format!(
            "{what}: {} does not offer this (it does not know the request)",
            server_label(server)
        )),
        e => request_failed(server, what, e),
    };
    let params = CallHierarchyPrepareParams {
        text_document_position_params: addressed.position_params(),
        work_done_progress_params: Default::default(),
    };
    let items = server
        .call::<CallHierarchyPrepare>(params, cancel)
        .await
        .map_err(failed)?
        .unwrap_or_default();
    let Some(item) = items.into_iter().next() else {
        if let Some(not_ready) = busy {
            return Err(not_ready);
        }
        return Err(LspError::Invalid(format!(
            "{what}: {} names nothing that calls or is called (the server prepared no call \
             hierarchy there); address a function or method",
            addressed.at
        )));
    };
    // (file, where to show, who: the caller or the callee)
    let mut found: Vec<(Uri, Range, CallHierarchyItem)> = Vec::new();
    if args.action == Action::IncomingCalls {
        let ask = || async {
            let params = CallHierarchyIncomingCallsParams {
                item: item.clone(),
                work_done_progress_params: Default::default(),
                partial_result_params: Default::default(),
            };
            let calls = server.call::<CallHierarchyIncomingCalls>(params, cancel).await;
            Ok(calls.map_err(failed)?.unwrap_or_default())
        };
        let callers = |calls: &Vec<CallHierarchyIncomingCall>| -> Vec<PathBuf> {
            calls.iter().filter_map(|c| path_from_uri(&c.from.uri)).collect()
        };
        // A file naming the function through its import may only pass it on, not call it:
        // what the server still leaves out is not said for calls.
        let (calls, _) =
            asked_with_importers_open(sup, server, &addressed, callers, ask, cancel).await?;
        for call in calls {
            let sites = if call.from_ranges.is_empty() {
                vec![call.from.selection_range]
            } else {
                call.from_ranges.clone()
            };
            for site in sites {
                found.push((call.from.uri.clone(), site, call.from.clone()));
            }
        }
    } else {
        let params = CallHierarchyOutgoingCallsParams {
            item,
            work_done_progress_params: Default::default(),
            partial_result_params: Default::default(),
        };
        let calls = server
            .call::<CallHierarchyOutgoingCalls>(params, cancel)
            .await
            .map_err(failed)?
            .unwrap_or_default();
        for call in calls {
            found.push((call.to.uri.clone(), call.to.selection_range, call.to));
        }
    }
    let rows = call_rows(sup, server, found, cancel).await;
    let partial = match busy {
        Some(not_ready) if rows.is_empty() => return Err(not_ready),
        Some(_) => server.busy_for(args.action.scope()),
        None => server.busy(),
    };
    let offset = args.offset.unwrap_or(0) as usize;
    let answer = Calls {
        symbol: addressed.symbol,
        at: addressed.at,
        server: server_label(server),
        total: rows.len(),
        offset,
        calls: rows.into_iter().skip(offset).take(MAX_REFERENCES).collect(),
        partial,
    };
    Ok(match args.action {
        Action::IncomingCalls => LspResult::IncomingCalls(answer),
        _ => LspResult::OutgoingCalls(answer),
    })
}

/// Each call as shown: where, the source line, and who by name path (from the document
/// symbols of its file, opened for the server if need be).
async fn call_rows(
    sup: &Supervisor,
    server: &Server,
    found: Vec<(Uri, Range, CallHierarchyItem)>,
    cancel: &CancellationToken,
) -> Vec<CallRow> {
    // By the URI's text (a `Uri` is no hash key).
    let mut named: HashMap<String, Vec<Named>> = HashMap::new();
    for (uri, _, _) in &found {
        if named.len() >= MAX_NAMED_FILES || named.contains_key(uri.as_str()) {
            continue;
        }
        let Some(path) = path_from_uri(uri).filter(|p| p.starts_with(sup.root())) else {
            continue;
        };
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        let language = server.def.language_of(ext).unwrap_or("plaintext").to_string();
        if server.sync(&path, &language, Save::Skip, sup.run_id()).await.is_err() {
            continue;
        }
        if let Ok(symbols) = named_symbols(server, uri.clone(), cancel).await {
            named.insert(uri.as_str().to_string(), symbols);
        }
    }
    let mut cache = SourceCache::new();
    let mut rows: Vec<CallRow> = Vec::new();
    for (uri, site, who) in found {
        let Some(at) = show_location(sup.root(), &uri, site.start, server.encoding, &mut cache)
        else {
            continue;
        };
        let by_symbols =
            named.get(uri.as_str()).and_then(|n| enclosing(n, who.selection_range.start));
        let row = CallRow {
            path: at.path,
            line: at.line,
            column: at.column,
            name_path: by_symbols.map_or_else(|| who.name.clone(), |n| n.name_path.clone()),
            kind: super::symbols::symbol_kind(who.kind).to_string(),
            text: at.text,
        };
        if !rows.contains(&row) {
            rows.push(row);
        }
    }
    rows
}
