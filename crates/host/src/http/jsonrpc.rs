//! What the HTTP host answers itself about a POST body before rmcp reads it: a body that is
//! not JSON (-32700), a message that is not JSON-RPC 2.0 (-32600), and JSON-RPC batches, which
//! rmcp does not take and the 2025-03-26 revision requires: each message of a batch goes to the
//! session on its own and the replies come back together, as one JSON array (the last event of
//! a stream when the client takes event streams, after whatever the server sent first: a card a
//! call raised, progress).

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Request, Response, StatusCode, header};
use serde_json::{Value, json};

use super::{Body, McpService};
use crate::envelope::{bad_params, invalid_envelope, invalid_id_or_method};

/// What to do with a POST body.
pub(super) enum Post {
    /// One message for rmcp.
    Single,
    /// A batch: the messages, each for rmcp on its own.
    Batch(Vec<Value>),
    /// Answered here: not JSON, or not JSON-RPC 2.0.
    Refused(Response<Body>),
}

/// Reads a POST body as JSON-RPC.
pub(super) fn classify(body: &[u8]) -> Post {
    let value: Value = match serde_json::from_slice(body) {
        Ok(value) => value,
        Err(e) => {
            return Post::Refused(error_response(
                Value::Null,
                -32700,
                format!(
                    "parse error: the request body is not JSON ({e}); send one JSON-RPC message"
                ),
            ));
        }
    };
    match value {
        Value::Array(items) if items.is_empty() => Post::Refused(error_response(
            Value::Null,
            -32600,
            "invalid request: an empty batch; send at least one JSON-RPC message".to_string(),
        )),
        Value::Array(items) => Post::Batch(items),
        single => {
            let invalid = invalid_envelope(&single)
                .map(|message| (single.get("id").cloned().unwrap_or_default(), message))
                .or_else(|| invalid_id_or_method(&single));
            if let Some((id, message)) = invalid {
                return Post::Refused(error_response(id, -32600, message));
            }
            // A request whose params rmcp would misreport: answered like any JSON-RPC error
            // (HTTP 200, the error in the body), naming what is wrong.
            match single.get("id").filter(|_| single.get("method").is_some()) {
                Some(id) => match bad_params(&single) {
                    Some(message) => Post::Refused(json_response(
                        StatusCode::OK,
                        &json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32602, "message": message}}),
                    )),
                    None => Post::Single,
                },
                None => Post::Single,
            }
        }
    }
}

/// Whether the body is one `tools/call` request (numbered by its arrival, see `order`).
pub(super) fn is_tool_call(body: &[u8]) -> bool {
    serde_json::from_slice::<Value>(body).is_ok_and(|message| {
        message.get("id").is_some()
            && message.get("method").and_then(Value::as_str) == Some("tools/call")
    })
}

/// A JSON-RPC error as an HTTP 400 answer.
fn error_response(id: Value, code: i64, message: String) -> Response<Body> {
    let error = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
    json_response(StatusCode::BAD_REQUEST, &error)
}

fn json_response(status: StatusCode, value: &Value) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(value.to_string())).boxed());
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, header::HeaderValue::from_static("application/json"));
    response
}

/// Serves a batch on its session: each message goes to rmcp as a POST of its own (in order,
/// with the batch's headers), and the replies to its requests come back as one JSON array
/// (HTTP 202 and no body when it held only notifications and responses).
pub(super) async fn serve_batch(
    parts: &hyper::http::request::Parts,
    items: Vec<Value>,
    service: &McpService,
    has_session: bool,
    next_arrival: &(dyn Fn() -> crate::order::Arrival + Sync),
) -> Response<Body> {
    if !has_session {
        return error_response(
            Value::Null,
            -32600,
            "invalid request: a batch needs a session; send `initialize` on its own first and \
             then the batch with its Mcp-Session-Id"
                .to_string(),
        );
    }
    // Every message goes to the session first, in order (so its calls keep the batch's order),
    // and the answers are read after: a call that raises a card or reports progress does not
    // hold the messages after it.
    let mut slots = Vec::new();
    for item in items {
        let id = item.get("id").cloned().unwrap_or_default();
        if let Some(message) = invalid_envelope(&item) {
            slots.push(Slot::Answered(error_value(id, -32600, message)));
            continue;
        }
        if item.get("method").and_then(Value::as_str) == Some("initialize") {
            let message = "invalid request: `initialize` may not be part of a batch".to_string();
            slots.push(Slot::Answered(error_value(id, -32600, message)));
            continue;
        }
        let is_request = item.get("method").is_some() && item.get("id").is_some();
        if is_request && let Some(message) = bad_params(&item) {
            slots.push(Slot::Answered(error_value(id, -32602, message)));
            continue;
        }
        let mut request = Request::new(Full::new(Bytes::from(item.to_string())));
        *request.method_mut() = parts.method.clone();
        *request.uri_mut() = parts.uri.clone();
        *request.headers_mut() = parts.headers.clone();
        request.headers_mut().remove(header::CONTENT_LENGTH);
        if is_request && item.get("method").and_then(Value::as_str) == Some("tools/call") {
            request.extensions_mut().insert(next_arrival());
        }
        let response = service.handle(request).await;
        if is_request {
            slots.push(Slot::Pending { id, response });
        }
    }
    if slots.is_empty() {
        let mut response = Response::new(Full::new(Bytes::new()).boxed());
        *response.status_mut() = StatusCode::ACCEPTED;
        return response;
    }
    let streams = parts
        .headers
        .get_all(header::ACCEPT)
        .iter()
        .any(|accept| accept.to_str().is_ok_and(|a| a.contains("text/event-stream")));
    if !streams {
        let mut replies = Vec::with_capacity(slots.len());
        for slot in slots {
            replies.push(slot.reply(|_| {}).await);
        }
        return json_response(StatusCode::OK, &Value::Array(replies));
    }
    // As a stream of events: what the server sends before a reply (a card's
    // `elicitation/create`, progress) goes out at once, so the client can answer it, and the
    // replies follow together as one JSON array.
    let (events, receiver) = tokio::sync::mpsc::channel::<Bytes>(64);
    tokio::spawn(async move {
        let tasks: Vec<_> = slots
            .into_iter()
            .map(|slot| {
                let events = events.clone();
                tokio::spawn(async move {
                    slot.reply(move |message| {
                        let _ = events.try_send(event_bytes(&message));
                    })
                    .await
                })
            })
            .collect();
        let mut replies = Vec::with_capacity(tasks.len());
        for task in tasks {
            match task.await {
                Ok(reply) => replies.push(reply),
                Err(e) => tracing::warn!("a batch's reply was lost: {e}"),
            }
        }
        let _ = events.send(event_bytes(&Value::Array(replies))).await;
    });
    let mut response = Response::new(ChannelBody(receiver).boxed());
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, header::HeaderValue::from_static("text/event-stream"));
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, header::HeaderValue::from_static("no-cache"));
    response
}

/// One message of a batch that needs a reply.
enum Slot {
    /// Answered here (not JSON-RPC 2.0, bad params).
    Answered(Value),
    /// Handed to the session; its reply is in rmcp's answer.
    Pending { id: Value, response: Response<Body> },
}

impl Slot {
    /// The reply, read from rmcp's answer as it comes; every other message in it (requests
    /// and notifications of the server) goes to `forward` on the way.
    async fn reply(self, forward: impl Fn(Value)) -> Value {
        let (id, response) = match self {
            Slot::Answered(reply) => return reply,
            Slot::Pending { id, response } => (id, response),
        };
        let status = response.status();
        let mut body = response.into_body();
        let mut text = String::new();
        let mut reply = None;
        while let Some(frame) = body.frame().await {
            let Ok(frame) = frame;
            let Ok(data) = frame.into_data() else { continue };
            text.push_str(&String::from_utf8_lossy(&data));
            while let Some(end) = text.find("\n\n") {
                let event: String = text.drain(..end + 2).collect();
                if let Some(message) = event_message(&event) {
                    if is_reply_to(&message, &id) {
                        reply = Some(message);
                    } else if status.is_success() {
                        forward(message);
                    }
                }
            }
        }
        let reply = reply
            .or_else(|| if status.is_success() { reply_in(text.as_bytes(), &id) } else { None });
        reply.unwrap_or_else(|| {
            let message = format!("the batch's request got HTTP {status}: {}", text.trim());
            error_value(id, -32603, message)
        })
    }
}

fn error_value(id: Value, code: i64, message: String) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// One server-sent event carrying `message`.
fn event_bytes(message: &Value) -> Bytes {
    Bytes::from(format!("event: message\ndata: {message}\n\n"))
}

/// The JSON-RPC message in the `data` of one server-sent event, if it holds one.
fn event_message(event: &str) -> Option<Value> {
    let data: Vec<&str> = event
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(|data| data.strip_prefix(' ').unwrap_or(data))
        .collect();
    serde_json::from_str::<Value>(&data.join("\n")).ok().filter(Value::is_object)
}

fn is_reply_to(message: &Value, id: &Value) -> bool {
    message.get("id") == Some(id)
        && message.get("method").is_none()
        && (message.get("result").is_some() || message.get("error").is_some())
}

/// A response body fed from a channel (the events of a batch answered as a stream).
struct ChannelBody(tokio::sync::mpsc::Receiver<Bytes>);

impl hyper::body::Body for ChannelBody {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Bytes>, Self::Error>>> {
        self.0.poll_recv(cx).map(|data| data.map(|data| Ok(hyper::body::Frame::data(data))))
    }
}

/// The reply to the request `id` in an answer rmcp gave: a JSON body, or the `data` of a
/// server-sent event.
fn reply_in(body: &[u8], id: &Value) -> Option<Value> {
    if let Ok(message) = serde_json::from_slice::<Value>(body) {
        return is_reply_to(&message, id).then_some(message);
    }
    let text = String::from_utf8_lossy(body);
    text.split("\n\n").filter_map(event_message).find(|message| is_reply_to(message, id))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{Post, classify, reply_in};

    #[tokio::test]
    async fn bodies_that_are_not_json_rpc_2_are_answered_here() {
        use http_body_util::BodyExt;
        for (body, code) in [
            (&b"hello"[..], -32700),
            (br#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#, -32600),
            (b"[]", -32600),
            (b"null", -32600),
            (b"123", -32600),
            (b"{}", -32600),
            (br#"{"jsonrpc":"2.0"}"#, -32600),
            (br#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#, -32600),
            (br#"{"jsonrpc":"2.0","id":184467440737095516160,"method":"ping"}"#, -32600),
        ] {
            let Post::Refused(response) = classify(body) else {
                panic!("{} was passed on", String::from_utf8_lossy(body));
            };
            assert_eq!(response.status(), 400);
            let body = response.into_body().collect().await.unwrap().to_bytes();
            let error: serde_json::Value = serde_json::from_slice(&body).unwrap();
            assert_eq!(error["error"]["code"], code, "{error}");
        }
        let Post::Refused(response) = classify(
            br#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"ask_user","requestState":7}}"#,
        ) else {
            panic!("a numeric requestState was passed on");
        };
        assert_eq!(response.status(), 200);
        let body = response.into_body().collect().await.unwrap().to_bytes();
        let error: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(error["error"]["code"], -32602, "{error}");
        assert_eq!(error["id"], 4, "{error}");
        let message = error["error"]["message"].as_str().unwrap();
        assert!(message.contains("`requestState` must be a string"), "{message}");
        assert!(matches!(classify(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#), Post::Single));
        assert!(matches!(
            classify(br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#),
            Post::Batch(_)
        ));
    }

    #[test]
    fn the_reply_is_found_in_a_json_body_or_an_event_stream() {
        let reply = json!({"jsonrpc": "2.0", "id": 7, "result": {}});
        assert_eq!(reply_in(reply.to_string().as_bytes(), &json!(7)), Some(reply.clone()));
        let stream = format!(
            "id: 0\ndata: \n\nevent: message\ndata: {}\n\ndata: {}\n\n",
            json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {}}),
            reply
        );
        assert_eq!(reply_in(stream.as_bytes(), &json!(7)), Some(reply));
        assert_eq!(reply_in(stream.as_bytes(), &json!(8)), None);
    }
}
