//! `symbols`: workspace symbol search (after the project is loaded) and a file's outline,
//! both paged with `offset`.

use super::*;

impl Supervisor {
    pub(super) async fn symbols_action(
        &self,
        args: &LspArgs,
        cancel: &CancellationToken,
    ) -> Result<LspOutput, LspError> {
        if args.file.is_some() {
            return self.document_symbols(args, cancel).await;
        }
        let Some(query) = args.query.as_deref() else {
            return Err(LspError::Invalid(
                "action `symbols` needs `query` (workspace search) or `file` (the file's outline)"
                    .into(),
            ));
        };
        let mut targets: Vec<Target> = self.present_targets()?;
        // Servers already started for roots the scan did not reach count too.
        let running = self.running();
        if targets.is_empty() && running.is_empty() {
            return Err(LspError::Unavailable {
                resource: "lsp".into(),
                reason: "no language in this workspace has both a root marker and a server binary"
                    .into(),
                fix: "call lsp with action `status` to see what is missing".into(),
            });
        }
        targets.sort_by(|a, b| (&a.def.id, &a.root.root).cmp(&(&b.def.id, &b.root.root)));
        let mut servers: Vec<Arc<Server>> = Vec::new();
        let mut notes = Vec::new();
        for target in &targets {
            match self.server(target, cancel).await {
                Ok(s) => servers.push(s),
                Err(e) => notes.push(e.to_string()),
            }
        }
        for s in running {
            if !servers.iter().any(|x| Arc::ptr_eq(x, &s)) {
                servers.push(s);
            }
        }
        let mut found: Vec<(ShownLocation, String, String, Option<String>)> = Vec::new();
        let mut cache = SourceCache::new();
        for server in &servers {
            // What changed on disk since reaches the server before it is asked.
            server.resync_open().await;
            if !server.supports("workspaceSymbolProvider") {
                notes.push(format!("{} offers no workspace symbol search", server_label(server)));
                continue;
            }
            // A server that has no file open may not have loaded its project at all (tsserver
            // loads it on the first open; clangd indexes after it read the compilation
            // database): open one of its files first, then wait for the load.
            if !server.has_open_documents().await
                && let Some(example) = discover::scan(&server.root, &[(*server.def).clone()])
                    .get(&server.def.id)
                    .and_then(|p| p.example.clone())
            {
                let ext = example.extension().and_then(|e| e.to_str()).unwrap_or("");
                let language = server.def.language_of(ext).unwrap_or("plaintext").to_string();
                let _ = server.sync(&example, &language, false, self.run_id()).await;
            }
            if let Err(e) = self.wait_ready(server, Scope::Project, "symbols", cancel).await {
                notes.push(e.to_string());
                continue;
            }
            if server.command.args.iter().any(|a| a == "--background-index=false") {
                notes.push(format!(
                    "{}: the background index is off here (it would write into the project), so only open files are searched",
                    server_label(server)
                ));
            }
            self.query_symbols(server, query, &mut found, &mut notes, &mut cache, cancel).await;
        }
        // A server that loads projects lazily (tsserver, one tsconfig at a time) knows only the
        // projects of the files open: open a few files that mention the name, and ask again.
        if found.is_empty() && !query.trim().is_empty() {
            for server in &servers {
                if !server.supports("workspaceSymbolProvider") {
                    continue;
                }
                let (root, def, name) =
                    (server.root.clone(), server.def.clone(), vec![query.to_string()]);
                let mentions = tokio::task::spawn_blocking(move || {
                    crate::impact::mentions(&root, &def, &name, Path::new(""))
                })
                .await
                .unwrap_or_default();
                let mut opened = Vec::new();
                for (file, _) in mentions.into_iter().take(MENTIONING_FILES_OPENED) {
                    let ext = file.extension().and_then(|e| e.to_str()).unwrap_or("");
                    let language = server.def.language_of(ext).unwrap_or("plaintext").to_string();
                    if server.sync(&file, &language, false, self.run_id()).await.is_ok() {
                        opened.push(display_relative(self.root(), &file));
                    }
                }
                if opened.is_empty() {
                    continue;
                }
                let _ = self.wait_ready(server, Scope::Project, "symbols", cancel).await;
                self.query_symbols(server, query, &mut found, &mut notes, &mut cache, cancel).await;
                notes.push(format!(
                    "{} answered nothing at first; asked again after opening {} (files that mention `{query}`)",
                    server_label(server),
                    opened.join(", ")
                ));
            }
        }
        // Inside the workspace first, then library symbols.
        found.sort_by_key(|(loc, name, _, _)| {
            (loc.path.starts_with('/'), name != query, loc.path.clone(), loc.line)
        });
        found.dedup_by(|a, b| a.0 == b.0 && a.1 == b.1);
        let total = found.len();
        let mut out = if total == 0 {
            format!("no workspace symbols match `{query}`")
        } else {
            format!("{total} workspace symbol(s) matching `{query}`:")
        };
        let offset = args.offset.unwrap_or(0) as usize;
        let page: Vec<_> = found.iter().skip(offset).take(MAX_WORKSPACE_SYMBOLS).collect();
        for (loc, name, kind, container) in page.iter().copied() {
            let container = container
                .as_deref()
                .filter(|c| !c.is_empty())
                .map(|c| format!(" in {c}"))
                .unwrap_or_default();
            out.push_str(&format!(
                "\n{}:{}:{} {kind} {name}{container}",
                loc.path, loc.line, loc.column
            ));
        }
        if let Some(note) = page_note(offset, page.len(), total) {
            out.push('\n');
            out.push_str(&note);
        }
        for note in &notes {
            out.push_str(&format!("\nnote: {}", note.lines().next().unwrap_or("")));
        }
        let data: Vec<Value> = page
            .iter()
            .map(|(loc, name, kind, container)| json!({"name": name, "kind": kind, "container": container, "path": loc.path, "line": loc.line, "column": loc.column}))
            .collect();
        Ok(LspOutput::new(out, json!({"query": query, "total": total, "symbols": data})))
    }

    pub(super) async fn document_symbols(
        &self,
        args: &LspArgs,
        cancel: &CancellationToken,
    ) -> Result<LspOutput, LspError> {
        let path = self.file_arg(args)?;
        let shown = display_relative(self.root(), &path);
        let (_t, server, doc) = self.ready_doc(&path, cancel).await?;
        if !server.supports("documentSymbolProvider") {
            return Err(LspError::Failed(format!(
                "{} offers no document symbols",
                server_label(&server)
            )));
        }
        self.wait_ready(&server, Scope::File, "symbols", cancel).await?;
        let uri = uri_from_path(&path).map(|u| u.as_str().to_string());
        let result = server
            .request("textDocument/documentSymbol", json!({"textDocument": {"uri": uri}}), cancel)
            .await
            .map_err(|e| request_failed(&server, "symbols", e))?;
        let lines: Vec<&str> = doc.text.lines().collect();
        let filter = args.query.as_deref().map(str::to_lowercase);
        let mut rows: Vec<(usize, u32, u32, String, String, String)> = Vec::new();
        fn walk(
            items: &[Value],
            depth: usize,
            lines: &[&str],
            encoding: ColumnUnit,
            rows: &mut Vec<(usize, u32, u32, String, String, String)>,
        ) {
            for item in items {
                let name = item.get("name").and_then(Value::as_str).unwrap_or("").to_string();
                let kind =
                    symbol_kind(item.get("kind").and_then(Value::as_u64).unwrap_or(0)).to_string();
                let detail = item.get("detail").and_then(Value::as_str).unwrap_or("").to_string();
                let start = item
                    .pointer("/selectionRange/start")
                    .or_else(|| item.pointer("/location/range/start"))
                    .cloned()
                    .unwrap_or(Value::Null);
                let (line, character) = position_of(&start);
                let column = lines.get(line as usize).map_or(character, |l| {
                    convert_column(l, character, encoding, ColumnUnit::Char)
                });
                rows.push((depth, line + 1, column + 1, kind, name, detail));
                if let Some(children) = item.get("children").and_then(Value::as_array) {
                    walk(children, depth + 1, lines, encoding, rows);
                }
            }
        }
        walk(
            result.as_array().map(Vec::as_slice).unwrap_or(&[]),
            0,
            &lines,
            server.encoding,
            &mut rows,
        );
        if let Some(f) = &filter {
            rows.retain(|r| r.4.to_lowercase().contains(f.as_str()));
        }
        let total = rows.len();
        let mut out = if total == 0 {
            format!("no symbols in {shown}")
        } else {
            format!("{total} symbol(s) in {shown}:")
        };
        let offset = args.offset.unwrap_or(0) as usize;
        let page: Vec<_> = rows.iter().skip(offset).take(MAX_DOCUMENT_SYMBOLS).collect();
        for (depth, line, col, kind, name, detail) in page.iter().copied() {
            let detail = if detail.is_empty() {
                String::new()
            } else {
                format!(" — {}", detail.lines().next().unwrap_or(""))
            };
            out.push_str(&format!("\n{}{line}:{col} {kind} {name}{detail}", "  ".repeat(*depth)));
        }
        if let Some(note) = page_note(offset, page.len(), total) {
            out.push('\n');
            out.push_str(&note);
        }
        let data: Vec<Value> = page
            .iter()
            .map(|(depth, line, col, kind, name, detail)| json!({"depth": depth, "line": line, "column": col, "kind": kind, "name": name, "detail": detail}))
            .collect();
        Ok(LspOutput::new(out, json!({"path": shown, "total": total, "symbols": data})))
    }
}

pub(super) fn symbol_kind(kind: u64) -> &'static str {
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
    KINDS.get((kind as usize).wrapping_sub(1)).copied().unwrap_or("symbol")
}

/// How many files that mention a name are opened when a workspace symbol search found nothing.
const MENTIONING_FILES_OPENED: usize = 3;

impl Supervisor {
    /// One server's `workspace/symbol` answer for `query`, added to `found`.
    async fn query_symbols(
        &self,
        server: &Server,
        query: &str,
        found: &mut Vec<(ShownLocation, String, String, Option<String>)>,
        notes: &mut Vec<String>,
        cache: &mut SourceCache,
        cancel: &CancellationToken,
    ) {
        let result = match server.request("workspace/symbol", json!({"query": query}), cancel).await
        {
            Ok(r) => r,
            Err(e) => {
                notes.push(request_failed(server, "symbols", e).to_string());
                return;
            }
        };
        for item in result.as_array().into_iter().flatten() {
            let name = item.get("name").and_then(Value::as_str).unwrap_or("").to_string();
            let kind =
                symbol_kind(item.get("kind").and_then(Value::as_u64).unwrap_or(0)).to_string();
            let container = item.get("containerName").and_then(Value::as_str).map(str::to_string);
            let Some(uri) = item.pointer("/location/uri").and_then(Value::as_str) else {
                continue;
            };
            let start = item
                .pointer("/location/range/start")
                .cloned()
                .unwrap_or(json!({"line": 0, "character": 0}));
            if let Some(loc) = show_location(self.root(), uri, &start, server.encoding, cache) {
                found.push((loc, name, kind, container));
            }
        }
    }
}
