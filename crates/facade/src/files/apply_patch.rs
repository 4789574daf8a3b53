//! `apply_patch`: a unified diff over several files, applied all or nothing, crash-atomically.

use std::{path::Path, sync::Arc};

use agent_tools_support::journal::{Change, Expect};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::{
    access::{self, Access},
    patch,
};
use crate::tool::{Before, CallContext, ToolResult, ToolSpec, TypedTool};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApplyPatchArgs {
    /// A unified diff (`--- a/path`, `+++ b/path`, `@@ ... @@` hunks) touching one or more files.
    /// `/dev/null` as the old side creates a file, as the new side deletes it.
    pub patch: String,
    // Preview only: nothing written (the tool's description says so: the token budget).
    #[serde(default)]
    pub dry_run: bool,
}

pub struct ApplyPatchTool {
    spec: ToolSpec,
}

impl ApplyPatchTool {
    pub fn new() -> Self {
        ApplyPatchTool { spec: ToolSpec::declared::<ApplyPatchArgs>(&super::APPLY_PATCH) }
    }
}

impl Default for ApplyPatchTool {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl TypedTool for ApplyPatchTool {
    type Args = ApplyPatchArgs;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn run(&self, ctx: &CallContext, args: ApplyPatchArgs) -> ToolResult {
        let sections = match patch::parse(&args.patch) {
            Ok(s) => s,
            Err(e) => return fail(e),
        };
        let targets: Vec<String> = sections.iter().map(|s| s.path().to_string()).collect();
        let targets: Vec<&str> = targets.iter().map(String::as_str).collect();
        let dry_run = args.dry_run;
        access::run(ctx, "apply_patch", &targets, move |access| match dry_run {
            true => preview(&access, &sections),
            false => apply(&access, &sections),
        })
        .await
    }
}

fn fail(e: String) -> ToolResult {
    ToolResult::error(format!("apply_patch: {e}; no file was changed"))
}

/// Applies every section to what its file holds at commit time: when another writer changed
/// a file meanwhile, the hunks are applied again to its new contents.
fn apply(access: &Access, sections: &[patch::FilePatch]) -> ToolResult {
    let planned = access.commit_fresh("patch", |changed| {
        plan(access, sections).map_err(|e| {
            if changed {
                format!("{e} (a file of the patch changed while it was being applied)")
            } else {
                e
            }
        })
    });
    let (done, (befores, summary)) = match planned {
        Ok(done) => done,
        Err(e) => return fail(e),
    };
    let mut result = ToolResult::text(format!(
        "applied patch to {} file(s):\n{}",
        done.len(),
        summary.join("\n")
    ));
    for (committed, before) in done.into_iter().zip(befores) {
        result = result.with_changed_file_before(access.absolute(&committed.path), before);
    }
    result
}

/// What applying `sections` would change, nothing written.
fn preview(access: &Access, sections: &[patch::FilePatch]) -> ToolResult {
    let (changes, (befores, summary)) = match plan(access, sections) {
        Ok(planned) => planned,
        Err(e) => return fail(e),
    };
    let mut result = ToolResult::text(format!(
        "dry run: would apply the patch to {} file(s); nothing was written:\n{}",
        changes.len(),
        summary.join("\n")
    ));
    for (change, before) in changes.into_iter().zip(befores) {
        let after = change.contents.map(Arc::from);
        result = result.with_proposed_file(access.absolute(&change.path), before, after);
    }
    result
}

/// The changes of `sections` from what their files hold now, with what each held before and
/// one summary line per file.
fn plan(
    access: &Access,
    sections: &[patch::FilePatch],
) -> Result<(Vec<Change>, (Vec<Before>, Vec<String>)), String> {
    let mut changes: Vec<Change> = Vec::new();
    let mut befores: Vec<Before> = Vec::new();
    let mut summary = Vec::new();
    for section in sections {
        let target =
            section.new_path.as_deref().or(section.old_path.as_deref()).unwrap_or_default();
        let rel = access.confine(target, "patch")?;
        let shown = rel.to_string();
        if changes.iter().any(|c| c.path == rel) {
            return Err(format!(
                "{shown} appears in two sections of the patch; merge them into one"
            ));
        }
        let original = if section.old_path.is_some() {
            Some(access.read_text(&rel, "patch")?)
        } else {
            if access.root.kind(&rel, "patch").is_ok_and(|k| k.is_some()) {
                return Err(format!(
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
        let updated = patch::apply(section, original.as_deref(), Path::new(&shown))?;
        let verb = if original.is_none() { "created" } else { "patched" };
        summary.push(format!(
            "{verb} {shown} ({} hunk{})",
            section.hunks.len(),
            if section.hunks.len() == 1 { "" } else { "s" }
        ));
        changes.push(Change::write(rel, updated.into_bytes(), expect));
    }
    Ok((changes, (befores, summary)))
}
