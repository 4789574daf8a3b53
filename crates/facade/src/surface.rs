//! Surfaces: frozen, sorted views of the registry for one tier ceiling, and dispatch by name.

use std::{path::PathBuf, str::FromStr, sync::Arc};

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::{
    tool::{CallContext, DynTool, SurfaceInfo, Tier, ToolResult, ToolSpec},
    validate::{drop_null_optionals, validate_args, whole_numbers_as_integers},
};

/// Default cap on the model-facing text of one result.
pub const DEFAULT_MAX_OUTPUT_CHARS: usize = 40_000;

/// Which view of the registry a caller gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SurfaceKind {
    /// The main agent: everything up to `exec`.
    Build,
    /// Plan mode and read-only subagents: `read` tools only.
    Plan,
}

impl SurfaceKind {
    pub fn ceiling(self) -> Tier {
        match self {
            SurfaceKind::Build => Tier::Exec,
            SurfaceKind::Plan => Tier::Read,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            SurfaceKind::Build => "build",
            SurfaceKind::Plan => "plan",
        }
    }
}

impl FromStr for SurfaceKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "build" => Ok(SurfaceKind::Build),
            "plan" | "read-only" => Ok(SurfaceKind::Plan),
            other => Err(format!("unknown surface `{other}`; use `build` or `plan`")),
        }
    }
}

/// What a run contributes to every call: ids, root and the run-wide cancellation.
#[derive(Debug, Clone)]
pub struct RunInfo {
    pub run_id: String,
    pub conversation_id: String,
    pub root: PathBuf,
    pub cancel: CancellationToken,
}

impl RunInfo {
    /// A fresh run rooted at `root` (made absolute and canonical when it exists).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        let root = root.into();
        let root = std::fs::canonicalize(&root).unwrap_or(root);
        let run_id = format!("run_{}", uuid::Uuid::new_v4().simple());
        RunInfo { conversation_id: run_id.clone(), run_id, root, cancel: CancellationToken::new() }
    }
}

/// A frozen, sorted view of the registry for one ceiling.
///
/// A tool above the ceiling is absent from `specs()`, not merely refused.
#[derive(Clone)]
pub struct Surface {
    info: SurfaceInfo,
    visible: Arc<[DynTool]>,
    hidden: Arc<[(String, Tier)]>,
    max_output_chars: usize,
    approval: Option<Arc<crate::approval::ApprovalGate>>,
    /// The run's resources, asked for background notices after every call.
    notices: Arc<[Arc<dyn crate::RunResource>]>,
}

impl std::fmt::Debug for Surface {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Surface").field("info", &self.info).field("tools", &self.names()).finish()
    }
}

impl Surface {
    pub(crate) fn new(kind: SurfaceKind, tools: &[DynTool]) -> Self {
        let ceiling = kind.ceiling();
        let mut visible: Vec<DynTool> = Vec::new();
        let mut hidden = Vec::new();
        for tool in tools {
            let spec = tool.spec();
            if spec.tier <= ceiling {
                visible.push(tool.clone());
            } else {
                hidden.push((spec.name.clone(), spec.tier));
            }
        }
        visible.sort_by(|a, b| a.spec().name.cmp(&b.spec().name));
        Surface {
            info: SurfaceInfo { kind: kind.as_str().to_string(), ceiling },
            visible: visible.into(),
            hidden: hidden.into(),
            max_output_chars: DEFAULT_MAX_OUTPUT_CHARS,
            approval: None,
            notices: Arc::new([]),
        }
    }

    /// Every result through this surface starts with what `resources` finished in the
    /// background since the previous one.
    pub(crate) fn with_notices_from(
        mut self,
        resources: Arc<[Arc<dyn crate::RunResource>]>,
    ) -> Self {
        self.notices = resources;
        self
    }

    /// Every call through this surface (and surfaces restricted from it) passes `gate` first.
    pub(crate) fn with_approval_gate(
        mut self,
        gate: Option<Arc<crate::approval::ApprovalGate>>,
    ) -> Self {
        self.approval = gate;
        self
    }

    /// Everything up to `exec`.
    pub fn build(registry: &crate::Registry) -> Self {
        registry.surface(SurfaceKind::Build)
    }

    /// Read tools only: plan mode and read-only subagents.
    pub fn plan(registry: &crate::Registry) -> Self {
        registry.surface(SurfaceKind::Plan)
    }

    pub fn with_max_output_chars(mut self, max: usize) -> Self {
        self.max_output_chars = max;
        self
    }

    pub fn info(&self) -> &SurfaceInfo {
        &self.info
    }

    /// The specs the model sees, sorted by name.
    pub fn specs(&self) -> Vec<&ToolSpec> {
        self.visible.iter().map(|t| t.spec()).collect()
    }

    pub fn names(&self) -> Vec<&str> {
        self.visible.iter().map(|t| t.spec().name.as_str()).collect()
    }

    pub fn get(&self, name: &str) -> Option<&DynTool> {
        self.visible.iter().find(|t| t.spec().name == name)
    }

    /// The context a call on this surface gets.
    pub fn context(&self, run: &RunInfo, parent_call_id: Option<String>) -> CallContext {
        let mut ctx = self.context_with_cancel(run.cancel.child_token(), parent_call_id);
        ctx.run_id.clone_from(&run.run_id);
        ctx.conversation_id.clone_from(&run.conversation_id);
        ctx.root.clone_from(&run.root);
        ctx
    }

    pub(crate) fn context_with_cancel(
        &self,
        cancel: CancellationToken,
        parent_call_id: Option<String>,
    ) -> CallContext {
        CallContext {
            run_id: String::new(),
            conversation_id: String::new(),
            root: PathBuf::new(),
            surface: self.info.clone(),
            cancel,
            cut: CancellationToken::new(),
            parent_call_id,
            call_id: format!("call_{}", uuid::Uuid::new_v4().simple()),
            depth: 0,
            max_output_chars: self.max_output_chars,
            origin: Some(self.clone()),
            progress: None,
            dispatched: None,
            #[cfg(feature = "ask")]
            cards: None,
        }
    }

    /// This surface with its ceiling lowered to `ceiling` (never raised).
    pub fn restricted(&self, ceiling: Tier) -> Surface {
        if ceiling >= self.info.ceiling {
            return self.clone();
        }
        let (visible, newly_hidden): (Vec<DynTool>, Vec<DynTool>) =
            self.visible.iter().cloned().partition(|t| t.spec().tier <= ceiling);
        let mut hidden: Vec<(String, Tier)> = self.hidden.to_vec();
        hidden.extend(newly_hidden.iter().map(|t| (t.spec().name.clone(), t.spec().tier)));
        Surface {
            info: SurfaceInfo {
                kind: format!("{}, limited to {ceiling}", self.info.kind),
                ceiling,
            },
            visible: visible.into(),
            hidden: hidden.into(),
            max_output_chars: self.max_output_chars,
            approval: self.approval.clone(),
            notices: self.notices.clone(),
        }
    }

    /// Why `name` cannot be called here, or `None` if it can.
    pub fn refusal(&self, name: &str) -> Option<String> {
        if self.get(name).is_some() {
            return None;
        }
        if let Some((_, tier)) = self.hidden.iter().find(|(n, _)| n == name) {
            return Some(format!(
                "`{name}` is a {tier}-tier tool; this surface ({}) is limited to {}-tier tools. \
                 Available here: {}",
                self.info.kind,
                self.info.ceiling,
                self.names().join(", ")
            ));
        }
        Some(format!(
            "unknown tool `{name}`; the tools on this surface ({}) are: {}",
            self.info.kind,
            self.names().join(", ")
        ))
    }

    /// Dispatches by name: refuses hidden and unknown tools, validates the arguments
    /// against the schema (the tool is not called when they are wrong), runs the tool,
    /// and caps what is still over the output cap ([`ToolResult::cap`]).
    pub async fn call(&self, ctx: &CallContext, name: &str, args: Value) -> ToolResult {
        if let Some(refusal) = self.refusal(name) {
            return ToolResult::error(refusal);
        }
        let Some(tool) = self.get(name) else {
            return ToolResult::error(format!("unknown tool `{name}`"));
        };
        let mut args = if args.is_null() { Value::Object(Default::default()) } else { args };
        drop_null_optionals(&tool.spec().input_schema, &mut args);
        whole_numbers_as_integers(&tool.spec().input_schema, &mut args);
        if let Err(message) = validate_args(&tool.spec().input_schema, &args) {
            return ToolResult::error(format!("{name}: {message}"));
        }
        if let Some(gate) = &self.approval {
            // A card waits for a person: the calls after this one need not.
            let check = first_poll(gate.check(ctx, tool.spec(), &args), |pending| {
                if pending && let Some(dispatched) = &ctx.dispatched {
                    dispatched.fire();
                }
            });
            if let Some(denied) = check.await {
                return denied;
            }
        }
        let mut result = call_contained(tool.clone(), ctx.clone(), args).await;
        result.cap(self.max_output_chars);
        // A nested call (a kernel's `tool()`) returns to code, not to the model: the notices
        // wait for the next call the model sees.
        if ctx.depth == 0 {
            self.put_notices(&mut result);
        }
        result
    }

    /// Puts the run's background notices at the head of `result`: first in the text, and as
    /// `notices` in the structured content when it has one (clients that show the model only
    /// the structured content show it there).
    fn put_notices(&self, result: &mut ToolResult) {
        let notices: Vec<crate::Notice> =
            self.notices.iter().flat_map(|r| r.take_notices()).collect();
        if notices.is_empty() {
            return;
        }
        let texts: Vec<&str> = notices.iter().map(|n| n.text.as_str()).collect();
        result.text = format!("{}\n\n{}", texts.join("\n\n"), result.text);
        if let Some(Value::Object(map)) = &mut result.structured {
            let data: Vec<Value> = notices.into_iter().map(|n| n.data).collect();
            map.insert("notices".into(), Value::Array(data));
        }
    }
}

/// Awaits `work`, calling `after` once its first poll returns (with whether it is still
/// pending).
async fn first_poll<F: Future>(work: F, after: impl FnOnce(bool)) -> F::Output {
    let mut work = std::pin::pin!(work);
    let mut after = Some(after);
    std::future::poll_fn(|cx| {
        let polled = work.as_mut().poll(cx);
        if let Some(after) = after.take() {
            after(polled.is_pending());
        }
        polled
    })
    .await
}

/// Runs the tool in a task of its own so that a panic inside it becomes an error result
/// instead of tearing down the caller (an MCP connection, a harness turn). Dropping the
/// returned future still cancels the call.
async fn call_contained(tool: DynTool, ctx: CallContext, args: Value) -> ToolResult {
    struct AbortOnDrop(tokio::task::AbortHandle);
    impl Drop for AbortOnDrop {
        fn drop(&mut self) {
            self.0.abort();
        }
    }
    let name = tool.spec().name.clone();
    let task = tokio::spawn(async move {
        // Handed on once the tool has run up to where it first waits (its resource's queue).
        let dispatched = ctx.dispatched.clone();
        first_poll(tool.call(&ctx, args), |_| {
            if let Some(dispatched) = &dispatched {
                dispatched.fire();
            }
        })
        .await
    });
    let _abort = AbortOnDrop(task.abort_handle());
    match task.await {
        Ok(result) => result,
        Err(err) if err.is_panic() => {
            let payload = err.into_panic();
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "no message".into());
            tracing::error!(tool = %name, "tool panicked: {message}");
            ToolResult::error(format!(
                "{name}: the tool failed internally ({message}); this is a bug in the tool, not in \
                 your arguments. The run goes on and other tools still work"
            ))
        }
        Err(_) => ToolResult::error(format!("{name}: the call was cancelled")),
    }
}
