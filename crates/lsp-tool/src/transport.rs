//! JSON-RPC over a server's stdin/stdout, framed by `agent-tools-support`'s `framing`
//! (bounded reads, a queued writer with a write deadline).
//!
//! A reader task dispatches responses to waiting requests, notifications and server requests
//! to a [`Handler`] (every server request gets a reply); the writer owns stdin behind a
//! bounded queue, so a wedged server cannot block a caller forever.

use std::{
    collections::HashMap,
    sync::{
        Arc,
        atomic::{AtomicI64, Ordering},
    },
    time::Duration,
};

use agent_tools_support::framing::{FrameError, FrameReader, FrameWriter};
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::{
    io::{AsyncRead, AsyncWrite},
    sync::oneshot,
};
use tokio_util::sync::CancellationToken;

/// Largest message accepted from a server.
const MAX_MESSAGE_BYTES: usize = 100 * 1024 * 1024;
/// How long a write to a server's stdin may make no progress before the server counts as wedged.
const WRITE_DEADLINE: Duration = Duration::from_secs(10);

/// What a server does with our messages.
pub(crate) trait Handler: Send + Sync + 'static {
    fn notification(&self, method: &str, params: Value);
    /// The reply to a request from the server: a result, or an error code and message.
    fn request(&self, method: &str, params: Value) -> Result<Value, (i64, String)>;
}

/// Why a request produced no result.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum RequestError {
    Timeout(Duration),
    Cancelled,
    Closed,
    Server {
        code: i64,
        message: String,
    },
    /// The answer (or our parameters) did not have the protocol's shape.
    Shape {
        method: &'static str,
        detail: String,
    },
}

impl std::fmt::Display for RequestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RequestError::Shape { method, detail } => {
                write!(f, "the answer to {method} is not what the protocol defines: {detail}")
            }
            RequestError::Timeout(d) => write!(f, "no answer within {} ms", d.as_millis()),
            RequestError::Cancelled => write!(f, "the call was cancelled"),
            RequestError::Closed => write!(f, "the server's connection closed (it exited)"),
            RequestError::Server { code, message } => write!(f, "server error {code}: {message}"),
        }
    }
}

type Pending = Arc<Mutex<HashMap<i64, oneshot::Sender<Result<Value, RequestError>>>>>;

/// One JSON-RPC connection.
/// Requests the server is never told to cancel. basedpyright (1.40) keeps the cancellation
/// source of its last "find all references/implementations" and cancels it when the next one
/// comes; one cancelled before its work began was disposed into a token without `cancel`, so
/// every later request of the kind failed ("this._token.cancel is not a function") until the
/// server restarted. Not cancelling costs the server the rest of one search.
const NEVER_CANCELLED: &[&str] = &["textDocument/references", "textDocument/implementation"];

pub(crate) struct Rpc {
    writer: FrameWriter,
    pending: Pending,
    next_id: AtomicI64,
    closed: CancellationToken,
}

impl Rpc {
    /// Starts the reader and writer tasks on `input` (the server's stdout) and `output` (its stdin).
    pub(crate) fn start<R, W>(
        input: R,
        output: W,
        handler: Arc<dyn Handler>,
        name: &str,
    ) -> Arc<Rpc>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let writer = FrameWriter::spawn(output, WRITE_DEADLINE);
        let closed = CancellationToken::new();
        let rpc = Arc::new(Rpc {
            writer: writer.clone(),
            pending: Arc::new(Mutex::new(HashMap::new())),
            next_id: AtomicI64::new(1),
            closed: closed.clone(),
        });

        let writer_closed = closed.clone();
        let writer_name = name.to_string();
        let watched = writer.clone();
        tokio::spawn(async move {
            tokio::select! {
                reason = watched.stopped() => {
                    tracing::debug!(server = %writer_name, "writer stopped: {reason}");
                }
                _ = writer_closed.cancelled() => {}
            }
            writer_closed.cancel();
        });

        let pending = rpc.pending.clone();
        let reader_name = name.to_string();
        tokio::spawn(async move {
            let mut reader = FrameReader::new(input).with_max_body(MAX_MESSAGE_BYTES);
            loop {
                let message = tokio::select! {
                    m = reader.read_value() => m,
                    _ = closed.cancelled() => break,
                };
                let message = match message {
                    Ok(Some(m)) => m,
                    Ok(None) => break,
                    // An oversized message was skipped; the stream is still in step.
                    Err(e @ FrameError::TooLarge { .. }) => {
                        tracing::warn!(server = %reader_name, "{e}");
                        continue;
                    }
                    Err(e) => {
                        tracing::debug!(server = %reader_name, "unreadable message: {e}");
                        break;
                    }
                };
                tracing::trace!(target: "agent_tools::lsp_wire", server = %reader_name, "<- {message}");
                dispatch(message, &pending, &handler, &writer);
            }
            closed.cancel();
            for (_, waiter) in pending.lock().drain() {
                let _ = waiter.send(Err(RequestError::Closed));
            }
        });
        rpc
    }

    /// Cancelled once the connection is gone (the server exited or stopped reading).
    pub(crate) fn closed(&self) -> &CancellationToken {
        &self.closed
    }

    async fn send(&self, message: Value) -> Result<(), RequestError> {
        tracing::trace!(target: "agent_tools::lsp_wire", "-> {message}");
        if self.closed.is_cancelled() {
            return Err(RequestError::Closed);
        }
        self.writer.send(&message).await.map_err(|_| RequestError::Closed)
    }

    pub(crate) async fn notify(&self, method: &str, params: Value) -> Result<(), RequestError> {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params})).await
    }

    /// Sends a request and waits for its result, at most `timeout`; on timeout or cancellation
    /// the server is told with `$/cancelRequest` (except for [`NEVER_CANCELLED`] methods, whose
    /// late answer is dropped).
    pub(crate) async fn request(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<Value, RequestError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (waiter, answer) = oneshot::channel();
        self.pending.lock().insert(id, waiter);
        if let Err(e) =
            self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await
        {
            self.pending.lock().remove(&id);
            return Err(e);
        }
        let outcome = tokio::select! {
            a = answer => a.unwrap_or(Err(RequestError::Closed)),
            _ = tokio::time::sleep(timeout) => Err(RequestError::Timeout(timeout)),
            _ = cancel.cancelled() => Err(RequestError::Cancelled),
            _ = self.closed.cancelled() => Err(RequestError::Closed),
        };
        if matches!(outcome, Err(RequestError::Timeout(_)) | Err(RequestError::Cancelled))
            && self.pending.lock().remove(&id).is_some()
            && !NEVER_CANCELLED.contains(&method)
        {
            let _ = self.notify("$/cancelRequest", json!({"id": id})).await;
        }
        outcome
    }
}

fn dispatch(message: Value, pending: &Pending, handler: &Arc<dyn Handler>, writer: &FrameWriter) {
    let method = message.get("method").and_then(Value::as_str).map(str::to_string);
    let id = message.get("id").cloned().filter(|id| !id.is_null());
    match (method, id) {
        (Some(method), Some(id)) => {
            let params = message.get("params").cloned().unwrap_or(Value::Null);
            let reply = match handler.request(&method, params) {
                Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
                Err((code, text)) => {
                    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": text}})
                }
            };
            let writer = writer.clone();
            tracing::trace!(target: "agent_tools::lsp_wire", "-> {reply}");
            tokio::spawn(async move {
                let _ = writer.send(&reply).await;
            });
        }
        (Some(method), None) => {
            handler.notification(&method, message.get("params").cloned().unwrap_or(Value::Null));
        }
        (None, Some(id)) => {
            let Some(id) = id.as_i64() else { return };
            let Some(waiter) = pending.lock().remove(&id) else { return };
            let outcome = match message.get("error") {
                Some(error) if !error.is_null() => Err(RequestError::Server {
                    code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
                    message: error
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("unknown error")
                        .to_string(),
                }),
                _ => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
            };
            let _ = waiter.send(outcome);
        }
        (None, None) => {}
    }
}

#[cfg(test)]
mod tests {
    use agent_tools_support::framing::frame;

    use super::*;

    #[tokio::test]
    async fn framed_messages_are_read_back_including_non_ascii_bodies() {
        let a = json!({"jsonrpc": "2.0", "method": "x", "params": {"text": "é🙂"}});
        let mut bytes = frame(a.to_string().as_bytes());
        bytes.extend(b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n");
        bytes.extend(frame(json!({"id": 1, "result": null}).to_string().as_bytes()));
        let mut reader = FrameReader::new(&bytes[..]);
        assert_eq!(reader.read_value().await.unwrap(), Some(a));
        assert_eq!(reader.read_value().await.unwrap(), Some(json!({"id": 1, "result": null})));
        assert_eq!(reader.read_value().await.unwrap(), None);
    }
}
