//! `read`: a text file's lines, numbered for the model and raw as structured content.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::access::Access;
use crate::tool::{CallContext, Tier, Tool, ToolResult, ToolSpec, parse_args};

/// Lines `read` shows when no range is given.
const DEFAULT_READ_LINES: usize = 2000;

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

/// The structured payload of `read`: the same lines as the text, unnumbered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReadOutput {
    /// The file, relative to the root.
    pub path: String,
    /// First line shown, 1-based (0 for an empty file).
    pub start_line: usize,
    /// Last line shown.
    pub end_line: usize,
    pub total_lines: usize,
    /// Lines `start_line..=end_line`, each ending in a newline.
    pub content: String,
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
            )
            .with_output_schema::<ReadOutput>(),
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
        let access = match Access::open(ctx, "read") {
            Ok(a) => a,
            Err(e) => return e,
        };
        let fail = |e: String| ToolResult::error(format!("read: {e}"));
        let rel = match access.confine(&args.path, "path") {
            Ok(r) => r,
            Err(e) => return fail(e),
        };
        let text = match access.read_text(&rel, "path") {
            Ok(t) => t,
            Err(e) => return fail(e),
        };
        let shown = rel.to_string();
        let lines: Vec<&str> = text.lines().collect();
        let total = lines.len();
        let start = args.start_line.unwrap_or(1);
        if total == 0 {
            return ToolResult::text(format!("{shown} is empty")).with_structured(payload(
                &ReadOutput {
                    path: shown,
                    start_line: 0,
                    end_line: 0,
                    total_lines: 0,
                    content: String::new(),
                },
            ));
        }
        if start > total {
            return fail(format!(
                "argument `start_line` is {start}, but {shown} has only {total} lines; use 1..={total}"
            ));
        }
        let end = args.end_line.unwrap_or(start + DEFAULT_READ_LINES - 1).min(total);
        if end < start {
            return fail(format!(
                "argument `end_line` ({end}) is before `start_line` ({start}); give a range with start_line <= end_line"
            ));
        }
        let width = end.to_string().len();
        let mut out = String::new();
        let mut content = String::new();
        for (i, line) in lines[start - 1..end].iter().enumerate() {
            out.push_str(&format!("{:>width$}\t{}\n", start + i, line));
            content.push_str(line);
            content.push('\n');
        }
        if end < total {
            out.push_str(&format!(
                "[{shown}: showed lines {start}-{end} of {total}; call read with start_line={} to continue]\n",
                end + 1
            ));
        }
        ToolResult::text(out).with_structured(payload(&ReadOutput {
            path: shown,
            start_line: start,
            end_line: end,
            total_lines: total,
            content,
        }))
    }
}

fn payload(output: &ReadOutput) -> Value {
    serde_json::to_value(output).unwrap_or(Value::Null)
}
