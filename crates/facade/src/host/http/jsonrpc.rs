//! What the HTTP host answers itself about a POST body before rmcp reads it: a body that is
//! not JSON (-32700), a message that is not JSON-RPC 2.0 (-32600), and JSON-RPC batches, which
//! rmcp does not take and the 2025-03-26 revision requires: each message of a batch goes to the
//! session on its own and the replies come back together, as one JSON array.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Request, Response, StatusCode, header};
use serde_json::{Value, json};

use super::{Body, McpService};
use crate::host::transport::{bad_params, invalid_envelope, invalid_id_or_method};

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
    next_arrival: &(dyn Fn() -> crate::host::order::Arrival + Sync),
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
    let mut replies = Vec::new();
    for item in items {
        if let Some(message) = invalid_envelope(&item) {
            replies
                .push(json!({"jsonrpc": "2.0", "id": item.get("id").cloned().unwrap_or_default(),
                "error": {"code": -32600, "message": message}}));
            continue;
        }
        if item.get("method").and_then(Value::as_str) == Some("initialize") {
            replies.push(json!({"jsonrpc": "2.0", "id": item.get("id").cloned().unwrap_or_default(),
                "error": {"code": -32600, "message": "invalid request: `initialize` may not be part of a batch"}}));
            continue;
        }
        let is_request = item.get("method").is_some() && item.get("id").is_some();
        let mut request = Request::new(Full::new(Bytes::from(item.to_string())));
        *request.method_mut() = parts.method.clone();
        *request.uri_mut() = parts.uri.clone();
        *request.headers_mut() = parts.headers.clone();
        request.headers_mut().remove(header::CONTENT_LENGTH);
        if is_request && item.get("method").and_then(Value::as_str) == Some("tools/call") {
            request.extensions_mut().insert(next_arrival());
        }
        let response = service.handle(request).await;
        let status = response.status();
        let body = match response.into_body().collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(never) => match never {},
        };
        if !is_request {
            continue;
        }
        let id = item.get("id").cloned().unwrap_or_default();
        let reply = if status.is_success() { reply_in(&body, &id) } else { None };
        replies.push(reply.unwrap_or_else(|| {
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603,
                "message": format!("the batch's request got HTTP {status}: {}", String::from_utf8_lossy(&body).trim())}})
        }));
    }
    if replies.is_empty() {
        let mut response = Response::new(Full::new(Bytes::new()).boxed());
        *response.status_mut() = StatusCode::ACCEPTED;
        return response;
    }
    json_response(StatusCode::OK, &Value::Array(replies))
}

/// The reply to the request `id` in an answer rmcp gave: a JSON body, or the `data` of a
/// server-sent event.
fn reply_in(body: &[u8], id: &Value) -> Option<Value> {
    let is_reply = |message: &Value| {
        message.get("id") == Some(id)
            && message.get("method").is_none()
            && (message.get("result").is_some() || message.get("error").is_some())
    };
    if let Ok(message) = serde_json::from_slice::<Value>(body) {
        return is_reply(&message).then_some(message);
    }
    let text = String::from_utf8_lossy(body);
    for event in text.split("\n\n") {
        let data: Vec<&str> = event
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .map(|data| data.strip_prefix(' ').unwrap_or(data))
            .collect();
        if let Ok(message) = serde_json::from_str::<Value>(&data.join("\n"))
            && is_reply(&message)
        {
            return Some(message);
        }
    }
    None
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
