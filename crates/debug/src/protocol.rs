//! The Debug Adapter Protocol on the wire: Content-Length framing (the support crate's bounded
//! reader and deadline-bound writer), and a client that correlates
//! responses by `request_seq`, hands events and reverse requests to the session, and fails every
//! pending request clearly when the adapter goes away.

use std::{
    collections::HashMap,
    sync::{
        Arc,
        atomic::{AtomicI64, Ordering},
    },
    time::Duration,
};

use agent_tools_support::framing::{FrameReader, FrameWriter};
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::{
    io::{AsyncRead, AsyncWrite},
    sync::{mpsc, oneshot},
    task::JoinHandle,
};

/// Largest message body we accept; a broken adapter must not make us allocate without bound.
const MAX_BODY: usize = 64 * 1024 * 1024;
/// How long a write may make no progress before the adapter counts as not reading.
const WRITE_DEADLINE: Duration = Duration::from_secs(10);

/// A response from the adapter.
#[derive(Debug, Clone)]
pub struct Response {
    pub success: bool,
    pub command: String,
    pub message: Option<String>,
    pub body: Value,
}

impl Response {
    fn from_value(value: &Value) -> Self {
        Response {
            success: value["success"].as_bool().unwrap_or(false),
            command: value["command"].as_str().unwrap_or_default().to_string(),
            message: value["message"].as_str().map(str::to_string),
            body: value.get("body").cloned().unwrap_or(Value::Null),
        }
    }

    /// The error text of a failed response: `message` plus the formatted `body.error`.
    pub fn error_text(&self) -> String {
        let mut parts: Vec<String> = Vec::new();
        if let Some(message) = &self.message
            && !message.is_empty()
        {
            parts.push(message.clone());
        }
        if let Some(format) = self.body["error"]["format"].as_str() {
            let mut text = format.to_string();
            if let Some(vars) = self.body["error"]["variables"].as_object() {
                for (key, value) in vars {
                    let value = value.as_str().map_or_else(|| value.to_string(), str::to_string);
                    text = text.replace(&format!("{{{key}}}"), &value);
                }
            }
            if !parts.iter().any(|p| p == &text) {
                parts.push(text);
            }
        }
        if parts.is_empty() { "the adapter gave no reason".to_string() } else { parts.join(": ") }
    }
}

/// Something the adapter sent that is not a response.
#[derive(Debug, Clone)]
pub enum Incoming {
    Event {
        event: String,
        body: Value,
    },
    /// A reverse request (`runInTerminal`, `startDebugging`, …); it must be answered.
    Request {
        seq: i64,
        command: String,
        arguments: Value,
    },
    /// The connection ended; the text says how.
    Closed(String),
}

/// Why a request did not get a successful answer.
#[derive(Debug, Clone, thiserror::Error)]
pub enum DapError {
    #[error("the adapter did not answer `{command}` within {secs} s")]
    Timeout { command: String, secs: u64 },
    #[error("the adapter connection is closed ({0})")]
    Closed(String),
    #[error("`{command}` failed: {message}")]
    Failed { command: String, message: String },
}

type Waiter = oneshot::Sender<Result<Response, DapError>>;

#[derive(Default)]
struct Pending {
    waiters: HashMap<i64, Waiter>,
    closed: Option<String>,
}

/// The writing half, boxed so stdio pipes and TCP sockets look the same.
pub type BoxWrite = Box<dyn AsyncWrite + Send + Unpin>;
/// The reading half.
pub type BoxRead = Box<dyn AsyncRead + Send + Unpin>;

/// A DAP client over one connection.
pub struct DapClient {
    writer: FrameWriter,
    seq: AtomicI64,
    pending: Arc<Mutex<Pending>>,
    reader: Mutex<Option<JoinHandle<()>>>,
}

/// A request that was sent and whose response has not been awaited yet.
///
/// It can be polled repeatedly (inside `select!` loops) and remembers its result.
pub struct PendingResponse {
    command: String,
    rx: Option<oneshot::Receiver<Result<Response, DapError>>>,
    done: Option<Result<Response, DapError>>,
}

impl PendingResponse {
    /// Waits at most `timeout` for the response; a failed response is an error.
    pub async fn wait(mut self, timeout: Duration) -> Result<Value, DapError> {
        let response = self.wait_raw(timeout).await?;
        if response.success {
            Ok(response.body)
        } else {
            Err(DapError::Failed { command: self.command, message: response.error_text() })
        }
    }

    /// Waits at most `timeout` for the response, failed or not. Cancel-safe.
    pub async fn wait_raw(&mut self, timeout: Duration) -> Result<Response, DapError> {
        if let Some(done) = &self.done {
            return done.clone();
        }
        let Some(rx) = self.rx.as_mut() else {
            return Err(DapError::Closed("the response was already taken".into()));
        };
        match tokio::time::timeout(timeout, rx).await {
            Ok(result) => {
                let result =
                    result.unwrap_or_else(|_| Err(DapError::Closed("the client stopped".into())));
                self.rx = None;
                self.done = Some(result.clone());
                result
            }
            Err(_) => {
                Err(DapError::Timeout { command: self.command.clone(), secs: timeout.as_secs() })
            }
        }
    }

    /// The result if it has arrived, without waiting.
    pub fn try_result(&mut self) -> Option<Result<Response, DapError>> {
        if self.done.is_none()
            && let Some(rx) = self.rx.as_mut()
        {
            match rx.try_recv() {
                Ok(result) => {
                    self.rx = None;
                    self.done = Some(result);
                }
                Err(oneshot::error::TryRecvError::Empty) => {}
                Err(oneshot::error::TryRecvError::Closed) => {
                    self.rx = None;
                    self.done = Some(Err(DapError::Closed("the client stopped".into())));
                }
            }
        }
        self.done.clone()
    }

    pub fn command(&self) -> &str {
        &self.command
    }
}

impl DapClient {
    /// Starts the client: a reader task that routes responses and forwards everything else.
    pub fn start(read: BoxRead, write: BoxWrite) -> (Arc<Self>, mpsc::UnboundedReceiver<Incoming>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let pending = Arc::new(Mutex::new(Pending::default()));
        let client = Arc::new(DapClient {
            writer: FrameWriter::spawn(write, WRITE_DEADLINE),
            seq: AtomicI64::new(1),
            pending: pending.clone(),
            reader: Mutex::new(None),
        });
        let reader = FrameReader::new(read).with_max_body(MAX_BODY);
        let task = tokio::spawn(read_loop(reader, pending, tx));
        *client.reader.lock() = Some(task);
        (client, rx)
    }

    fn next_seq(&self) -> i64 {
        self.seq.fetch_add(1, Ordering::Relaxed)
    }

    async fn write(&self, message: &Value) -> Result<(), DapError> {
        self.writer
            .send(message)
            .await
            .map_err(|e| DapError::Closed(format!("cannot write to the adapter: {e}")))
    }

    /// Sends a request without waiting for its response.
    pub async fn send(&self, command: &str, arguments: Value) -> Result<PendingResponse, DapError> {
        let seq = self.next_seq();
        let (tx, rx) = oneshot::channel();
        {
            let mut pending = self.pending.lock();
            if let Some(reason) = &pending.closed {
                return Err(DapError::Closed(reason.clone()));
            }
            pending.waiters.insert(seq, tx);
        }
        let message =
            json!({"seq": seq, "type": "request", "command": command, "arguments": arguments});
        tracing::trace!(seq, command, "dap ->");
        if let Err(e) = self.write(&message).await {
            self.pending.lock().waiters.remove(&seq);
            return Err(e);
        }
        Ok(PendingResponse { command: command.to_string(), rx: Some(rx), done: None })
    }

    /// Sends a request and waits at most `timeout` for a successful response body.
    pub async fn request(
        &self,
        command: &str,
        arguments: Value,
        timeout: Duration,
    ) -> Result<Value, DapError> {
        self.send(command, arguments).await?.wait(timeout).await
    }

    /// Answers a reverse request.
    pub async fn respond(
        &self,
        request_seq: i64,
        command: &str,
        success: bool,
        message: Option<&str>,
        body: Value,
    ) -> Result<(), DapError> {
        let mut response = json!({
            "seq": self.next_seq(),
            "type": "response",
            "request_seq": request_seq,
            "command": command,
            "success": success,
            "body": body,
        });
        if let Some(message) = message {
            response["message"] = Value::String(message.to_string());
        }
        self.write(&response).await
    }

    /// Closes our writing side: for a stdio adapter this closes its stdin.
    pub async fn close_writer(&self) {
        let _ = tokio::time::timeout(Duration::from_millis(200), self.writer.close()).await;
    }

    /// Whether the adapter's side has ended.
    pub fn is_closed(&self) -> bool {
        self.pending.lock().closed.is_some()
    }

    /// Stops the reader task (after teardown).
    pub fn abort(&self) {
        if let Some(task) = self.reader.lock().take() {
            task.abort();
        }
    }
}

impl Drop for DapClient {
    fn drop(&mut self) {
        self.abort();
    }
}

async fn read_loop<R: AsyncRead + Unpin>(
    mut reader: FrameReader<R>,
    pending: Arc<Mutex<Pending>>,
    tx: mpsc::UnboundedSender<Incoming>,
) {
    let reason = loop {
        match reader.read_value().await {
            Ok(Some(message)) => dispatch(message, &pending, &tx),
            Ok(None) => break "the adapter closed the connection".to_string(),
            Err(e) => break format!("the adapter's stream broke: {e}"),
        }
    };
    let waiters = {
        let mut pending = pending.lock();
        pending.closed = Some(reason.clone());
        std::mem::take(&mut pending.waiters)
    };
    for (_, waiter) in waiters {
        let _ = waiter.send(Err(DapError::Closed(reason.clone())));
    }
    tracing::debug!(%reason, "dap connection closed");
    let _ = tx.send(Incoming::Closed(reason));
}

fn dispatch(message: Value, pending: &Mutex<Pending>, tx: &mpsc::UnboundedSender<Incoming>) {
    tracing::trace!(
        kind = message["type"].as_str().unwrap_or("?"),
        command = message["command"].as_str().unwrap_or(""),
        event = message["event"].as_str().unwrap_or(""),
        request_seq = message["request_seq"].as_i64().unwrap_or(0),
        "dap <-"
    );
    match message["type"].as_str() {
        Some("response") => {
            // Correlate by `request_seq` only: some adapters send an empty `command` on errors.
            let Some(request_seq) = message["request_seq"].as_i64() else { return };
            let waiter = pending.lock().waiters.remove(&request_seq);
            if let Some(waiter) = waiter {
                let _ = waiter.send(Ok(Response::from_value(&message)));
            }
        }
        Some("event") => {
            let event = message["event"].as_str().unwrap_or_default().to_string();
            let body = message.get("body").cloned().unwrap_or(Value::Null);
            let _ = tx.send(Incoming::Event { event, body });
        }
        Some("request") => {
            let _ = tx.send(Incoming::Request {
                seq: message["seq"].as_i64().unwrap_or(0),
                command: message["command"].as_str().unwrap_or_default().to_string(),
                arguments: message.get("arguments").cloned().unwrap_or(Value::Null),
            });
        }
        _ => {}
    }
}
