//! A run of the registry for Python: opened on a root and a surface, called by tool name, and
//! closed, with every resource it started, by `close`, the context manager or garbage collection.

use std::{path::PathBuf, sync::Arc};

use agent_tools::{
    Config, ProgressReport, ProgressSink, Surface, SurfaceKind, ToolResult,
    run::{self, Attach, HostRun, RunSetup},
};
use parking_lot::RwLock;
use pyo3::{
    exceptions::{PyTypeError, PyValueError},
    prelude::*,
    types::PyBytes,
};
use tokio_util::sync::CancellationToken;

use crate::{
    errors::{AgentToolsError, RunClosedError, ToolNotFoundError},
    questions::HandlerPort,
    runtime::runtime,
};

/// A tool spec as it crosses into Python: name, description, tier, input and output schema
/// (JSON text), and the annotations an MCP client gets on this surface (title, read-only,
/// destructive, idempotent, open-world).
type SpecRow =
    (String, String, &'static str, String, Option<String>, (String, bool, bool, bool, bool));

/// A result as it crosses into Python: text, structured content (JSON text), images
/// (MIME type, bytes) and whether the tool failed.
type ResultRow = (String, Option<String>, Vec<(String, Py<PyBytes>)>, bool);

struct Open {
    run: HostRun,
    surface: Surface,
}

/// The native half of `agent_tools.Run`.
#[pyclass(module = "agent_tools._native", frozen)]
pub(crate) struct NativeRun {
    open: RwLock<Option<Arc<Open>>>,
    root: String,
    surface: &'static str,
    run_id: String,
}

#[pymethods]
impl NativeRun {
    #[new]
    /// `present(card_json, rejected_json) -> reply_json`, when given, answers the run's cards
    /// (`ask_user` is then offered); without it approval cards are declined.
    #[pyo3(signature = (root = None, surface = None, vibe = false, config = None, trust_project = false, present = None))]
    fn new(
        py: Python<'_>,
        root: Option<PathBuf>,
        surface: Option<String>,
        vibe: bool,
        config: Option<PathBuf>,
        trust_project: bool,
        present: Option<Py<PyAny>>,
    ) -> PyResult<Self> {
        let surface = surface
            .map(|s| {
                s.parse::<SurfaceKind>()
                    .map_err(|e| AgentToolsError::new_err(format!("surface: {e}")))
            })
            .transpose()?;
        let rt = runtime()?;
        let opening = Opening { root, surface, vibe, config, trust_project, present };
        let run = py.detach(|| open(rt, opening)).map_err(AgentToolsError::new_err)?;
        let surface = run.surface();
        Ok(NativeRun {
            root: run.info.root.display().to_string(),
            surface: run.surface_kind.as_str(),
            run_id: run.info.run_id.clone(),
            open: RwLock::new(Some(Arc::new(Open { run, surface }))),
        })
    }

    #[getter]
    fn root(&self) -> &str {
        &self.root
    }

    #[getter]
    fn surface(&self) -> &'static str {
        self.surface
    }

    #[getter]
    fn run_id(&self) -> &str {
        &self.run_id
    }

    #[getter]
    fn closed(&self) -> bool {
        self.open.read().is_none()
    }

    /// The tools of this run's surface, sorted by name.
    fn tools(&self) -> PyResult<Vec<SpecRow>> {
        let open = self.open_run()?;
        let ceiling = open.run.surface_kind.ceiling();
        Ok(open
            .surface
            .specs()
            .iter()
            .map(|s| {
                let a = s.annotations(ceiling);
                (
                    s.name.clone(),
                    s.description.clone(),
                    s.tier.as_str(),
                    s.input_schema.to_string(),
                    s.output_schema.as_ref().map(|v| v.to_string()),
                    (a.title, a.read_only, a.destructive, a.idempotent, a.open_world),
                )
            })
            .collect())
    }

    /// Calls `name` with `args_json` (a JSON object) and waits for its result; `cancel`, when
    /// cancelled, asks the tool to wind down (it answers promptly, leaving its resource usable);
    /// `progress(progress, total, message)` is called as a long call reports progress.
    #[pyo3(signature = (name, args_json, cancel = None, progress = None))]
    fn call(
        &self,
        py: Python<'_>,
        name: &str,
        args_json: &str,
        cancel: Option<PyRef<'_, Cancel>>,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<ResultRow> {
        let open = self.open_run()?;
        if let Some(refusal) = open.surface.refusal(name) {
            return Err(ToolNotFoundError::new_err(refusal));
        }
        let args: serde_json::Value = serde_json::from_str(args_json)
            .map_err(|e| PyValueError::new_err(format!("args: not valid JSON ({e})")))?;
        if !args.is_object() {
            return Err(PyTypeError::new_err(format!(
                "args must be a dict of the tool's arguments, got {args}; for example {{\"path\": \"README.md\"}}"
            )));
        }
        let asked_to_cancel = cancel.map(|c| c.token.clone());
        let sink = progress.map(progress_sink);
        let rt = runtime()?;
        let result = py.detach(|| rt.block_on(call(&open, name, args, asked_to_cancel, sink)));
        Ok(into_row(py, result))
    }

    /// Ends the run: cancels its calls and shuts down every resource it started (servers,
    /// kernels, debuggers, workers). Idempotent.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let taken = self.open.write().take();
        if let Some(open) = taken {
            let rt = runtime()?;
            py.detach(|| shutdown(rt, &open));
        }
        Ok(())
    }
}

impl NativeRun {
    fn open_run(&self) -> PyResult<Arc<Open>> {
        self.open.read().clone().ok_or_else(|| {
            RunClosedError::new_err(format!(
                "run {} on {} is closed; open a new Run",
                self.run_id, self.root
            ))
        })
    }
}

impl Drop for NativeRun {
    /// Garbage collection of an unclosed run ends it as `close` would, without holding the
    /// GIL while the resources wind down (other Python threads keep running).
    fn drop(&mut self) {
        if let Some(open) = self.open.get_mut().take()
            && let Ok(rt) = runtime()
        {
            Python::attach(|py| py.detach(|| shutdown(rt, &open)));
        }
    }
}

/// Progress reports of a call, handed to a Python callable; what the callable raises goes to
/// `sys.unraisablehook` (as in a finalizer) and the call goes on.
fn progress_sink(callback: Py<PyAny>) -> ProgressSink {
    ProgressSink::new(move |p: ProgressReport| {
        Python::attach(|py| {
            if let Err(e) = callback.call1(py, (p.progress, p.total, p.message)) {
                e.write_unraisable(py, None);
            }
        })
    })
}

/// What `Run(...)` was given.
struct Opening {
    root: Option<PathBuf>,
    surface: Option<SurfaceKind>,
    vibe: bool,
    config: Option<PathBuf>,
    trust_project: bool,
    present: Option<Py<PyAny>>,
}

/// Root, configuration and surface as the `agent-tools` binary resolves them (`trust_project` as
/// `--trust-project`); `config`, a file the caller chose, replaces the configuration found from
/// the root and the user's directory.
fn open(rt: &tokio::runtime::Runtime, opening: Opening) -> Result<HostRun, String> {
    let Opening { root, surface, vibe, config, trust_project, present } = opening;
    // Families may start background tasks while they attach.
    let _entered = rt.enter();
    let mut setup = run::prepare_run_trusting(root, surface, trust_project)?;
    if let Some(file) = config {
        let text = std::fs::read_to_string(&file).map_err(|e| {
            format!("config {}: {e}; give the path of an agent-tools.toml file", file.display())
        })?;
        let config = Config::parse(&text, &file).map_err(|e| e.to_string())?;
        setup = RunSetup::new(setup.info, config, surface)?;
    }
    let mut attach = Attach::default().with_vibe(vibe);
    if let Some(present) = present {
        attach = attach.with_questions(Arc::new(HandlerPort::new(present)), HandlerPort::target());
    }
    Ok(setup.assemble(&attach))
}

async fn call(
    open: &Open,
    name: &str,
    args: serde_json::Value,
    asked_to_cancel: Option<CancellationToken>,
    progress: Option<ProgressSink>,
) -> ToolResult {
    let mut ctx = open.surface.context(&open.run.info, None);
    ctx.progress = progress;
    let relay = asked_to_cancel.map(|asked| {
        let call = ctx.cancel.clone();
        tokio::spawn(async move {
            asked.cancelled().await;
            call.cancel();
        })
    });
    let result = open.surface.call(&ctx, name, args).await;
    if let Some(relay) = relay {
        relay.abort();
    }
    result
}

fn shutdown(rt: &tokio::runtime::Runtime, open: &Open) {
    open.run.info.cancel.cancel();
    rt.block_on(open.run.registry.shutdown());
}

fn into_row(py: Python<'_>, result: ToolResult) -> ResultRow {
    let images = result
        .images
        .iter()
        .map(|image| (image.mime_type.clone(), PyBytes::new(py, &image.data).unbind()))
        .collect();
    (result.text, result.structured.map(|v| v.to_string()), images, result.is_error)
}

/// A cancellation handle for one call (the async variants cancel it when their task is).
#[pyclass(module = "agent_tools._native", frozen)]
pub(crate) struct Cancel {
    token: CancellationToken,
}

#[pymethods]
impl Cancel {
    #[new]
    fn new() -> Self {
        Cancel { token: CancellationToken::new() }
    }

    /// Asks the call to wind down.
    fn cancel(&self) {
        self.token.cancel();
    }

    #[getter]
    fn cancelled(&self) -> bool {
        self.token.is_cancelled()
    }
}
