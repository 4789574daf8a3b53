//! The protocol's shared objects: capabilities, sources, breakpoints, threads, frames, scopes
//! and variables, as this client reads and writes them.

use serde::{Deserialize, Serialize};

/// What an adapter says it supports (`initialize`'s body). Unset means "not said".
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Capabilities {
    pub supports_configuration_done_request: Option<bool>,
    pub supports_function_breakpoints: Option<bool>,
    pub supports_exception_info_request: Option<bool>,
    pub supports_set_variable: Option<bool>,
    pub supports_data_breakpoints: Option<bool>,
    pub exception_breakpoint_filters: Option<Vec<ExceptionBreakpointsFilter>>,
    /// lldb-dap's own section, where it says its version.
    #[serde(rename = "__lldb")]
    pub lldb: Option<LldbInfo>,
}

impl Capabilities {
    /// Whether the adapter offers the exception filter `filter`.
    pub fn offers_filter(&self, filter: &str) -> bool {
        self.exception_filters().any(|f| f == filter)
    }

    /// The ids of the exception filters the adapter offers.
    pub fn exception_filters(&self) -> impl Iterator<Item = &str> {
        self.exception_breakpoint_filters.iter().flatten().filter_map(|f| f.filter.as_deref())
    }
}

/// lldb-dap's `__lldb` capability section.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct LldbInfo {
    pub version: Option<String>,
}

/// One exception filter an adapter offers (`raised`, `uncaught`, `cpp_throw`, …).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ExceptionBreakpointsFilter {
    pub filter: Option<String>,
    pub label: Option<String>,
}

/// A source file, as we name it to the adapter and as it names one back.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Source {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub presentation_hint: Option<String>,
}

/// A line breakpoint as we ask for it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SourceBreakpoint {
    pub line: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hit_condition: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_message: Option<String>,
}

/// A breakpoint on a function, by name.
#[derive(Debug, Clone, Serialize)]
pub struct FunctionBreakpoint {
    pub name: String,
}

/// A breakpoint as the adapter placed it (in a response, or changed by a `breakpoint` event,
/// which may carry only what changed).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Breakpoint {
    pub id: Option<i64>,
    pub verified: Option<bool>,
    pub line: Option<i64>,
    pub message: Option<String>,
}

/// A thread of the debuggee.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Thread {
    pub id: i64,
    pub name: Option<String>,
}

/// A stack frame.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct StackFrame {
    pub id: Option<i64>,
    #[serde(default = "unnamed")]
    pub name: String,
    pub source: Option<Source>,
    /// 0 when the frame has no line; signed, as some adapters send -1.
    pub line: i64,
    pub column: i64,
    pub presentation_hint: Option<String>,
}

/// A scope of a frame (locals, globals, registers, …).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Scope {
    #[serde(default = "unnamed")]
    pub name: String,
    pub presentation_hint: Option<String>,
    /// 0: the scope has no variables to ask for.
    pub variables_reference: i64,
    pub named_variables: Option<u64>,
    pub indexed_variables: Option<u64>,
    pub expensive: bool,
}

/// A variable, or anything shown like one (an evaluation's result, a value just set).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Variable {
    #[serde(default = "unnamed")]
    pub name: String,
    pub value: String,
    #[serde(rename = "type")]
    pub type_name: Option<String>,
    /// 0: no children.
    pub variables_reference: i64,
    pub named_variables: Option<u64>,
    pub indexed_variables: Option<u64>,
}

impl Variable {
    /// How many children the adapter says it has, if it says.
    pub fn children(&self) -> Option<u64> {
        child_count(self.named_variables, self.indexed_variables)
    }
}

impl Scope {
    /// How many variables the adapter says the scope has, if it says.
    pub fn count(&self) -> Option<u64> {
        child_count(self.named_variables, self.indexed_variables)
    }
}

fn child_count(named: Option<u64>, indexed: Option<u64>) -> Option<u64> {
    match (named, indexed) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
    }
}

/// What a missing name reads as.
fn unnamed() -> String {
    "?".into()
}
