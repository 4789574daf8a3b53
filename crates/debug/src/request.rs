//! The arguments of the `debug` tool: one `operation` and the fields it uses, with a lean
//! schema (one type per field, enums inlined, every operation described once, in the tool's
//! description).

use std::collections::BTreeMap;

use schemars::{JsonSchema, Schema};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::adapters::AdapterKind;

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
            Operation::Terminate => "terminate",
        }
    }
}

/// Which exceptions stop the program: `uncaught` (the default: exceptions, panics and crashes
/// that nothing catches), `all` (every raise, caught or not) or `none`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(inline, transform = bare_enum)]
pub enum ExceptionMode {
    #[default]
    Uncaught,
    All,
    None,
}

/// Arguments of the `debug` tool: `operation` and the fields it uses.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = lean_object)]
pub struct DebugArgs {
    pub operation: Operation,
    /// Project file, or a library file the program runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// 1-based; others kept; [] clears.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lines: Option<Vec<u32>>,
    /// Drop these lines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remove: Option<bool>,
    /// Stop only if true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
    /// From hit N: "3"; not lldb: "% 2".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hit_condition: Option<String>,
    /// Log instead of stopping; {expr} interpolated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_message: Option<String>,
    /// Script, Go package folder, executable, or a `.venv/bin` console script.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program: Option<String>,
    /// `python -m` module, e.g. pytest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub module: Option<String>,
    /// pytest id, or Go/Rust test name.
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
    /// Default: the current frame.
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
    /// Output cursor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<u64>,
    /// For a stop (default 20).
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

/// An enum of unit variants as a plain `enum` of strings (no per-variant descriptions).
pub(crate) fn bare_enum(schema: &mut Schema) {
    let Some(map) = schema.as_object_mut() else { return };
    let mut values = Vec::new();
    for key in ["oneOf", "anyOf"] {
        if let Some(Value::Array(branches)) = map.remove(key) {
            for branch in branches {
                match (branch.get("const"), branch.get("enum")) {
                    (Some(c), _) => values.push(c.clone()),
                    (None, Some(Value::Array(e))) => values.extend(e.iter().cloned()),
                    _ => {}
                }
            }
        }
    }
    if !values.is_empty() {
        map.insert("enum".into(), Value::Array(values));
    }
    map.insert("type".into(), "string".into());
    map.remove("description");
}

/// The argument object as a lean, portable schema: every optional field has one type (no
/// `null`), references to enums are inlined, no non-standard formats and no boilerplate root.
fn lean_object(schema: &mut Schema) {
    let Some(map) = schema.as_object_mut() else { return };
    let defs = map.remove("$defs").and_then(|d| d.as_object().cloned()).unwrap_or_default();
    map.remove("description");
    if let Some(Value::Object(properties)) = map.get_mut("properties") {
        for property in properties.values_mut() {
            if let Value::Object(field) = property {
                lean_field(field, &defs);
            }
        }
    }
}

fn lean_field(field: &mut Map<String, Value>, defs: &Map<String, Value>) {
    if let Some(Value::Array(branches)) = field.remove("anyOf") {
        let kept: Vec<Value> =
            branches.into_iter().filter(|b| b.get("type") != Some(&"null".into())).collect();
        if let [only] = kept.as_slice() {
            let mut inlined = only.clone();
            if let Some(name) = only["$ref"].as_str().and_then(|r| r.strip_prefix("#/$defs/")) {
                inlined = defs.get(name).cloned().unwrap_or(Value::Null);
            }
            if let Value::Object(inner) = inlined {
                for (k, v) in inner {
                    if k != "description" {
                        field.insert(k, v);
                    }
                }
            }
        } else {
            field.insert("anyOf".into(), Value::Array(kept));
        }
    }
    if let Some(Value::String(name)) =
        field.get("$ref").and_then(Value::as_str).map(|r| r.to_string()).map(Value::String)
        && let Some(Value::Object(inner)) =
            name.strip_prefix("#/$defs/").and_then(|n| defs.get(n)).cloned()
    {
        field.remove("$ref");
        for (k, v) in inner {
            if k != "description" {
                field.insert(k, v);
            }
        }
    }
    if let Some(Value::Array(values)) = field.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    if let Some(Value::Array(types)) = field.get("type") {
        let kept: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
        if let [one] = kept.as_slice() {
            field.insert("type".into(), one.clone());
        }
    }
    field.remove("format");
    if let Some(Value::Object(items)) = field.get_mut("items") {
        items.remove("format");
        items.remove("minimum");
    }
    // `minimum: 0` on an unsigned integer says nothing a model needs.
    if field.get("minimum") == Some(&Value::from(0)) {
        field.remove("minimum");
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
