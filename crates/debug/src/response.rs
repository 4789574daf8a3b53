//! What each operation returns: serde types with a JSON Schema, rendered to text by `render`.

use schemars::JsonSchema;
use serde::Serialize;

use crate::{adapters::AdapterKind, adapters::AdapterReport, output::OutputChunk};

/// Cap on frames returned by `stack`.
pub const MAX_FRAMES: usize = 30;
/// Cap on children returned by `variables`.
pub const MAX_CHILDREN: usize = 50;
/// Cap on one value's characters.
pub const MAX_VALUE_CHARS: usize = 400;
/// Cap on locals shown in a stop snapshot.
pub const SNAPSHOT_LOCALS: usize = 20;
/// Lines of source shown on each side of the current line.
pub const SOURCE_CONTEXT: u32 = 3;
/// Cap on output characters returned by one call.
pub const OUTPUT_CHARS: usize = 8000;
/// Cap on threads listed.
pub const MAX_THREADS: usize = 50;

/// The result of one `debug` call.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[schemars(transform = object_root)]
pub enum DebugOutcome {
    Adapters {
        adapters: Vec<AdapterReport>,
    },
    Status(StatusView),
    Breakpoints(BreakpointsView),
    /// `launch` or `attach`: the session and where the program is now.
    Started(StartedView),
    /// `continue`, `pause`, a step.
    Run(RunState),
    Threads {
        threads: Vec<ThreadView>,
        more: usize,
    },
    Stack(StackView),
    Scopes {
        frame_id: u64,
        scopes: Vec<ScopeView>,
    },
    Variables(VariablesView),
    Evaluate(EvaluateView),
    /// `set_variable`: the variable with its new value.
    SetVariable(VariableView),
    Output(OutputView),
    Input(InputView),
    Terminated(TeardownReport),
    /// `trace`: the calls of one function over a run.
    Trace(TraceView),
    /// The program stopped while no call was waiting (a breakpoint hit between calls): that
    /// stop first, then what this call returned (at that stop).
    StoppedMeanwhile {
        stop: Box<StopSnapshot>,
        /// This call's own outcome, of its own `kind`.
        #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
        then: Box<DebugOutcome>,
    },
}

/// MCP wants an output schema whose root is an object; every variant is one.
fn object_root(schema: &mut schemars::Schema) {
    schema.insert("type".into(), "object".into());
}

/// Where the program is after a call that let it run.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum RunState {
    Stopped(Box<StopSnapshot>),
    Exited {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_code: Option<i64>,
        /// How it ended when not by exiting itself: a signal, or gone unreported.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ended_by: Option<String>,
        output: OutputChunk,
    },
    /// Still running when the wait ended (its bound passed, or the call was cancelled).
    Running {
        waited_seconds: u64,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        cancelled: bool,
        /// It is blocked reading stdin: `input` sends it text.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        waiting_for_input: bool,
        /// What a `watch` still waits for; its stop comes first in a later call's result.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        watching: Option<String>,
        output: OutputChunk,
    },
    /// The adapter went away (crashed or closed the connection).
    AdapterGone {
        reason: String,
        output: OutputChunk,
    },
}

/// Everything one usually wants at a stop, in one answer.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct StopSnapshot {
    /// Stop number: frame ids and references belong to this stop.
    pub stop: u64,
    /// breakpoint, step, exception, pause, entry, function breakpoint, …
    pub reason: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exception: Option<ExceptionView>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread: Option<ThreadView>,
    /// Whether every thread stopped (most adapters stop all).
    pub all_threads_stopped: bool,
    /// The top frame in the user's code (library and runtime frames skipped).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frame: Option<FrameView>,
    /// How many frames above it were skipped (runtime, libraries).
    pub frames_skipped: usize,
    /// A few lines around the current line: (line number, text).
    pub source: Vec<SourceLine>,
    /// The frame's locals, capped.
    pub locals: Vec<VariableView>,
    /// Locals not shown; `variables` with `locals_reference` pages through all of them.
    pub locals_more: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locals_reference: Option<u64>,
    /// The user frame and its callers (at most 5).
    pub stack: Vec<FrameView>,
    /// Output since the last call.
    pub output: OutputChunk,
    /// Facts worth knowing (a frame without source, a skipped SystemExit, …).
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct SourceLine {
    pub line: u32,
    pub text: String,
    pub current: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ExceptionView {
    /// The exception's type, for example `KeyError`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// always, unhandled, userUnhandled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub break_mode: Option<String>,
    /// The adapter's stack trace text, if it gives one (cut).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ThreadView {
    pub id: i64,
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct FrameView {
    /// Use with `scopes` and `evaluate`; valid until the program moves.
    pub frame_id: u64,
    pub name: String,
    /// Relative to the root when inside it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column: Option<u32>,
    /// Library or runtime code (skipped when choosing the user frame).
    pub library: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct VariableView {
    pub name: String,
    pub value: String,
    #[serde(rename = "type")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub type_name: Option<String>,
    /// Characters cut from the value (0 if whole).
    pub cut_chars: usize,
    /// Pass as `reference` to `variables` to see the children (absent if it has none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<u64>,
    /// How many children, when the adapter says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub children: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ScopeView {
    pub name: String,
    pub reference: u64,
    pub expensive: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct StackView {
    pub stop: u64,
    pub thread_id: i64,
    pub frames: Vec<FrameView>,
    /// Total frames, when the adapter says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct VariablesView {
    pub reference: u64,
    pub start: u64,
    pub variables: Vec<VariableView>,
    /// Whether there are children after these ones (page with `start`).
    pub has_more: bool,
    /// How many children there are in all, when the adapter says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct EvaluateView {
    pub expression: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frame_id: Option<u64>,
    pub result: VariableView,
}

#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct OutputView {
    pub output: OutputChunk,
    /// Whether the program has exited, and how.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
    /// How it ended when not by exiting itself (a signal, gone unreported).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_by: Option<String>,
}

/// What `input` wrote to the program's stdin.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct InputView {
    /// Characters sent.
    pub chars: usize,
    /// stdin was closed (the program reads end of file).
    pub closed: bool,
    /// Characters waiting because the pipe is full.
    pub pending: usize,
    /// Where the program is after it read the input, when it was running.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<RunState>,
}

/// One breakpoint as the adapter placed it.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct BreakpointView {
    pub file: String,
    /// The line asked for.
    pub requested: u32,
    /// The line it landed on (may differ: the next line with code).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// Whether the adapter could place it.
    pub verified: bool,
    /// Why not, if the adapter said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Stops only when this is true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
    /// Stops only at these hits (`3`: from the third on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hit_condition: Option<String>,
    /// Logs this instead of stopping.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_message: Option<String>,
    /// The adapter's id of it, for its later `breakpoint` events.
    #[serde(skip)]
    #[schemars(skip)]
    pub(crate) adapter_id: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct BreakpointsView {
    /// The file, or empty when every file's breakpoints are listed.
    pub file: String,
    pub breakpoints: Vec<BreakpointView>,
    /// No session yet: they are sent when it starts.
    pub pending: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct SessionView {
    pub adapter: AdapterKind,
    /// launch or attach.
    pub request: String,
    pub program: String,
    /// The adapter command line (or the port for a direct attach).
    pub command: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adapter_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adapter_pid: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub debuggee_pid: Option<i32>,
    /// Seconds until the session's time limit ends it.
    pub ttl_seconds_left: u64,
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct StartedView {
    pub session: SessionView,
    pub breakpoints: Vec<BreakpointView>,
    pub exception_filters: Vec<String>,
    pub state: RunState,
}

#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct StatusView {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<SessionView>,
    /// stopped, running, exited, adapter_gone, none.
    pub state: String,
    /// The current stop: number, reason and place.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<StopSummary>,
    /// The current stop in full (frame, source, locals, stack, new output).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<Box<StopSnapshot>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
    /// How the program ended when not by exiting itself (a signal, gone unreported).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_by: Option<String>,
    /// Breakpoints set for this conversation (sent on launch).
    pub breakpoints: usize,
    /// Why the last session ended, if none runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_end: Option<String>,
    /// Output entries not yet read.
    pub unread_output: u64,
    /// What a `watch` still waits for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watching: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct StopSummary {
    pub stop: u64,
    pub reason: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub place: Option<String>,
}

/// What teardown did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
pub struct TeardownReport {
    pub program: String,
    /// Why the session ended: terminate, time limit, run end, replaced after exit.
    pub reason: String,
    /// The steps taken, in order.
    pub steps: Vec<String>,
    /// Processes that had to be killed.
    pub killed: Vec<String>,
    /// The final output not yet read.
    pub output: OutputChunk,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
    /// How it ended when not by exiting itself (a signal, gone unreported).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_by: Option<String>,
}

/// `trace`: the calls of one function over one run (the first and the last kept when many).
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
pub struct TraceView {
    pub function: String,
    /// Calls seen in all.
    pub total: u64,
    /// Calls between the first and the last ones kept, left out.
    pub omitted: u64,
    pub calls: Vec<TraceCall>,
    /// How the trace ended: the program's exit, or the time running out.
    pub ended: String,
    /// The program's output (its newest part when long).
    pub output: String,
}

/// One call of a traced function.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
pub struct TraceCall {
    /// 1 for the first call.
    pub index: u64,
    /// Frames on the stack at its entry.
    pub depth: u64,
    /// `name=value`: the frame's locals at entry.
    pub arguments: Vec<String>,
    /// Where it was called from: `file:line in function`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caller: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub returned: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exception: Option<String>,
    /// Wall time from entry to return, under the debugger (its stops included).
    pub elapsed_ms: u64,
}
