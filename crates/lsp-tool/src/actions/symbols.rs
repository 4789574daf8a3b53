//! `symbols`: workspace symbol search (after the project is loaded) and a file's outline,
//! both paged with `offset`.

use agent_tools_support::Unavailable;
use lsp_types::{
    DocumentSymbolParams, DocumentSymbolResponse, OneOf, SymbolKind, TextDocumentIdentifier,
    WorkspaceSymbolParams, WorkspaceSymbolResponse,
    request::{DocumentSymbolRequest, WorkspaceSymbolRequest},
};

use super::{result::*, *};

/// The symbols a workspace answers for `query`, or with `file` that file's outline.
pub(crate) async fn symbols_action(
    sup: &Supervisor,
    args: &LspArgs,
    cancel: &CancellationToken,
) -> Result<LspOutput, LspError> {
    if args.file.is_some() {
        return document_symbols(sup, args, cancel).await;
    }
    let Some(query) = args.query.as_deref() else {
        return Err(LspError::Invalid(
            "action `symbols` needs `query` (workspace search) or `file` (the file's outline)"
                .into(),
        ));
    };
    let mut notes = Vec::new();
    let servers = symbol_servers(sup, &mut notes, cancel).await?;
    let mut search =
        SymbolSearch { sup, query, found: Vec::new(), notes, cache: SourceCache::new(), cancel };
    search.ask_every_server(&servers).await;
    if search.found.is_empty() && !query.trim().is_empty() {
        search.ask_again_after_opening_mentions(&servers).await;
    }
    let answer = workspace_answer(search.found, query, args.offset, &search.notes);
    Ok(LspOutput::from_result(LspResult::Symbols(SymbolsAnswer::Workspace(answer))))
}

/// Symbols found so far: where, name, kind, container.
type Found = Vec<(ShownLocation, String, String, Option<String>)>;

/// One workspace symbol search: what it asks, what it found so far, and its notes.
struct SymbolSearch<'a> {
    sup: &'a Supervisor,
    query: &'a str,
    found: Found,
    notes: Vec<String>,
    cache: SourceCache,
    cancel: &'a CancellationToken,
}

/// The servers a workspace symbol search asks: one per present target (started if need be;
/// why one could not start goes to `notes`) and every one already running.
async fn symbol_servers(
    sup: &Supervisor,
    notes: &mut Vec<String>,
    cancel: &CancellationToken,
) -> Result<Vec<Arc<Server>>, LspError> {
    let mut targets: Vec<Target> = sup.present_targets()?;
    // Servers already started for roots the scan did not reach count too.
    let running = sup.running();
    if targets.is_empty() && running.is_empty() {
        return Err(LspError::Unavailable(Unavailable {
            resource: "lsp".into(),
            reason: "no language in this workspace has both a root marker and a server binary"
                .into(),
            fix: "call lsp with action `status` to see what is missing".into(),
        }));
    }
    targets.sort_by(|a, b| (&a.def.id, &a.root.root).cmp(&(&b.def.id, &b.root.root)));
    let mut servers: Vec<Arc<Server>> = Vec::new();
    for target in &targets {
        match sup.server(target, cancel).await {
            Ok(s) => servers.push(s),
            Err(e) => notes.push(e.to_string()),
        }
    }
    for s in running {
        if !servers.iter().any(|x| Arc::ptr_eq(x, &s)) {
            servers.push(s);
        }
    }
    Ok(servers)
}

/// Opens one of the server's files when it has none open: a server with no file open may not
/// have loaded its project at all (tsserver loads it on the first open; clangd indexes after
/// it read the compilation database).
async fn open_one_file(sup: &Supervisor, server: &Server) {
    if !server.has_open_documents().await
        && let Some(example) = discover::scan(&server.root, &[(*server.def).clone()])
            .get(&server.def.id)
            .and_then(|p| p.example.clone())
    {
        let ext = example.extension().and_then(|e| e.to_str()).unwrap_or("");
        let language = server.def.language_of(ext).unwrap_or("plaintext").to_string();
        let _ = server.sync(&example, &language, Save::Skip, sup.run_id()).await;
    }
}

impl SymbolSearch<'_> {
    /// Asks every server for the query, after it is synced and ready.
    async fn ask_every_server(&mut self, servers: &[Arc<Server>]) {
        let (sup, cancel) = (self.sup, self.cancel);
        for server in servers {
            // What changed on disk since reaches the server before it is asked.
            server.resync_open().await;
            if !server.offers(Feature::WorkspaceSymbols) {
                self.notes
                    .push(format!("{} offers no workspace symbol search", server_label(server)));
                continue;
            }
            // Open one of its files first, then wait for its project to load.
            open_one_file(sup, server).await;
            if let Err(e) = wait_ready(sup, server, Scope::Project, "symbols", cancel).await {
                self.notes.push(e.to_string());
                continue;
            }
            if server.command.args.iter().any(|a| a == "--background-index=false") {
                self.notes.push(format!(
                "{}: the background index is off here (it would write into the project), so only open files are searched",
                server_label(server)
            ));
            }
            self.query_symbols(server).await;
        }
    }

    /// A server that loads projects lazily (tsserver, one tsconfig at a time) knows only the
    /// projects of the files open: opens a few files that mention the name, and asks again.
    async fn ask_again_after_opening_mentions(&mut self, servers: &[Arc<Server>]) {
        let (sup, query, cancel) = (self.sup, self.query, self.cancel);
        for server in servers {
            if !server.offers(Feature::WorkspaceSymbols) {
                continue;
            }
            let (root, def, name) =
                (server.root.clone(), server.def.clone(), vec![query.to_string()]);
            let mentions = tokio::task::spawn_blocking(move || {
                crate::scan::mentions(&root, &def, &name, Path::new(""))
            })
            .await
            .unwrap_or_default();
            let mut opened = Vec::new();
            for (file, _) in mentions.into_iter().take(MENTIONING_FILES_OPENED) {
                let ext = file.extension().and_then(|e| e.to_str()).unwrap_or("");
                let language = server.def.language_of(ext).unwrap_or("plaintext").to_string();
                if server.sync(&file, &language, Save::Skip, sup.run_id()).await.is_ok() {
                    opened.push(display_relative(sup.root(), &file));
                }
            }
            if opened.is_empty() {
                continue;
            }
            let _ = wait_ready(sup, server, Scope::Project, "symbols", cancel).await;
            self.query_symbols(server).await;
            self.notes.push(format!(
            "{} answered nothing at first; asked again after opening {} (files that mention `{query}`)",
            server_label(server),
            opened.join(", ")
        ));
        }
    }

    /// One server's `workspace/symbol` answer for the query, added to what was found.
    async fn query_symbols(&mut self, server: &Server) {
        let params = WorkspaceSymbolParams {
            query: self.query.to_string(),
            work_done_progress_params: Default::default(),
            partial_result_params: Default::default(),
        };
        let answer = match server.call::<WorkspaceSymbolRequest>(params, self.cancel).await {
            Ok(answer) => answer,
            Err(e) => {
                self.notes.push(request_failed(server, "symbols", e).to_string());
                return;
            }
        };
        for (uri, start, name, kind, container) in flat_symbols(answer) {
            if let Some(loc) =
                show_location(self.sup.root(), &uri, start, server.encoding, &mut self.cache)
            {
                self.found.push((loc, name, symbol_kind(kind).to_string(), container));
            }
        }
    }
}

/// The page of `found` the call shows, workspace symbols before library ones.
fn workspace_answer(
    mut found: Found,
    query: &str,
    offset: Option<u32>,
    notes: &[String],
) -> WorkspaceSymbols {
    // Inside the workspace first, then library symbols.
    found.sort_by_key(|(loc, name, _, _)| {
        (loc.path.starts_with('/'), name != query, loc.path.clone(), loc.line)
    });
    found.dedup_by(|a, b| a.0 == b.0 && a.1 == b.1);
    let offset = offset.unwrap_or(0) as usize;
    let symbols = found
        .iter()
        .skip(offset)
        .take(MAX_WORKSPACE_SYMBOLS)
        .map(|(loc, name, kind, container)| WorkspaceSymbolRow {
            name: name.clone(),
            kind: kind.clone(),
            container: container.clone(),
            path: loc.path.clone(),
            line: loc.line,
            column: loc.column,
        })
        .collect();
    WorkspaceSymbols {
        query: query.to_string(),
        total: found.len(),
        offset,
        symbols,
        notes: notes.iter().map(|n| n.lines().next().unwrap_or("").to_string()).collect(),
    }
}

pub(crate) async fn document_symbols(
    sup: &Supervisor,
    args: &LspArgs,
    cancel: &CancellationToken,
) -> Result<LspOutput, LspError> {
    let path = file_arg(sup, args)?;
    let shown = display_relative(sup.root(), &path);
    let (_t, server, doc) = ready_doc(sup, &path, cancel).await?;
    if !server.offers(Feature::DocumentSymbols) {
        return Err(LspError::Failed(format!(
            "{} offers no document symbols",
            server_label(&server)
        )));
    }
    wait_ready(sup, &server, Scope::File, "symbols", cancel).await?;
    let Some(uri) = uri_from_path(&path) else {
        return Err(LspError::Invalid(format!("{shown} has no file URI")));
    };
    let params = DocumentSymbolParams {
        text_document: TextDocumentIdentifier { uri },
        work_done_progress_params: Default::default(),
        partial_result_params: Default::default(),
    };
    let answer = server
        .call::<DocumentSymbolRequest>(params, cancel)
        .await
        .map_err(|e| request_failed(&server, "symbols", e))?;
    let lines: Vec<&str> = doc.text.lines().collect();
    let column = |p: lsp_types::Position| {
        lines.get(p.line as usize).map_or(p.character, |l| {
            convert_column(l, p.character, server.encoding, ColumnUnit::Char)
        }) + 1
    };
    let mut rows: Vec<OutlineRow> = Vec::new();
    fn walk(
        items: &[lsp_types::DocumentSymbol],
        depth: usize,
        column: &dyn Fn(lsp_types::Position) -> u32,
        rows: &mut Vec<OutlineRow>,
    ) {
        for item in items {
            let at = item.selection_range.start;
            rows.push(OutlineRow {
                depth,
                line: at.line + 1,
                column: column(at),
                kind: symbol_kind(item.kind).to_string(),
                name: item.name.clone(),
                detail: item.detail.clone().unwrap_or_default(),
            });
            walk(item.children.as_deref().unwrap_or_default(), depth + 1, column, rows);
        }
    }
    match answer {
        Some(DocumentSymbolResponse::Nested(items)) => walk(&items, 0, &column, &mut rows),
        Some(DocumentSymbolResponse::Flat(items)) => {
            for item in items {
                let at = item.location.range.start;
                rows.push(OutlineRow {
                    depth: 0,
                    line: at.line + 1,
                    column: column(at),
                    kind: symbol_kind(item.kind).to_string(),
                    name: item.name,
                    detail: String::new(),
                });
            }
        }
        None => {}
    }
    if let Some(f) = args.query.as_deref().map(str::to_lowercase) {
        rows.retain(|r| r.name.to_lowercase().contains(f.as_str()));
    }
    let offset = args.offset.unwrap_or(0) as usize;
    let answer = Outline {
        path: shown,
        total: rows.len(),
        offset,
        symbols: rows.into_iter().skip(offset).take(MAX_DOCUMENT_SYMBOLS).collect(),
    };
    Ok(LspOutput::from_result(LspResult::Symbols(SymbolsAnswer::Outline(answer))))
}

pub(super) fn symbol_kind(kind: SymbolKind) -> &'static str {
    // SymbolKind is 1-based: FILE = 1.
    const KINDS: [&str; 26] = [
        "file",
        "module",
        "namespace",
        "package",
        "class",
        "method",
        "property",
        "field",
        "constructor",
        "enum",
        "interface",
        "function",
        "variable",
        "constant",
        "string",
        "number",
        "boolean",
        "array",
        "object",
        "key",
        "null",
        "enum member",
        "struct",
        "event",
        "operator",
        "type parameter",
    ];
    let n: i32 = serde_json::to_value(kind).ok().and_then(|v| v.as_i64()).unwrap_or(0) as i32;
    KINDS.get((n as usize).wrapping_sub(1)).copied().unwrap_or("symbol")
}

/// How many files that mention a name are opened when a workspace symbol search found nothing.
const MENTIONING_FILES_OPENED: usize = 3;

/// A `workspace/symbol` answer as (uri, start, name, kind, container); a symbol without a
/// range starts its file.
fn flat_symbols(
    answer: Option<WorkspaceSymbolResponse>,
) -> Vec<(lsp_types::Uri, lsp_types::Position, String, SymbolKind, Option<String>)> {
    match answer {
        Some(WorkspaceSymbolResponse::Flat(items)) => items
            .into_iter()
            .map(|s| (s.location.uri, s.location.range.start, s.name, s.kind, s.container_name))
            .collect(),
        Some(WorkspaceSymbolResponse::Nested(items)) => items
            .into_iter()
            .map(|s| {
                let (uri, start) = match s.location {
                    OneOf::Left(l) => (l.uri, l.range.start),
                    OneOf::Right(w) => (w.uri, lsp_types::Position::default()),
                };
                (uri, start, s.name, s.kind, s.container_name)
            })
            .collect(),
        None => Vec::new(),
    }
}
