//! The reference harness file tools: `read`, `write`, `edit`, `apply_patch`.
//!
//! A harness may bring its own; these serve the host binary and the tests.
//! Every path is confined to the run's root and every write is atomic.

mod atomic;
mod confine;
mod patch;

use std::{path::Path, sync::Arc};

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

pub use self::{
    atomic::{FileChange, write_atomic, write_group},
    confine::{display_relative, resolve_in_root},
};
use crate::tool::{CallContext, DynTool, Tier, Tool, ToolResult, ToolSpec, parse_args};

/// Lines `read` shows when no range is given.
const DEFAULT_READ_LINES: usize = 2000;

pub(crate) fn reference_tools() -> Vec<DynTool> {
    vec![
        Arc::new(ReadTool::new()),
        Arc::new(WriteTool::new()),
        Arc::new(EditTool::new()),
        Arc::new(ApplyPatchTool::new()),
    ]
}

/// Reads a text file, refusing binary content, with a clear error that names `arg`.
fn read_text(path: &Path, shown: &str, arg: &str) -> Result<String, String> {
    let bytes = std::fs::read(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => format!("argument `{arg}`: {shown} does not exist"),
        std::io::ErrorKind::IsADirectory => {
            format!("argument `{arg}`: {shown} is a directory, not a file")
        }
        _ => format!("argument `{arg}`: cannot read {shown}: {e}"),
    })?;
    if bytes.iter().take(8192).any(|&b| b == 0) {
        return Err(format!(
            "argument `{arg}`: {shown} is a binary file ({} bytes); these tools handle text only",
            bytes.len()
        ));
    }
    String::from_utf8(bytes).map_err(|e| {
        format!("argument `{arg}`: {shown} is not valid UTF-8 (first bad byte at offset {}); these tools handle text only", e.utf8_error().valid_up_to())
    })
}

// ---------------------------------------------------------------- read

/// Arguments of `read`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadArgs {
    /// File to read, relative to the run's root.
    pub path: String,
    /// First line to show, 1-based (default 1).
    #[schemars(range(min = 1))]
    pub start_line: Option<usize>,
    /// Last line to show, inclusive (default: 2000 lines after start_line).
    #[schemars(range(min = 1))]
    pub end_line: Option<usize>,
}

pub struct ReadTool {
    spec: ToolSpec,
}

impl ReadTool {
    pub fn new() -> Self {
        ReadTool {
            spec: ToolSpec::new::<ReadArgs>(
                "read",
                "Read a text file inside the workspace, with numbered lines. Use start_line/end_line for a range of a large file.",
                Tier::Read,
            ),
        }
    }
}

impl Default for ReadTool {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl Tool for ReadTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, ctx: &CallContext, args: Value) -> ToolResult {
        let args: ReadArgs = match parse_args("read", args) {
            Ok(a) => a,
            Err(e) => return e,
        };
        let path = match resolve_in_root(&ctx.root, &args.path, "path") {
            Ok(p) => p,
            Err(e) => return ToolResult::error(format!("read: {e}")),
        };
        let shown = display_relative(&ctx.root, &path);
        let text = match read_text(&path, &shown, "path") {
            Ok(t) => t,
            Err(e) => return ToolResult::error(format!("read: {e}")),
        };
        let lines: Vec<&str> = text.lines().collect();
        let total = lines.len();
        let start = args.start_line.unwrap_or(1);
        if total == 0 {
            return ToolResult::text(format!("{shown} is empty"))
                .with_structured(json!({"path": shown, "total_lines": 0}));
        }
        if start > total {
            return ToolResult::error(format!(
                "read: argument `start_line` is {start}, but {shown} has only {total} lines; use 1..={total}"
            ));
        }
        let end = args.end_line.unwrap_or(start + DEFAULT_READ_LINES - 1).min(total);
        if end < start {
            return ToolResult::error(format!(
                "read: argument `end_line` ({end}) is before `start_line` ({start}); give a range with start_line <= end_line"
            ));
        }
        let width = end.to_string().len();
        let mut out = String::new();
        for (i, line) in lines[start - 1..end].iter().enumerate() {
            out.push_str(&format!("{:>width$}\t{}\n", start + i, line));
        }
        if end < total {
            out.push_str(&format!(
                "[{shown}: showed lines {start}-{end} of {total}; call read with start_line={} to continue]\n",
                end + 1
            ));
        }
        ToolResult::text(out).with_structured(
            json!({"path": shown, "start_line": start, "end_line": end, "total_lines": total}),
        )
    }
}

// ---------------------------------------------------------------- write

/// Arguments of `write`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteArgs {
    /// File to create or replace, relative to the run's root. Parent folders are created.
    pub path: String,
    /// The file's complete new content.
    pub content: String,
}

pub struct WriteTool {
    spec: ToolSpec,
}

impl WriteTool {
    pub fn new() -> Self {
        WriteTool {
            spec: ToolSpec::new::<WriteArgs>(
                "write",
                "Create or replace a file inside the workspace with the given content (atomic; keeps the file's permissions).",
                Tier::Write,
            ),
        }
    }
}

impl Default for WriteTool {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl Tool for WriteTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, ctx: &CallContext, args: Value) -> ToolResult {
        let args: WriteArgs = match parse_args("write", args) {
            Ok(a) => a,
            Err(e) => return e,
        };
        let path = match resolve_in_root(&ctx.root, &args.path, "path") {
            Ok(p) => p,
            Err(e) => return ToolResult::error(format!("write: {e}")),
        };
        let shown = display_relative(&ctx.root, &path);
        if path.is_dir() {
            return ToolResult::error(format!(
                "write: argument `path`: {shown} is a directory; name a file"
            ));
        }
        let existed = path.exists();
        if let Err(e) = write_atomic(&path, args.content.as_bytes()) {
            return ToolResult::error(format!("write: cannot write {shown}: {e}"));
        }
        let verb = if existed { "replaced" } else { "created" };
        let lines = args.content.lines().count();
        ToolResult::text(format!("{verb} {shown} ({lines} lines, {} bytes)", args.content.len()))
            .with_structured(
                json!({"path": shown, "created": !existed, "bytes": args.content.len()}),
            )
            .with_changed_file(path)
    }
}

// ---------------------------------------------------------------- edit

/// Arguments of `edit`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditArgs {
    /// File to edit, relative to the run's root.
    pub path: String,
    /// Exact text to replace, including whitespace; must occur once unless replace_all is set.
    pub old_string: String,
    /// Text to put in its place.
    pub new_string: String,
    /// Replace every occurrence instead of exactly one (default false).
    #[serde(default)]
    pub replace_all: bool,
}

pub struct EditTool {
    spec: ToolSpec,
}

impl EditTool {
    pub fn new() -> Self {
        EditTool {
            spec: ToolSpec::new::<EditArgs>(
                "edit",
                "Replace an exact string in a file. old_string must match exactly once (include surrounding lines to make it unique), or set replace_all.",
                Tier::Write,
            ),
        }
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
impl Tool for EditTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, ctx: &CallContext, args: Value) -> ToolResult {
        let args: EditArgs = match parse_args("edit", args) {
            Ok(a) => a,
            Err(e) => return e,
        };
        if args.old_string.is_empty() {
            return ToolResult::error(
                "edit: argument `old_string` is empty; give the exact text to replace (use `write` to create a file)",
            );
        }
        if args.old_string == args.new_string {
            return ToolResult::error(
                "edit: `old_string` and `new_string` are identical; nothing would change",
            );
        }
        let path = match resolve_in_root(&ctx.root, &args.path, "path") {
            Ok(p) => p,
            Err(e) => return ToolResult::error(format!("edit: {e}")),
        };
        let shown = display_relative(&ctx.root, &path);
        let text = match read_text(&path, &shown, "path") {
            Ok(t) => t,
            Err(e) => return ToolResult::error(format!("edit: {e}")),
        };
        let positions: Vec<usize> = text.match_indices(&args.old_string).map(|(i, _)| i).collect();
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
            return ToolResult::error(format!(
                "edit: argument `old_string` was not found in {shown}.{near} Read the file and copy the exact text, including indentation"
            ));
        }
        if positions.len() > 1 && !args.replace_all {
            let lines: Vec<String> =
                positions.iter().take(10).map(|&p| line_of(&text, p).to_string()).collect();
            return ToolResult::error(format!(
                "edit: argument `old_string` occurs {} times in {shown} (lines {}); include surrounding lines to make it unique, or set replace_all",
                positions.len(),
                lines.join(", ")
            ));
        }
        let first_line = line_of(&text, positions[0]);
        let updated = if args.replace_all {
            text.replace(&args.old_string, &args.new_string)
        } else {
            text.replacen(&args.old_string, &args.new_string, 1)
        };
        if let Err(e) = write_atomic(&path, updated.as_bytes()) {
            return ToolResult::error(format!("edit: cannot write {shown}: {e}"));
        }
        let count = positions.len();
        let what = if count == 1 {
            format!("1 replacement at line {first_line}")
        } else {
            format!("{count} replacements")
        };
        ToolResult::text(format!("edited {shown}: {what}"))
            .with_structured(
                json!({"path": shown, "replacements": count, "first_line": first_line}),
            )
            .with_changed_file(path)
    }
}

// ---------------------------------------------------------------- apply_patch

/// Arguments of `apply_patch`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApplyPatchArgs {
    /// A unified diff (`--- a/path`, `+++ b/path`, `@@ ... @@` hunks) touching one or more files.
    /// `/dev/null` as the old side creates a file, as the new side deletes it.
    pub patch: String,
}

pub struct ApplyPatchTool {
    spec: ToolSpec,
}

impl ApplyPatchTool {
    pub fn new() -> Self {
        ApplyPatchTool {
            spec: ToolSpec::new::<ApplyPatchArgs>(
                "apply_patch",
                "Apply a unified diff to one or more files, all or nothing: if any hunk fails, no file changes.",
                Tier::Write,
            ),
        }
    }
}

impl Default for ApplyPatchTool {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl Tool for ApplyPatchTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, ctx: &CallContext, args: Value) -> ToolResult {
        let args: ApplyPatchArgs = match parse_args("apply_patch", args) {
            Ok(a) => a,
            Err(e) => return e,
        };
        let fail = |e: String| ToolResult::error(format!("apply_patch: {e}; no file was changed"));
        let sections = match patch::parse(&args.patch) {
            Ok(s) => s,
            Err(e) => return fail(e),
        };
        let mut changes: Vec<FileChange> = Vec::new();
        let mut summary = Vec::new();
        for section in &sections {
            let target =
                section.new_path.as_deref().or(section.old_path.as_deref()).unwrap_or_default();
            let path = match resolve_in_root(&ctx.root, target, "patch") {
                Ok(p) => p,
                Err(e) => return fail(e),
            };
            let shown = display_relative(&ctx.root, &path);
            if changes.iter().any(|c| c.path == path) {
                return fail(format!(
                    "{shown} appears in two sections of the patch; merge them into one"
                ));
            }
            let original = if section.old_path.is_some() {
                match read_text(&path, &shown, "patch") {
                    Ok(t) => Some(t),
                    Err(e) => return fail(e),
                }
            } else {
                if path.exists() {
                    return fail(format!(
                        "{shown} already exists, but the patch creates it (old side /dev/null)"
                    ));
                }
                None
            };
            if section.new_path.is_none() {
                summary.push(format!("deleted {shown}"));
                changes.push(FileChange { path, new_contents: None });
                continue;
            }
            let updated = match patch::apply(section, original.as_deref(), Path::new(&shown)) {
                Ok(t) => t,
                Err(e) => return fail(e),
            };
            let verb = if original.is_none() { "created" } else { "patched" };
            summary.push(format!(
                "{verb} {shown} ({} hunk{})",
                section.hunks.len(),
                if section.hunks.len() == 1 { "" } else { "s" }
            ));
            changes.push(FileChange { path, new_contents: Some(updated.into_bytes()) });
        }
        if let Err(e) = write_group(&changes) {
            return fail(format!("writing failed and every file was restored: {e}"));
        }
        let mut result = ToolResult::text(format!(
            "applied patch to {} file(s):\n{}",
            changes.len(),
            summary.join("\n")
        ))
        .with_structured(json!({"files": summary}));
        for change in changes {
            result = result.with_changed_file(change.path);
        }
        result
    }
}
