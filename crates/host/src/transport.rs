//! Newline-delimited JSON-RPC over a byte stream (stdio) that answers every request it can.
//!
//! rmcp's own stdio transport drops unparsable lines and over-long messages without a word, so
//! a client waits forever. This one replies: -32700 for a line that is not JSON, -32600 naming
//! the cap for a message over [`MAX_MESSAGE_BYTES`] and for a message that is not JSON-RPC 2.0,
//! -32602 naming what is wrong for a `tools/call` without a tool name or with non-object
//! arguments. A batch (an array, MCP 2025-03-26) is handed to the server message by message and
//! its replies go back together as one array. A write to a closed output
//! is an error for the caller, never a panic. End of input cancels `on_close`, so the calls of
//! a client that went away are cancelled at once.

use std::{borrow::Cow, sync::Arc};

use rmcp::{
    RoleServer,
    service::{RxJsonRpcMessage, TxJsonRpcMessage},
    transport::Transport,
};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio_util::sync::CancellationToken;

use crate::envelope::{bad_params, invalid_envelope, invalid_id_or_method};

/// The largest message accepted on one line (16 MiB), stated in the README.
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

pub(super) struct LineTransport<R, W> {
    reader: BufReader<R>,
    writer: Arc<tokio::sync::Mutex<Option<W>>>,
    line: Vec<u8>,
    /// Bytes of the current line read so far (also past the cap); 0 between lines.
    seen: usize,
    max_bytes: usize,
    on_close: CancellationToken,
    /// Messages of a batch not yet handed to the server.
    queue: std::collections::VecDeque<RxJsonRpcMessage<RoleServer>>,
    /// Batches whose replies are being gathered.
    batches: Arc<std::sync::Mutex<Vec<Batch>>>,
    /// `tools/call` messages read so far (each is numbered, see `order`).
    arrivals: u64,
}

/// Numbers a `tools/call` by its arrival on its connection (`counter` counts them), so that the
/// host hands the calls to their tools in that order (see `order`).
pub(super) fn stamp_arrival(message: &mut RxJsonRpcMessage<RoleServer>, counter: &mut u64) {
    if let rmcp::model::JsonRpcMessage::Request(request) = message
        && let rmcp::model::ClientRequest::CallToolRequest(call) = &mut request.request
    {
        *counter += 1;
        call.extensions.insert(super::order::Arrival(*counter));
    }
}

/// A batch being answered: the requests still without a reply (their ids as JSON text) and the
/// replies so far.
#[derive(Default)]
struct Batch {
    waiting: std::collections::HashSet<String>,
    replies: Vec<Value>,
}

/// What becomes of a message the server sends.
enum Held {
    /// Not part of a batch: sent as it is.
    Send(Value),
    /// The last reply of a batch: the whole batch's replies go out.
    Complete(Vec<Value>),
    /// A reply of a batch that waits for others.
    Kept,
}

fn held_for_batch(batches: &std::sync::Mutex<Vec<Batch>>, value: Value) -> Held {
    let is_reply = value.get("method").is_none()
        && (value.get("result").is_some() || value.get("error").is_some());
    let Some(id) = value.get("id").filter(|_| is_reply).map(Value::to_string) else {
        return Held::Send(value);
    };
    let Ok(mut batches) = batches.lock() else { return Held::Send(value) };
    let Some(at) = batches.iter().position(|b| b.waiting.contains(&id)) else {
        return Held::Send(value);
    };
    let batch = &mut batches[at];
    batch.waiting.remove(&id);
    batch.replies.push(value);
    if batch.waiting.is_empty() { Held::Complete(batches.remove(at).replies) } else { Held::Kept }
}

/// What becomes of one message from the client.
enum Admit {
    Deliver(Box<RxJsonRpcMessage<RoleServer>>),
    /// Refused with this error reply.
    Refuse(Value),
    /// A notification that is not MCP, or an invalid one: no reply (JSON-RPC 2.0).
    Ignore,
}

/// Checks one message: the JSON-RPC 2.0 envelope, the params of requests rmcp would misreport,
/// and whether it is an MCP message at all.
fn admit(value: Value) -> Admit {
    let id = value.get("id").cloned().unwrap_or(Value::Null);
    let error = |code: i64, message: String| {
        Admit::Refuse(
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}),
        )
    };
    let has_method = value.get("method").is_some_and(Value::is_string);
    if let Some(message) = invalid_envelope(&value) {
        // A notification gets no reply, not even an error; what is not one gets an error.
        return if value.get("id").is_some() || !has_method {
            error(-32600, message)
        } else {
            Admit::Ignore
        };
    }
    if let Some((id, message)) = invalid_id_or_method(&value) {
        return Admit::Refuse(
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32600, "message": message}}),
        );
    }
    if value.get("id").is_some()
        && let Some(message) = bad_params(&value)
    {
        return error(-32602, message);
    }
    match serde_json::from_value::<RxJsonRpcMessage<RoleServer>>(value.clone()) {
        Ok(message) => Admit::Deliver(Box::new(message)),
        Err(_) if ignorable(&value) => {
            tracing::debug!("ignoring a notification that is not MCP: {value}");
            Admit::Ignore
        }
        Err(e) => match value.get("method").and_then(Value::as_str) {
            Some(method) => error(-32602, format!("invalid params for `{method}`: {e}")),
            None => {
                error(-32600, format!("invalid request: a JSON-RPC 2.0 message was expected ({e})"))
            }
        },
    }
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> LineTransport<R, W> {
    pub(super) fn new(reader: R, writer: W, on_close: CancellationToken) -> Self {
        LineTransport {
            reader: BufReader::new(reader),
            writer: Arc::new(tokio::sync::Mutex::new(Some(writer))),
            line: Vec::new(),
            seen: 0,
            max_bytes: MAX_MESSAGE_BYTES,
            on_close,
            queue: Default::default(),
            batches: Default::default(),
            arrivals: 0,
        }
    }

    #[cfg(test)]
    fn with_max_bytes(mut self, max_bytes: usize) -> Self {
        self.max_bytes = max_bytes;
        self
    }
}

/// What reading one line gave.
enum Line {
    Complete,
    TooLong(usize),
    End,
}

/// Writes one message and a newline; fails on a closed output instead of panicking.
async fn write_line<W: AsyncWrite + Unpin>(
    writer: &tokio::sync::Mutex<Option<W>>,
    text: String,
) -> std::io::Result<()> {
    let mut guard = writer.lock().await;
    let Some(out) = guard.as_mut() else {
        return Err(std::io::Error::new(std::io::ErrorKind::NotConnected, "output closed"));
    };
    let mut bytes = text.into_bytes();
    bytes.push(b'\n');
    out.write_all(&bytes).await?;
    out.flush().await
}

fn error_reply(id: Value, code: i64, message: String) -> String {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}).to_string()
}

/// Notifications outside MCP (an editor's LSP traffic on the same pipe) are ignored quietly.
fn ignorable(message: &Value) -> bool {
    message.get("id").is_none()
}

impl<R, W> LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    /// Reads one line into `self.line`, keeping at most `max_bytes`; the rest of an over-long
    /// line is read and dropped so the next message starts clean.
    ///
    /// Cancel-safe: rmcp polls `receive` in a `select!` and may drop it between two chunks of
    /// one line (a client that writes the message and its newline separately), so what was
    /// consumed stays in `self.line` and `self.seen` until the line ends, and the next call goes
    /// on from there instead of losing the request.
    async fn read_line(&mut self) -> std::io::Result<Line> {
        if self.seen == 0 {
            self.line.clear();
        }
        loop {
            let available = self.reader.fill_buf().await?;
            if available.is_empty() {
                let total = std::mem::take(&mut self.seen);
                return Ok(if total == 0 {
                    Line::End
                } else if total > self.max_bytes {
                    Line::TooLong(total)
                } else {
                    Line::Complete
                });
            }
            let (chunk, done) = match available.iter().position(|b| *b == b'\n') {
                Some(i) => (&available[..i], i + 1),
                None => (available, available.len()),
            };
            let ended = done > chunk.len();
            self.seen += chunk.len();
            if self.seen <= self.max_bytes {
                self.line.extend_from_slice(chunk);
            } else {
                self.line.clear();
            }
            self.reader.consume(done);
            if ended {
                let total = std::mem::take(&mut self.seen);
                return Ok(if total > self.max_bytes {
                    Line::TooLong(total)
                } else {
                    Line::Complete
                });
            }
        }
    }

    /// Sends a reply the transport makes itself (a protocol error, a batch's replies) on a task
    /// of its own: `receive` may be dropped by rmcp's `select!` while the writer is busy with
    /// another answer, and the line it consumed must still be answered (a reply awaited inside
    /// `receive` was lost under load).
    fn reply(&self, text: String) {
        let writer = self.writer.clone();
        tokio::spawn(async move {
            if let Err(e) = write_line(&writer, text).await {
                tracing::warn!("cannot write a protocol error reply: {e}");
            }
        });
    }
}

impl<R, W> Transport<RoleServer> for LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn name() -> Cow<'static, str> {
        "agent-tools line transport".into()
    }

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let writer = self.writer.clone();
        let batches = self.batches.clone();
        async move {
            let value = serde_json::to_value(&item).map_err(std::io::Error::other)?;
            let text = match held_for_batch(&batches, value) {
                Held::Send(value) => value.to_string(),
                Held::Complete(replies) => Value::Array(replies).to_string(),
                Held::Kept => return Ok(()),
            };
            write_line(&writer, text).await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        if let Some(message) = self.queue.pop_front() {
            return Some(message);
        }
        loop {
            let read = match self.read_line().await {
                Ok(read) => read,
                Err(e) => {
                    tracing::warn!("cannot read from the client: {e}");
                    Line::End
                }
            };
            match read {
                Line::End => {
                    self.on_close.cancel();
                    return None;
                }
                Line::TooLong(bytes) => {
                    let message = format!(
                        "message of {bytes} bytes is over the {} MiB cap on one message; it was \
                         dropped. Send less per request (a smaller argument, a file path instead \
                         of its contents)",
                        self.max_bytes / (1024 * 1024)
                    );
                    self.reply(error_reply(Value::Null, -32600, message));
                    continue;
                }
                Line::Complete => {}
            }
            let raw = self.line.strip_suffix(b"\r").unwrap_or(&self.line);
            let raw = raw.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(raw);
            if raw.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let value: Value = match serde_json::from_slice(raw) {
                Ok(value) => value,
                Err(e) => {
                    let message = format!("parse error: the message is not JSON ({e})");
                    self.reply(error_reply(Value::Null, -32700, message));
                    continue;
                }
            };
            let Value::Array(items) = value else {
                match admit(value) {
                    Admit::Deliver(mut message) => {
                        stamp_arrival(&mut message, &mut self.arrivals);
                        return Some(*message);
                    }
                    Admit::Refuse(reply) => {
                        self.reply(reply.to_string());
                    }
                    Admit::Ignore => {}
                }
                continue;
            };
            if items.is_empty() {
                let message = "invalid request: an empty batch; send at least one message";
                self.reply(error_reply(Value::Null, -32600, message.into()));
                continue;
            }
            // A batch (JSON-RPC 2.0, MCP 2025-03-26): each message goes to the server on its
            // own, and the replies to its requests go back together as one array (`send`).
            let mut batch = Batch::default();
            for item in items {
                let request_id = item.get("method").and(item.get("id")).map(Value::to_string);
                match admit(item) {
                    Admit::Deliver(mut message) => {
                        stamp_arrival(&mut message, &mut self.arrivals);
                        batch.waiting.extend(request_id);
                        self.queue.push_back(*message);
                    }
                    Admit::Refuse(reply) => batch.replies.push(reply),
                    Admit::Ignore => {}
                }
            }
            if batch.waiting.is_empty() {
                if !batch.replies.is_empty() {
                    self.reply(Value::Array(batch.replies).to_string());
                }
            } else if let Ok(mut batches) = self.batches.lock() {
                batches.push(batch);
            }
            if let Some(message) = self.queue.pop_front() {
                return Some(message);
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        let mut guard = self.writer.lock().await;
        if let Some(mut out) = guard.take() {
            let _ = out.flush().await;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use rmcp::transport::Transport;
    use serde_json::Value;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio_util::sync::CancellationToken;

    use super::LineTransport;

    /// Feeds `input` to a transport and returns what it delivered and what it replied.
    async fn check(input: &[u8], max: usize) -> (usize, Vec<Value>) {
        let (mut client_in, server_in) = tokio::io::duplex(1 << 20);
        let (server_out, mut client_out) = tokio::io::duplex(1 << 20);
        let input = input.to_vec();
        tokio::spawn(async move {
            client_in.write_all(&input).await.unwrap();
        });
        let closed = CancellationToken::new();
        let mut transport =
            LineTransport::new(server_in, server_out, closed.clone()).with_max_bytes(max);
        let mut delivered = 0;
        while Transport::<rmcp::RoleServer>::receive(&mut transport).await.is_some() {
            delivered += 1;
        }
        assert!(closed.is_cancelled(), "end of input cancels the run's calls");
        drop(transport);
        let mut out = String::new();
        client_out.read_to_string(&mut out).await.unwrap();
        (delivered, out.lines().map(|l| serde_json::from_str(l).unwrap()).collect())
    }

    fn codes(replies: &[Value]) -> Vec<i64> {
        replies.iter().map(|r| r["error"]["code"].as_i64().unwrap()).collect()
    }

    #[tokio::test]
    async fn a_line_that_is_not_json_gets_a_parse_error_and_the_next_one_is_read() {
        let (delivered, replies) =
            check(b"this is not json\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n", 1024)
                .await;
        assert_eq!(delivered, 1);
        assert_eq!(codes(&replies), [-32700]);
    }

    #[tokio::test]
    async fn a_message_that_is_not_json_rpc_2_is_an_invalid_request() {
        let input = concat!(
            "{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"tools/list\"}\n",
            "{\"id\":2,\"method\":\"ping\"}\n",
            "42\n",
            "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}\n",
        );
        let (delivered, replies) = check(input.as_bytes(), 1024).await;
        assert_eq!(delivered, 1, "the valid ping still goes through");
        assert_eq!(codes(&replies), [-32600, -32600, -32600]);
        assert_eq!(replies[0]["id"], 1);
        let message = replies[0]["error"]["message"].as_str().unwrap();
        assert!(message.contains("\"2.0\"") && message.contains("1.0"), "{message}");
    }

    #[tokio::test]
    async fn every_json_value_that_is_no_request_is_answered_and_a_notification_is_not() {
        let input = concat!(
            "[]\n",
            "null\n",
            "123\n",
            "\"str\"\n",
            "{}\n",
            "{\"jsonrpc\":\"2.0\"}\n",
            "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}\n",
            "{\"jsonrpc\":\"2.0\",\"id\":184467440737095516160,\"method\":\"ping\"}\n",
            "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}\n",
            "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/unknown\"}\n",
            "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}\n",
        );
        let (delivered, replies) = check(input.as_bytes(), 1024).await;
        // The ping and the notification reach rmcp (which ignores an unknown notification);
        // the notification gets no reply.
        assert_eq!(delivered, 2, "{replies:?}");
        assert_eq!(codes(&replies), [-32600; 9], "{replies:?}");
        assert!(replies.iter().all(|r| r["id"].is_null()), "{replies:?}");
        let message = replies[6]["error"]["message"].as_str().unwrap();
        assert!(message.contains("`id` must be a string or an integer"), "{message}");
    }

    #[tokio::test]
    async fn an_error_reply_survives_a_receive_dropped_while_the_output_is_busy() {
        // The client reads slowly (a one-byte pipe) and rmcp drops `receive` in its select!
        // while the error reply of the line it consumed is still being written.
        let (mut client_in, server_in) = tokio::io::duplex(1 << 16);
        let (server_out, mut client_out) = tokio::io::duplex(1);
        client_in
            .write_all(b"not json\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n")
            .await
            .unwrap();
        let mut transport = LineTransport::new(server_in, server_out, CancellationToken::new());
        let first = tokio::time::timeout(
            std::time::Duration::from_millis(50),
            Transport::<rmcp::RoleServer>::receive(&mut transport),
        )
        .await;
        let ping = match first {
            Ok(message) => message,
            Err(_) => Transport::<rmcp::RoleServer>::receive(&mut transport).await,
        };
        assert!(ping.is_some(), "the ping after the bad line is delivered");
        drop(client_in);
        drop(transport);
        let mut out = String::new();
        client_out.read_to_string(&mut out).await.unwrap();
        let reply: Value = serde_json::from_str(out.trim()).expect("one whole reply");
        assert_eq!(reply["error"]["code"], -32700, "{out}");
    }

    #[tokio::test]
    async fn a_batch_is_delivered_message_by_message_and_answered_as_one_array() {
        use rmcp::service::TxJsonRpcMessage;
        let (mut client_in, server_in) = tokio::io::duplex(1 << 16);
        let (server_out, mut client_out) = tokio::io::duplex(1 << 16);
        let mut transport = LineTransport::new(server_in, server_out, CancellationToken::new());
        let batch = concat!(
            "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"},",
            "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"},",
            "{\"jsonrpc\":\"1.0\",\"id\":3,\"method\":\"ping\"},",
            "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}]\n"
        );
        client_in.write_all(batch.as_bytes()).await.unwrap();
        let mut delivered = Vec::new();
        for _ in 0..3 {
            let message = Transport::<rmcp::RoleServer>::receive(&mut transport).await.unwrap();
            delivered.push(serde_json::to_value(&message).unwrap());
        }
        assert_eq!(delivered[0]["id"], 1);
        assert_eq!(delivered[1]["method"], "notifications/initialized");
        assert_eq!(delivered[2]["id"], 2);
        for id in [2, 1] {
            let reply: TxJsonRpcMessage<rmcp::RoleServer> = serde_json::from_value(
                serde_json::json!({"jsonrpc": "2.0", "id": id, "result": {}}),
            )
            .unwrap();
            Transport::<rmcp::RoleServer>::send(&mut transport, reply).await.unwrap();
        }
        drop(transport);
        let mut out = String::new();
        client_out.read_to_string(&mut out).await.unwrap();
        let lines: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(lines.len(), 1, "one line for the whole batch: {out}");
        let ids: Vec<&Value> = lines[0].as_array().unwrap().iter().map(|r| &r["id"]).collect();
        assert_eq!(ids, [&Value::from(3), &Value::from(2), &Value::from(1)], "{out}");
    }

    #[tokio::test]
    async fn a_message_over_the_cap_is_refused_with_the_cap_named() {
        let long = format!("{{\"x\": \"{}\"}}\n", "a".repeat(3 * 1024 * 1024));
        let input = format!("{long}{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}}\n");
        let (delivered, replies) = check(input.as_bytes(), 2 * 1024 * 1024).await;
        assert_eq!(delivered, 1);
        assert_eq!(codes(&replies), [-32600]);
        let message = replies[0]["error"]["message"].as_str().unwrap();
        assert!(message.contains("2 MiB cap"), "{message}");
    }

    #[tokio::test]
    async fn a_tool_call_without_a_name_or_with_bad_arguments_is_invalid_params() {
        let input = concat!(
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{}}\n",
            "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"read\",\"arguments\":[1]}}\n",
        );
        let (delivered, replies) = check(input.as_bytes(), 1024).await;
        assert_eq!(delivered, 0);
        assert_eq!(codes(&replies), [-32602, -32602]);
        assert_eq!(replies[0]["id"], 1);
        assert!(replies[0]["error"]["message"].as_str().unwrap().contains("missing `name`"));
        assert!(replies[1]["error"]["message"].as_str().unwrap().contains("`arguments` must be"));
    }

    #[tokio::test]
    async fn a_request_state_that_is_no_string_is_invalid_params_naming_it() {
        let mut input = String::new();
        for (id, state) in [(1, "5"), (2, "{\"a\":1}"), (3, "[\"x\"]"), (4, "true")] {
            input.push_str(&format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":\"ask_user\",\"arguments\":{{}},\"requestState\":{state}}}}}\n"
            ));
        }
        let (delivered, replies) = check(input.as_bytes(), 1024).await;
        assert_eq!(delivered, 0);
        assert_eq!(codes(&replies), [-32602; 4], "{replies:?}");
        for reply in &replies {
            let message = reply["error"]["message"].as_str().unwrap();
            assert!(message.contains("`requestState` must be a string"), "{message}");
        }
    }

    #[tokio::test]
    async fn a_receive_dropped_between_two_chunks_of_a_line_loses_nothing() {
        let (mut client_in, server_in) = tokio::io::duplex(1 << 16);
        let (server_out, _client_out) = tokio::io::duplex(1 << 16);
        let mut transport = LineTransport::new(server_in, server_out, CancellationToken::new());
        // The message first, its newline later: as a client writing them separately does.
        client_in.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}").await.unwrap();
        let first = tokio::time::timeout(
            std::time::Duration::from_millis(50),
            Transport::<rmcp::RoleServer>::receive(&mut transport),
        )
        .await;
        assert!(first.is_err(), "no whole line yet");
        client_in.write_all(b"\n").await.unwrap();
        // A bound only so that a lost line fails instead of hanging.
        let message = tokio::time::timeout(
            std::time::Duration::from_secs(30),
            Transport::<rmcp::RoleServer>::receive(&mut transport),
        )
        .await
        .expect("the line was lost when the first receive was dropped");
        let text = serde_json::to_string(&message.expect("the message")).unwrap();
        assert!(text.contains("\"id\":7"), "{text}");
    }
}
