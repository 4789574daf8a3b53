//! The commands this client sends, each with its arguments and the response body it reads.
//! `launch` and `attach` keep JSON arguments: each adapter takes its own.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{
    Request,
    model::{
        Breakpoint, Capabilities, FunctionBreakpoint, Scope, Source, SourceBreakpoint, StackFrame,
        Thread, Variable,
    },
};

/// Declares a command: its type, its wire name, its arguments and its body.
macro_rules! command {
    ($(#[$doc:meta])* $name:ident = $command:literal, $arguments:ty => $body:ty) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy)]
        pub enum $name {}

        impl Request for $name {
            const COMMAND: &'static str = $command;
            type Arguments = $arguments;
            type Body = $body;
        }
    };
}

command!(
    /// The first request: what we are, and the adapter's capabilities back.
    Initialize = "initialize", InitializeArguments => Capabilities
);
command!(
    /// Starts the program; the arguments are the adapter's own.
    Launch = "launch", Value => Value
);
command!(
    /// Attaches to a running program; the arguments are the adapter's own.
    Attach = "attach", Value => Value
);
command!(
    /// Replaces the line breakpoints of one file.
    SetBreakpoints = "setBreakpoints", SetBreakpointsArguments => BreakpointsBody
);
command!(
    /// Replaces the function breakpoints.
    SetFunctionBreakpoints = "setFunctionBreakpoints", SetFunctionBreakpointsArguments => BreakpointsBody
);
command!(
    /// Whether a data breakpoint can watch a variable, and its id.
    DataBreakpointInfo = "dataBreakpointInfo", DataBreakpointInfoArguments => DataBreakpointInfoBody
);
command!(
    /// Replaces the data breakpoints (watchpoints).
    SetDataBreakpoints = "setDataBreakpoints", SetDataBreakpointsArguments => BreakpointsBody
);
command!(
    /// Sets which exceptions stop the program.
    SetExceptionBreakpoints = "setExceptionBreakpoints", SetExceptionBreakpointsArguments => Value
);
command!(
    /// Ends the configuration: the program may run.
    ConfigurationDone = "configurationDone", NoArguments => Value
);
command!(
    /// The program's threads.
    Threads = "threads", NoArguments => ThreadsBody
);
command!(
    /// The frames of one thread.
    StackTrace = "stackTrace", StackTraceArguments => StackTraceBody
);
command!(
    /// The scopes of one frame.
    Scopes = "scopes", ScopesArguments => ScopesBody
);
command!(
    /// The children of a variables reference.
    Variables = "variables", VariablesArguments => VariablesBody
);
command!(
    /// Evaluates an expression, in a frame or globally.
    Evaluate = "evaluate", EvaluateArguments => EvaluateBody
);
command!(
    /// Sets a variable under a variables reference.
    SetVariable = "setVariable", SetVariableArguments => SetVariableBody
);
command!(
    /// Details of the exception a thread stopped on.
    ExceptionInfo = "exceptionInfo", ThreadArguments => ExceptionInfoBody
);
command!(
    /// Lets the program run.
    Continue = "continue", ThreadArguments => Value
);
command!(
    /// Steps over one line.
    Next = "next", ThreadArguments => Value
);
command!(
    /// Steps into the call on the line.
    StepIn = "stepIn", ThreadArguments => Value
);
command!(
    /// Runs to the return of the current function.
    StepOut = "stepOut", ThreadArguments => Value
);
command!(
    /// Stops a running thread.
    Pause = "pause", ThreadArguments => Value
);
command!(
    /// Ends the session: the program is terminated or left running.
    Disconnect = "disconnect", DisconnectArguments => Value
);

/// The arguments of a command that takes none: `{}` on the wire.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct NoArguments {}

/// `initialize`: who we are and what we support.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeArguments {
    #[serde(rename = "clientID")]
    pub client_id: &'static str,
    pub client_name: &'static str,
    #[serde(rename = "adapterID")]
    pub adapter_id: &'static str,
    pub locale: &'static str,
    pub path_format: &'static str,
    pub lines_start_at1: bool,
    pub columns_start_at1: bool,
    pub supports_variable_type: bool,
    pub supports_variable_paging: bool,
    pub supports_run_in_terminal_request: bool,
    pub supports_start_debugging_request: bool,
    pub supports_progress_reporting: bool,
    pub supports_memory_references: bool,
    pub supports_invalidated_event: bool,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SetBreakpointsArguments {
    pub source: Source,
    pub breakpoints: Vec<SourceBreakpoint>,
    /// The deprecated form of `breakpoints`, which older adapters read.
    pub lines: Vec<u32>,
    pub source_modified: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct SetFunctionBreakpointsArguments {
    pub breakpoints: Vec<FunctionBreakpoint>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DataBreakpointInfoArguments {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frame_id: Option<i64>,
}

/// The id to watch `name` by, or why it cannot be watched (`dataId` null).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct DataBreakpointInfoBody {
    pub data_id: Option<String>,
    pub description: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct SetDataBreakpointsArguments {
    pub breakpoints: Vec<DataBreakpoint>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DataBreakpoint {
    pub data_id: String,
    pub access_type: &'static str,
}

#[derive(Debug, Clone, Serialize)]
pub struct SetExceptionBreakpointsArguments {
    pub filters: Vec<String>,
}

/// The breakpoints as placed, in the order asked for.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct BreakpointsBody {
    pub breakpoints: Vec<Breakpoint>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ThreadsBody {
    pub threads: Vec<Thread>,
}

impl ThreadsBody {
    /// The name of the thread `id`, if the list has it with a name.
    pub fn name_of(&self, id: i64) -> Option<String> {
        self.threads.iter().find(|t| t.id == id)?.name.clone()
    }
}

/// Arguments naming one thread (`continue`, the steps, `pause`, `exceptionInfo`).
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadArguments {
    pub thread_id: i64,
}

#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StackTraceArguments {
    pub thread_id: i64,
    pub start_frame: usize,
    pub levels: usize,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct StackTraceBody {
    pub stack_frames: Vec<StackFrame>,
    pub total_frames: Option<u64>,
}

#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScopesArguments {
    pub frame_id: i64,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ScopesBody {
    pub scopes: Vec<Scope>,
}

#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VariablesArguments {
    pub variables_reference: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct VariablesBody {
    pub variables: Vec<Variable>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EvaluateArguments {
    pub expression: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frame_id: Option<i64>,
    pub context: &'static str,
}

/// An evaluation's result, shaped like a variable without a name.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct EvaluateBody {
    pub result: String,
    #[serde(rename = "type")]
    pub type_name: Option<String>,
    pub variables_reference: i64,
    pub named_variables: Option<u64>,
    pub indexed_variables: Option<u64>,
}

impl EvaluateBody {
    /// The result as a variable named `name`.
    pub fn into_variable(self, name: &str) -> Variable {
        Variable {
            name: name.to_string(),
            value: self.result,
            type_name: self.type_name,
            variables_reference: self.variables_reference,
            named_variables: self.named_variables,
            indexed_variables: self.indexed_variables,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SetVariableArguments {
    pub variables_reference: i64,
    pub name: String,
    pub value: String,
}

/// The value a variable was set to.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct SetVariableBody {
    pub value: String,
    #[serde(rename = "type")]
    pub type_name: Option<String>,
    pub variables_reference: i64,
    pub named_variables: Option<u64>,
    pub indexed_variables: Option<u64>,
}

impl SetVariableBody {
    /// The new value as the variable `name`.
    pub fn into_variable(self, name: &str) -> Variable {
        Variable {
            name: name.to_string(),
            value: self.value,
            type_name: self.type_name,
            variables_reference: self.variables_reference,
            named_variables: self.named_variables,
            indexed_variables: self.indexed_variables,
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ExceptionInfoBody {
    pub exception_id: Option<String>,
    pub description: Option<String>,
    pub break_mode: Option<String>,
    pub details: Option<ExceptionDetails>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ExceptionDetails {
    pub stack_trace: Option<String>,
}

#[derive(Debug, Clone, Copy, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DisconnectArguments {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restart: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub terminate_debuggee: Option<bool>,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn arguments_are_written_as_the_protocol_names_them_and_unset_ones_are_left_out() {
        let args = SetBreakpointsArguments {
            source: Source {
                name: Some("a.py".into()),
                path: Some("/p/a.py".into()),
                presentation_hint: None,
            },
            breakpoints: vec![SourceBreakpoint {
                line: 3,
                condition: None,
                hit_condition: Some(">= 2".into()),
                log_message: None,
            }],
            lines: vec![3],
            source_modified: false,
        };
        assert_eq!(
            serde_json::to_value(&args).unwrap(),
            json!({
                "source": {"name": "a.py", "path": "/p/a.py"},
                "breakpoints": [{"line": 3, "hitCondition": ">= 2"}],
                "lines": [3],
                "sourceModified": false,
            })
        );
        let paged = VariablesArguments { variables_reference: 5, start: None, count: Some(4) };
        assert_eq!(
            serde_json::to_value(paged).unwrap(),
            json!({"variablesReference": 5, "count": 4})
        );
        assert_eq!(serde_json::to_value(NoArguments {}).unwrap(), json!({}));
    }

    #[test]
    fn bodies_that_leave_fields_out_read_with_their_defaults() {
        let body: StackTraceBody =
            serde_json::from_value(json!({"stackFrames": [{"id": 1, "line": 7}]})).unwrap();
        let frame = &body.stack_frames[0];
        assert_eq!((frame.id, frame.name.as_str(), frame.line, frame.column), (Some(1), "?", 7, 0));
        assert!(body.total_frames.is_none());
        let result: EvaluateBody =
            serde_json::from_value(json!({"result": "3", "variablesReference": 0})).unwrap();
        let variable = result.into_variable("x + 1");
        assert_eq!(
            (variable.name.as_str(), variable.value.as_str(), variable.children()),
            ("x + 1", "3", None)
        );
    }
}
