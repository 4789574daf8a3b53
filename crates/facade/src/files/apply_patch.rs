//! `apply_patch`: a unified diff over several files, applied all or nothing, crash-atomically.

use std::{path::Path, sync::Arc};

use agent_tools_support::journal::{Change, Expect};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::{access::Access, patch};
use crate::tool::{Before, CallContext, Tier, Tool, ToolResult, ToolSpec, parse_args};

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
        let access = match Access::open(ctx, "apply_patch") {
            Ok(a) => a,
            Err(e) => return e,
        };
        let sections = match patch::parse(&args.patch) {
            Ok(s) => s,
            Err(e) => return fail(e),
        };
        let mut changes: Vec<Change> = Vec::new();
        let mut befores: Vec<Before> = Vec::new();
        let mut summary = Vec::new();
        for section in &sections {
            let target =
                section.new_path.as_deref().or(section.old_path.as_deref()).unwrap_or_default();
            let rel = match access.confine(target, "patch") {
                Ok(p) => p,
                Err(e) => return fail(e),
            };
            let shown = rel.to_string();
            if changes.iter().any(|c| c.path == rel) {
                return fail(format!(
                    "{shown} appears in two sections of the patch; merge them into one"
                ));
            }
            let original = if section.old_path.is_some() {
                match access.read_text(&rel, "patch") {
                    Ok(t) => Some(t),
                    Err(e) => return fail(e),
                }
            } else {
                if access
                    .root
                    .kind(&rel, "patch")
                    .map_err(|e| e.to_string())
                    .is_ok_and(|k| k.is_some())
                {
                    return fail(format!(
                        "{shown} already exists, but the patch creates it (old side /dev/null)"
                    ));
                }
                None
            };
            let expect = Expect::holding(original.as_deref().map(str::as_bytes));
            befores.push(match &original {
                Some(text) => Before::Contents(Arc::from(text.as_bytes())),
                None => Before::Absent,
            });
            if section.new_path.is_none() {
                summary.push(format!("deleted {shown}"));
                changes.push(Change::delete(rel, expect));
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
            changes.push(Change::write(rel, updated.into_bytes(), expect));
        }
        let done = match access.commit(&changes, "patch") {
            Ok(done) => done,
            Err(e) => return fail(e),
        };
        let mut result = ToolResult::text(format!(
            "applied patch to {} file(s):\n{}",
            changes.len(),
            summary.join("\n")
        ));
        for (committed, before) in done.into_iter().zip(befores) {
            result = result.with_changed_file_before(access.absolute(&committed.path), before);
        }
        result
    }
}
