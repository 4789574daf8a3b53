//! The arguments of the `debug` tool: one `operation` and the fields it uses.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::adapters::AdapterKind;

/// What the `debug` tool should do.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Operation {
    /// Which debug adapters are usable here, and why not.
    Adapters,
    /// Whether a session runs, and where it stopped.
    #[default]
    Status,
    /// Set the breakpoints of `file` to `lines` (empty `lines` clears the file). May be set
    /// before `launch`; they are sent when the session starts.
    Breakpoints,
    /// Start `program` under the debugger; returns where it first stopped.
    Launch,
    /// Connect to a program that is already running under a debug server on `port`.
    Attach,
    /// Run until the next stop.
    Continue,
    /// Stop the program where it stands.
    Pause,
    /// Run to the next line in this function.
    StepOver,
    /// Step into the call on this line.
    StepIn,
    /// Run until the current function returns.
    StepOut,
    /// Thread ids and names.
    Threads,
    /// The call stack (at most 30 frames).
    Stack,
    /// The scopes of a frame, each with a `reference` for `variables`.
    Scopes,
    /// The children of a `reference` (at most 50; values cut at 400 characters).
    Variables,
    /// Evaluate `expression` in a frame (default: the top user frame of the current stop).
    Evaluate,
    /// The program's stdout/stderr since the last call (or since `since`).
    Output,
    /// End the session: stop the program and the adapter.
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
            Operation::Output => "output",
            Operation::Terminate => "terminate",
        }
    }
}

/// Which exceptions stop the program.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ExceptionMode {
    /// Stop on exceptions (panics, crashes) that nothing catches. The default.
    #[default]
    Uncaught,
    /// Stop on every exception when it is raised, caught or not.
    All,
    /// Never stop on exceptions.
    None,
}

/// Arguments of the `debug` tool. Only `operation` is always required; each operation names the
/// fields it uses.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DebugArgs {
    /// What to do: adapters, status, breakpoints, launch, attach, continue, pause, step_over,
    /// step_in, step_out, threads, stack, scopes, variables, evaluate, output, terminate.
    pub operation: Operation,
    /// breakpoints: the source file, relative to the project root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// breakpoints: 1-based line numbers; an empty list clears the file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lines: Option<Vec<u32>>,
    /// breakpoints: only stop when this expression is true (applies to every line given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
    /// breakpoints: log this message instead of stopping (a logpoint); `{expr}` is interpolated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_message: Option<String>,
    /// launch: the program to debug: a `.py` script, a Go package folder or `.go` file, a `.dart`
    /// file, or a native executable built with debug info (C, C++, Rust). attach: optional,
    /// the executable (for symbols).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program: Option<String>,
    /// launch: the program's command-line arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Vec<String>>,
    /// launch: the program's working directory, relative to the root (default: the root).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// launch: extra environment variables for the program.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<BTreeMap<String, String>>,
    /// launch/attach: which adapter to use (default: chosen from the program's type and the
    /// project's markers). One of dart, debugpy, lldb, delve.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adapter: Option<AdapterKind>,
    /// launch: stop at the program's first line (not supported by delve).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_on_entry: Option<bool>,
    /// launch/attach: which exceptions stop the program: uncaught (default), all, none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exceptions: Option<ExceptionMode>,
    /// attach: the local port of the debug server the program runs under
    /// (debugpy --listen, dlv --headless, lldb-server gdbserver, dart --enable-vm-service).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 65535))]
    pub port: Option<u16>,
    /// continue/pause/steps/stack: the thread (default: the thread of the last stop).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<i64>,
    /// scopes/evaluate: a frame id from `stack` or the stop snapshot of the current stop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frame_id: Option<u64>,
    /// variables: a `reference` from `scopes`, a variable, or `evaluate`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<u64>,
    /// variables: index of the first child to return (paging), default 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<u64>,
    /// evaluate: the expression, in the program's language.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expression: Option<String>,
    /// output: return output from this cursor on (a `next` from an earlier call); default: what
    /// is new since the last call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<u64>,
    /// launch/continue/pause/steps: how long to wait for the program to stop, in seconds
    /// (default 20, at most 600).
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
