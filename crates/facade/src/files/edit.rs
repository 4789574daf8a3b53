//! `edit`: replace an exact string in one file, or a declaration by name path (or insert a
//! sibling of it), crash-atomically, confined by handle.

use std::sync::Arc;

use agent_tools_support::journal::{Change, Expect};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::{
    access::{self, Access},
    edit_symbol::{self, Insert},
};
use crate::tool::{Before, CallContext, ToolResult, ToolSpec, TypedTool};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditArgs {
    /// File to edit, relative to the run's root.
    pub path: String,
    // Exact text to replace, including whitespace; must occur once unless replace_all is set.
    #[serde(default)]
    pub old_string: String,
    /// Text to put in its place.
    pub new_string: String,
    // Replace every occurrence instead of exactly one (default false).
    #[serde(default)]
    pub replace_all: bool,
    // Instead of old_string: a declaration by name path (`Class/method`), which new_string
    // replaces whole; the tool's description says so (the tool list's token budget).
    pub symbol: Option<String>,
    // With `symbol`: new_string is added as a sibling declaration before or after it.
    pub insert: Option<Insert>,
    // Preview only: nothing written (the tool's description says so: the token budget).
    #[serde(default)]
    pub dry_run: bool,
}

pub struct EditTool {
    spec: ToolSpec,
}

impl EditTool {
    pub fn new() -> Self {
        EditTool { spec: ToolSpec::declared::<EditArgs>(&super::EDIT) }
    }
}

impl Default for EditTool {
    fn default() -> Self {
        Self::new()
    }
}

fn line_of(text: &str, byte: usize) -> usize {
    text[..byte].matches('\n').count() + 1
}

fn squash_whitespace(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[async_trait]
impl TypedTool for EditTool {
    type Args = EditArgs;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn run(&self, ctx: &CallContext, args: EditArgs) -> ToolResult {
        if let Some(refusal) = symbol_conflict(&args) {
            return ToolResult::error(format!("edit: {refusal}"));
        }
        if args.old_string.is_empty() && args.symbol.is_none() {
            return ToolResult::error(
                "edit: argument `old_string` is empty; give the exact text to replace, or `symbol` (a name path) to replace a declaration whole (use `write` to create a file)",
            );
        }
        if args.symbol.is_none() && args.old_string == args.new_string {
            return ToolResult::error(
                "edit: `old_string` and `new_string` are identical; nothing would change",
            );
        }
        let path = args.path.clone();
        access::run(ctx, "edit", &[&path], move |access| edit(&access, &args)).await
    }
}

/// Why `symbol`, `insert` and the text form's arguments cannot go together, if they cannot.
fn symbol_conflict(args: &EditArgs) -> Option<&'static str> {
    match (&args.symbol, args.insert) {
        (None, Some(_)) => Some(
            "argument `insert` needs `symbol`: the name path of the declaration to insert before or after",
        ),
        (Some(_), _) if !args.old_string.is_empty() => Some(
            "give `old_string` (exact text) or `symbol` (a name path), not both: with `symbol`, new_string is the whole new declaration",
        ),
        (Some(_), _) if args.replace_all => Some(
            "argument `replace_all` cannot be given with `symbol`; a name path names one declaration",
        ),
        _ => None,
    }
}

/// Replaces `old_string` in what the file holds at commit time: when another writer changed
/// the file meanwhile, the replacement is made again on its new contents.
fn edit(access: &Access, args: &EditArgs) -> ToolResult {
    let rel = match access.confine(&args.path, "path") {
        Ok(r) => r,
        Err(e) => return ToolResult::error(format!("edit: {e}")),
    };
    let shown = rel.to_string();
    let plan = |changed: bool| {
        let text = access.read_text(&rel, "path")?;
        if let Some(symbol) = &args.symbol {
            let planned = edit_symbol::plan(&rel, &text, symbol, &args.new_string, args.insert)?;
            let expect = Expect::holding(Some(text.as_bytes()));
            let change = Change::write(rel.clone(), planned.updated.into_bytes(), expect);
            return Ok((vec![change], (text, vec![planned.at], Some(planned.summary))));
        }
        let positions: Vec<usize> = text.match_indices(&args.old_string).map(|(i, _)| i).collect();
        if changed && (positions.is_empty() || positions.len() > 1 && !args.replace_all) {
            let now = match positions.len() {
                0 => "no longer contains `old_string`".to_string(),
                n => format!("now contains `old_string` {n} times"),
            };
            return Err(format!(
                "{shown} changed since it was read (another writer changed it) and {now}; \
                 nothing was written: read it again and retry"
            ));
        }
        if positions.is_empty() {
            let squashed = squash_whitespace(&args.old_string);
            let near = text
                .lines()
                .enumerate()
                .find(|(_, l)| {
                    !squashed.is_empty()
                        && squash_whitespace(l).contains(squashed.lines().next().unwrap_or(""))
                })
                .map(|(i, _)| {
                    format!(" A similar line differing in whitespace is at line {}.", i + 1)
                })
                .unwrap_or_default();
            return Err(format!(
                "argument `old_string` was not found in {shown}.{near} Read the file and copy the exact text, including indentation"
            ));
        }
        if positions.len() > 1 && !args.replace_all {
            let lines: Vec<String> =
                positions.iter().take(10).map(|&p| line_of(&text, p).to_string()).collect();
            return Err(format!(
                "argument `old_string` occurs {} times in {shown} (lines {}); include surrounding lines to make it unique, or set replace_all",
                positions.len(),
                lines.join(", ")
            ));
        }
        let updated = if args.replace_all {
            text.replace(&args.old_string, &args.new_string)
        } else {
            text.replacen(&args.old_string, &args.new_string, 1)
        };
        let expect = Expect::holding(Some(text.as_bytes()));
        let change = Change::write(rel.clone(), updated.into_bytes(), expect);
        Ok((vec![change], (text, positions, None)))
    };
    if args.dry_run {
        return match plan(false) {
            Ok((mut changes, (text, positions, summary))) => {
                let after = changes.remove(0).contents.map(Arc::from);
                let what = summary.unwrap_or_else(|| replacements(&text, &positions));
                ToolResult::text(format!(
                    "dry run: would edit {shown}: {what}; nothing was written"
                ))
                .with_proposed_file(
                    access.absolute(&rel),
                    Before::Contents(Arc::from(text.into_bytes())),
                    after,
                )
            }
            Err(e) => ToolResult::error(format!("edit: {e}")),
        };
    }
    let (done, (text, positions, summary)) = match access.commit_fresh("path", plan) {
        Ok((mut done, extra)) => (done.remove(0), extra),
        Err(e) => return ToolResult::error(format!("edit: {e}")),
    };
    let what = summary.unwrap_or_else(|| replacements(&text, &positions));
    ToolResult::text(format!("edited {shown}: {what}")).with_changed_file_before(
        access.absolute(&done.path),
        Before::Contents(Arc::from(text.into_bytes())),
    )
}

/// `1 replacement at line 3`, or `4 replacements`.
fn replacements(text: &str, positions: &[usize]) -> String {
    match positions {
        [one] => format!("1 replacement at line {}", line_of(text, *one)),
        many => format!("{} replacements", many.len()),
    }
}
