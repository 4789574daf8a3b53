//! The navigation actions (definition, type_definition, implementation, references, hover,
//! code_actions): line + symbol addressing, readiness, rendering as `path:line:col` + line.

use super::*;

impl Supervisor {
    pub(super) async fn navigation_action(
        &self,
        args: &LspArgs,
        cancel: &CancellationToken,
    ) -> Result<LspOutput, LspError> {
        let action = args.action;
        let Some((method, capability, what)) = action.navigation() else {
            return Err(LspError::Invalid(format!(
                "action `{}` is not a navigation action",
                action.as_str()
            )));
        };
        let path = self.file_arg(args)?;
        let shown = display_relative(self.root(), &path);
        let Some(line) = args.line else {
            return Err(LspError::Invalid(format!(
                "action `{}` needs `line` (1-based) and `symbol` (text on that line); no column is guessed",
                action.as_str()
            )));
        };
        let text = crate::paths::read_source(&path)
            .map_err(|e| LspError::Invalid(format!("cannot read {shown}: {e}")))?;
        let Some(symbol) = args.symbol.as_deref() else {
            let line_text = text.lines().nth(line.saturating_sub(1) as usize).unwrap_or("");
            return Err(LspError::Invalid(format!(
                "action `{}` needs `symbol`: the text on line {line} that names what you mean (no column is guessed). Line {line} of {shown} reads: `{}`",
                action.as_str(),
                line_text.trim()
            )));
        };
        let located = locate(&text, &shown, line, symbol, args.occurrence)?;
        let (_target, server, doc) = self.ready_doc(&path, cancel).await?;
        // The file may have changed between our read and the sync; address what the server has.
        let located = if doc.text == text {
            located
        } else {
            locate(&doc.text, &shown, line, symbol, args.occurrence)?
        };
        if !server.supports(capability) {
            return Err(LspError::Failed(format!(
                "{what}: the {} server ({}) does not offer this ({capability} is not in its capabilities)",
                server.def.display_languages(),
                server_label(&server)
            )));
        }
        let character = located.start_in(server.encoding);
        let end_character = located.end_in(server.encoding);
        let uri = uri_from_path(&path).map(|u| u.as_str().to_string());
        let position = json!({"line": located.line, "character": character});
        let col = located.display_column();
        let at = if located.of > 1 {
            format!(
                "`{symbol}` at {shown}:{line}:{col} (occurrence {} of {})",
                located.occurrence, located.of
            )
        } else {
            format!("`{symbol}` at {shown}:{line}:{col}")
        };
        // Answers from a half-loaded project are wrong, not just short (tsserver's definition
        // is the import line): wait for the load, within the budget. A server still busy then
        // is asked anyway; its answer comes with a note, and only an empty one is refused.
        let scope = action.scope();
        let busy = self.wait_ready(&server, scope, what, cancel).await.err();
        let mut params = json!({"textDocument": {"uri": uri}, "position": position});
        if action == Action::References {
            params["context"] = json!({"includeDeclaration": true});
        }
        if action == Action::CodeActions {
            let range = json!({"start": position, "end": {"line": located.line, "character": end_character}});
            let deadline = Instant::now()
                + Duration::from_millis(self.config().diagnostics_timeout_ms.min(5000));
            let diags = server.diagnostics(&doc, deadline, cancel).await.unwrap_or_default();
            let on_line: Vec<&lsp_types::Diagnostic> = diags
                .iter()
                .filter(|d| d.range.start.line <= located.line && located.line <= d.range.end.line)
                .collect();
            params = json!({"textDocument": {"uri": uri}, "range": range, "context": {"diagnostics": on_line}});
        }
        let result = server
            .request(method, params, cancel)
            .await
            .map_err(|e| request_failed(&server, what, e))?;
        let empty = result.is_null() || result.as_array().is_some_and(Vec::is_empty);
        let partial = match busy {
            Some(not_ready) if empty => return Err(not_ready),
            Some(_) => server.busy_for(scope),
            // Served during a background index: what it has not reached yet may be missing.
            None => server.busy(),
        };
        let mut cache = SourceCache::new();
        let label = server_label(&server);
        match action {
            Action::Hover => {
                let text = result.get("contents").map(hover_text).unwrap_or_default();
                if text.trim().is_empty() {
                    return Ok(LspOutput::new(
                        format!("no hover information for {at} ({label})"),
                        json!({"symbol": symbol, "hover": null}),
                    ));
                }
                let mut text = text.trim().to_string();
                let total = text.chars().count();
                if total > MAX_HOVER_CHARS {
                    text = text.chars().take(MAX_HOVER_CHARS).collect::<String>()
                        + &format!("\n[hover cut at {MAX_HOVER_CHARS} of {total} characters]");
                }
                Ok(LspOutput::new(
                    format!("hover for {at}:\n{text}"),
                    json!({"symbol": symbol, "hover": text}),
                ))
            }
            Action::CodeActions => {
                let items = result.as_array().cloned().unwrap_or_default();
                if items.is_empty() {
                    return Ok(LspOutput::new(
                        format!("no code actions offered for {at} ({label})"),
                        json!({"actions": []}),
                    ));
                }
                let mut lines = vec![format!(
                    "{} code action(s) offered for {at} (apply one with lsp_code_action and its number):",
                    items.len()
                )];
                let resolvable = server
                    .capabilities
                    .pointer("/codeActionProvider/resolveProvider")
                    .and_then(Value::as_bool)
                    == Some(true);
                let mut data = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    let mut item = item.clone();
                    // An action without its edit may have it lazily (codeAction/resolve).
                    if item.get("edit").is_none()
                        && resolvable
                        && i < MAX_RESOLVED_ACTIONS
                        && let Ok(resolved) =
                            server.request("codeAction/resolve", item.clone(), cancel).await
                        && resolved.get("edit").is_some()
                    {
                        item = resolved;
                    }
                    let title = item.get("title").and_then(Value::as_str).unwrap_or("(untitled)");
                    let kind = item.get("kind").and_then(Value::as_str).unwrap_or("command");
                    let preferred = item.get("isPreferred").and_then(Value::as_bool) == Some(true);
                    let disabled = item.pointer("/disabled/reason").and_then(Value::as_str);
                    let mut line = format!("{}. {title} ({kind})", i + 1);
                    if preferred {
                        line.push_str(" [preferred]");
                    }
                    if let Some(reason) = disabled {
                        data.push(json!({"index": i + 1, "title": title, "kind": kind, "preferred": preferred, "disabled": reason}));
                        continue;
                    }
                    let edit = item.get("edit").cloned();
                    let changes = match edit.as_ref().map(crate::rename::parse_workspace_edit) {
                        Some(Ok(ops)) => {
                            crate::rename::describe_ops(self.root(), &ops, server.encoding)
                        }
                        Some(Err(e)) => vec![format!("(an edit this tool cannot apply: {e})")],
                        None => vec![
                            "(no edit: runs a server command, which this tool does not apply)"
                                .into(),
                        ],
                    };
                    lines.push(line);
                    lines.extend(changes.iter().take(MAX_SHOWN_EDITS).map(|c| format!("   {c}")));
                    if changes.len() > MAX_SHOWN_EDITS {
                        lines.push(format!("   [+{} more edits]", changes.len() - MAX_SHOWN_EDITS));
                    }
                    data.push(json!({"index": i + 1, "title": title, "kind": kind, "preferred": preferred, "changes": changes, "edit": edit}));
                }
                let disabled = data.iter().filter(|d| d.get("disabled").is_some()).count();
                if disabled > 0 {
                    lines.push(format!("({disabled} more not applicable here, not listed)"));
                }
                Ok(LspOutput::new(lines.join("\n"), json!({"actions": data})))
            }
            _ => {
                let found = locations(self.root(), &result, server.encoding, &mut cache);
                let cap = if action == Action::References { MAX_REFERENCES } else { MAX_LOCATIONS };
                if found.is_empty() {
                    let state = match &partial {
                        Some(busy) => format!(
                            "still {busy}: files it has not reached may hold it; ask again shortly"
                        ),
                        None => "ready".to_string(),
                    };
                    return Ok(LspOutput::new(
                        format!("no {what} found for {at} ({label}, {state})"),
                        json!({"symbol": symbol, "locations": []}),
                    ));
                }
                let mut out = match action {
                    Action::References => format!("{} reference(s) to {at}:", found.len()),
                    _ => format!("{what} of {at}:"),
                };
                let offset = args.offset.unwrap_or(0) as usize;
                let page: Vec<&ShownLocation> = found.iter().skip(offset).take(cap).collect();
                for loc in &page {
                    out.push('\n');
                    out.push_str(&loc.render());
                }
                if let Some(note) = page_note(offset, page.len(), found.len()) {
                    out.push('\n');
                    out.push_str(&note);
                }
                if let Some(busy) = &partial {
                    out.push_str(&format!(
                        "\n(may be partial: the server is still {busy}; ask again shortly for the full answer)"
                    ));
                }
                Ok(LspOutput::new(
                    out,
                    json!({"symbol": symbol, "total": found.len(), "offset": offset, "locations": page, "partial": partial.is_some()}),
                ))
            }
        }
    }
}

pub(super) fn hover_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Array(items) => {
            items.iter().map(hover_text).filter(|s| !s.is_empty()).collect::<Vec<_>>().join("\n\n")
        }
        Value::Object(map) => {
            let text = map.get("value").and_then(Value::as_str).unwrap_or("").to_string();
            match map.get("language").and_then(Value::as_str) {
                Some(lang) => format!("```{lang}\n{text}\n```"),
                None => text,
            }
        }
        _ => String::new(),
    }
}
