//! The arguments of the `debug` tool: one `operation` and the fields it uses, with a lean
//! schema (one type per field, enums inlined, every operation described once, in the tool's
//! description).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{
    adapters::{AdapterKind, ExceptionMode},
    schema::{bare_enum, lean_object},
};

/// What the `debug` tool should do; each one is described in [`crate::TOOL_DESCRIPTION`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(inline, transform = bare_enum)]
pub enum Operation {
    Adapters,
    #[default]
    Status,
    Breakpoints,
    Launch,
    Attach,
    Continue,
    Pause,
    StepOver,
    StepIn,
    StepOut,
    Threads,
    Stack,
    Scopes,
    Variables,
    Evaluate,
    SetVariable,
    Output,
    Input,
    Watch,
    Trace,
    Terminate,
}

impl Operation {
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Adapters => "adapters",
            Operation::Status => "status",
            Operation::Breakpoints => "breakpoints",
            Operation::Launch => "launch",
            Operation::Attach => "attach",
            Operation::Continue => "continue",
            Operation::Pause => "pause",
            Operation::StepOver => "step_over",
            Operation::StepIn => "step_in",
            Operation::StepOut => "step_out",
            Operation::Threads => "threads",
            Operation::Stack => "stack",
            Operation::Scopes => "scopes",
            Operation::Variables => "variables",
            Operation::Evaluate => "evaluate",
            Operation::SetVariable => "set_variable",
            Operation::Output => "output",
            Operation::Input => "input",
            Operation::Watch => "watch",
            Operation::Trace => "trace",
            Operation::Terminate => "terminate",
        }
    }
}

/// Arguments of the `debug` tool: `operation` and the fields it uses.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = lean_object)]
pub struct DebugArgs {
    pub operation: Operation,
    /// Project or library file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// 1-based; others kept; [] clears.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lines: Option<Vec<u32>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remove: Option<bool>,
    /// Stop only if true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
    /// From hit N: "3"; not lldb: "% 2".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hit_condition: Option<String>,
    /// Log, don't stop; {expr} interpolated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_message: Option<String>,
    /// Script, Go package, executable or venv script.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program: Option<String>,
    /// `python -m` module.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub module: Option<String>,
    /// pytest id or Go/Rust test.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adapter: Option<AdapterKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_on_entry: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exceptions: Option<ExceptionMode>,
    /// Python: skip library code (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub just_my_code: Option<bool>,
    /// Stays open for `input`; input "" closes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdin: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frame_id: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<u64>,
    /// Also set_variable's new value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expression: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// watch: output line regex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
    /// Output cursor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<u64>,
    /// Max wait (default 20).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = 600))]
    pub wait_seconds: Option<u64>,
}

impl DebugArgs {
    /// Arguments for `operation` alone.
    pub fn op(operation: Operation) -> Self {
        DebugArgs { operation, ..Default::default() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_is_stable() {
        insta::assert_json_snapshot!(schemars::schema_for!(DebugArgs));
    }

    #[test]
    fn only_the_operation_is_required_and_unknown_fields_are_refused() {
        let args: DebugArgs =
            serde_json::from_value(serde_json::json!({"operation": "step_over"})).unwrap();
        assert_eq!(args.operation, Operation::StepOver);
        assert!(serde_json::from_value::<DebugArgs>(serde_json::json!({})).is_err());
        assert!(
            serde_json::from_value::<DebugArgs>(
                serde_json::json!({"operation": "stack", "frame": 1})
            )
            .is_err()
        );
    }
}
