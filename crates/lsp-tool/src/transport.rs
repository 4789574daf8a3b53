//! JSON-RPC over a server's stdin/stdout with `Content-Length` framing.
//!
//! A reader task dispatches responses to waiting requests, notifications and server requests
//! to a [`Handler`] (every server request gets a reply); a writer task owns stdin behind a
//! bounded queue, so a wedged server cannot block a caller forever.

use std::{
    collections::HashMap,
    sync::{
        Arc,
        atomic::{AtomicI64, Ordering},
    },
    time::Duration,
};

use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::{
    io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader},
    sync::{mpsc, oneshot},
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
    Server { code: i64, message: String },
}

impl std::fmt::Display for RequestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RequestError::Timeout(d) => write!(f, "no answer within {} ms", d.as_millis()),
            RequestError::Cancelled => write!(f, "the call was cancelled"),
            RequestError::Closed => write!(f, "the server's connection closed (it exited)"),
            RequestError::Server { code, message } => write!(f, "server error {code}: {message}"),
        }
    }
}

type Pending = Arc<Mutex<HashMap<i64, oneshot::Sender<Result<Value, RequestError>>>>>;

/// One JSON-RPC connection.
pub(crate) struct Rpc {
    tx: mpsc::Sender<Vec<u8>>,
    pending: Pending,
    next_id: AtomicI64,
    closed: CancellationToken,
}

fn frame(message: &Value) -> Vec<u8> {
    let body = message.to_string();
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body.as_bytes());
    out
}

/// Reads one framed message; `Ok(None)` at a clean end of the stream.
pub(crate) async fn read_message<R: AsyncRead + Unpin>(
    reader: &mut BufReader<R>,
) -> std::io::Result<Option<Value>> {
    let mut length: Option<usize> = None;
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).await? == 0 {
            return Ok(None);
        }
        let trimmed = line.trim_end();
        if trimmed.is_empty() {
            if length.is_some() {
                break;
            }
            continue;
        }
        if let Some((name, value)) = trimmed.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().ok();
        }
    }
    let length = length.unwrap_or(0);
    if length > MAX_MESSAGE_BYTES {
        return Err(std::io::Error::other(format!("message of {length} bytes is too large")));
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).await?;
    serde_json::from_slice(&body).map(Some).map_err(std::io::Error::other)
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
        let (tx, mut rx) = mpsc::channel::<Vec<u8>>(256);
        let closed = CancellationToken::new();
        let rpc = Arc::new(Rpc {
            tx: tx.clone(),
            pending: Arc::new(Mutex::new(HashMap::new())),
            next_id: AtomicI64::new(1),
            closed: closed.clone(),
        });

        let writer_closed = closed.clone();
        let writer_name = name.to_string();
        tokio::spawn(async move {
            let mut output = output;
            loop {
                let bytes = tokio::select! {
                    b = rx.recv() => match b { Some(b) => b, None => break },
                    _ = writer_closed.cancelled() => break,
                };
                let write = async {
                    output.write_all(&bytes).await?;
                    output.flush().await
                };
                match tokio::time::timeout(WRITE_DEADLINE, write).await {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => {
                        tracing::debug!(server = %writer_name, "write failed: {e}");
                        break;
                    }
                    Err(_) => {
                        tracing::warn!(server = %writer_name, "server stopped reading its input");
                        break;
                    }
                }
            }
            writer_closed.cancel();
        });

        let pending = rpc.pending.clone();
        let reader_name = name.to_string();
        tokio::spawn(async move {
            let mut reader = BufReader::new(input);
            loop {
                let message = tokio::select! {
                    m = read_message(&mut reader) => m,
                    _ = closed.cancelled() => break,
                };
                let message = match message {
                    Ok(Some(m)) => m,
                    Ok(None) => break,
                    Err(e) => {
                        tracing::debug!(server = %reader_name, "unreadable message: {e}");
                        break;
                    }
                };
                dispatch(message, &pending, &handler, &tx);
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
        if self.closed.is_cancelled() {
            return Err(RequestError::Closed);
        }
        self.tx
            .send_timeout(frame(&message), WRITE_DEADLINE)
            .await
            .map_err(|_| RequestError::Closed)
    }

    pub(crate) async fn notify(&self, method: &str, params: Value) -> Result<(), RequestError> {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params})).await
    }

    /// Sends a request and waits for its result, at most `timeout`; on timeout or cancellation
    /// the server is told with `$/cancelRequest`.
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
        {
            let _ = self.notify("$/cancelRequest", json!({"id": id})).await;
        }
        outcome
    }
}

fn dispatch(
    message: Value,
    pending: &Pending,
    handler: &Arc<dyn Handler>,
    tx: &mpsc::Sender<Vec<u8>>,
) {
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
            let tx = tx.clone();
            tokio::spawn(async move {
                let _ = tx.send_timeout(frame(&reply), WRITE_DEADLINE).await;
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
    use super::*;

    #[tokio::test]
    async fn framed_messages_are_read_back_including_non_ascii_bodies() {
        let a = json!({"jsonrpc": "2.0", "method": "x", "params": {"text": "é🙂"}});
        let mut bytes = frame(&a);
        bytes.extend(b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n");
        bytes.extend(frame(&json!({"id": 1, "result": null})));
        let mut reader = BufReader::new(&bytes[..]);
        assert_eq!(read_message(&mut reader).await.unwrap(), Some(a));
        assert_eq!(
            read_message(&mut reader).await.unwrap(),
            Some(json!({"id": 1, "result": null}))
        );
        assert_eq!(read_message(&mut reader).await.unwrap(), None);
    }
}
