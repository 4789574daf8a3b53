//! MCP over Streamable HTTP: many sessions at once, each session one run with stdio's lifetime.
//!
//! rmcp's Streamable HTTP service keeps the sessions (`Mcp-Session-Id`, DELETE, idle expiry);
//! in front of it this module refuses what a host must refuse before any JSON-RPC is read: a
//! browser `Origin` that is not loopback (DNS rebinding), a missing or wrong bearer token, a
//! body over the limit. Each session's handler is a fresh [`McpHost`](super::mcp) run, ended
//! like a stdio connection's when the session is deleted, expires or the server stops.
//!
//! A 2026-07-28 client (pinned, or in `auto` mode: `server/discover` is answered here as over
//! stdio) has no session: its requests go to the run of its credential (the bearer token it
//! sends, or one local run without a token), kept across requests so that kernels and multi
//! round-trip cards carry over, and ended after the same idle time.

use std::{convert::Infallible, sync::Arc, time::Duration};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited, combinators::BoxBody};
use hyper::{Request, Response, StatusCode, body::Incoming, header};
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};
use tokio_util::sync::CancellationToken;

use super::mcp::SessionRuns;
use agent_tools::run::{Attach, RunSetup};

mod expiry;
mod jsonrpc;
mod limits;
mod options;

pub use options::HttpOptions;

/// The path the MCP endpoint is served at.
pub(super) const MCP_PATH: &str = "/mcp";
type Body = BoxBody<Bytes, Infallible>;

/// The header naming a Streamable HTTP session.
const SESSION_HEADER: &str = "mcp-session-id";

/// Serves MCP over Streamable HTTP at `http://ADDR/mcp` until SIGINT or SIGTERM, then ends
/// every session's run (calls cancelled and awaited, processes gone) and returns.
pub async fn serve_http(
    setup: RunSetup,
    attach: Attach,
    options: HttpOptions,
) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(options.addr)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", options.addr))?;
    let local = listener.local_addr()?;
    let stop = CancellationToken::new();
    let runs = SessionRuns::default();
    // One language server per (server, root) for all sessions; each run keeps its own view.
    #[cfg(feature = "lsp")]
    let lsp_pool = agent_tools_lsp::ServerPool::new();
    #[cfg(feature = "lsp")]
    let attach = attach.with_lsp_pool(lsp_pool.clone());
    let mut manager = LocalSessionManager::default();
    // Expiry is ours (`expiry`): rmcp's keep-alive would end a session under a long call.
    manager.session_config.keep_alive = None;
    let manager = Arc::new(manager);
    let service = mcp_service(&setup, &attach, &options, &runs, &manager, stop.child_token());
    let sessions = expiry::Sessions::default();
    let times = expiry::Expiry { idle: options.session_idle, detached: options.session_detached };
    let expiry = tokio::spawn(sessions.clone().expire(times, manager));
    let principal_expiry = tokio::spawn(expire_principals(runs.clone(), options.session_idle));
    let gate = Arc::new(Gate {
        token: options.token.clone(),
        max_body_bytes: options.max_body_bytes,
        body_timeout: options.body_timeout,
        sessions,
        arrivals: Default::default(),
    });
    crate::cli::print_err(&format!(
        "agent-tools mcp: serving MCP (Streamable HTTP) at http://{local}{MCP_PATH}{}",
        if gate.token.is_some() { " (bearer token required)" } else { "" }
    ));
    let signal = shutdown_signal();
    tokio::pin!(signal);
    let connections = Arc::new(limits::Connections::new(limits::ConnectionLimits {
        total: limits::within_descriptors(options.max_connections),
        per_peer: options.max_connections_per_peer,
    }));
    let serving = Serving {
        service,
        gate: gate.clone(),
        stop: stop.clone(),
        connections: connections.clone(),
        header_timeout: options.header_timeout,
    };
    let mut exhausted: u32 = 0;
    loop {
        tokio::select! {
            () = &mut signal => break,
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(pair) => {
                        exhausted = 0;
                        pair
                    }
                    // Out of descriptors: free one (the oldest connection that has not sent a
                    // request) and pause, instead of failing again at once.
                    Err(e) if limits::is_exhaustion(&e) => {
                        if exhausted == 0 {
                            tracing::warn!(
                                "accept failed: {e}; closing the oldest connection that has sent \
                                 no request yet, and pausing"
                            );
                        }
                        connections.shed_oldest();
                        tokio::time::sleep(limits::back_off(exhausted)).await;
                        exhausted = exhausted.saturating_add(1);
                        continue;
                    }
                    Err(e) => {
                        tracing::debug!("accept failed: {e}");
                        continue;
                    }
                };
                let shed = CancellationToken::new();
                let id = match connections.admit(peer.ip(), shed.clone()) {
                    Ok(id) => id,
                    Err(refused) => {
                        tokio::spawn(refuse_connection(stream, refused.message()));
                        continue;
                    }
                };
                tokio::spawn(serve_connection(serving.clone(), stream, id, shed));
            }
        }
    }
    tracing::info!("stopping: ending {} session run(s)", runs.live());
    expiry.abort();
    principal_expiry.abort();
    stop.cancel();
    runs.end_all().await;
    // Every run gave its leases back; whatever a run left starting goes now.
    #[cfg(feature = "lsp")]
    lsp_pool.shutdown().await;
    Ok(())
}

/// What every connection is served with.
#[derive(Clone)]
struct Serving {
    service: McpService,
    gate: Arc<Gate>,
    stop: CancellationToken,
    connections: Arc<limits::Connections>,
    header_timeout: Duration,
}

/// Serves one admitted connection until it ends, the host stops, or it is shed for having
/// sent no request.
async fn serve_connection(
    serving: Serving,
    stream: tokio::net::TcpStream,
    id: u64,
    shed: CancellationToken,
) {
    let Serving { service, gate, stop, connections, header_timeout } = serving;
    let seen = connections.clone();
    let handler = hyper::service::service_fn(move |req| {
        // Its headers came whole: it is no longer shed, and counts against its
        // peer's bound (or is refused at it).
        let admitted = seen.talked(id);
        let (service, gate) = (service.clone(), gate.clone());
        async move {
            Ok::<_, Infallible>(match admitted {
                Ok(()) => gate.handle(req, service).await,
                Err(refused) => closing(busy(refused.message())),
            })
        }
    });
    let io = hyper_util::rt::TokioIo::new(stream);
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(header_timeout)
        .serve_connection(io, handler);
    tokio::pin!(conn);
    tokio::select! {
        result = conn.as_mut() => {
            if let Err(e) = result {
                tracing::debug!("connection ended: {e}");
            }
        }
        () = stop.cancelled() => conn.as_mut().graceful_shutdown(),
        () = shed.cancelled() => tracing::debug!("closed a connection that sent no request"),
    }
    connections.ended(id);
}

type McpService = StreamableHttpService<super::mcp::McpHost, LocalSessionManager>;

fn mcp_service(
    setup: &RunSetup,
    attach: &Attach,
    options: &HttpOptions,
    runs: &SessionRuns,
    manager: &Arc<LocalSessionManager>,
    stop: CancellationToken,
) -> McpService {
    let mut config = StreamableHttpServerConfig::default()
        .with_cancellation_token(stop)
        .with_max_request_body_bytes(options.max_body_bytes);
    if !options.addr.ip().is_loopback() {
        // Reached by other names than loopback; the bearer token guards it instead.
        config = config.with_allowed_hosts(Vec::<String>::new());
    }
    let (setup, attach, runs) = (setup.clone(), attach.clone(), runs.clone());
    StreamableHttpService::new(
        move || {
            // Each session is a fresh run: its own id, cancellation and resources.
            let fresh = || RunSetup {
                info: agent_tools::RunInfo::new(setup.info.root.clone()),
                config: setup.config.clone(),
                surface_kind: setup.surface_kind,
            };
            // A request without a session (2026-07-28) goes to its credential's run.
            match PRINCIPAL.try_with(Clone::clone) {
                Ok(principal) => Ok(runs.principal_host(&principal, fresh, attach.clone())),
                Err(_) => Ok(runs.session_host(fresh(), attach.clone())),
            }
        },
        manager.clone(),
        config,
    )
}

/// The checks made before rmcp sees a request, and the sessions' activity after.
struct Gate {
    token: Option<String>,
    max_body_bytes: usize,
    body_timeout: Duration,
    sessions: expiry::Sessions,
    /// `tools/call` messages so far, per session (or credential, without one): each is numbered
    /// so that the run hands them to their tools in that order (see `order`).
    arrivals: std::sync::Mutex<std::collections::HashMap<String, u64>>,
}

impl Gate {
    /// The next arrival number of `key`'s calls.
    fn next_arrival(&self, key: &str) -> super::order::Arrival {
        let mut arrivals = self.arrivals.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let count = arrivals.entry(key.to_string()).or_default();
        *count += 1;
        super::order::Arrival(*count)
    }

    /// The refusal a request gets before its body is read: a path other than MCP's, a
    /// browser origin other than loopback, a missing or wrong bearer token.
    fn refusal_of(&self, req: &Request<Incoming>) -> Option<Response<Body>> {
        if req.uri().path() != MCP_PATH {
            return Some(refusal(
                StatusCode::NOT_FOUND,
                format!("not found: agent-tools serves MCP at {MCP_PATH}"),
            ));
        }
        if let Some(origin) = req.headers().get(header::ORIGIN) {
            let origin = String::from_utf8_lossy(origin.as_bytes()).into_owned();
            if !is_loopback_origin(&origin) {
                return Some(refusal(
                    StatusCode::FORBIDDEN,
                    format!(
                        "Origin {origin} is not allowed: agent-tools accepts browser requests only \
                         from loopback origins (a guard against DNS rebinding)"
                    ),
                ));
            }
        }
        if let Some(token) = &self.token {
            let sent = bearer_token(req.headers());
            if !sent.is_some_and(|sent| same_token(sent.as_bytes(), token.as_bytes())) {
                let mut response = refusal(
                    StatusCode::UNAUTHORIZED,
                    "missing or wrong bearer token: send `Authorization: Bearer <token>` with the \
                     token in the server's --token-file"
                        .to_string(),
                );
                response
                    .headers_mut()
                    .insert(header::WWW_AUTHENTICATE, header::HeaderValue::from_static("Bearer"));
                // A client without the token keeps no connection: it counts against no bound
                // of those that may talk.
                return Some(closing(response));
            }
        }
        None
    }

    /// The request's parts and its whole body, or the refusal of a body over the limit or too
    /// slow to arrive.
    async fn read_body(
        &self,
        req: Request<Incoming>,
    ) -> Result<(hyper::http::request::Parts, Bytes), Response<Body>> {
        let too_large = || {
            refusal(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "request body over the limit of {} bytes ([mcp] max_body_bytes); send a smaller \
                     message",
                    self.max_body_bytes
                ),
            )
        };
        let declared = req
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|n| n > self.max_body_bytes as u64) {
            return Err(too_large());
        }
        let (parts, body) = req.into_parts();
        let read = Limited::new(body, self.max_body_bytes).collect();
        let Ok(read) = tokio::time::timeout(self.body_timeout, read).await else {
            // The rest of the body is not read: the connection is closed after this answer.
            return Err(closing(refusal(
                StatusCode::REQUEST_TIMEOUT,
                format!(
                    "the request body did not arrive within {} s ([mcp] body_timeout_seconds); \
                     send it whole",
                    self.body_timeout.as_secs()
                ),
            )));
        };
        let bytes = match read {
            Ok(collected) => collected.to_bytes(),
            Err(e) if e.is::<http_body_util::LengthLimitError>() => return Err(too_large()),
            Err(e) => {
                return Err(refusal(
                    StatusCode::BAD_REQUEST,
                    format!("cannot read the request body: {e}"),
                ));
            }
        };
        Ok((parts, bytes))
    }

    async fn handle(&self, req: Request<Incoming>, service: McpService) -> Response<Body> {
        if let Some(refused) = self.refusal_of(&req) {
            return refused;
        }
        let (parts, bytes) = match self.read_body(req).await {
            Ok(read) => read,
            Err(refused) => return refused,
        };
        let asked = parts.headers.get(SESSION_HEADER).cloned();
        if parts.method == hyper::Method::POST {
            match jsonrpc::classify(&bytes) {
                jsonrpc::Post::Single => {}
                jsonrpc::Post::Refused(response) => return response,
                jsonrpc::Post::Batch(items) => {
                    let key =
                        asked.as_ref().map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
                    let number = || self.next_arrival(key.as_deref().unwrap_or_default());
                    let response =
                        jsonrpc::serve_batch(&parts, items, &service, asked.is_some(), &number)
                            .await;
                    return match asked.as_ref().and_then(|v| v.to_str().ok()) {
                        Some(id) => response.map(|body| self.sessions.track(id, body, false)),
                        None => response,
                    };
                }
            }
        }
        let deleting = parts.method == hyper::Method::DELETE;
        let standing = parts.method == hyper::Method::GET;
        let principal = (asked.is_none() && !is_initialize(&bytes)).then(|| principal_of(&parts));
        let mut parts = parts;
        if deleting && let Some(id) = &asked {
            let key = String::from_utf8_lossy(id.as_bytes()).into_owned();
            self.arrivals.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(&key);
        } else if jsonrpc::is_tool_call(&bytes) {
            let key = match (&asked, &principal) {
                (Some(id), _) => String::from_utf8_lossy(id.as_bytes()).into_owned(),
                (None, Some(principal)) => format!("credential {principal}"),
                (None, None) => String::new(),
            };
            parts.extensions.insert(self.next_arrival(&key));
        }
        let req = Request::from_parts(parts, Full::new(bytes));
        let response = match principal {
            // rmcp builds the request's handler inside `handle`, before it spawns anything.
            Some(principal) => PRINCIPAL.scope(principal, service.handle(req)).await,
            None => service.handle(req).await,
        };
        if !response.status().is_success() {
            return response;
        }
        if deleting {
            // rmcp says 202; the session is gone at once, and clients (both Python SDKs) take
            // only 200 or 204 as a termination that worked.
            let mut done = Response::new(Full::new(Bytes::new()).boxed());
            *done.status_mut() = StatusCode::NO_CONTENT;
            return done;
        }
        // An `initialize` answer names the new session; later requests name theirs.
        let session = asked.or_else(|| response.headers().get(SESSION_HEADER).cloned());
        match session.as_ref().and_then(|v| v.to_str().ok()) {
            Some(id) => {
                let id = id.to_string();
                response.map(|body| self.sessions.track(&id, body, standing))
            }
            None => response,
        }
    }
}

tokio::task_local! {
    /// The credential of a request without a session, while rmcp picks its handler.
    static PRINCIPAL: String;
}

/// Whether the body is an `initialize` request (which starts a session; anything else without
/// a session header is a 2026-07-28 request, or refused by rmcp).
fn is_initialize(body: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(body)
        .is_ok_and(|message| message.get("method").and_then(|m| m.as_str()) == Some("initialize"))
}

/// The token of an `Authorization: Bearer <token>` header; the scheme in any case (RFC 9110:
/// schemes are case-insensitive), spaces around the token ignored.
fn bearer_token(headers: &hyper::HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?.trim();
    let (scheme, token) = value.split_once(char::is_whitespace)?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim()).filter(|t| !t.is_empty())
}

/// Whose run a request without a session goes to: a digest of its bearer token (or of its
/// whole `Authorization` header; so the credential itself is never kept), or `local` without
/// one.
fn principal_of(parts: &hyper::http::request::Parts) -> String {
    use sha2::Digest;
    let credential = bearer_token(&parts.headers)
        .map(str::as_bytes)
        .or_else(|| parts.headers.get(header::AUTHORIZATION).map(|v| v.as_bytes()));
    match credential {
        Some(credential) => {
            let digest = sha2::Sha256::digest(credential);
            digest.iter().take(16).map(|b| format!("{b:02x}")).collect()
        }
        None => "local".to_string(),
    }
}

/// Ends the runs of 2026-07-28 clients after `idle` without a request, checking a few times
/// per idle period.
async fn expire_principals(runs: SessionRuns, idle: Duration) {
    let every = (idle / 4).clamp(Duration::from_millis(200), Duration::from_secs(30));
    loop {
        tokio::time::sleep(every).await;
        runs.end_idle_principals(idle);
    }
}

/// `response` with `Connection: close`: hyper closes the connection once it is written.
fn closing(mut response: Response<Body>) -> Response<Body> {
    response.headers_mut().insert(header::CONNECTION, header::HeaderValue::from_static("close"));
    response
}

/// The answer of a connection over a bound (HTTP 503, closed after it).
fn busy(text: String) -> Response<Body> {
    let mut response = refusal(StatusCode::SERVICE_UNAVAILABLE, text);
    response.headers_mut().insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
    closing(response)
}

/// Answers a connection refused at accept (all held connections are busy) with 503 and closes
/// it, without reading its request; bounded in time, so a peer that reads nothing cannot hold it.
async fn refuse_connection(mut stream: tokio::net::TcpStream, text: String) {
    use tokio::io::AsyncWriteExt;
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\n\
         retry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{text}\n",
        text.len() + 1
    );
    let write = async {
        let _ = stream.write_all(answer.as_bytes()).await;
        let _ = stream.shutdown().await;
    };
    let _ = tokio::time::timeout(Duration::from_secs(2), write).await;
}

fn refusal(status: StatusCode, text: String) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(text + "\n")).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// An `Origin` of a page served from this machine: `http(s)://localhost`, `127.x.x.x` or
/// `[::1]`, any port.
fn is_loopback_origin(origin: &str) -> bool {
    let Some(rest) = origin.strip_prefix("http://").or_else(|| origin.strip_prefix("https://"))
    else {
        return false;
    };
    let host = match rest.strip_prefix('[') {
        Some(v6) => match v6.split_once(']') {
            Some((host, _)) => host,
            None => return false,
        },
        None => rest.split(':').next().unwrap_or_default(),
    };
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Compares two tokens in time that depends only on their lengths.
fn same_token(sent: &[u8], expected: &[u8]) -> bool {
    if sent.len() != expected.len() {
        return false;
    }
    sent.iter().zip(expected).fold(0u8, |diff, (a, b)| diff | (a ^ b)) == 0
}

async fn shutdown_signal() {
    #[cfg(unix)]
    {
        let Ok(mut term) =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        else {
            let _ = tokio::signal::ctrl_c().await;
            return;
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

#[cfg(test)]
mod tests {
    use super::{is_loopback_origin, options::listen_address, same_token};

    #[test]
    fn a_host_name_and_port_is_an_address_to_listen_on() {
        let local = listen_address("localhost:8765").expect("localhost resolves");
        assert!(local.ip().is_loopback() && local.port() == 8765, "{local}");
        assert_eq!(listen_address("127.0.0.1:0").unwrap().port(), 0);
        let err = listen_address("localhost").expect_err("no port");
        assert!(err.starts_with("--http localhost: ") && err.contains("localhost:8765"), "{err}");
    }

    #[test]
    fn only_loopback_origins_pass() {
        for origin in ["http://localhost:3000", "http://127.0.0.1", "https://[::1]:8080"] {
            assert!(is_loopback_origin(origin), "{origin}");
        }
        for origin in ["http://evil.example", "http://localhost.evil.example", "null", "file://"] {
            assert!(!is_loopback_origin(origin), "{origin}");
        }
    }

    #[test]
    fn the_bearer_scheme_is_read_in_any_case() {
        let token = |value: &str| {
            let mut headers = hyper::HeaderMap::new();
            headers.insert(hyper::header::AUTHORIZATION, value.parse().unwrap());
            super::bearer_token(&headers).map(str::to_string)
        };
        for value in ["Bearer s3cret", "bearer s3cret", "BEARER  s3cret ", "beArer\ts3cret"] {
            assert_eq!(token(value).as_deref(), Some("s3cret"), "{value}");
        }
        for value in ["Basic s3cret", "Bearers3cret", "Bearer "] {
            assert_eq!(token(value), None, "{value}");
        }
    }

    #[test]
    fn tokens_match_only_when_equal() {
        assert!(same_token(b"s3cret", b"s3cret"));
        assert!(!same_token(b"s3cret", b"s3creT"));
        assert!(!same_token(b"s3cre", b"s3cret"));
    }
}
