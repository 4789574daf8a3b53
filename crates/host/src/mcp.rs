//! The MCP server: one stdio connection is one run, served through one surface.
//!
//! The run's registry is built when the client initialises, because what the client can do
//! decides what is attached: a client that declares form elicitation gets a question port
//! (`ask_user`, and approval cards, become `elicitation/create` requests); a client that does not
//! gets no port, so `ask_user` is absent from its tool list and approvals fail closed.

use std::{
    sync::{Arc, OnceLock},
    time::Duration,
};

use rmcp::{
    ErrorData as McpError, RoleServer, ServerHandler, ServiceExt,
    model::{
        CallToolRequestParams, CallToolResponse, Implementation, InitializeRequestParams,
        InitializeResult, ListToolsResult, PaginatedRequestParams, ServerCapabilities,
        ServerConfig,
    },
    service::{RequestContext, ServerInitializeError},
};

#[cfg(feature = "ask")]
use super::ports;
use super::{
    progress::ProgressForwarder,
    tool_list::{ClientView, to_mcp_result, to_mcp_tool},
    transport::LineTransport,
};
use agent_tools::run::{Attach, HostRun, RunSetup};

/// How long a run's calls get to wind down after the client went away, before the run's
/// resources are shut down under them.
const WIND_DOWN: Duration = Duration::from_secs(20);

/// One connection's run: prepared at start, built at `initialize` (or at the first request of a
/// client that never initialises), shut down when the connection ends.
struct HostState {
    setup: RunSetup,
    attach: Attach,
    run: OnceLock<HostRun>,
    /// Calls waiting for a client's retry with an answer (2026-07-28 cards).
    #[cfg(feature = "ask")]
    parked: super::mrtr::ParkedCalls,
    /// Every call in flight: the run ends only after each has returned.
    calls: InFlight,
    /// Hands the run's calls to their tools in arrival order.
    order: Arc<super::order::Sequencer>,
}

/// Counts the calls in flight, so that the run can wait for them to return.
#[derive(Default)]
struct InFlight {
    count: std::sync::atomic::AtomicUsize,
    idle: tokio::sync::Notify,
}

impl InFlight {
    async fn track<F: Future>(&self, work: F) -> F::Output {
        struct Leave<'a>(&'a InFlight);
        impl Drop for Leave<'_> {
            fn drop(&mut self) {
                if self.0.count.fetch_sub(1, std::sync::atomic::Ordering::SeqCst) == 1 {
                    self.0.idle.notify_waiters();
                }
            }
        }
        self.count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let _leave = Leave(self);
        work.await
    }

    fn len(&self) -> usize {
        self.count.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Returns once no call is in flight.
    async fn wait(&self) {
        loop {
            let idle = self.idle.notified();
            tokio::pin!(idle);
            idle.as_mut().enable();
            if self.len() == 0 {
                return;
            }
            idle.await;
        }
    }
}

impl HostState {
    fn new(setup: RunSetup, attach: Attach) -> HostState {
        HostState {
            setup,
            attach,
            run: OnceLock::new(),
            #[cfg(feature = "ask")]
            parked: Default::default(),
            calls: InFlight::default(),
            order: Default::default(),
        }
    }

    /// The run, built with `attach` if it does not exist yet.
    fn build(&self, attach: Attach) -> &HostRun {
        self.run.get_or_init(|| self.setup.clone().assemble(&attach))
    }

    /// The run; a client that sent no `initialize` gets one without a question port.
    fn run(&self) -> &HostRun {
        self.build(self.attach.clone())
    }

    /// The run, built on a 2026-07-28 connection (which has no `initialize`) from what the
    /// first request's `_meta` declares.
    fn run_for(&self, meta: &rmcp::model::RequestMetaObject) -> &HostRun {
        #[cfg(feature = "ask")]
        if self.run.get().is_none()
            && let Some((port, target)) = ports::modern_port_for(meta)
        {
            return self.build(self.attach.clone().with_questions(port, target));
        }
        let _ = meta;
        self.run()
    }
}

#[derive(Clone)]
pub(super) struct McpHost {
    state: Arc<HostState>,
    /// Over HTTP: ends the run when rmcp drops the session's handler.
    _session: Option<Arc<SessionEnd>>,
}

/// The runs of an HTTP host's sessions: live ones, and those winding down, so that the host
/// can end every one of them at shutdown.
#[derive(Clone, Default)]
pub(super) struct SessionRuns(Arc<std::sync::Mutex<SessionRunsInner>>);

#[derive(Default)]
struct SessionRunsInner {
    next: u64,
    live: std::collections::HashMap<u64, Arc<HostState>>,
    /// The runs of 2026-07-28 clients, which have no session: one per credential, by the
    /// digest of its `Authorization` header; the run's id in `live` and its last request.
    principals: std::collections::HashMap<String, (u64, std::time::Instant)>,
    ending: Vec<tokio::task::JoinHandle<()>>,
}

impl SessionRuns {
    /// A handler for a new session: a fresh run built like a stdio connection's.
    pub(super) fn session_host(&self, setup: RunSetup, attach: Attach) -> McpHost {
        let state = Arc::new(HostState::new(setup, attach));
        let Ok(mut inner) = self.0.lock() else {
            return McpHost { state, _session: None };
        };
        inner.next += 1;
        let id = inner.next;
        inner.live.insert(id, state.clone());
        let end = SessionEnd { id, runs: self.clone() };
        McpHost { state, _session: Some(Arc::new(end)) }
    }

    /// A handler for one request of a 2026-07-28 client, which has no session: the run of
    /// its credential (`principal`), made from `setup` on its first request and kept across
    /// requests (kernels, parked cards) until it idles out or the host stops.
    pub(super) fn principal_host(
        &self,
        principal: &str,
        setup: impl FnOnce() -> RunSetup,
        attach: Attach,
    ) -> McpHost {
        let Ok(mut inner) = self.0.lock() else {
            return McpHost { state: Arc::new(HostState::new(setup(), attach)), _session: None };
        };
        let now = std::time::Instant::now();
        if let Some((id, last)) = inner.principals.get_mut(principal) {
            *last = now;
            let id = *id;
            if let Some(state) = inner.live.get(&id) {
                return McpHost { state: state.clone(), _session: None };
            }
        }
        let state = Arc::new(HostState::new(setup(), attach));
        inner.next += 1;
        let id = inner.next;
        inner.live.insert(id, state.clone());
        inner.principals.insert(principal.to_string(), (id, now));
        McpHost { state, _session: None }
    }

    /// Ends the credential runs that had no request for `idle` and have no call in flight.
    pub(super) fn end_idle_principals(&self, idle: Duration) {
        let Ok(mut inner) = self.0.lock() else { return };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let idle_ones: Vec<(String, u64)> = inner
            .principals
            .iter()
            .filter(|(_, (id, last))| {
                last.elapsed() >= idle && inner.live.get(id).is_none_or(|s| s.calls.len() == 0)
            })
            .map(|(principal, (id, _))| (principal.clone(), *id))
            .collect();
        for (principal, id) in idle_ones {
            inner.principals.remove(&principal);
            if let Some(state) = inner.live.remove(&id) {
                tracing::info!(run = %state.setup.info.run_id, "a 2026-07-28 client's run idled out");
                inner.ending.push(runtime.spawn(async move { end_run(&state).await }));
            }
        }
    }

    /// How many sessions have a live run.
    pub(super) fn live(&self) -> usize {
        self.0.lock().map_or(0, |inner| inner.live.len())
    }

    /// Ends every run, live or winding down, and waits until each is over.
    pub(super) async fn end_all(&self) {
        let (live, ending) = match self.0.lock() {
            Ok(mut inner) => (
                {
                    inner.principals.clear();
                    inner.live.drain().map(|(_, state)| state).collect::<Vec<_>>()
                },
                std::mem::take(&mut inner.ending),
            ),
            Err(_) => return,
        };
        let mut tasks: Vec<tokio::task::JoinHandle<()>> = ending;
        for state in live {
            tasks.push(tokio::spawn(async move { end_run(&state).await }));
        }
        for task in tasks {
            let _ = task.await;
        }
    }
}

/// Dropped with the last clone of a session's handler: the session was deleted, expired or
/// the server is stopping, so the run ends as a stdio run does when its client leaves.
struct SessionEnd {
    id: u64,
    runs: SessionRuns,
}

impl Drop for SessionEnd {
    fn drop(&mut self) {
        let Ok(mut inner) = self.runs.0.lock() else { return };
        // Absent: `end_all` has taken it already.
        let Some(state) = inner.live.remove(&self.id) else { return };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        inner.ending.retain(|task| !task.is_finished());
        inner.ending.push(runtime.spawn(async move { end_run(&state).await }));
    }
}

impl ServerHandler for McpHost {
    fn get_info(&self) -> ServerConfig {
        let kind = self.state.setup.surface_kind;
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("agent-tools", env!("CARGO_PKG_VERSION")))
            .with_instructions(format!(
                "Built-in agent tools for the workspace {} (surface: {}, up to {}-tier tools).",
                self.state.setup.info.root.display(),
                kind.as_str(),
                kind.ceiling()
            ))
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        context.peer.set_peer_info(request.clone());
        let result = self.negotiate_initialize(&request)?;
        let attach = self.state.attach.clone();
        #[cfg(feature = "ask")]
        let attach = match ports::port_for(&context.peer, &request, &result) {
            Some((port, target)) => attach.with_questions(port, target),
            None => attach,
        };
        self.state.build(attach);
        Ok(result)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let surface = self.state.run_for(&context.meta).surface();
        let ceiling = surface.info().ceiling;
        Ok(ListToolsResult::with_all_items(
            surface.specs().into_iter().map(|spec| to_mcp_tool(spec, ceiling)).collect(),
        ))
    }

    /// Runs the call to its end. A `notifications/cancelled` (or the client going away)
    /// cancels the call's token, and the call is still awaited until it has wound down, so
    /// the tool leaves its resource in order (an interrupted cell, a stopped walk); rmcp drops
    /// the late answer of a cancelled request.
    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        #[cfg(feature = "ask")]
        if context
            .meta
            .protocol_version()
            .is_some_and(|v| v >= rmcp::model::ProtocolVersion::V_2026_07_28)
        {
            return Ok(self.state.calls.track(self.call_in_rounds(request, context)).await);
        }
        let state = self.state.clone();
        let work = async move {
            let dispatched = turn(&state, &context).await;
            let args = serde_json::Value::Object(request.arguments.unwrap_or_default());
            let run = state.run_for(&context.meta);
            let surface = run.surface();
            let (mut ctx, forwarder) = call_context(run, &surface, &context);
            ctx.dispatched = dispatched;
            let call = surface.call(&ctx, &request.name, args);
            let result = until_done(call, &context, &ctx.cancel, None).await;
            drop(forwarder);
            let spec = surface.get(&request.name).map(|t| t.spec());
            to_mcp_result(result, spec, client_view(&context))
        };
        Ok(self.state.calls.track(work).await.into())
    }
}

/// Waits for the call's turn among the run's calls (see `order`): its arrival number comes from
/// the transport (stdio) or the HTTP gate, in the request's extensions; a call without one
/// (a nested or resumed call) does not wait.
async fn turn(
    state: &HostState,
    context: &RequestContext<RoleServer>,
) -> Option<agent_tools::Dispatched> {
    use super::order::Arrival;
    let arrival = context.extensions.get::<Arrival>().copied().or_else(|| {
        context
            .extensions
            .get::<hyper::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Arrival>().copied())
    })?;
    Some(state.order.turn(arrival).await)
}

/// What the calling client makes of a result: from its `initialize`, or on a 2026-07-28
/// connection from the request's `_meta`.
fn client_view(context: &RequestContext<RoleServer>) -> ClientView {
    if let Some(info) = context.peer.peer_info() {
        return ClientView::of(&info.client_info.name);
    }
    context.meta.client_info().map(|info| ClientView::of(&info.name)).unwrap_or_default()
}

/// A call's context in `run`, with progress forwarded to the client when it asked for it
/// (the forwarder stops when dropped).
fn call_context(
    run: &HostRun,
    surface: &agent_tools::Surface,
    context: &RequestContext<RoleServer>,
) -> (agent_tools::CallContext, Option<ProgressForwarder>) {
    let mut ctx = surface.context(&run.info, None);
    let forwarder = context
        .meta
        .get_progress_token()
        .map(|token| ProgressForwarder::start(context.peer.clone(), token));
    ctx.progress = forwarder.as_ref().map(|f| f.sink.clone());
    (ctx, forwarder)
}

/// Awaits `work` to its end: a cancel from the client (`notifications/cancelled`, or the
/// client gone) cancels the call's token, and the call is still awaited while it winds down.
/// With `cut` (a request whose token fires only when its connection drops), the call is told
/// first that its client went away, so work that can outlive it (a kernel's cell) runs on.
async fn until_done<F: Future>(
    work: F,
    context: &RequestContext<RoleServer>,
    call: &tokio_util::sync::CancellationToken,
    cut: Option<&tokio_util::sync::CancellationToken>,
) -> F::Output {
    tokio::pin!(work);
    tokio::select! {
        output = &mut work => output,
        () = context.ct.cancelled() => {
            match cut {
                Some(cut) => {
                    tracing::info!("the client's connection went away; winding down");
                    cut.cancel();
                }
                None => tracing::info!("cancelled by the client; winding down"),
            }
            call.cancel();
            work.await
        }
    }
}

/// Whether this request's token fires only because its connection dropped: a 2026-07-28
/// request over HTTP has no session, rmcp cancels its handler when the client disconnects and
/// ignores notifications there (so no `notifications/cancelled` can reach it). Over stdio and
/// in an HTTP session the token is the client's `notifications/cancelled` (or the run's end),
/// and a dropped HTTP connection does not touch it: the call runs to its end.
fn disconnect_cuts(context: &RequestContext<RoleServer>) -> bool {
    context
        .extensions
        .get::<hyper::http::request::Parts>()
        .is_some_and(|parts| !parts.headers.contains_key("mcp-session-id"))
}

#[cfg(feature = "ask")]
impl McpHost {
    /// A `tools/call` on a 2026-07-28 connection: the call runs in its own task, and a card it
    /// raises answers this request with `input_required`; a retry with `requestState` resumes
    /// the parked call (see `mrtr`).
    async fn call_in_rounds(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> CallToolResponse {
        use super::mrtr::Round;

        let state = self.state.clone();
        let args = serde_json::Value::Object(request.arguments.clone().unwrap_or_default());
        let run = state.run_for(&context.meta);
        let surface = run.surface();
        let spec = surface.get(&request.name).map(|t| t.spec().clone());
        let round = match &request.request_state {
            Some(request_state) => {
                state
                    .parked
                    .resume(&request.name, &args, request_state, request.input_responses.as_ref())
                    .await
            }
            None => {
                let dispatched = turn(&state, &context).await;
                let (mut ctx, forwarder) = call_context(run, &surface, &context);
                ctx.dispatched = dispatched;
                let cancel = ctx.cancel.clone();
                let cut = disconnect_cuts(&context).then(|| ctx.cut.clone());
                let (name, call_args, call_surface) =
                    (request.name.to_string(), args.clone(), surface.clone());
                let rounds = state.parked.begin(&request.name, &args, move |cards| {
                    ctx.cards = Some(cards);
                    async move {
                        let result = call_surface.call(&ctx, &name, call_args).await;
                        drop(forwarder);
                        result
                    }
                });
                until_done(rounds, &context, &cancel, cut.as_ref()).await
            }
        };
        match round {
            Round::Complete(result) => {
                to_mcp_result(result, spec.as_ref(), client_view(&context)).into()
            }
            Round::InputRequired(input) => input.into(),
        }
    }
}

/// Serves one run over stdin/stdout until the client disconnects, then ends the run: every
/// call is cancelled and awaited, every resource is shut down and no child process is left
/// behind. The registry is built at `initialize`, from `setup` plus `attach` plus what the
/// client declared. A connection that ends before (or instead of) initialising, such as an
/// empty stdin or a `server/discover` probe, ends cleanly.
pub async fn serve_stdio(setup: RunSetup, attach: Attach) -> anyhow::Result<()> {
    let transport =
        LineTransport::new(tokio::io::stdin(), tokio::io::stdout(), setup.info.cancel.clone());
    serve(setup, attach, transport).await
}

async fn serve<T>(setup: RunSetup, attach: Attach, transport: T) -> anyhow::Result<()>
where
    T: rmcp::transport::Transport<RoleServer> + Send + 'static,
{
    let state = Arc::new(HostState::new(setup, attach));
    let host = McpHost { state: state.clone(), _session: None };
    let outcome = match host.serve(transport).await {
        Ok(service) => service.waiting().await.map(|_| ()).map_err(anyhow::Error::from),
        Err(ServerInitializeError::ConnectionClosed(why)) => {
            tracing::info!("the client left before initialising: {why}");
            Ok(())
        }
        Err(ServerInitializeError::ExpectedInitializeRequest(None)) => Ok(()),
        Err(e) => Err(anyhow::anyhow!("MCP initialisation failed: {e}")),
    };
    end_run(&state).await;
    outcome
}

/// Ends a run: every call is cancelled and awaited (for [`WIND_DOWN`] at most), then every
/// resource is shut down.
async fn end_run(state: &HostState) {
    state.setup.info.cancel.cancel();
    if tokio::time::timeout(WIND_DOWN, state.calls.wait()).await.is_err() {
        tracing::warn!(
            "{} call(s) still running {}s after the client left; shutting down under them",
            state.calls.len(),
            WIND_DOWN.as_secs()
        );
    }
    if let Some(run) = state.run.get() {
        run.registry.shutdown().await;
    }
    tracing::info!(run = %state.setup.info.run_id, "run ended");
}
