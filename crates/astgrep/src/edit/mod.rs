//! `ast_edit` and `resolve`: rewrite templates, staged changes with unified diffs, and the
//! all-or-nothing group write with a content-hash staleness check.

mod diff;
mod render;

use std::{
    collections::{BTreeMap, HashMap},
    path::{Path, PathBuf},
    sync::Mutex,
};

use agent_tools_support::{
    Error as SupportError,
    fs::Root,
    journal::{Change, Expect, Journal},
};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use self::render::{MAX_DIFF_LINES, render_proposal, render_resolution};
pub use crate::rule::fixer::{fix_source, rewrite_source};

use crate::rule::fixer::{Rewritten, Template, apply_rewrites};
use crate::{
    error::AstError,
    lang::ContextKind,
    pattern::first_error,
    rule::Transform,
    search::{Compiled, PatternInfo, plural, query_source, request_language},
    walk::{FileCtx, ScanStats, SearchOptions, Work, line_col, resolve_scope, scan},
};

/// Structural rewrite, staged.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditRequest {
    #[serde(default)]
    pub pattern: Option<String>,
    #[serde(default)]
    #[schemars(schema_with = "crate::search::edit_rule_schema")]
    pub rule: Option<serde_json::Value>,
    /// Replacement using the captures; optional if the rule config has `fix`.
    #[serde(default)]
    pub rewrite: Option<String>,
    #[serde(default)]
    pub path: Option<String>,
    #[serde(default)]
    pub language: Option<String>,
    #[serde(default)]
    #[schemars(schema_with = "crate::search::context_schema")]
    pub context: Option<ContextKind>,
}

/// What to do with a staged edit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ResolveAction {
    /// Write every file of the edit, or none if any changed since staging.
    Accept,
    /// Drop the edit; nothing is written.
    Discard,
}

/// Arguments of `resolve`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResolveRequest {
    /// From ast_edit, e.g. `edit_1`.
    pub edit_id: String,
    #[schemars(schema_with = "crate::edit::action_schema")]
    pub action: ResolveAction,
}

fn action_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "type": "string", "enum": ["accept", "discard"] })
}

/// One file of a proposal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ProposedFile {
    pub file: String,
    pub replacements: usize,
    /// Matches inside (or overlapping) a rewritten match, left as they are.
    pub skipped_nested: usize,
    /// Set when the rewritten file has a syntax error the original did not: `file:line:col`.
    pub new_syntax_error: Option<String>,
}

/// The result of `ast_edit`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Proposal {
    /// The staged edit's id; `None` when nothing matched and nothing was staged.
    pub edit_id: Option<String>,
    pub pattern: PatternInfo,
    pub scope: String,
    pub replacements: usize,
    pub skipped_nested: usize,
    pub files: Vec<ProposedFile>,
    /// Unified diff of the whole change (cut for display by the renderer).
    pub diff: String,
    /// Matches whose rewrite left the code exactly as it was (not staged).
    pub unchanged_matches: usize,
    pub stats: ScanStats,
}

/// The result of `resolve`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Resolution {
    pub edit_id: String,
    pub action: ResolveAction,
    /// Files written (relative to the root); empty for `discard`.
    pub written: Vec<String>,
    /// Absolute paths written, for hosts that report changed files.
    #[serde(skip)]
    pub written_paths: Vec<PathBuf>,
    pub replacements: usize,
    pub files: usize,
}

#[derive(Debug, Clone)]
struct StagedFile {
    path: PathBuf,
    rel: String,
    hash: [u8; 32],
    new_contents: String,
}

#[derive(Debug, Clone)]
struct StagedEdit {
    /// The run's root (canonical): `accept` reopens it and resolves every file beneath it.
    root: PathBuf,
    files: Vec<StagedFile>,
    replacements: usize,
}

#[derive(Default)]
struct StoreState {
    next: u64,
    staged: BTreeMap<u64, StagedEdit>,
    resolved: HashMap<String, &'static str>,
}

/// How many edits stay staged at once; staging more drops the oldest.
pub const MAX_STAGED: usize = 32;

/// Staged edits of one run, and `resolve` over them.
#[derive(Default)]
pub struct EditStore {
    state: Mutex<StoreState>,
}

impl std::fmt::Debug for EditStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EditStore").field("staged", &self.staged_ids()).finish()
    }
}

fn error_count(node: tree_sitter::Node<'_>) -> usize {
    if !node.has_error() {
        return 0;
    }
    let mut count = usize::from(node.is_error() || node.is_missing());
    let mut cursor = node.walk();
    if cursor.goto_first_child() {
        loop {
            count += error_count(cursor.node());
            if !cursor.goto_next_sibling() {
                break;
            }
        }
    }
    count
}

struct FileEdit {
    staged: StagedFile,
    proposed: ProposedFile,
    diff: String,
}

use agent_tools_support::journal::sha256;

/// A file's rewrite, or the number of matches when the rewrite changes nothing.
fn edit_file(ctx: FileCtx<'_>, template: &Template<'_>) -> Result<FileEdit, usize> {
    let src = ctx.src;
    let Rewritten { text: new, edits, kept, skipped } = apply_rewrites(src, ctx.matches, template);
    if new == src {
        return Err(kept);
    }
    let before = error_count(ctx.tree.root_node());
    let new_syntax_error = ctx.parser.parse(&new, None).and_then(|tree| {
        let root = tree.root_node();
        if error_count(root) > before {
            let offset = first_error(root).unwrap_or(0);
            let (line, col) = line_col(&new, offset);
            Some(format!("{}:{line}:{col}", ctx.rel))
        } else {
            None
        }
    });
    let diff = diff::unified(src, &new, &edits, ctx.rel);
    Ok(FileEdit {
        staged: StagedFile {
            path: ctx.path.to_path_buf(),
            rel: ctx.rel.to_string(),
            hash: sha256(src.as_bytes()),
            new_contents: new,
        },
        proposed: ProposedFile {
            file: ctx.rel.to_string(),
            replacements: kept,
            skipped_nested: skipped,
            new_syntax_error,
        },
        diff,
    })
}

impl EditStore {
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, StoreState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Ids of the edits staged and not yet resolved, oldest first.
    pub fn staged_ids(&self) -> Vec<String> {
        self.lock().staged.keys().map(|k| format!("edit_{k}")).collect()
    }

    /// Runs `ast_edit`: matches, rewrites in memory, and stages the change. Nothing is written.
    pub fn propose(
        &self,
        root: &Path,
        request: &EditRequest,
        options: &SearchOptions,
    ) -> Result<Proposal, AstError> {
        let source = query_source(request.pattern.as_deref(), request.rule.as_ref())?;
        let language = request_language(request.language.as_deref(), &source);
        let scope = resolve_scope(root, request.path.as_deref(), language)?;
        let compiled = Compiled::new(scope.lang, &source, request.context)?;
        let (rewrite, transforms): (&str, &[(String, Transform)]) = match (
            &compiled,
            &request.rewrite,
        ) {
            (Compiled::Rule(r), rewrite) => match rewrite.as_deref().or(r.fix_template()) {
                Some(t) => (t, &r.transforms),
                None => {
                    return Err(AstError::Rewrite(
                        "give `rewrite` (the replacement, with `$X` for captures) or a `fix` in the rule config".into(),
                    ));
                }
            },
            (Compiled::Pattern(_), Some(t)) => (t.as_str(), &[]),
            (Compiled::Pattern(_), None) => {
                return Err(AstError::Rewrite(
                    "`rewrite` is required: the replacement, with `$X`/`$$$X` for what the pattern captured".into(),
                ));
            }
        };
        let template =
            Template::new(scope.lang, rewrite, compiled.query().metavariables(), transforms)?;
        let info = compiled.info();
        let scan =
            scan(&scope, compiled.query(), options, Work::Edit, &|ctx| edit_file(ctx, &template))?;
        let mut unchanged_matches = 0;
        let mut edits: Vec<FileEdit> = Vec::new();
        for (_, outcome) in scan.files {
            match outcome {
                Ok(edit) => edits.push(edit),
                Err(n) => unchanged_matches += n,
            }
        }
        let replacements = edits.iter().map(|e| e.proposed.replacements).sum();
        let skipped_nested = edits.iter().map(|e| e.proposed.skipped_nested).sum();
        let diff: String = edits.iter().map(|e| e.diff.as_str()).collect();
        let files: Vec<ProposedFile> = edits.iter().map(|e| e.proposed.clone()).collect();
        let edit_id = if edits.is_empty() {
            None
        } else {
            let mut state = self.lock();
            state.next += 1;
            let id = state.next;
            state.staged.insert(
                id,
                StagedEdit {
                    root: scope.root.clone(),
                    files: edits.into_iter().map(|e| e.staged).collect(),
                    replacements,
                },
            );
            while state.staged.len() > MAX_STAGED {
                if let Some((old, _)) = state.staged.pop_first() {
                    state.resolved.insert(format!("edit_{old}"), "dropped (too many staged edits)");
                }
            }
            Some(format!("edit_{id}"))
        };
        Ok(Proposal {
            edit_id,
            pattern: info,
            scope: scope.display,
            replacements,
            skipped_nested,
            files,
            diff,
            unchanged_matches,
            stats: scan.stats,
        })
    }

    /// The files of a staged edit and what accept would write to each (absolute paths), for a
    /// host that checks a proposal before it is written; `None` when `edit_id` is not staged.
    pub fn staged_contents(&self, edit_id: &str) -> Option<Vec<(PathBuf, String)>> {
        let key = edit_id.trim().strip_prefix("edit_")?.parse::<u64>().ok()?;
        let state = self.lock();
        let edit = state.staged.get(&key)?;
        Some(edit.files.iter().map(|f| (f.path.clone(), f.new_contents.clone())).collect())
    }

    /// Runs `resolve`: accept writes every file of the edit or none; discard drops it.
    pub fn resolve(&self, request: &ResolveRequest) -> Result<Resolution, AstError> {
        let id = request.edit_id.trim();
        let key = id.strip_prefix("edit_").and_then(|n| n.parse::<u64>().ok());
        let mut state = self.lock();
        let edit = match key.and_then(|k| state.staged.remove(&k)) {
            Some(edit) => edit,
            None => {
                if let Some(how) = state.resolved.get(id) {
                    return Err(AstError::UnknownEdit(format!(
                        "`{id}` was already {how}; stage the change again with ast_edit if you still want it"
                    )));
                }
                let staged: Vec<String> =
                    state.staged.keys().map(|k| format!("edit_{k}")).collect();
                return Err(AstError::UnknownEdit(format!(
                    "unknown edit_id `{id}`; {}",
                    if staged.is_empty() {
                        "no edit is staged in this run (ast_edit stages one)".to_string()
                    } else {
                        format!("staged in this run: {}", staged.join(", "))
                    }
                )));
            }
        };
        let files = edit.files.len();
        match request.action {
            ResolveAction::Discard => {
                state.resolved.insert(id.to_string(), "discarded");
                Ok(Resolution {
                    edit_id: id.to_string(),
                    action: ResolveAction::Discard,
                    written: Vec::new(),
                    written_paths: Vec::new(),
                    replacements: edit.replacements,
                    files,
                })
            }
            ResolveAction::Accept => {
                let result = accept(&edit);
                state.resolved.insert(
                    id.to_string(),
                    if result.is_ok() { "accepted" } else { "rejected (nothing was written)" },
                );
                result?;
                Ok(Resolution {
                    edit_id: id.to_string(),
                    action: ResolveAction::Accept,
                    written: edit.files.iter().map(|f| f.rel.clone()).collect(),
                    written_paths: edit.files.iter().map(|f| f.path.clone()).collect(),
                    replacements: edit.replacements,
                    files,
                })
            }
        }
    }
}

/// Writes every file of the edit or none, through the support crate: each file is resolved
/// beneath the root by handle (a folder swapped for a symlink after staging can never redirect
/// the write out of the root), re-hashed, and the group is committed crash-atomically with an
/// intent journal outside the tree.
fn accept(edit: &StagedEdit) -> Result<(), AstError> {
    let root = Root::open(&edit.root).map_err(|e| AstError::Io(e.to_string()))?;
    let mut stale = Vec::new();
    let mut changes = Vec::with_capacity(edit.files.len());
    for f in &edit.files {
        let rel = root.confine(&f.rel, "path").map_err(|e| AstError::Path(e.to_string()))?;
        match root.read(&rel, "path") {
            Ok(bytes) if sha256(&bytes) == f.hash => changes.push(Change::write(
                rel,
                f.new_contents.clone().into_bytes(),
                Expect::Sha256(f.hash),
            )),
            Ok(_) => stale.push((f, "changed".to_string())),
            Err(e @ (SupportError::Escapes { .. } | SupportError::Outside { .. })) => {
                stale.push((f, format!("no longer inside the root: {e}")));
            }
            Err(_) => stale.push((f, "missing or unreadable".to_string())),
        }
    }
    if !stale.is_empty() {
        let list: Vec<String> = stale.iter().map(|(f, why)| format!("{} ({why})", f.rel)).collect();
        return Err(AstError::Stale {
            message: format!(
                "not applied: {} of {} {} changed since the edit was staged: {}. Nothing was written and the \
                 edit was dropped; call ast_edit again to stage it against the current content",
                stale.len(),
                edit.files.len(),
                plural(edit.files.len(), "file", "files"),
                list.join(", ")
            ),
            files: stale.iter().map(|(f, _)| f.path.clone()).collect(),
        });
    }
    let journal = Journal::for_root(&root).map_err(|e| AstError::Io(e.to_string()))?;
    journal.commit(&root, &changes).map(|_| ()).map_err(|e| match e {
        SupportError::Changed { .. } => AstError::Stale {
            message: format!(
                "not applied: {e}. Nothing was written and the edit was dropped; call ast_edit again"
            ),
            files: edit.files.iter().map(|f| f.path.clone()).collect(),
        },
        other => AstError::Io(format!("not applied, nothing was written: {other}")),
    })
}
