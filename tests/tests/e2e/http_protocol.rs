//! `mcp --http` as raw HTTP sees it: what a client that is not one of the official SDKs sends,
//! on a 2025-03-26 session: a lower-case `bearer` scheme, JSON-RPC batches, a body that is not
//! JSON or not JSON-RPC 2.0, and the `DELETE` that ends a session.

use std::{
    io::{Read, Write},
    net::TcpStream,
};

use serde_json::{Value, json};

use crate::{http_host::HttpHost, support::TempProject};

const TOKEN: &str = "s3cret-token";

/// One HTTP/1.1 exchange: status, headers (names in lower case) and the body, de-chunked.
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    /// The JSON-RPC messages of the body: a JSON document, or the data of its events.
    fn messages(&self) -> Vec<Value> {
        if let Ok(value) = serde_json::from_str::<Value>(&self.body) {
            return vec![value];
        }
        self.body
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .filter_map(|data| serde_json::from_str(data.trim()).ok())
            .collect()
    }
}

fn exchange(url: &str, method: &str, headers: &[(&str, &str)], body: &str) -> Answer {
    let rest = url.strip_prefix("http://").expect("an http URL");
    let (authority, path) = rest.split_once('/').expect("a path");
    let mut stream = TcpStream::connect(authority).expect("connect to the host");
    // A bound for a host that never answers: the test fails instead of hanging.
    stream.set_read_timeout(Some(std::time::Duration::from_secs(60))).expect("read timeout");
    let mut request = format!(
        "{method} /{path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\
         Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).expect("send the request");
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).expect("read the answer");
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let chunked = headers.iter().any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"));
    let body = if chunked { dechunk(body) } else { body.to_string() };
    Answer { status, headers, body }
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else { break };
        if size == 0 || rest.len() < size {
            break;
        }
        out.push_str(&rest[..size]);
        body = rest[size..].strip_prefix("\r\n").unwrap_or(&rest[size..]);
    }
    out
}

/// A host with a token, and a 2025-03-26 session opened on it with a lower-case scheme.
fn session() -> (TempProject, HttpHost, String) {
    let project = TempProject::new(&[("a.txt", "hi\n")]);
    let token_file = project.root.join("token.txt");
    std::fs::write(&token_file, TOKEN).expect("write the token");
    let host = HttpHost::start(&project.root, &["--token-file", &token_file.display().to_string()]);
    let bearer = format!("bearer {TOKEN}");
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-03-26", "capabilities": {},
        "clientInfo": {"name": "raw-http-e2e", "version": "0"}}});
    let answer = exchange(&host.url, "POST", &[("Authorization", &bearer)], &init.to_string());
    assert_eq!(
        answer.status, 200,
        "a lower-case `bearer` scheme is the same scheme: {}",
        answer.body
    );
    let id = answer.header("mcp-session-id").expect("a session id").to_string();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let headers = [("Authorization", bearer.as_str()), ("Mcp-Session-Id", id.as_str())];
    let answer = exchange(&host.url, "POST", &headers, &initialized.to_string());
    assert_eq!(answer.status, 202, "{}", answer.body);
    (project, host, id)
}

#[test]
fn the_bearer_scheme_is_case_insensitive_and_a_wrong_token_still_is_not() {
    let (_project, host, _) = session();
    for value in ["BEARER s3cret-token", "Bearer  s3cret-token"] {
        let ping = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-03-26", "capabilities": {},
            "clientInfo": {"name": "raw-http-e2e", "version": "0"}}});
        let answer = exchange(&host.url, "POST", &[("Authorization", value)], &ping.to_string());
        assert_eq!(answer.status, 200, "{value}: {}", answer.body);
    }
    for value in ["bearer wrong-token", "Basic s3cret-token", "bearers3cret-token"] {
        let answer = exchange(&host.url, "POST", &[("Authorization", value)], "{}");
        assert_eq!(answer.status, 401, "{value}: {}", answer.body);
    }
    host.stop();
}

#[test]
fn a_batch_on_a_2025_03_26_session_gets_its_replies_together() {
    let (_project, host, id) = session();
    let bearer = format!("Bearer {TOKEN}");
    let headers = [("Authorization", bearer.as_str()), ("Mcp-Session-Id", id.as_str())];
    let batch = json!([
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "x", "progress": 1}},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "read", "arguments": {"path": "a.txt"}}},
        {"jsonrpc": "1.0", "id": 3, "method": "ping"},
    ]);
    let answer = exchange(&host.url, "POST", &headers, &batch.to_string());
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert!(answer.header("content-type").is_some_and(|t| t.contains("application/json")));
    let replies: Value = serde_json::from_str(&answer.body).expect("one JSON array");
    let replies = replies.as_array().expect("an array of replies");
    let ids: Vec<&Value> = replies.iter().map(|r| &r["id"]).collect();
    assert_eq!(ids, [&json!(1), &json!(2), &json!(3)], "one reply per request: {replies:?}");
    assert_eq!(replies[0]["result"], json!({}), "{replies:?}");
    assert_eq!(replies[1]["result"]["content"][0]["text"], "1\thi\n", "{replies:?}");
    assert_eq!(replies[2]["error"]["code"], -32600, "{replies:?}");

    // A batch of notifications only is accepted with no body.
    let only = json!([{"jsonrpc": "2.0", "method": "notifications/progress",
        "params": {"progressToken": "x", "progress": 2}}]);
    assert_eq!(exchange(&host.url, "POST", &headers, &only.to_string()).status, 202);
    host.stop();
}

#[test]
fn a_body_that_is_not_json_or_not_json_rpc_2_gets_a_json_rpc_error() {
    let (_project, host, id) = session();
    let bearer = format!("Bearer {TOKEN}");
    let headers = [("Authorization", bearer.as_str()), ("Mcp-Session-Id", id.as_str())];
    for (body, code) in [
        ("this is not json", -32700),
        (r#"{"jsonrpc": "1.0", "id": 5, "method": "ping"}"#, -32600),
        (r#"{"id": 6, "method": "ping"}"#, -32600),
        ("[]", -32600),
    ] {
        let answer = exchange(&host.url, "POST", &headers, body);
        assert_eq!(answer.status, 400, "{body}: {}", answer.body);
        let error: Value = serde_json::from_str(&answer.body)
            .unwrap_or_else(|_| panic!("{body}: not a JSON-RPC error: {}", answer.body));
        assert_eq!(error["error"]["code"], code, "{body}: {error}");
        assert_eq!(error["jsonrpc"], "2.0");
    }
    host.stop();
}

#[test]
fn a_request_state_that_is_not_a_string_gets_invalid_params_naming_it() {
    let (_project, host, id) = session();
    let bearer = format!("Bearer {TOKEN}");
    let headers = [("Authorization", bearer.as_str()), ("Mcp-Session-Id", id.as_str())];
    let call = json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {
        "name": "read", "arguments": {"path": "a.txt"}, "requestState": 12345}});
    let answer = exchange(&host.url, "POST", &headers, &call.to_string());
    assert_eq!(answer.status, 200, "{}", answer.body);
    let error = answer.messages().into_iter().next().expect("a JSON-RPC answer");
    assert_eq!(error["id"], 8, "{error}");
    assert_eq!(error["error"]["code"], -32602, "{error}");
    let message = error["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("`requestState` must be a string"), "{message}");
    // In a batch too, beside a request that goes through.
    let batch = json!([call, {"jsonrpc": "2.0", "id": 9, "method": "ping"}]);
    let answer = exchange(&host.url, "POST", &headers, &batch.to_string());
    let replies = answer.messages().pop().expect("an event with the replies");
    assert_eq!(replies[0]["error"]["code"], -32602, "{replies}");
    assert_eq!(replies[1]["result"], json!({}), "{replies}");
    host.stop();
}

#[test]
fn deleting_a_session_answers_no_content_and_ends_it() {
    let (_project, host, id) = session();
    let bearer = format!("Bearer {TOKEN}");
    let headers = [("Authorization", bearer.as_str()), ("Mcp-Session-Id", id.as_str())];
    let deleted = exchange(&host.url, "DELETE", &headers, "");
    // The Python SDKs take only 200 and 204 as a termination that worked.
    assert_eq!(deleted.status, 204, "{}", deleted.body);
    let ping = json!({"jsonrpc": "2.0", "id": 9, "method": "ping"});
    let after = exchange(&host.url, "POST", &headers, &ping.to_string());
    assert_eq!(after.status, 404, "the session is gone: {}", after.body);
    assert!(after.messages().iter().all(|m| m.get("result").is_none()));
    host.assert_only_the_host_is_left();
    host.stop();
}

#[test]
fn three_hundred_silent_connections_do_not_stop_an_authenticated_client() {
    // A host allowed 256 descriptors, and 300 connections that open and never finish their
    // headers (what a slow-loris client or a port scanner leaves).
    let project = TempProject::new(&[("a.txt", "hi\n")]);
    let token_file = project.root.join("token.txt");
    std::fs::write(&token_file, TOKEN).expect("write the token");
    let token_arg = token_file.display().to_string();
    let host = HttpHost::start_via(
        &["prlimit", "--nofile=256:256", "--"],
        &project.root,
        &["--token-file", &token_arg],
    );
    let authority =
        host.url.strip_prefix("http://").and_then(|r| r.split_once('/')).expect("url").0;
    let silent: Vec<TcpStream> = (0..300)
        .map(|_| {
            let mut stream = TcpStream::connect(authority).expect("connect");
            stream.write_all(b"POST /mcp HTTP/1.1\r\nHost: x\r\n").expect("half a request");
            stream
        })
        .collect();
    // Give the host time to take them all (and run out of descriptors).
    std::thread::sleep(std::time::Duration::from_millis(500));
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-03-26", "capabilities": {},
        "clientInfo": {"name": "raw-http-e2e", "version": "0"}}});
    let bearer = format!("Bearer {TOKEN}");
    let answer = exchange(&host.url, "POST", &[("Authorization", &bearer)], &init.to_string());
    assert_eq!(answer.status, 200, "the authenticated client is served: {}", answer.body);
    drop(silent);
    let log = host.log.lock().map(|l| l.clone()).unwrap_or_default();
    let failed = log.iter().filter(|l| l.contains("accept failed")).count();
    assert!(failed < 20, "the accept loop spun: {failed} lines of `accept failed`");
    host.stop();
}
