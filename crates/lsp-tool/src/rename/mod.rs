//! `lsp_rename`: `prepareRename`, a collision check, then the server's WorkspaceEdit applied
//! all or nothing through [`crate::workspace_edit`] (every document version and on-disk
//! content checked first, every new file content computed in memory, all files written
//! atomically, the changed files synced back to the server).

mod collision;
mod report;

use collision::check_collision;

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    sync::Arc,
    time::{Duration, Instant},
};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

pub use self::report::{RenameReport, RenamedFile};
use crate::{
    actions::{LspOutput, locate},
    error::LspError,
    names::check_new_name,
    paths::{display_relative, resolve_in_root, uri_from_path},
    scan::Mention,
    server::{Feature, Save, Scope, Server},
    supervisor::{Supervisor, server_label},
    transport::RequestError,
    workspace_edit::{EditOp, EditPlan, commit_edit, parse_workspace_edit, plan_edit, stale_files},
};

/// Arguments of `lsp_rename`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RenameArgs {
    /// File where the symbol stands, relative to the workspace root.
    pub file: String,
    /// 1-based line of the symbol.
    pub line: u32,
    /// Text on that line that marks the symbol (whole-word match preferred).
    pub symbol: String,
    /// Which occurrence of `symbol` on the line, 1-based (default 1).
    #[serde(default)]
    pub occurrence: Option<u32>,
    /// The new name.
    pub new_name: String,
}

impl JsonSchema for RenameArgs {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "RenameArgs".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        crate::args_schema::with_position(
            serde_json::json!({}),
            serde_json::json!({"new_name": {"type": "string"}}),
            &["file", "line", "symbol", "new_name"],
        )
    }
}

impl RenameArgs {
    /// Renames `symbol`, text on 1-based `line` of `file`, to `new_name`.
    pub fn new(
        file: impl Into<String>,
        line: u32,
        symbol: impl Into<String>,
        new_name: impl Into<String>,
    ) -> RenameArgs {
        RenameArgs {
            file: file.into(),
            line,
            symbol: symbol.into(),
            occurrence: None,
            new_name: new_name.into(),
        }
    }
}

/// The identifier at byte `start` of `line` (what a rename replaces).
fn identifier_at(line: &str, start: usize) -> &str {
    let rest = &line[start..];
    let end = rest
        .char_indices()
        .find(|(_, c)| !(c.is_alphanumeric() || *c == '_' || *c == '$'))
        .map_or(rest.len(), |(i, _)| i);
    &rest[..end]
}

/// One rename as it is carried out: the server, where, and how it is named in messages.
struct Renaming<'a> {
    server: Arc<Server>,
    position: lsp_types::TextDocumentPositionParams,
    /// `` `symbol` at file:line:col ``, for messages.
    at: String,
    label: String,
    old_name: String,
    new_name: &'a str,
    language: String,
    /// How long the server may take to be ready for the project.
    budget: Duration,
    cancel: &'a CancellationToken,
}

/// Why a rename could not go on.
enum Blocked {
    /// The server's view of the project is stale (its edit misses files or does not match
    /// them, also when asked again): a restart clears it. The sentence says what was seen.
    StaleView(String),
    Failed(LspError),
}

impl From<LspError> for Blocked {
    fn from(e: LspError) -> Self {
        Blocked::Failed(e)
    }
}

/// Runs one `lsp_rename` call: the symbol located in what the server has, the server's
/// checks (prepareRename, a name the scope already declares), its edit as long as it
/// matches the files, then written all or nothing with the diagnostics it introduced. A
/// server whose view of the project is stale is restarted and asked once more.
pub(crate) async fn rename(
    sup: &Supervisor,
    args: RenameArgs,
    cancel: &CancellationToken,
) -> Result<LspOutput, LspError> {
    let stale = match rename_once(sup, &args, None, cancel).await {
        Ok(out) => return Ok(out),
        Err(Blocked::Failed(e)) => return Err(e),
        Err(Blocked::StaleView(why)) => why,
    };
    let path = resolve_in_root(sup.root(), &args.file, "file").map_err(LspError::Invalid)?;
    let target = sup.target_for(&path)?;
    let (server, _) = sup.reload_target(&target, cancel).await?;
    let restarted = format!("{} was restarted first: {stale}", server_label(&server));
    match rename_once(sup, &args, Some(restarted), cancel).await {
        Ok(out) => Ok(out),
        Err(Blocked::Failed(e)) => Err(e),
        Err(Blocked::StaleView(why)) => Err(LspError::Failed(format!(
            "rename of `{}` at {}:{} refused: {why}, also after the server was restarted; nothing was changed. Check the files named",
            args.symbol, args.file, args.line
        ))),
    }
}

/// One attempt of [`rename`]; `restarted` says why the server was restarted before it.
async fn rename_once(
    sup: &Supervisor,
    args: &RenameArgs,
    restarted: Option<String>,
    cancel: &CancellationToken,
) -> Result<LspOutput, Blocked> {
    let renaming = start_rename(sup, args, cancel).await?;
    renaming.prepare().await?;
    check_collision(
        sup,
        &renaming.server,
        &renaming.position,
        &args.new_name,
        &renaming.at,
        cancel,
    )
    .await?;
    let FreshEdit { ops, open, unedited } = fresh_rename_edit(sup, &renaming).await?;
    let at = &renaming.at;
    let plan = plan_edit(sup.root(), &ops, renaming.server.encoding, &|p| open.get(p).cloned())
        .map_err(|e| {
            LspError::Failed(format!("rename of {at} rejected: {e}; nothing was changed"))
        })?;
    let mut report = rename_report(sup, &plan, at, &args.new_name);
    report.unedited = unedited
        .iter()
        .filter(|p| !plan.files.contains_key(*p))
        .map(|p| display_relative(sup.root(), p))
        .collect();
    report.old_name = renaming.old_name.clone();
    report.server = renaming.label.clone();
    report.restarted = restarted;
    if plan.files.is_empty() {
        let text = report.render();
        return Ok(LspOutput::new(text, serde_json::to_value(&report).unwrap_or_default()));
    }
    report.diagnostics =
        commit_edit(sup, &renaming.server, &plan, &format!("rename of {at}"), cancel).await?;
    let text = report.render();
    let mut out = LspOutput::new(text, serde_json::to_value(&report).unwrap_or_default());
    out.changed_files = plan.files.keys().cloned().collect();
    Ok(out)
}

/// Checks the arguments, starts the server and locates the symbol in the text it has.
async fn start_rename<'a>(
    sup: &Supervisor,
    args: &'a RenameArgs,
    cancel: &'a CancellationToken,
) -> Result<Renaming<'a>, LspError> {
    let path = resolve_in_root(sup.root(), &args.file, "file").map_err(LspError::Invalid)?;
    let shown = display_relative(sup.root(), &path);
    if !path.is_file() {
        return Err(LspError::Invalid(format!(
            "argument `file`: {} is not an existing file",
            args.file
        )));
    }
    if args.new_name.trim().is_empty() {
        return Err(LspError::Invalid("argument `new_name` is empty".into()));
    }
    let text = crate::paths::read_source(&path)
        .map_err(|e| LspError::Invalid(format!("cannot read {shown}: {e}")))?;
    locate(&text, &shown, args.line, &args.symbol, args.occurrence)?;
    let target = sup.target_for(&path)?;
    check_new_name(&target.language_id, &args.new_name).map_err(LspError::Invalid)?;
    let server = sup.server(&target, cancel).await?;
    server.resync_open().await;
    let doc = server
        .sync(&path, &target.language_id, Save::Skip, sup.run_id())
        .await
        .map_err(LspError::Failed)?;
    let located = locate(&doc.text, &shown, args.line, &args.symbol, args.occurrence)?;
    let old_name = identifier_at(&located.line_text, located.start).to_string();
    if old_name == args.new_name {
        return Err(LspError::Invalid(format!(
            "argument `new_name`: `{old_name}` is already the symbol's name; nothing was changed"
        )));
    }
    let label = server_label(&server);
    if !server.offers(Feature::Rename) {
        return Err(LspError::Failed(format!("{label} does not offer rename")));
    }
    let budget = Duration::from_millis(sup.config().ready_timeout_ms);
    server.wait_ready(Scope::Project, Instant::now() + budget, cancel).await.map_err(|why| {
        why.into_error("rename (nothing was changed)", &server.def.display_languages(), budget)
    })?;
    let Some(uri) = uri_from_path(&path) else {
        return Err(LspError::Invalid(format!("{shown} has no file URI")));
    };
    let position = lsp_types::TextDocumentPositionParams {
        text_document: lsp_types::TextDocumentIdentifier { uri },
        position: lsp_types::Position {
            line: located.line,
            character: located.start_in(server.encoding),
        },
    };
    let at = format!("`{}` at {shown}:{}:{}", args.symbol, args.line, located.display_column());
    Ok(Renaming {
        server,
        position,
        at,
        label,
        old_name,
        new_name: &args.new_name,
        language: target.language_id.clone(),
        budget,
        cancel,
    })
}

/// The server's edit for a rename, what the server has for every document it touches, and
/// the files it may have missed.
struct FreshEdit {
    ops: Vec<EditOp>,
    open: BTreeMap<PathBuf, (i32, String)>,
    /// Files that import an edited file and still say the old name, but only as a word (it
    /// may be a name of their own), after the server was asked again with them open.
    unedited: Vec<PathBuf>,
}

/// The server's edit for the rename, asked again once when it may come from a partial view:
/// - a stale view: the server read a file before something outside the tools changed it, and
///   the edit's ranges no longer cover the old name there;
/// - a view without some importers: files that import an edited file and say the old name are
///   not in the edit (a server that restarted, or was stopped, before it read them).
///
/// Those files are opened (the server then has exactly what is on disk) and the edit asked
/// again. Still stale, it is refused; so is an edit that still leaves out an importer naming
/// the symbol through its import (`from pkg.scale import factor`), which would break it.
/// Importers that only say the name as a word are named in the report.
async fn fresh_rename_edit(sup: &Supervisor, r: &Renaming<'_>) -> Result<FreshEdit, Blocked> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        let ops = r.edit().await?;
        let mut open = BTreeMap::new();
        for op in &ops {
            if let EditOp::Text { path, .. } = op
                && let Some(doc) = r.server.open_doc(path).await
            {
                open.insert(path.clone(), doc);
            }
        }
        let stale = stale_files(&ops, &r.old_name, r.server.encoding, &|p| open.contains_key(p));
        let unedited =
            if stale.is_empty() { unedited_importers(r, &ops).await } else { Vec::new() };
        if stale.is_empty() && (unedited.is_empty() || attempt >= 2) {
            return through_import_refused(sup, r, unedited).map(|unedited| FreshEdit {
                ops,
                open,
                unedited,
            });
        }
        if attempt >= 2 {
            let names: Vec<String> =
                stale.iter().map(|p| display_relative(sup.root(), p)).collect();
            return Err(Blocked::StaleView(format!(
                "its edit did not match the current content of {} (changed on disk since it read them)",
                names.join(", ")
            )));
        }
        let events: Vec<(PathBuf, lsp_types::FileChangeType)> =
            stale.iter().map(|p| (p.clone(), lsp_types::FileChangeType::CHANGED)).collect();
        r.server.files_changed(&events).await;
        for p in stale.iter().chain(unedited.iter().map(|(p, _)| p)) {
            let ext = p.extension().and_then(|e| e.to_str()).unwrap_or("");
            let language = r.server.def.language_of(ext).unwrap_or(&r.language).to_string();
            r.server
                .sync(p, &language, Save::Skip, sup.run_id())
                .await
                .map_err(LspError::Failed)?;
        }
        let _ = r.server.wait_ready(Scope::Project, Instant::now() + r.budget, r.cancel).await;
    }
}

/// Refuses an edit that leaves out an importer naming the symbol through its import; returns
/// the importers that only say the name as a word.
fn through_import_refused(
    sup: &Supervisor,
    r: &Renaming<'_>,
    unedited: Vec<(PathBuf, Mention)>,
) -> Result<Vec<PathBuf>, Blocked> {
    let (through, word): (Vec<_>, Vec<_>) =
        unedited.into_iter().partition(|(_, how)| *how == Mention::ThroughImport);
    if !through.is_empty() {
        let names: Vec<String> =
            through.iter().map(|(p, _)| display_relative(sup.root(), p)).collect();
        return Err(Blocked::StaleView(format!(
            "{} import `{}` from a renamed file, but {}'s edit left them out, also when asked again with them open (a stale view of the project)",
            names.join(", "),
            r.old_name,
            r.label
        )));
    }
    Ok(word.into_iter().map(|(p, _)| p).collect())
}

/// The importers of the edit's files (and of the renamed symbol's file) that say the old name
/// but are not in the edit, and how they say it, found off the async threads; at most
/// [`MAX_UNEDITED`].
async fn unedited_importers(r: &Renaming<'_>, ops: &[EditOp]) -> Vec<(PathBuf, Mention)> {
    let mut edited: Vec<PathBuf> = ops
        .iter()
        .filter_map(|op| match op {
            EditOp::Text { path, .. } => Some(path.clone()),
            _ => None,
        })
        .collect();
    if edited.is_empty() {
        return Vec::new();
    }
    if let Some(path) = crate::paths::path_from_uri(&r.position.text_document.uri)
        && !edited.contains(&path)
    {
        edited.push(path);
    }
    let (root, def, name) = (r.server.root.clone(), r.server.def.clone(), r.old_name.clone());
    let mut found = tokio::task::spawn_blocking(move || {
        crate::scan::unedited_importers(&root, &def, &edited, &name)
    })
    .await
    .unwrap_or_default();
    found.truncate(MAX_UNEDITED);
    found
}

/// How many left-out importers a rename opens and asks again about (a common name in a module
/// many files import must not open the whole project).
const MAX_UNEDITED: usize = 64;

/// What the rename changes, per file, before it is written.
fn rename_report(sup: &Supervisor, plan: &EditPlan, at: &str, new_name: &str) -> RenameReport {
    let shown = |p: &Path| display_relative(sup.root(), p);
    RenameReport {
        at: at.to_string(),
        new_name: new_name.to_string(),
        edits: plan.edits_per_file.values().sum(),
        files: plan
            .edits_per_file
            .iter()
            .map(|(p, n)| RenamedFile { path: shown(p), edits: *n })
            .collect(),
        moved: plan.renamed.iter().map(|(a, b)| format!("{} → {}", shown(a), shown(b))).collect(),
        created: plan.created.iter().map(|p| shown(p)).collect(),
        deleted: plan.deleted.iter().map(|p| shown(p)).collect(),
        unedited: Vec::new(),
        restarted: None,
        old_name: String::new(),
        server: String::new(),
        diagnostics: None,
    }
}

impl Renaming<'_> {
    fn fail(&self, what: &str, e: RequestError) -> LspError {
        LspError::Failed(format!("rename of {}: {what} failed: {e}; nothing was changed", self.at))
    }

    /// `textDocument/prepareRename` where the server offers it: no renameable symbol there is
    /// refused before anything else is asked.
    async fn prepare(&self) -> Result<(), LspError> {
        if !self.server.capabilities.prepares_rename() {
            return Ok(());
        }
        let answer = self
            .server
            .call::<lsp_types::request::PrepareRenameRequest>(self.position.clone(), self.cancel)
            .await;
        match answer {
            Ok(None) => Err(LspError::Invalid(format!(
                "{} cannot be renamed: {} says there is no renameable symbol there; nothing was changed",
                self.at, self.label
            ))),
            Ok(_) => Ok(()),
            Err(RequestError::Server { message, .. }) => Err(LspError::Invalid(format!(
                "{} cannot be renamed: {message}; nothing was changed",
                self.at
            ))),
            Err(e) => Err(self.fail("prepareRename", e)),
        }
    }

    /// The server's `textDocument/rename` edit, parsed.
    async fn edit(&self) -> Result<Vec<EditOp>, LspError> {
        let params = lsp_types::RenameParams {
            text_document_position: self.position.clone(),
            new_name: self.new_name.to_string(),
            work_done_progress_params: Default::default(),
        };
        let edit =
            self.server.call::<lsp_types::request::Rename>(params, self.cancel).await.map_err(
                |e| match e {
                    RequestError::Server { message, .. } => LspError::Invalid(format!(
                        "{} cannot be renamed to `{}`: {message}; nothing was changed",
                        self.at, self.new_name
                    )),
                    other => self.fail("rename", other),
                },
            )?;
        let Some(edit) = edit else {
            return Err(LspError::Invalid(format!(
                "{}: {} returned no edit; nothing was changed",
                self.at, self.label
            )));
        };
        parse_workspace_edit(&edit).map_err(|e| {
            LspError::Failed(format!(
                "rename of {}: the server's edit has {e}; nothing was changed",
                self.at
            ))
        })
    }
}
