//! The tool contract: `Tool`, `Tier`, `ToolSpec`, `ToolResult` and `CallContext`.

mod schema;
mod typed;

use std::{
    fmt,
    path::{Path, PathBuf},
    sync::Arc,
};

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Serialize, de::DeserializeOwned};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub use agent_tools_support::{Before, Tier};

pub use self::typed::TypedTool;

/// What the model sees of a tool: name, description, tier and argument schema.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub tier: Tier,
    /// JSON Schema of the arguments, generated from the argument type.
    pub input_schema: Value,
    /// JSON Schema of [`ToolResult::structured`], when the tool returns structured content.
    ///
    /// A tool either sets this and returns the full payload as structured content on success,
    /// or returns no structured content at all (D8: clients such as Claude Code and Codex show
    /// the model only `structuredContent` when it is present).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// A short human title for client UIs, for example `Read file`.
    pub title: String,
    /// What a call does to the world beyond its tier; the MCP annotations come from here.
    pub effects: Effects,
}

/// What a tool's calls do, stated once per tool; with the tier, this decides every MCP hint.
///
/// The default for a tier is the cautious reading of it: a read tool is read-only, idempotent
/// and closed-world; a write tool may destroy what a file held; an exec tool may also reach
/// beyond the workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Effects {
    /// May overwrite or delete what was there (false: only adds).
    pub destructive: bool,
    /// Calling again with the same arguments has no further effect.
    pub idempotent: bool,
    /// Reaches beyond the workspace (processes, network, people).
    pub open_world: bool,
    /// Acts through workers whose ceiling is the caller's surface (vibe): read-only exactly
    /// on a read-only surface, whatever the tool's own tier.
    pub delegates: bool,
}

impl Effects {
    /// The cautious statement for `tier`.
    pub const fn of(tier: Tier) -> Self {
        match tier {
            Tier::Read => Effects {
                destructive: false,
                idempotent: true,
                open_world: false,
                delegates: false,
            },
            Tier::Write => Effects {
                destructive: true,
                idempotent: false,
                open_world: false,
                delegates: false,
            },
            Tier::Exec => {
                Effects { destructive: true, idempotent: false, open_world: true, delegates: false }
            }
        }
    }

    pub const fn destructive(mut self, yes: bool) -> Self {
        self.destructive = yes;
        self
    }

    pub const fn idempotent(mut self, yes: bool) -> Self {
        self.idempotent = yes;
        self
    }

    pub const fn open_world(mut self, yes: bool) -> Self {
        self.open_world = yes;
        self
    }

    /// Acts through workers that get the caller's ceiling (see [`Effects::delegates`]).
    pub const fn delegating(mut self) -> Self {
        self.delegates = true;
        self
    }
}

/// The MCP tool annotations of a tool on a surface with a given ceiling.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Annotations {
    pub title: String,
    pub read_only: bool,
    pub destructive: bool,
    pub idempotent: bool,
    pub open_world: bool,
}

impl ToolSpec {
    /// A spec whose schema is generated from `Args` with schemars.
    pub fn new<Args: JsonSchema>(
        name: impl Into<String>,
        description: impl Into<String>,
        tier: Tier,
    ) -> Self {
        ToolSpec {
            name: name.into(),
            description: description.into(),
            tier,
            input_schema: schema_for::<Args>(),
            output_schema: None,
            title: String::new(),
            effects: Effects::of(tier),
        }
        .with_default_title()
    }

    /// The spec of the tool a family's descriptor declares (its name, description and tier),
    /// with the schema generated from `Args`.
    pub fn declared<Args: JsonSchema>(tool: &crate::ToolDescriptor) -> Self {
        Self::new::<Args>(tool.name, tool.description, tool.tier)
    }

    /// The title for client UIs (default: the name in words, `ast_grep` → `Ast grep`).
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = title.into();
        self
    }

    /// States what calls do beyond the tier's cautious default.
    pub fn with_effects(mut self, effects: Effects) -> Self {
        self.effects = effects;
        self
    }

    fn with_default_title(mut self) -> Self {
        let mut words = self.name.replace('_', " ");
        if let Some(first) = words.get_mut(..1) {
            first.make_ascii_uppercase();
        }
        self.title = words;
        self
    }

    /// The annotations this tool carries on a surface whose ceiling is `ceiling`.
    ///
    /// Read-only means nothing changes, directly or through a worker: a delegating tool is
    /// read-only only where its workers are (a read-only surface gives them a read-only
    /// ceiling or refuses them). Read-only tools are never destructive; idempotent is what the
    /// tool states, whatever the surface.
    pub fn annotations(&self, ceiling: Tier) -> Annotations {
        let read_only =
            self.tier == Tier::Read && (!self.effects.delegates || ceiling == Tier::Read);
        Annotations {
            title: self.title.clone(),
            read_only,
            destructive: !read_only && self.effects.destructive,
            // Spawning a worker twice makes two, on any surface: read-only does not imply it.
            idempotent: self.effects.idempotent,
            open_world: self.effects.open_world,
        }
    }

    /// Declares that successful results carry `Output` as structured content.
    pub fn with_output_schema<Output: JsonSchema>(mut self) -> Self {
        self.output_schema = Some(output_schema_for::<Output>());
        self
    }
}

/// The JSON Schema of `T`, as an MCP client expects it: an object schema in standard JSON
/// Schema, lean and portable (the private `schema` module has the rules).
pub fn schema_for<T: JsonSchema>() -> Value {
    let settings = schemars::generate::SchemaSettings::draft2020_12();
    let schema = settings.into_generator().into_root_schema_for::<T>();
    let mut value = schema.to_value();
    schema::lean(&mut value, schema::Side::Input);
    value
}

/// The JSON Schema of `T` as it is serialised (a field skipped when empty is not required),
/// for output schemas: clients validate structured content against it.
pub fn output_schema_for<T: JsonSchema>() -> Value {
    let settings = schemars::generate::SchemaSettings::draft2020_12().for_serialize();
    let schema = settings.into_generator().into_root_schema_for::<T>();
    let mut value = schema.to_value();
    schema::lean(&mut value, schema::Side::Output);
    value
}

/// An image for the transcript, such as a plot from a kernel.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Image {
    /// For example `image/png`.
    pub mime_type: String,
    #[serde(skip)]
    pub data: Vec<u8>,
}

/// What a tool call returns to the model.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ToolResult {
    /// Model-facing text.
    pub text: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<Image>,
    /// Structured result, for clients and `tool()` bridges that want data instead of prose.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured: Option<Value>,
    pub is_error: bool,
    /// Files the call changed, absolute, with what each held before. Wrappers (diagnostics on
    /// write) read this; the model does not.
    #[serde(skip)]
    pub changed_files: Vec<ChangedFile>,
    /// Files a dry run would change, with what each would hold; nothing was written.
    /// Wrappers (diagnostics on write) check them as a preview.
    #[serde(skip)]
    pub proposed_files: Vec<ProposedChange>,
}

/// One file a dry run would change.
#[derive(Debug, Clone, PartialEq)]
pub struct ProposedChange {
    /// Absolute path.
    pub path: PathBuf,
    /// What the file holds now.
    pub before: Before,
    /// What it would hold; `None` deletes it.
    pub after: Option<Arc<[u8]>>,
}

/// One file a call changed.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangedFile {
    /// Absolute path.
    pub path: PathBuf,
    /// What the file held before the call.
    pub before: Before,
}

impl ToolResult {
    /// A successful result with text only.
    pub fn text(text: impl Into<String>) -> Self {
        ToolResult { text: text.into(), ..Default::default() }
    }

    /// A failed call: the text says what failed and what would work.
    pub fn error(text: impl Into<String>) -> Self {
        ToolResult { text: text.into(), is_error: true, ..Default::default() }
    }

    pub fn with_structured(mut self, value: Value) -> Self {
        self.structured = Some(value);
        self
    }

    pub fn with_image(mut self, image: Image) -> Self {
        self.images.push(image);
        self
    }

    /// Records a changed file whose earlier contents the tool did not keep.
    pub fn with_changed_file(self, path: PathBuf) -> Self {
        self.with_changed_file_before(path, Before::Unknown)
    }

    /// Records a file the call would change (a dry run), what it holds and would hold.
    pub fn with_proposed_file(
        mut self,
        path: PathBuf,
        before: Before,
        after: Option<Arc<[u8]>>,
    ) -> Self {
        self.proposed_files.push(ProposedChange { path, before, after });
        self
    }

    /// Records a changed file and what it held before the call.
    pub fn with_changed_file_before(mut self, path: PathBuf, before: Before) -> Self {
        self.changed_files.push(ChangedFile { path, before });
        self
    }

    /// True when both renderings are within `max_chars` characters each: the text, and the
    /// structured content as serialised JSON (what a client that reads only structured content
    /// gets).
    pub fn fits(&self, max_chars: usize) -> bool {
        self.text.chars().count() <= max_chars
            && self.structured.as_ref().is_none_or(|value| json_chars(value) <= max_chars)
    }

    /// Makes the result fit `max_chars` without a payload to cut: the structured content is
    /// dropped when it does not fit (D8: it is the whole payload or absent) and the text is cut
    /// with a note. Tools with a payload cut the payload itself (see [`fit_prefix`]), so both
    /// renderings say the same; this is the backstop.
    pub fn cap(&mut self, max_chars: usize) {
        if self.fits(max_chars) {
            return;
        }
        if self.structured.as_ref().is_some_and(|value| json_chars(value) > max_chars) {
            tracing::warn!("a structured payload over the output cap was dropped");
            self.structured = None;
        }
        self.truncate_text(max_chars);
    }

    /// Cuts the text to at most `max_chars` characters, saying how much was cut.
    ///
    /// Never silent: the note names both sizes so the model knows to narrow its request.
    pub fn truncate_text(&mut self, max_chars: usize) {
        let total = self.text.chars().count();
        if total <= max_chars {
            return;
        }
        let cut_at = self.text.char_indices().nth(max_chars).map_or(self.text.len(), |(i, _)| i);
        self.text.truncate(cut_at);
        self.text.push_str(&format!(
            "\n[output truncated: showed {max_chars} of {total} characters, {} cut; \
             narrow the request (a line range, a smaller path) to see the rest]",
            total - max_chars
        ));
    }
}

/// Characters of `value` serialised as JSON.
fn json_chars(value: &Value) -> usize {
    serde_json::to_string(value).map_or(usize::MAX, |text| text.chars().count())
}

/// The result of `make(n)` for the largest `n` in `1..=len` whose result fits `max_chars`
/// ([`ToolResult::fits`]), with that `n`; `make(1)` when none does (the surface's backstop then
/// cuts it). `make` renders the first `n` items of a payload (lines, matches) with the note
/// saying where it stopped, so that a cut payload and its text say the same; a result grows
/// with `n`.
pub fn fit_prefix(
    len: usize,
    max_chars: usize,
    mut make: impl FnMut(usize) -> ToolResult,
) -> (usize, ToolResult) {
    let whole = make(len);
    if len <= 1 || whole.fits(max_chars) {
        return (len, whole);
    }
    // make(lo) fits or lo is 1; make(hi) does not fit.
    let (mut lo, mut hi) = (1, len);
    let mut best = None;
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        let result = make(mid);
        if result.fits(max_chars) {
            lo = mid;
            best = Some(result);
        } else {
            hi = mid;
        }
    }
    (lo, best.unwrap_or_else(|| make(lo)))
}

impl From<crate::Unavailable> for ToolResult {
    fn from(unavailable: crate::Unavailable) -> Self {
        let structured = serde_json::to_value(&unavailable).ok();
        ToolResult {
            text: unavailable.to_string(),
            is_error: true,
            structured,
            ..Default::default()
        }
    }
}

/// Which surface a call came through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SurfaceInfo {
    /// For example `build` or `plan`.
    pub kind: String,
    pub ceiling: Tier,
}

/// Everything a tool may know about the call it serves.
#[derive(Debug, Clone)]
pub struct CallContext {
    pub run_id: String,
    pub conversation_id: String,
    /// The run's root: every path a tool touches is confined to it.
    pub root: PathBuf,
    pub surface: SurfaceInfo,
    /// Cancelled when the call is abandoned or the run ends.
    pub cancel: CancellationToken,
    /// Cancelled when the caller's connection went away while the run goes on (a host whose
    /// transport tells the two apart): nobody reads the answer, and work that can outlive its
    /// call (a kernel's cell) keeps running for a later call to collect. A host may cancel
    /// `cancel` too; a tool that honours `cut` checks it first.
    pub cut: CancellationToken,
    /// Set for nested calls (for example from an `eval` cell's `tool()` bridge).
    pub parent_call_id: Option<String>,
    /// This call's own id.
    pub call_id: String,
    /// How deep this call is nested (0 for a model's call).
    pub depth: u32,
    /// The cap on one result, in characters, for its text and its structured content each
    /// (`[output] max_chars`). A tool with a payload cuts the payload to fit it and says so in
    /// the payload ([`fit_prefix`]); the surface cuts whatever is still over.
    pub max_output_chars: usize,
    /// The surface the call came through, for nested calls.
    pub(crate) origin: Option<crate::Surface>,
    /// Where progress of a long call goes (MCP `notifications/progress` when the client sent
    /// a `progressToken`); `None` when nobody listens.
    pub progress: Option<ProgressSink>,
    /// Told once the call is handed to its tool (see [`Dispatched`]); `None` when nobody waits.
    pub dispatched: Option<Dispatched>,
    /// Where this call's cards (questions and approvals) go when the host answers them per
    /// call rather than per run: a 2026-07-28 MCP connection answers a card through the retry
    /// of the very `tools/call` that raised it. `None`: the run's question port. Nested calls
    /// inherit it.
    #[cfg(feature = "ask")]
    pub cards: Option<CallCards>,
}

/// A call's own question port (see [`CallContext::cards`]).
#[cfg(feature = "ask")]
#[derive(Clone)]
pub struct CallCards(pub Arc<dyn agent_tools_ask::QuestionPort>);

#[cfg(feature = "ask")]
impl fmt::Debug for CallCards {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CallCards")
    }
}

/// Fired once a call has been handed to its tool: the tool's task has run up to where it first
/// waits (where a tool queues for its resource: a kernel, a debug session, a file), or the call
/// waits for an operator's approval, or it ended before; at the latest when the last clone is
/// dropped. A host that keeps the calls of a connection in arrival order lets the next one go
/// then.
#[derive(Clone)]
pub struct Dispatched(Arc<DispatchedOnce>);

struct DispatchedOnce {
    fired: std::sync::atomic::AtomicBool,
    signal: Box<dyn Fn() + Send + Sync>,
}

impl DispatchedOnce {
    fn fire(&self) {
        if !self.fired.swap(true, std::sync::atomic::Ordering::SeqCst) {
            (self.signal)();
        }
    }
}

impl Drop for DispatchedOnce {
    fn drop(&mut self) {
        self.fire();
    }
}

impl Dispatched {
    pub fn new(signal: impl Fn() + Send + Sync + 'static) -> Self {
        Dispatched(Arc::new(DispatchedOnce {
            fired: std::sync::atomic::AtomicBool::new(false),
            signal: Box::new(signal),
        }))
    }

    /// Fires the signal (once; later calls do nothing).
    pub fn fire(&self) {
        self.0.fire();
    }
}

impl fmt::Debug for Dispatched {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Dispatched")
    }
}

/// One progress report of a long call: `progress` grows, `total` when known.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProgressReport {
    pub progress: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<f64>,
    /// For example `412 files searched` or `12 s, 3 lines of output`.
    pub message: String,
}

/// Receives [`ProgressReport`]s; the host rate-limits what it forwards.
#[derive(Clone)]
pub struct ProgressSink(Arc<dyn Fn(ProgressReport) + Send + Sync>);

impl ProgressSink {
    pub fn new(sink: impl Fn(ProgressReport) + Send + Sync + 'static) -> Self {
        ProgressSink(Arc::new(sink))
    }

    pub fn report(&self, progress: ProgressReport) {
        (self.0)(progress)
    }
}

impl fmt::Debug for ProgressSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ProgressSink")
    }
}

/// A family's "still going" reports become this call's progress notifications.
impl agent_tools_support::progress::Progress for ProgressSink {
    fn report(&self, elapsed_seconds: f64, message: &str) {
        ProgressSink::report(
            self,
            ProgressReport { progress: elapsed_seconds, total: None, message: message.into() },
        );
    }
}

/// How deep nested calls (a cell calling a tool calling a cell) may go.
pub const MAX_CALL_DEPTH: u32 = 4;

impl CallContext {
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Reports progress of this call, if anyone listens; cheap when nobody does.
    pub fn report_progress(&self, progress: f64, total: Option<f64>, message: impl Into<String>) {
        if let Some(sink) = &self.progress {
            sink.report(ProgressReport { progress, total, message: message.into() });
        }
    }

    /// This call's cancellation and progress as every family takes them (support's one port).
    pub fn scope(&self) -> agent_tools_support::progress::CallScope {
        let scope = agent_tools_support::progress::CallScope::new(self.cancel.clone())
            .with_cut(self.cut.clone());
        match &self.progress {
            Some(sink) => scope.with_progress(Arc::new(sink.clone())),
            None => scope,
        }
    }

    /// Calls another tool from inside this one (for example from an `eval` cell's `tool()`),
    /// through the same surface, guards and wrappers as a model's call.
    ///
    /// The effective ceiling is the lower of this surface's and `ceiling`, so a kernel started
    /// from a read-only surface cannot reach a write tool.
    pub async fn call_nested(&self, name: &str, args: Value, ceiling: Tier) -> ToolResult {
        let Some(origin) = &self.origin else {
            return ToolResult::error(format!(
                "{name}: nested tool calls are not available in this context"
            ));
        };
        if self.depth >= MAX_CALL_DEPTH {
            return ToolResult::error(format!(
                "{name}: nested calls may go {MAX_CALL_DEPTH} levels deep; this call is at that limit"
            ));
        }
        let surface = origin.restricted(ceiling.min(self.surface.ceiling));
        let mut ctx =
            surface.context_with_cancel(self.cancel.child_token(), Some(self.call_id.clone()));
        ctx.run_id.clone_from(&self.run_id);
        ctx.conversation_id.clone_from(&self.conversation_id);
        ctx.root.clone_from(&self.root);
        ctx.depth = self.depth + 1;
        #[cfg(feature = "ask")]
        ctx.cards.clone_from(&self.cards);
        surface.call(&ctx, name, args).await
    }
}

/// A tool of the registry. Object-safe: the registry holds `Arc<dyn Tool>`.
///
/// The surface validates arguments against `spec().input_schema` before `call` runs,
/// so `call` can deserialise with [`parse_args`] and expect success.
#[async_trait]
pub trait Tool: Send + Sync {
    fn spec(&self) -> &ToolSpec;

    async fn call(&self, ctx: &CallContext, args: Value) -> ToolResult;
}

/// Shared handle to a tool.
pub type DynTool = Arc<dyn Tool>;

/// Deserialises validated arguments; on failure, an error result naming the argument.
pub fn parse_args<T: DeserializeOwned>(tool: &str, args: Value) -> Result<T, ToolResult> {
    serde_json::from_value(args)
        .map_err(|err| ToolResult::error(format!("{tool}: invalid arguments: {err}")))
}
