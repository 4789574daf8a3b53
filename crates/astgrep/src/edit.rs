//! `ast_edit` and `resolve`: rewrite templates, staged changes with unified diffs, and the
//! all-or-nothing group write with a content-hash staleness check.

use std::{
    collections::{BTreeMap, HashMap},
    fmt::Write as _,
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

use crate::{
    error::AstError,
    lang::{ContextKind, Lang},
    matcher::RawMatch,
    pattern::{Pattern, first_error},
    rule::{RuleSet, Transform},
    search::{
        Compiled, PatternInfo, count, explain_empty, one_line, plural, query_source,
        request_language,
    },
    walk::{FileCtx, ScanStats, SearchOptions, line_col, resolve_scope, scan},
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

/// A parsed rewrite template.
#[derive(Debug, Clone)]
enum Seg {
    Text(String),
    Var(usize),
}

/// Parses a template as ast-grep does: `$NAME` or `$$NAME` is one capture, `$$$NAME` a list;
/// a name starts with `A`–`Z` or `_` and runs over `A`–`Z`, `0`–`9`, `_` (so `$Abc` is `$A`
/// then `bc`, and `$$$$A` is `$` then `$$$A`); any other `$` is text.
fn compile_template(lang: Lang, rewrite: &str, names: &[String]) -> Result<Vec<Seg>, AstError> {
    let bare: Vec<&str> = names.iter().map(|n| n.trim_start_matches('$')).collect();
    let bytes = rewrite.as_bytes();
    let mut segs = Vec::new();
    let mut text = String::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'$' {
            let Some(c) = rewrite[i..].chars().next() else { break };
            text.push(c);
            i += c.len_utf8();
            continue;
        }
        let start = i;
        let mut dollars = 1;
        while dollars < 3 && bytes.get(start + dollars) == Some(&b'$') {
            dollars += 1;
        }
        let name_start = start + dollars;
        let first_ok = bytes.get(name_start).is_some_and(|b| b.is_ascii_uppercase() || *b == b'_');
        if !first_ok {
            // Not a metavariable here: this `$` is text, and the next one may start one.
            text.push('$');
            i = start + 1;
            continue;
        }
        let mut end = name_start;
        while end < bytes.len()
            && (bytes[end].is_ascii_uppercase()
                || bytes[end].is_ascii_digit()
                || bytes[end] == b'_')
        {
            end += 1;
        }
        let name = &rewrite[name_start..end];
        let spelled = &rewrite[start..end];
        i = end;
        if lang == Lang::Bash && dollars == 2 {
            // `$$` is the shell's process id: `$$NAME` is that, then text.
            text.push_str(spelled);
            continue;
        }
        if name.starts_with('_') {
            return Err(AstError::Rewrite(format!(
                "`{spelled}` binds nothing, so it cannot be substituted; name it in the pattern (`$X`) to reuse it"
            )));
        }
        match bare.iter().position(|b| *b == name) {
            Some(index) => {
                if !text.is_empty() {
                    segs.push(Seg::Text(std::mem::take(&mut text)));
                }
                segs.push(Seg::Var(index));
            }
            None if lang == Lang::Bash => text.push_str(spelled),
            None => {
                return Err(AstError::Rewrite(format!(
                    "`{spelled}` is not bound by the pattern; the pattern binds {}{}",
                    if names.is_empty() {
                        "no metavariables".to_string()
                    } else {
                        names.join(", ")
                    },
                    if rewrite[end..].starts_with(|c: char| c.is_ascii_lowercase()) {
                        format!(
                            " (a name is uppercase letters, digits and `_`, so `{spelled}{}` reads as `{spelled}` then text)",
                            rewrite[end..]
                                .chars()
                                .take_while(char::is_ascii_alphanumeric)
                                .collect::<String>()
                        )
                    } else {
                        String::new()
                    }
                )));
            }
        }
    }
    if !text.is_empty() {
        segs.push(Seg::Text(text));
    }
    Ok(segs)
}

/// The text of `range` with the indentation of its first line taken off its later lines: what
/// a transformation reads of a multi-line capture, as in ast-grep.
fn deindented(src: &str, range: std::ops::Range<usize>) -> String {
    let text = &src[range.clone()];
    if !text.contains('\n') {
        return text.to_string();
    }
    let from = line_indent(src, range.start);
    let lines: Vec<&str> = text
        .split('\n')
        .enumerate()
        .map(|(i, l)| if i == 0 { l } else { l.strip_prefix(from).unwrap_or(l.trim_start()) })
        .collect();
    lines.join("\n")
}

fn line_indent(src: &str, offset: usize) -> &str {
    let line_start = src[..offset].rfind('\n').map_or(0, |i| i + 1);
    let line = &src[line_start..];
    let end = line.find(|c: char| c != ' ' && c != '\t').unwrap_or(line.len());
    &line[..end.min(offset - line_start)]
}

/// The replacement for one match: captures substituted, multi-line text re-indented;
/// `values` are the transformed variables, numbered after the captures.
fn expand(segs: &[Seg], m: &RawMatch, src: &str, values: &[String]) -> String {
    let base = line_indent(src, m.replace.start);
    let mut out = String::new();
    // The indentation the current output line will have in the file: the first line sits at
    // the match's own line.
    let current_indent = |out: &str| -> String {
        let at_line = out.rfind('\n').map_or(0, |i| i + 1);
        let own: String = out[at_line..].chars().take_while(|c| *c == ' ' || *c == '\t').collect();
        if at_line == 0 { format!("{base}{own}") } else { own }
    };
    let mut pending: Option<String> = None;
    // Comments inside the replaced code that no capture holds go after the capture they
    // followed in the source (or before the first capture), so a rewrite keeps them.
    let owner = |c: &std::ops::Range<usize>| -> Option<usize> {
        m.captures
            .iter()
            .enumerate()
            .filter_map(|(i, r)| r.as_ref().filter(|r| r.end <= c.start).map(|r| (i, r.end)))
            .max_by_key(|(_, end)| *end)
            .map(|(i, _)| i)
    };
    let comments: Vec<(Option<usize>, &str)> = m
        .comments
        .iter()
        .map(|c| (owner(c), &src[c.clone()]))
        .filter(|(_, text)| !segs.iter().any(|s| matches!(s, Seg::Text(t) if t.contains(text))))
        .collect();
    let mut placed = vec![false; comments.len()];
    for seg in segs {
        if let Seg::Var(_) = seg {
            for (k, (who, text)) in comments.iter().enumerate() {
                if who.is_none() && !placed[k] {
                    out.push_str(text);
                    out.push(' ');
                    placed[k] = true;
                }
            }
        }
        match seg {
            Seg::Text(t) => {
                for (i, piece) in t.split('\n').enumerate() {
                    if let Some(indent) = pending.take()
                        && i == 0
                        && !piece.is_empty()
                    {
                        out.push_str(&indent);
                    }
                    if i > 0 {
                        out.push('\n');
                        if !piece.is_empty() {
                            out.push_str(base);
                        }
                    }
                    out.push_str(piece);
                }
            }
            Seg::Var(index) if *index >= m.captures.len() => {
                if let Some(indent) = pending.take() {
                    out.push_str(&indent);
                }
                if let Some(v) = values.get(*index - m.captures.len()) {
                    // A transformed value is de-indented text (see `Template::values`): its
                    // later lines take the indentation of the line it lands on, as ast-grep
                    // indents it.
                    let to = current_indent(&out);
                    for (i, line) in v.split('\n').enumerate() {
                        if i > 0 {
                            out.push('\n');
                            if !line.trim().is_empty() {
                                out.push_str(&to);
                            }
                        }
                        out.push_str(line);
                    }
                }
            }
            Seg::Var(index) => 'var: {
                let Some(Some(range)) = m.captures.get(*index) else { break 'var };
                let text = &src[range.clone()];
                if let Some(indent) = pending.take() {
                    out.push_str(&indent);
                }
                if !text.contains('\n') {
                    out.push_str(text);
                    break 'var;
                }
                let from = line_indent(src, range.start);
                let to = current_indent(&out);
                for (i, line) in text.split('\n').enumerate() {
                    if i > 0 {
                        out.push('\n');
                        if !line.trim().is_empty() {
                            out.push_str(&to);
                            out.push_str(line.strip_prefix(from).unwrap_or(line.trim_start()));
                        }
                    } else {
                        out.push_str(line);
                    }
                }
                // A capture ending in a line break (Go's newline terminator): what follows on
                // that line lines up with where the capture began.
                if text.ends_with('\n') {
                    pending = Some(to);
                }
            }
        }
        if let Seg::Var(index) = seg {
            for (k, (who, text)) in comments.iter().enumerate() {
                if *who == Some(*index) && !placed[k] {
                    out.push(' ');
                    out.push_str(text);
                    placed[k] = true;
                }
            }
        }
    }
    for (k, (_, text)) in comments.iter().enumerate() {
        if !placed[k] {
            out.push(' ');
            out.push_str(text);
        }
    }
    out
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

/// The source with every kept match replaced: outermost matches win, nested ones are counted.
/// Only the range a match's pattern tokens cover is replaced, so a trailing comment or `;`
/// inside the matched node that the pattern does not mention stays.
fn apply_rewrites(
    src: &str,
    mut matches: Vec<RawMatch>,
    template: &Template<'_>,
) -> (String, usize, usize) {
    matches.sort_by(|a, b| a.range.start.cmp(&b.range.start).then(b.range.end.cmp(&a.range.end)));
    let mut kept: Vec<&RawMatch> = Vec::new();
    let mut skipped = 0;
    let mut last_end = 0;
    for m in &matches {
        if !kept.is_empty() && m.range.start < last_end {
            skipped += 1;
            continue;
        }
        last_end = m.range.end;
        kept.push(m);
    }
    let mut new = String::with_capacity(src.len());
    let mut at = 0;
    for m in &kept {
        new.push_str(&src[at..m.replace.start]);
        let values = template.values(m, src);
        new.push_str(&expand(&template.segs, m, src, &values));
        at = m.replace.end;
    }
    new.push_str(&src[at..]);
    (new, kept.len(), skipped)
}

/// Rewrites every match of `pattern` in `source` (one file's text) with the template
/// `rewrite`, as `ast_edit` would, and returns the new text. For tests and in-memory hosts.
pub fn rewrite_source(pattern: &Pattern, rewrite: &str, source: &str) -> Result<String, AstError> {
    let segs = compile_template(pattern.lang(), rewrite, &pattern.metavariables())?;
    let matches = crate::match_source(pattern, source);
    let template = Template { segs, transforms: &[], names: pattern.metavariables() };
    Ok(apply_rewrites(source, matches, &template).0)
}

/// Refuses a rule config's `fix` template that uses a metavariable the rule neither binds
/// nor computes with `transform`, as ast-grep does when it reads the rule.
pub(crate) fn check_fix(
    lang: Lang,
    template: &str,
    vars: &[String],
    transforms: &[(String, Transform)],
) -> Result<(), AstError> {
    Template::new(lang, template, vars.to_vec(), transforms).map(|_| ())
}

/// What the `fix` of `rules` writes for one of its matches (a rewriter's edit).
pub(crate) fn fix_text(rules: &RuleSet, m: &RawMatch, src: &str) -> String {
    let Some(fix) = rules.fix_template() else { return String::new() };
    match Template::new(rules.lang(), fix, rules.metavariables().to_vec(), &rules.transforms) {
        Ok(template) => expand(&template.segs, m, src, &template.values(m, src)),
        // Checked when the rule was compiled.
        Err(_) => String::new(),
    }
}

/// Applies the `fix` of rule config `rules` (with its transforms and expansions) to every match
/// in `source` (one file's text), as `ast_edit` would, and returns the new text. For tests and
/// in-memory hosts.
pub fn fix_source(rules: &RuleSet, source: &str) -> Result<String, AstError> {
    let fix = rules.fix_template().ok_or_else(|| {
        AstError::Rewrite(
            "the rule config has no `fix`: give one, as a string or {template}".into(),
        )
    })?;
    let template =
        Template::new(rules.lang(), fix, rules.metavariables().to_vec(), &rules.transforms)?;
    Ok(apply_rewrites(source, rules.match_source(source), &template).0)
}

/// A compiled rewrite: segments, and the transformations that compute extra variables.
struct Template<'a> {
    segs: Vec<Seg>,
    transforms: &'a [(String, Transform)],
    /// Capture names (`$X`, `$$$X`), indexed like `RawMatch::captures`.
    names: Vec<String>,
}

impl<'a> Template<'a> {
    /// Compiles `rewrite` for captures `names` and the variables `transforms` compute.
    fn new(
        lang: Lang,
        rewrite: &str,
        names: Vec<String>,
        transforms: &'a [(String, Transform)],
    ) -> Result<Template<'a>, AstError> {
        let mut all_names = names.clone();
        all_names.extend(transforms.iter().map(|(n, _)| format!("${n}")));
        let segs = compile_template(lang, rewrite, &all_names)?;
        Ok(Template { segs, transforms, names })
    }

    /// The transformed variables of one match, in order.
    fn values(&self, m: &RawMatch, src: &str) -> Vec<String> {
        let mut values: Vec<String> = Vec::with_capacity(self.transforms.len());
        for (i, (_, t)) in self.transforms.iter().enumerate() {
            if let Some((_, text)) = m.rewritten.iter().find(|(at, _)| *at == i) {
                values.push(text.clone());
                continue;
            }
            let name = t.source_name();
            let from_capture = self
                .names
                .iter()
                .position(|n| n.trim_start_matches('$') == name)
                .and_then(|at| m.captures.get(at).cloned().flatten())
                .map(|r| deindented(src, r));
            let text = from_capture.or_else(|| {
                self.transforms[..i]
                    .iter()
                    .position(|(n, _)| n == name)
                    .map(|at| values[at].clone())
            });
            values.push(t.apply(&text.unwrap_or_default()));
        }
        values
    }
}

/// A file's rewrite, or the number of matches when the rewrite changes nothing.
/// How long the diff of one file's rewrite may take before it is approximated.
const DIFF_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(300);

fn edit_file(ctx: FileCtx<'_>, template: &Template<'_>) -> Result<FileEdit, usize> {
    let src = ctx.src;
    let (new, kept, skipped) = apply_rewrites(src, ctx.matches, template);
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
    // Bounded in time: a line diff is quadratic in the lines changed (a 100k-line rewrite took
    // 100 s); past the bound the hunks are coarser, never wrong.
    let diff = similar::TextDiff::configure()
        .timeout(DIFF_TIMEOUT)
        .diff_lines(src, &new)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{}", ctx.rel), &format!("b/{}", ctx.rel))
        .to_string();
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
        let scan = scan(&scope, compiled.query(), options, &|ctx| edit_file(ctx, &template))?;
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

/// Lines of diff shown before the renderer cuts it.
pub const MAX_DIFF_LINES: usize = 300;

/// The model-facing text of a proposal.
pub fn render_proposal(p: &Proposal) -> String {
    let info = &p.pattern;
    let Some(id) = &p.edit_id else {
        if p.unchanged_matches > 0 {
            return format!(
                "(nothing staged) ast_edit `{}` ({}, {}): {} {} in `{}`, but the rewrite \
                 leaves the code exactly as it is\n",
                one_line(&info.pattern),
                info.language,
                info.parsed_as(),
                p.unchanged_matches,
                plural(p.unchanged_matches, "match", "matches"),
                p.scope
            );
        }
        let mut out = format!(
            "(nothing staged) ast_edit `{}` ({}, {}): no matches in `{}`\n",
            one_line(&info.pattern),
            info.language,
            info.parsed_as(),
            p.scope
        );
        out.push_str(&explain_empty(info.language, &p.scope, &p.stats, info));
        return out;
    };
    let mut out = format!(
        "(proposed) {} in {} … call resolve with edit_id \"{id}\" and action \"accept\" to write it, \
         or \"discard\"\n",
        count(p.replacements, "replacement", "replacements"),
        count(p.files.len(), "file", "files"),
    );
    let _ = writeln!(out, "{} ({})", info.parsed_as(), info.language);
    if p.skipped_nested > 0 {
        let _ = writeln!(
            out,
            "[{} nested or overlapping {} inside a rewritten match {} left as is (outermost wins); run ast_edit \
             again after accepting to rewrite them]",
            p.skipped_nested,
            plural(p.skipped_nested, "match", "matches"),
            plural(p.skipped_nested, "was", "were")
        );
    }
    for f in &p.files {
        if let Some(at) = &f.new_syntax_error {
            let _ = writeln!(out, "[warning: the rewrite introduces a syntax error at {at}]");
        }
    }
    let lines: Vec<&str> = p.diff.lines().collect();
    for l in lines.iter().take(MAX_DIFF_LINES) {
        out.push_str(l);
        out.push('\n');
    }
    if lines.len() > MAX_DIFF_LINES {
        let _ = writeln!(
            out,
            "[diff cut: showed {MAX_DIFF_LINES} of {} lines; the staged edit holds all of it. Files: {}]",
            lines.len(),
            p.files
                .iter()
                .map(|f| format!("{} ({})", f.file, f.replacements))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    out
}

/// The model-facing text of a resolution.
pub fn render_resolution(r: &Resolution) -> String {
    let replacements = count(r.replacements, "replacement", "replacements");
    let files = count(r.files, "file", "files");
    match r.action {
        ResolveAction::Accept => {
            format!(
                "accepted {}: wrote {replacements} to {files}: {}",
                r.edit_id,
                r.written.join(", ")
            )
        }
        ResolveAction::Discard => {
            format!("discarded {} ({replacements} in {files}); nothing was written", r.edit_id)
        }
    }
}
