//! The Debug Adapter Protocol on the wire: Content-Length framing (the support crate's bounded
//! reader and deadline-bound writer), and a client that sends typed requests
//! ([`crate::dap_types::Request`]), correlates responses by `request_seq`, hands events and
//! reverse requests to the session parsed, and fails every pending request clearly when the
//! adapter goes away.

use std::{
    collections::HashMap,
    marker::PhantomData,
    sync::{
        Arc,
        atomic::{AtomicI64, Ordering},
    },
    time::Duration,
};

use agent_tools_support::framing::{FrameReader, FrameWriter};
use parking_lot::Mutex;
use serde::Serialize;
use serde_json::Value;
use tokio::{
    io::{AsyncRead, AsyncWrite},
    sync::{mpsc, oneshot},
    task::JoinHandle,
};

use crate::dap_types::{
    ErrorBody, ErrorMessage, Event, EventMessage, IncomingRequest, Message, OutgoingRequest,
    OutgoingResponse, Request, ResponseMessage, ReverseRequest,
};

/// Largest message body we accept; a broken adapter must not make us allocate without bound.
const MAX_BODY: usize = 64 * 1024 * 1024;
/// How long a write may make no progress before the adapter counts as not reading.
const WRITE_DEADLINE: Duration = Duration::from_secs(10);

/// A response from the adapter, its body still raw (see [`PendingResponse::wait`]).
#[derive(Debug, Clone)]
pub struct Response {
    pub success: bool,
    pub command: String,
    pub message: Option<String>,
    pub body: Value,
}

impl Response {
    fn from_message(message: ResponseMessage) -> Self {
        Response {
            success: message.success,
            command: message.command,
            message: message.message,
            body: message.body,
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
        let error =
            serde_json::from_value::<ErrorBody>(self.body.clone()).ok().and_then(|b| b.error);
        if let Some(text) = error.as_ref().and_then(ErrorMessage::text)
            && !parts.iter().any(|p| p == &text)
        {
            parts.push(text);
        }
        if parts.is_empty() { "the adapter gave no reason".to_string() } else { parts.join(": ") }
    }
}

/// Something the adapter sent that is not a response.
#[derive(Debug, Clone)]
pub enum Incoming {
    Event(Event),
    /// A reverse request (`runInTerminal`, `startDebugging`, …); it must be answered.
    Request(IncomingRequest),
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
    #[error("the adapter's answer to `{command}` is not what the protocol says ({message})")]
    Malformed { command: String, message: String },
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
pub struct PendingResponse<R: Request> {
    rx: Option<oneshot::Receiver<Result<Response, DapError>>>,
    done: Option<Result<Response, DapError>>,
    request: PhantomData<fn() -> R>,
}

impl<R: Request> PendingResponse<R> {
    /// Waits at most `timeout` for the response; a failed response is an error.
    pub async fn wait(mut self, timeout: Duration) -> Result<R::Body, DapError> {
        let response = self.wait_raw(timeout).await?;
        body_of::<R>(response)
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
                Err(DapError::Timeout { command: R::COMMAND.to_string(), secs: timeout.as_secs() })
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

    pub fn command(&self) -> &'static str {
        R::COMMAND
    }
}

/// The typed body of a successful response to `R`; a failed one is an error. A missing body
/// reads as an empty one.
pub fn body_of<R: Request>(response: Response) -> Result<R::Body, DapError> {
    if !response.success {
        return Err(DapError::Failed {
            command: R::COMMAND.to_string(),
            message: response.error_text(),
        });
    }
    let body =
        if response.body.is_null() { Value::Object(Default::default()) } else { response.body };
    serde_json::from_value(body).map_err(|e| DapError::Malformed {
        command: R::COMMAND.to_string(),
        message: e.to_string(),
    })
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

    /// Sends the request `R` without waiting for its response.
    pub async fn send<R: Request>(
        &self,
        arguments: R::Arguments,
    ) -> Result<PendingResponse<R>, DapError> {
        let seq = self.next_seq();
        let message =
            OutgoingRequest { seq, kind: "request", command: R::COMMAND, arguments: &arguments };
        let message = serde_json::to_value(&message).map_err(|e| DapError::Malformed {
            command: R::COMMAND.to_string(),
            message: format!("its arguments cannot be written: {e}"),
        })?;
        let (tx, rx) = oneshot::channel();
        {
            let mut pending = self.pending.lock();
            if let Some(reason) = &pending.closed {
                return Err(DapError::Closed(reason.clone()));
            }
            pending.waiters.insert(seq, tx);
        }
        tracing::trace!(seq, command = R::COMMAND, "dap ->");
        if let Err(e) = self.write(&message).await {
            self.pending.lock().waiters.remove(&seq);
            return Err(e);
        }
        Ok(PendingResponse { rx: Some(rx), done: None, request: PhantomData })
    }

    /// Sends the request `R` and waits at most `timeout` for its successful response body.
    pub async fn request<R: Request>(
        &self,
        arguments: R::Arguments,
        timeout: Duration,
    ) -> Result<R::Body, DapError> {
        self.send::<R>(arguments).await?.wait(timeout).await
    }

    /// Answers the reverse request `R`: its body, or why it was refused.
    pub async fn respond<R: ReverseRequest>(
        &self,
        request_seq: i64,
        answer: Result<R::Body, &str>,
    ) -> Result<(), DapError> {
        match answer {
            Ok(body) => self.answer(request_seq, R::COMMAND, true, None, body).await,
            Err(message) => self.refuse(request_seq, R::COMMAND, message).await,
        }
    }

    /// Refuses a reverse request, whatever its command.
    pub async fn refuse(
        &self,
        request_seq: i64,
        command: &str,
        message: &str,
    ) -> Result<(), DapError> {
        self.answer(request_seq, command, false, Some(message), Value::Null).await
    }

    async fn answer<B: Serialize>(
        &self,
        request_seq: i64,
        command: &str,
        success: bool,
        message: Option<&str>,
        body: B,
    ) -> Result<(), DapError> {
        let response = OutgoingResponse {
            seq: self.next_seq(),
            kind: "response",
            request_seq,
            command,
            success,
            message,
            body,
        };
        let response = serde_json::to_value(&response).map_err(|e| DapError::Malformed {
            command: command.to_string(),
            message: format!("our answer cannot be written: {e}"),
        })?;
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
    let message = match serde_json::from_value::<Message>(message) {
        Ok(message) => message,
        Err(e) => {
            tracing::debug!(error = %e, "dap <- a message that is not the protocol's; ignored");
            return;
        }
    };
    match message {
        Message::Response(response) => {
            tracing::trace!(
                request_seq = response.request_seq,
                command = response.command,
                "dap <- response"
            );
            // Correlate by `request_seq` only: some adapters send an empty `command` on errors.
            let waiter = pending.lock().waiters.remove(&response.request_seq);
            if let Some(waiter) = waiter {
                let _ = waiter.send(Ok(Response::from_message(response)));
            }
        }
        Message::Event(EventMessage { event, body }) => {
            tracing::trace!(event, "dap <- event");
            let _ = tx.send(Incoming::Event(Event::parse(&event, body)));
        }
        Message::Request(request) => {
            tracing::trace!(seq = request.seq, command = request.command, "dap <- request");
            let _ = tx.send(Incoming::Request(IncomingRequest::parse(request)));
        }
    }
}
