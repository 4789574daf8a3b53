//! `write`: create or replace one file, crash-atomically, confined by handle.

use agent_tools_support::journal::Change;
use agent_tools_support::words::count;
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::access::{self, Access};
use crate::tool::{Before, CallContext, ToolResult, ToolSpec, TypedTool};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteArgs {
    /// File to create or replace, relative to the run's root. Parent folders are created.
    pub path: String,
    /// The file's complete new content.
    pub content: String,
    // Preview only: nothing written (the tool's description says so: the token budget).
    #[serde(default)]
    pub dry_run: bool,
}

pub struct WriteTool {
    spec: ToolSpec,
}

impl WriteTool {
    pub fn new() -> Self {
        WriteTool { spec: ToolSpec::declared::<WriteArgs>(&super::WRITE) }
    }
}

impl Default for WriteTool {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl TypedTool for WriteTool {
    type Args = WriteArgs;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn run(&self, ctx: &CallContext, args: WriteArgs) -> ToolResult {
        let path = args.path.clone();
        access::run(ctx, "write", &[&path], move |access| write(&access, &args)).await
    }
}

fn write(access: &Access, args: &WriteArgs) -> ToolResult {
    let fail = |e: String| ToolResult::error(format!("write: {e}"));
    let rel = match access.confine(&args.path, "path") {
        Ok(r) => r,
        Err(e) => return fail(e),
    };
    if args.dry_run {
        let (_, before) = match access.read_before(&rel, "path") {
            Ok(read) => read,
            Err(e) => return fail(e),
        };
        let verb = if before == Before::Absent { "create" } else { "replace" };
        let text = format!("dry run: would {verb} {rel}; nothing was written");
        return ToolResult::text(text).with_proposed_file(
            access.absolute(&rel),
            before,
            Some(args.content.as_bytes().into()),
        );
    }
    // What the file held, for the wrappers (diagnostics on write) and as the expectation:
    // when another writer changed it between this read and the rename, it is read again, so
    // `before` is what this write replaced.
    let planned = access.commit_fresh("path", |_| {
        let (expect, before) = access.read_before(&rel, "path")?;
        let change = Change::write(rel.clone(), args.content.clone().into_bytes(), expect);
        Ok((vec![change], before))
    });
    let (done, before) = match planned {
        Ok((mut done, before)) => (done.remove(0), before),
        Err(e) => return fail(e),
    };
    let verb = if done.existed { "replaced" } else { "created" };
    let lines = count(args.content.lines().count() as u64, "line", "lines");
    let bytes = count(args.content.len() as u64, "byte", "bytes");
    ToolResult::text(format!("{verb} {} ({lines}, {bytes})", done.path))
        .with_changed_file_before(access.absolute(&done.path), before)
}
