//! `mcp --http` as raw HTTP sees it: what a client that is not one of the official SDKs sends,
//! on a 2025-03-26 session: a lower-case `bearer` scheme, JSON-RPC batches, a body that is not
//! JSON or not JSON-RPC 2.0, and the `DELETE` that ends a session; what a slow or greedy
//! client meets: silent connections, a body sent slowly, more busy connections than its due;
//! and a 2026-07-28 request whose connection is cut while its `eval` cell runs.

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
    session_with("")
}

/// [`session`] with `config` as the project's `agent-tools.toml`.
fn session_with(config: &str) -> (TempProject, HttpHost, String) {
    let project = TempProject::new(&[("a.txt", "hi\n"), ("agent-tools.toml", config)]);
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
    // A client that takes event streams gets one: the replies come as one array, its last event.
    assert!(answer.header("content-type").is_some_and(|t| t.contains("text/event-stream")));
    let replies = answer.messages().pop().expect("an event with the replies");
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

/// The host's `host:port`.
fn authority(host: &HttpHost) -> String {
    host.url.strip_prefix("http://").and_then(|r| r.split_once('/')).expect("url").0.to_string()
}

/// A POST whose headers name a body of `length` bytes, with the token and the session; with
/// `Expect: 100-continue`, the host says `100 Continue` once it has counted the connection and
/// starts reading the body.
fn post_head(host: &HttpHost, session: &str, length: usize) -> String {
    format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {TOKEN}\r\n\
         Mcp-Session-Id: {session}\r\nAccept: application/json, text/event-stream\r\n\
         Content-Type: application/json\r\nContent-Length: {length}\r\n\
         Expect: 100-continue\r\n\r\n",
        authority(host)
    )
}

/// An authenticated connection that sends its headers and then none of its body: busy, and
/// counted against its peer, until the body timeout.
fn busy_connection(host: &HttpHost, session: &str) -> TcpStream {
    let mut stream = TcpStream::connect(authority(host)).expect("connect");
    stream.set_read_timeout(Some(std::time::Duration::from_secs(60))).expect("read timeout");
    stream.write_all(post_head(host, session, 100).as_bytes()).expect("send the headers");
    let mut seen = Vec::new();
    let mut byte = [0u8; 1];
    while !String::from_utf8_lossy(&seen).contains("\r\n\r\n") {
        match stream.read(&mut byte) {
            Ok(1) => seen.push(byte[0]),
            other => panic!("no interim answer ({other:?}): {}", String::from_utf8_lossy(&seen)),
        }
    }
    let seen = String::from_utf8_lossy(&seen).into_owned();
    assert!(seen.starts_with("HTTP/1.1 100"), "the busy connection was not taken: {seen}");
    stream
}

/// Whether the host still holds `stream` open (nothing to read yet, no end of stream).
fn still_open(stream: &TcpStream) -> bool {
    stream.set_nonblocking(true).expect("non-blocking");
    let mut byte = [0u8; 1];
    let open =
        matches!((&*stream).read(&mut byte), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock);
    stream.set_nonblocking(false).expect("blocking");
    open
}

/// The answer to `body`, asked again while the host answers 503: a connection the client
/// closed a moment ago may still count until the host has seen it end.
fn served(host: &HttpHost, headers: &[(&str, &str)], body: &str) -> Answer {
    let mut answer = exchange(&host.url, "POST", headers, body);
    for _ in 0..100 {
        if answer.status != 503 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        answer = exchange(&host.url, "POST", headers, body);
    }
    answer
}

#[test]
fn a_peer_over_its_bound_of_busy_connections_is_refused_while_silent_ones_are_held() {
    let config = "[mcp]\nmax_connections = 24\nmax_connections_per_peer = 4\n\
                  body_timeout_seconds = 300\n";
    let (_project, host, id) = session_with(config);
    let bearer = format!("Bearer {TOKEN}");
    let headers = [("Authorization", bearer.as_str()), ("Mcp-Session-Id", id.as_str())];
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string();
    // Forty connections that never finish their headers (more than all connections may be):
    // the oldest are closed to make room, the newest are held.
    let silent: Vec<TcpStream> = (0..40)
        .map(|_| {
            let mut stream = TcpStream::connect(authority(&host)).expect("connect");
            stream.write_all(b"POST /mcp HTTP/1.1\r\nHost: x\r\n").expect("half a request");
            stream
        })
        .collect();
    // Three busy connections of this peer, and the client's own request is the fourth.
    let mut busy: Vec<TcpStream> = (0..3).map(|_| busy_connection(&host, &id)).collect();
    let answer = served(&host, &headers, &ping);
    assert_eq!(answer.status, 200, "within the bound, the client is served: {}", answer.body);
    assert!(silent.last().is_some_and(still_open), "the newest silent connection is held");

    // A fourth busy one fills the peer's bound: the next request is refused, saying why.
    busy.push(busy_connection(&host, &id));
    let refused = exchange(&host.url, "POST", &headers, &ping);
    assert_eq!(refused.status, 503, "{}", refused.body);
    assert!(refused.body.contains("max_connections_per_peer"), "{}", refused.body);
    assert_eq!(refused.header("retry-after"), Some("1"));

    // One busy connection closes: the client is served again (once the host has seen it go).
    drop(busy.pop());
    let answer = served(&host, &headers, &ping);
    assert_eq!(answer.status, 200, "a freed slot serves the client again: {}", answer.body);
    drop(busy);
    drop(silent);
    host.stop();
}

#[test]
fn a_body_sent_slowly_is_cut_off_at_the_body_timeout_while_others_are_served() {
    let (_project, host, id) = session_with("[mcp]\nbody_timeout_seconds = 2\n");
    let bearer = format!("Bearer {TOKEN}");
    let headers = [("Authorization", bearer.as_str()), ("Mcp-Session-Id", id.as_str())];
    let body = json!({"jsonrpc": "2.0", "id": 5, "method": "ping", "pad": "x".repeat(400)});
    let body = body.to_string();
    let mut slow = TcpStream::connect(authority(&host)).expect("connect");
    slow.set_read_timeout(Some(std::time::Duration::from_secs(120))).expect("read timeout");
    slow.write_all(post_head(&host, &id, body.len()).as_bytes()).expect("send the headers");
    // The body, a byte every 100 ms (about 40 s for all of it), until the host stops reading.
    let answered = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut writer = slow.try_clone().expect("clone the stream");
    let stop = answered.clone();
    let dripping = std::thread::spawn(move || {
        let mut sent = 0;
        for byte in body.as_bytes() {
            if stop.load(std::sync::atomic::Ordering::SeqCst) || writer.write_all(&[*byte]).is_err()
            {
                break;
            }
            sent += 1;
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        (sent, body.len())
    });
    // Meanwhile another client is served.
    let ping = json!({"jsonrpc": "2.0", "id": 6, "method": "ping"}).to_string();
    let answer = exchange(&host.url, "POST", &headers, &ping);
    assert_eq!(answer.status, 200, "{}", answer.body);

    // The slow one is answered 408 and closed (or, if its last bytes crossed the close, reset).
    let mut raw = Vec::new();
    let _ = slow.read_to_end(&mut raw);
    answered.store(true, std::sync::atomic::Ordering::SeqCst);
    let (sent, whole) = dripping.join().expect("the dripping thread");
    assert!(sent < whole, "the host read the whole slow body ({sent} bytes) instead of cutting it");
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let answer = raw.split("\r\n\r\n").skip_while(|part| part.starts_with("HTTP/1.1 100"));
    let rest: Vec<&str> = answer.collect();
    let text = rest.join("\r\n\r\n");
    assert!(
        text.is_empty()
            || (text.starts_with("HTTP/1.1 408") && text.contains("body_timeout_seconds")),
        "{raw}"
    );
    let again = exchange(&host.url, "POST", &headers, &ping);
    assert_eq!(again.status, 200, "{}", again.body);
    host.stop();
}

#[test]
fn a_batch_whose_call_raises_an_approval_card_streams_the_card_and_then_its_replies() {
    let policy = "[approval]\npolicy = \"before_write\"\n";
    let project = TempProject::new(&[("a.txt", "hi\n"), ("agent-tools.toml", policy)]);
    let host = HttpHost::start(&project.root, &[]);
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-03-26", "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "raw-http-e2e", "version": "0"}}});
    let answer = exchange(&host.url, "POST", &[], &init.to_string());
    assert_eq!(answer.status, 200, "{}", answer.body);
    let id = answer.header("mcp-session-id").expect("a session id").to_string();
    let headers = [("Mcp-Session-Id", id.as_str())];
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(exchange(&host.url, "POST", &headers, &initialized.to_string()).status, 202);

    let batch = json!([
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "write",
            "arguments": {"path": "new.txt", "content": "written\n"}}},
        {"jsonrpc": "2.0", "id": 2, "method": "ping"},
    ])
    .to_string();
    let mut stream = TcpStream::connect(authority(&host)).expect("connect");
    stream.set_read_timeout(Some(std::time::Duration::from_secs(60))).expect("read timeout");
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nMcp-Session-Id: {id}\r\nConnection: close\r\n\
         Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{batch}",
        authority(&host),
        batch.len()
    );
    stream.write_all(request.as_bytes()).expect("send the batch");
    // Read until the card arrives (the batch's answer is still open), then answer it.
    let mut seen = String::new();
    let mut buffer = [0u8; 4096];
    let card = loop {
        let n = stream.read(&mut buffer).expect("the batch's events (a hang fails here)");
        assert!(n > 0, "the answer ended without a card: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buffer[..n]));
        let found = seen
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
            .find(|message| message["method"] == "elicitation/create");
        if let Some(card) = found {
            break card;
        }
    };
    assert!(card["params"]["message"].as_str().unwrap_or_default().contains("Allow `write`"));
    let allow = json!({"jsonrpc": "2.0", "id": card["id"], "result": {"action": "accept",
        "content": {"choice": "1. Allow"}}});
    let answered = exchange(&host.url, "POST", &headers, &allow.to_string());
    assert_eq!(answered.status, 202, "{}", answered.body);
    let mut rest = Vec::new();
    let _ = stream.read_to_end(&mut rest);
    seen.push_str(&String::from_utf8_lossy(&rest));
    let replies = seen
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(Value::is_array)
        .unwrap_or_else(|| panic!("no replies after the card: {seen}"));
    assert_eq!(replies[0]["id"], 1, "{replies}");
    assert_eq!(replies[0]["result"]["isError"], false, "{replies}");
    assert_eq!(replies[1]["result"], json!({}), "{replies}");
    assert_eq!(std::fs::read_to_string(project.root.join("new.txt")).unwrap(), "written\n");
    host.stop();
}

/// Sends `body` as one POST and drops the connection once `started` exists (the call has
/// reached its tool), without reading an answer: a client whose connection was cut.
fn post_and_cut(url: &str, body: &str, started: &std::path::Path) {
    let rest = url.strip_prefix("http://").expect("an http URL");
    let (authority, path) = rest.split_once('/').expect("a path");
    let mut stream = TcpStream::connect(authority).expect("connect to the host");
    let request = format!(
        "POST /{path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\
         Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n\
         Mcp-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: eval\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).expect("send the request");
    let waited = (0..1200).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(50));
        started.exists()
    });
    assert!(waited, "the cell never started");
    let _ = stream.shutdown(std::net::Shutdown::Both);
}

/// A 2026-07-28 `tools/call` (no session) of `eval` with `arguments`.
fn modern_eval(id: u64, arguments: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "raw-http-e2e", "version": "0"},
        },
        "name": "eval", "arguments": arguments}})
    .to_string()
}

#[test]
fn a_cell_whose_2026_client_connection_was_cut_runs_on_and_is_collected_in_that_run() {
    let project = TempProject::new(&[]);
    let host = HttpHost::start(&project.root, &[]);
    let code = "import time, pathlib\npathlib.Path('started').write_text('yes')\ntime.sleep(4)\n\
                print('after the cut')\n'finished'";
    let cell = json!({"code": code, "description": "outlive the connection", "wait_s": 600});
    post_and_cut(&host.url, &modern_eval(1, cell), &project.root.join("started"));
    // The same run (the local credential's), a new connection: the cell ran on to its end.
    let collect = modern_eval(2, json!({"cell": 1, "wait_s": 60}));
    let headers = [
        ("Mcp-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "eval"),
    ];
    let answer = exchange(&host.url, "POST", &headers, &collect);
    let messages = answer.messages();
    let result = messages.iter().find(|m| m["id"] == 2).expect("the answer");
    let text = result["result"]["content"][0]["text"].as_str().unwrap_or_default();
    assert_eq!(result["result"]["isError"], false, "{result}");
    assert!(text.contains("after the cut"), "{text}");
    assert!(text.ends_with("Out[1]: 'finished'"), "not interrupted by the cut: {text}");
    host.stop();
}
