//! Request, response and configuration types of the eval family (serde + JSON Schema).

use std::{collections::BTreeMap, path::PathBuf, time::Duration};

use agent_tools_support::Tier;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Which interpreter runs a cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    // CPython: the project's own interpreter (`.venv`, `venv`, then `python3` on PATH).
    #[default]
    Python,
    // Node.js when `node` resolves, else embedded QuickJS (`[eval] javascript` chooses).
    #[serde(alias = "js")]
    Javascript,
    // TypeScript on Node.js with type stripping (23.2+); elsewhere the result says so.
    #[serde(alias = "ts")]
    Typescript,
}

impl Language {
    pub fn as_str(self) -> &'static str {
        match self {
            Language::Python => "python",
            Language::Javascript => "javascript",
            Language::Typescript => "typescript",
        }
    }

    /// The name shown to people: `Python`, `JavaScript`.
    pub fn title(self) -> &'static str {
        match self {
            Language::Python => "Python",
            Language::Javascript => "JavaScript",
            Language::Typescript => "TypeScript",
        }
    }
}

/// Arguments of one `eval` call: a new cell of Python or JavaScript in a persistent kernel, or
/// `cell: N` to wait again for a cell that was still running when its call returned.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EvalRequest {
    /// The cell's source.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub code: String,
    /// 5-10 words saying what the cell does.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// `python` (default), `javascript` or `typescript`.
    #[serde(default)]
    pub language: Option<Language>,
    /// Start this language's kernel clean first.
    #[serde(default)]
    pub reset: Option<bool>,
    /// Seconds to wait (default 30, max 600).
    #[serde(default)]
    pub wait_s: Option<f64>,
    /// A running cell's number: wait for it again.
    #[serde(default)]
    #[schemars(schema_with = "cell_number")]
    pub cell: Option<u64>,
    /// With `cell`: stop it.
    #[serde(default)]
    pub interrupt: Option<bool>,
}

fn cell_number(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "integer"})
}

impl EvalRequest {
    /// A new cell of `code` in the default language, waiting the default time.
    pub fn new(code: impl Into<String>, description: impl Into<String>) -> Self {
        EvalRequest { code: code.into(), description: description.into(), ..EvalRequest::default() }
    }

    /// A call that waits again for cell `cell` (up to `wait_s`).
    pub fn collect(cell: u64) -> Self {
        EvalRequest { cell: Some(cell), ..EvalRequest::default() }
    }
}

/// How long a call waits for its cell by default, and at most, in seconds.
pub const DEFAULT_WAIT_SECONDS: f64 = 30.0;
pub const MAX_WAIT_SECONDS: f64 = 600.0;

/// The `[eval]` section of `agent-tools.toml`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct EvalConfig {
    /// The Python interpreter; default: the project's `.venv/bin/python`, then `venv/bin/python`,
    /// then `python3` on PATH.
    pub python: Option<PathBuf>,
    /// The engine for `javascript` cells: `node` or `quickjs`; default: Node.js when `node`
    /// resolves, else the embedded QuickJS.
    pub javascript: Option<JsEngine>,
    /// The `node` executable; default: `node` on PATH.
    pub node: Option<PathBuf>,
    /// Use IPython's input transformations, magics and display machinery when the kernel's
    /// interpreter can import IPython (as ipykernel does); false: the stdlib runner only.
    pub ipython: bool,
    /// Seconds a cell may go without output before it is interrupted (the inactivity budget).
    /// Suspended while a bridged `tool()` call is pending.
    pub inactivity_seconds: f64,
    /// Seconds an interrupted cell has to stop before the kernel is killed.
    pub grace_seconds: f64,
    /// Seconds a call waits for its cell when it gives no `wait_s` (default 30: below the tool
    /// timeouts of the common clients); a cell still running then keeps running.
    pub wait_seconds: f64,
    /// Cap on the text output of one cell, in characters (head and tail are kept).
    pub max_output_chars: usize,
    /// At most this many images per cell.
    pub max_images: usize,
    /// Memory limit of the JavaScript runtime, in MiB.
    pub js_memory_limit_mb: usize,
    /// The highest tier `tool()` may reach from a kernel: `read`, `write` or `exec`.
    /// The calling surface's ceiling lowers it further.
    pub bridge_tier: Tier,
}

impl Default for EvalConfig {
    fn default() -> Self {
        EvalConfig {
            python: None,
            javascript: None,
            node: None,
            ipython: true,
            inactivity_seconds: 300.0,
            grace_seconds: 5.0,
            wait_seconds: DEFAULT_WAIT_SECONDS,
            max_output_chars: 20_000,
            max_images: 8,
            js_memory_limit_mb: 512,
            bridge_tier: Tier::Exec,
        }
    }
}

impl EvalConfig {
    pub fn inactivity(&self) -> Duration {
        Duration::from_secs_f64(self.inactivity_seconds.max(0.01))
    }

    pub fn grace(&self) -> Duration {
        Duration::from_secs_f64(self.grace_seconds.max(0.01))
    }

    /// How long a call without `wait_s` waits for its cell.
    pub fn wait(&self) -> Duration {
        let seconds = self.wait_seconds;
        let seconds = if seconds.is_finite() { seconds } else { DEFAULT_WAIT_SECONDS };
        Duration::from_secs_f64(seconds.clamp(0.0, MAX_WAIT_SECONDS))
    }
}

/// Which engine runs JavaScript cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum JsEngine {
    /// A child process of `node`: Node's APIs, `import`/`require` of built-ins and the
    /// project's `node_modules`.
    Node,
    /// QuickJS-NG embedded in this process: no file system or network except through `tool()`.
    Quickjs,
}

/// A mime bundle: mime type to data (text, base64 for images, JSON for application/json).
pub type Bundle = BTreeMap<String, Value>;

/// One output of a cell, in the order it arrived.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Output {
    /// Text written to stdout or stderr.
    Stream { name: StreamName, text: String },
    /// A rich output from `display()`, `plt.show()` or a figure left open.
    Display {
        bundle: Bundle,
        /// The id it was shown with (`display(obj, display_id=…)`): an update of that id
        /// replaces it where it is, as in a notebook.
        #[serde(skip_serializing_if = "Option::is_none")]
        display_id: Option<String>,
    },
    /// Output cut because the cell printed more than the cap.
    Cut { chars: usize },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum StreamName {
    Stdout,
    Stderr,
}

/// An exception raised by the cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CellError {
    pub ename: String,
    pub evalue: String,
    /// The formatted traceback, runner frames removed.
    pub traceback: String,
}

/// How the cell ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CellStatus {
    /// Ran to the end.
    Ok,
    /// Raised an exception.
    Error,
    /// Interrupted (inactivity budget or cancellation); the kernel and its state survived.
    Interrupted,
    /// Did not stop after the interrupt within the grace period: the kernel was killed.
    Killed,
    /// The kernel died while running the cell (crash, `os._exit`, out of memory).
    Crashed,
    /// The kernel could not be started.
    Unavailable,
    /// The call was cancelled while it waited behind another cell: it never ran, and the
    /// kernel's state is as it was.
    Cancelled,
    /// Still running (or waiting behind another cell) when the call returned: `eval` with
    /// `cell` collects what comes next and its result.
    Running,
}

/// Why the cell was interrupted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum InterruptReason {
    /// The inactivity budget ran out.
    Inactivity,
    /// The call was cancelled (the client gave up or the run ended).
    Cancelled,
    /// `eval` with `cell` and `interrupt: true` asked for it.
    Requested,
}

/// What happened to the kernel around this cell.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct KernelNote {
    /// A kernel was started for this cell (first use, reset, or after the previous one died).
    pub started: bool,
    /// Why the previous kernel's state is gone, when it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previous_lost: Option<String>,
    /// How the previous cell ended when its result never reached the model (its call was
    /// cancelled or abandoned), and whether the state survived that.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previous_cell: Option<String>,
    /// Whether the state (variables, imports) survived this cell.
    pub state_preserved: bool,
    /// For Python, the interpreter path; for JavaScript, the engine.
    pub interpreter: String,
    pub version: String,
}

/// The full result of one cell.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CellReport {
    pub language: Language,
    /// The run's number for this cell (`cell: N` collects it); 0 when it was never queued.
    pub cell: u64,
    /// The kernel's execution counter (`In[n]`); 0 when the cell did not run.
    pub execution_count: u64,
    pub status: CellStatus,
    pub outputs: Vec<Output>,
    /// The value of the last expression, when it was not `None`/`undefined`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<Bundle>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<CellError>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interrupt: Option<InterruptReason>,
    /// Free-text facts for the model: why the kernel died, how long the budget was, etc.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    pub kernel: KernelNote,
    /// The kernel's working directory after the cell, when it changed during the cell.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd_changed: Option<String>,
}

impl CellReport {
    pub(crate) fn unavailable(language: Language, message: String) -> Self {
        CellReport {
            language,
            cell: 0,
            execution_count: 0,
            status: CellStatus::Unavailable,
            outputs: Vec::new(),
            result: None,
            error: None,
            interrupt: None,
            notes: vec![message],
            kernel: KernelNote {
                started: false,
                previous_lost: None,
                previous_cell: None,
                state_preserved: false,
                interpreter: String::new(),
                version: String::new(),
            },
            cwd_changed: None,
        }
    }

    /// A cell that never ran: its call was cancelled while it waited for the kernel.
    pub(crate) fn cancelled_before_start(language: Language) -> Self {
        let mut report = CellReport::unavailable(
            language,
            "cancelled before it started: the call was cancelled while it waited for the cell \
             before it; the cell never ran and the kernel's state is unchanged"
                .into(),
        );
        report.status = CellStatus::Cancelled;
        report.kernel.state_preserved = true;
        report
    }

    /// True for the statuses the model should treat as a failed call (a cell still running
    /// is not one: its call returned on time).
    pub fn is_error(&self) -> bool {
        !matches!(self.status, CellStatus::Ok | CellStatus::Running)
    }
}

/// An image the cell produced, decoded.
#[derive(Debug, Clone, PartialEq)]
pub struct CellImage {
    pub mime_type: String,
    pub data: Vec<u8>,
}
