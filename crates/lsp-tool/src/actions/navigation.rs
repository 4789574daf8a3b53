//! The navigation actions (definition, type_definition, implementation, references, hover,
//! code_actions): line + symbol addressing, readiness, typed requests, results as
//! [`LspResult`] values.

use lsp_types::{
    CodeActionOrCommand, GotoDefinitionParams, GotoDefinitionResponse, HoverContents, MarkedString,
    Position, TextDocumentIdentifier,
    request::{
        CodeActionRequest, CodeActionResolveRequest, GotoDefinition, GotoImplementation,
        GotoTypeDefinition, HoverRequest, Request,
    },
};

use super::addressed::Addressed;
use super::name_path::address_by_name_path;
use super::{result::*, *};

pub(crate) async fn navigation_action(
    sup: &Supervisor,
    args: &LspArgs,
    cancel: &CancellationToken,
) -> Result<LspOutput, LspError> {
    let action = args.action;
    let Some((feature, what)) = action.navigation() else {
        return Err(LspError::Invalid(format!(
            "action `{}` is not a navigation action",
            action.as_str()
        )));
    };
    let path = file_arg(sup, args)?;
    let (server, doc, addressed) = address(sup, args, &path, cancel).await?;
    if !server.offers(feature) {
        return Err(LspError::Failed(format!(
            "{what}: the {} server ({}) does not offer this ({} is not in its capabilities)",
            server.def.display_languages(),
            server_label(&server),
            feature.capability()
        )));
    }
    // Answers from a half-loaded project are wrong, not just short (tsserver's definition
    // is the import line): wait for the load, within the budget. A server still busy then
    // is asked anyway; its answer comes with a note, and only an empty one is refused.
    let busy = wait_ready(sup, &server, action.scope(), what, cancel).await.err();
    let result = match action {
        Action::Hover => hover(&server, addressed, what, busy, cancel).await?,
        Action::CodeActions => {
            code_action_list(sup, &server, &doc, addressed, busy, cancel).await?
        }
        Action::IncomingCalls | Action::OutgoingCalls => {
            super::calls::call_hierarchy(sup, &server, args, addressed, what, busy, cancel).await?
        }
        _ => locations(sup, &server, args, addressed, what, busy, cancel).await?,
    };
    Ok(LspOutput::from_result(result))
}

/// `code_actions`: the actions offered at the addressed symbol, numbered.
async fn code_action_list(
    sup: &Supervisor,
    server: &Server,
    doc: &SyncedDoc,
    addressed: Addressed,
    busy: Option<LspError>,
    cancel: &CancellationToken,
) -> Result<LspResult, LspError> {
    let offered = code_actions(sup, server, doc, &addressed, cancel).await?;
    let actions: Vec<CodeActionItem> = offered.into_iter().map(|o| o.item).collect();
    if actions.is_empty()
        && let Some(not_ready) = busy
    {
        return Err(not_ready);
    }
    let server = server_label(server);
    Ok(LspResult::CodeActions(CodeActionList { at: addressed.at, server, actions }))
}

/// definition, type_definition, implementation or references: one page of the locations
/// found, with a note when a busy server may have missed some.
async fn locations(
    sup: &Supervisor,
    server: &Server,
    args: &LspArgs,
    addressed: Addressed,
    what: &str,
    busy: Option<LspError>,
    cancel: &CancellationToken,
) -> Result<LspResult, LspError> {
    let action = args.action;
    let mut left_out = Vec::new();
    let found = match action {
        Action::References => {
            let (refs, missing) =
                super::left_out::complete_references(sup, server, &addressed, what, cancel).await?;
            left_out = missing;
            GotoDefinitionResponse::Array(refs)
        }
        Action::TypeDefinition => goto::<GotoTypeDefinition>(server, &addressed, cancel).await?,
        Action::Implementation => goto::<GotoImplementation>(server, &addressed, cancel).await?,
        _ => goto::<GotoDefinition>(server, &addressed, cancel).await?,
    };
    let mut cache = SourceCache::new();
    let all = shown_locations(sup.root(), &found, server.encoding, &mut cache);
    let partial = match busy {
        Some(not_ready) if all.is_empty() => return Err(not_ready),
        Some(_) => server.busy_for(action.scope()),
        // Served during a background index: what it has not reached may be missing.
        None => server.busy(),
    };
    let cap = if action == Action::References { MAX_REFERENCES } else { MAX_LOCATIONS };
    let offset = args.offset.unwrap_or(0) as usize;
    let locations = Locations {
        symbol: addressed.symbol,
        at: addressed.at,
        server: server_label(server),
        total: all.len(),
        offset,
        locations: all.into_iter().skip(offset).take(cap).collect(),
        partial,
        left_out,
    };
    Ok(match action {
        Action::References => LspResult::References(locations),
        Action::TypeDefinition => LspResult::TypeDefinition(locations),
        Action::Implementation => LspResult::Implementation(locations),
        _ => LspResult::Definition(locations),
    })
}

/// The server, the synced document and the position of `symbol` on `line` of `path`.
async fn address(
    sup: &Supervisor,
    args: &LspArgs,
    path: &Path,
    cancel: &CancellationToken,
) -> Result<(Arc<Server>, SyncedDoc, Addressed), LspError> {
    let action = args.action;
    let shown = display_relative(sup.root(), path);
    let Some(line) = args.line else {
        if let Some(symbol) = args.symbol.as_deref().filter(|s| !s.trim().is_empty()) {
            return address_by_name_path(sup, path, symbol, cancel).await;
        }
        return Err(LspError::Invalid(format!(
            "action `{}` needs `symbol`: a name path (`Class/method`), or with `line` \
             (1-based) the text on that line; no column is guessed",
            action.as_str()
        )));
    };
    let text = crate::paths::read_source(path)
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
    let (_target, server, doc) = ready_doc(sup, path, cancel).await?;
    // The file may have changed between our read and the sync; address what the server has.
    let located = if doc.text == text {
        located
    } else {
        locate(&doc.text, &shown, line, symbol, args.occurrence)?
    };
    let col = located.display_column();
    let at = if located.of > 1 {
        format!(
            "`{symbol}` at {shown}:{line}:{col} (occurrence {} of {})",
            located.occurrence, located.of
        )
    } else {
        format!("`{symbol}` at {shown}:{line}:{col}")
    };
    let Some(uri) = uri_from_path(path) else {
        return Err(LspError::Invalid(format!("{shown} has no file URI")));
    };
    let addressed = Addressed {
        document: TextDocumentIdentifier { uri },
        position: Position { line: located.line, character: located.start_in(server.encoding) },
        end: Position { line: located.line, character: located.end_in(server.encoding) },
        symbol: symbol.to_string(),
        at,
    };
    Ok((server, doc, addressed))
}

/// The code actions offered at `args`' position, numbered as `code_actions` lists them,
/// with their edits (what `lsp_code_action` applies).
pub(crate) async fn offered_code_actions(
    sup: &Supervisor,
    args: &LspArgs,
    cancel: &CancellationToken,
) -> Result<Vec<OfferedAction>, LspError> {
    let path = file_arg(sup, args)?;
    let (server, doc, addressed) = address(sup, args, &path, cancel).await?;
    if !server.offers(Feature::CodeActions) {
        return Err(LspError::Failed(format!(
            "code actions: {} does not offer them",
            server_label(&server)
        )));
    }
    let _ = wait_ready(sup, &server, Scope::File, "code actions", cancel).await;
    code_actions(sup, &server, &doc, &addressed, cancel).await
}

/// The code actions at the addressed range, with the diagnostics on its line as context;
/// an action without its edit is resolved (`codeAction/resolve`) where the server can.
async fn code_actions(
    sup: &Supervisor,
    server: &Server,
    doc: &SyncedDoc,
    addressed: &Addressed,
    cancel: &CancellationToken,
) -> Result<Vec<OfferedAction>, LspError> {
    let what = "code actions";
    let line = addressed.position.line;
    let deadline =
        Instant::now() + Duration::from_millis(sup.config().diagnostics_timeout_ms.min(5000));
    let diags = server.diagnostics(doc, deadline, cancel).await.unwrap_or_default();
    let on_line: Vec<lsp_types::Diagnostic> = diags
        .into_iter()
        .filter(|d| d.range.start.line <= line && line <= d.range.end.line)
        .collect();
    let params = lsp_types::CodeActionParams {
        text_document: addressed.document.clone(),
        range: lsp_types::Range { start: addressed.position, end: addressed.end },
        context: lsp_types::CodeActionContext {
            diagnostics: on_line,
            only: None,
            trigger_kind: None,
        },
        work_done_progress_params: Default::default(),
        partial_result_params: Default::default(),
    };
    let offered = server
        .call::<CodeActionRequest>(params, cancel)
        .await
        .map_err(|e| request_failed(server, what, e))?
        .unwrap_or_default();
    let resolvable = server.capabilities.resolves_code_actions();
    let mut out = Vec::new();
    for (i, offer) in offered.into_iter().enumerate() {
        let index = i + 1;
        let mut action = match offer {
            CodeActionOrCommand::CodeAction(action) => action,
            CodeActionOrCommand::Command(command) => {
                let item = CodeActionItem {
                    index,
                    title: command.title,
                    kind: "command".into(),
                    preferred: false,
                    disabled: None,
                    changes: vec![
                        "(no edit: runs a server command, which this tool does not apply)".into(),
                    ],
                };
                out.push(OfferedAction { item, edit: None });
                continue;
            }
        };
        // An action without its edit may have it lazily (codeAction/resolve).
        if action.edit.is_none()
            && resolvable
            && i < MAX_RESOLVED_ACTIONS
            && let Ok(resolved) =
                server.call::<CodeActionResolveRequest>(action.clone(), cancel).await
            && resolved.edit.is_some()
        {
            action = resolved;
        }
        let changes = match &action.edit {
            Some(edit) => match crate::workspace_edit::parse_workspace_edit(edit) {
                Ok(ops) => crate::workspace_edit::describe_ops(sup.root(), &ops, server.encoding),
                Err(e) => vec![format!("(an edit this tool cannot apply: {e})")],
            },
            None => {
                vec!["(no edit: runs a server command, which this tool does not apply)".into()]
            }
        };
        let item = CodeActionItem {
            index,
            title: action.title,
            kind: action.kind.map_or_else(|| "command".into(), |k| k.as_str().to_string()),
            preferred: action.is_preferred == Some(true),
            disabled: action.disabled.map(|d| d.reason),
            changes,
        };
        out.push(OfferedAction { item, edit: action.edit });
    }
    Ok(out)
}

/// A code action as offered: what is listed, and the edit it makes.
pub(crate) struct OfferedAction {
    pub item: CodeActionItem,
    pub edit: Option<lsp_types::WorkspaceEdit>,
}

/// `hover`: the server's hover text at the addressed symbol, cut at [`MAX_HOVER_CHARS`].
async fn hover(
    server: &Server,
    addressed: Addressed,
    what: &str,
    busy: Option<LspError>,
    cancel: &CancellationToken,
) -> Result<LspResult, LspError> {
    let params = lsp_types::HoverParams {
        text_document_position_params: addressed.position_params(),
        work_done_progress_params: Default::default(),
    };
    let hover = server
        .call::<HoverRequest>(params, cancel)
        .await
        .map_err(|e| request_failed(server, what, e))?;
    let text = hover.map(|h| hover_text(&h.contents)).unwrap_or_default();
    if text.trim().is_empty()
        && let Some(not_ready) = busy
    {
        return Err(not_ready);
    }
    Ok(LspResult::Hover(HoverAnswer {
        symbol: addressed.symbol,
        at: addressed.at,
        server: server_label(server),
        hover: (!text.trim().is_empty()).then(|| cut_hover(text.trim())),
    }))
}

/// A definition-like request (definition, type definition, implementation) at `addressed`.
async fn goto<R>(
    server: &Server,
    addressed: &Addressed,
    cancel: &CancellationToken,
) -> Result<GotoDefinitionResponse, LspError>
where
    R: Request<Params = GotoDefinitionParams, Result = Option<GotoDefinitionResponse>>,
{
    let params = GotoDefinitionParams {
        text_document_position_params: addressed.position_params(),
        work_done_progress_params: Default::default(),
        partial_result_params: Default::default(),
    };
    let answer = server.call::<R>(params, cancel).await;
    let what = R::METHOD.trim_start_matches("textDocument/");
    answer
        .map(|r| r.unwrap_or(GotoDefinitionResponse::Array(Vec::new())))
        .map_err(|e| request_failed(server, what, e))
}

/// The hover text, cut at [`MAX_HOVER_CHARS`] with a note.
fn cut_hover(text: &str) -> String {
    let total = text.chars().count();
    if total <= MAX_HOVER_CHARS {
        return text.to_string();
    }
    text.chars().take(MAX_HOVER_CHARS).collect::<String>()
        + &format!("\n[hover cut at {MAX_HOVER_CHARS} of {total} characters]")
}

fn marked(s: &MarkedString) -> String {
    match s {
        MarkedString::String(s) => s.clone(),
        MarkedString::LanguageString(l) => format!("```{}\n{}\n```", l.language, l.value),
    }
}

pub(super) fn hover_text(contents: &HoverContents) -> String {
    match contents {
        HoverContents::Scalar(s) => marked(s),
        HoverContents::Array(items) => {
            items.iter().map(marked).filter(|s| !s.is_empty()).collect::<Vec<_>>().join("\n\n")
        }
        HoverContents::Markup(m) => m.value.clone(),
    }
}
