//! `lsp_code_action`: applies one code action that `lsp code_actions` listed, through the same
//! all-or-nothing writer as `lsp_rename` (a write-tier operation, so its own tool).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::{
    actions::{Action, LspArgs, LspOutput, offered_code_actions},
    error::LspError,
    on_write::report::WriteDiagnostics,
    paths::display_relative,
    rename::RenamedFile,
    supervisor::Supervisor,
    workspace_edit::{EditOp, commit_edit, parse_workspace_edit, plan_edit},
};

/// Arguments of `lsp_code_action`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CodeActionArgs {
    pub file: String,
    pub line: u32,
    pub symbol: String,
    #[serde(default)]
    pub occurrence: Option<u32>,
    /// The action's number in the `code_actions` listing (1-based).
    pub index: u32,
}

impl JsonSchema for CodeActionArgs {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "CodeActionArgs".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        crate::args_schema::with_position(
            serde_json::json!({}),
            serde_json::json!({"index": {"type": "integer", "minimum": 1}}),
            &["file", "line", "symbol", "index"],
        )
    }
}

impl CodeActionArgs {
    /// The `index`-th (1-based) action `lsp code_actions` listed for `symbol` on `line` of `file`.
    pub fn new(file: impl Into<String>, line: u32, symbol: impl Into<String>, index: u32) -> Self {
        CodeActionArgs { file: file.into(), line, symbol: symbol.into(), occurrence: None, index }
    }
}

/// The `lsp_code_action` tool's description for a model.
pub const CODE_ACTION_DESCRIPTION: &str = "Apply one code action `lsp code_actions` listed: \
the same file, line, symbol, and its number as index. All or nothing; lists the changed files \
and new diagnostics.";

/// The result of `lsp_code_action`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct CodeActionReport {
    pub title: String,
    pub edits: usize,
    pub files: Vec<RenamedFile>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diagnostics: Option<WriteDiagnostics>,
}

impl CodeActionReport {
    /// The model-facing text.
    pub fn render(&self) -> String {
        let mut lines = vec![format!(
            "applied `{}`: {} edit(s) in {} file(s)",
            self.title,
            self.edits,
            self.files.len()
        )];
        lines.extend(self.files.iter().map(|f| format!("  {}: {} edit(s)", f.path, f.edits)));
        if let Some(d) = &self.diagnostics {
            lines.push(String::new());
            lines.push(d.render());
        }
        lines.join("\n")
    }
}

/// Runs one `lsp_code_action` call: lists the actions at the position again (so the edit
/// matches the current content), takes the `index`-th and writes its edit.
pub(crate) async fn apply_code_action(
    sup: &Supervisor,
    args: CodeActionArgs,
    cancel: &CancellationToken,
) -> Result<LspOutput, LspError> {
    let listing = LspArgs {
        action: Action::CodeActions,
        file: Some(args.file.clone()),
        line: Some(args.line),
        symbol: Some(args.symbol.clone()),
        occurrence: args.occurrence,
        query: None,
        offset: None,
        include_hints: false,
    };
    let actions = offered_code_actions(sup, &listing, cancel).await?;
    let Some(action) = args.index.checked_sub(1).and_then(|i| actions.get(i as usize)) else {
        return Err(LspError::Invalid(format!(
            "argument `index`: {} is not an action here; {} action(s) are offered at {}:{} (call lsp code_actions to list them)",
            args.index,
            actions.len(),
            args.file,
            args.line
        )));
    };
    let title = action.item.title.clone();
    if let Some(reason) = &action.item.disabled {
        return Err(LspError::Invalid(format!(
            "`{title}` is disabled: {reason}; nothing was changed"
        )));
    }
    let Some(edit) = action.edit.as_ref() else {
        return Err(LspError::Invalid(format!(
            "`{title}` has no edit (it runs a server command, which this tool does not apply); nothing was changed"
        )));
    };
    let path =
        crate::paths::resolve_in_root(sup.root(), &args.file, "file").map_err(LspError::Invalid)?;
    let target = sup.target_for(&path)?;
    let server = sup.server(&target, cancel).await?;
    let ops = parse_workspace_edit(edit).map_err(|e| {
        LspError::Failed(format!("`{title}`: the edit has {e}; nothing was changed"))
    })?;
    let mut open = std::collections::BTreeMap::new();
    for op in &ops {
        if let EditOp::Text { path, .. } = op
            && let Some(doc) = server.open_doc(path).await
        {
            open.insert(path.clone(), doc);
        }
    }
    let plan = plan_edit(sup.root(), &ops, server.encoding, &|p| open.get(p).cloned())
        .map_err(|e| LspError::Failed(format!("`{title}` rejected: {e}; nothing was changed")))?;
    let mut report = CodeActionReport {
        title: title.clone(),
        edits: plan.edits_per_file.values().sum(),
        files: plan
            .edits_per_file
            .iter()
            .map(|(p, n)| RenamedFile { path: display_relative(sup.root(), p), edits: *n })
            .collect(),
        diagnostics: None,
    };
    if !plan.files.is_empty() {
        report.diagnostics =
            commit_edit(sup, &server, &plan, &format!("`{title}`"), cancel).await?;
    }
    let mut out =
        LspOutput::new(report.render(), serde_json::to_value(&report).unwrap_or_default());
    out.changed_files = plan.files.keys().cloned().collect();
    Ok(out)
}
