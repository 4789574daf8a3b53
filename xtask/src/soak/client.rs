//! The soak's MCP clients: newline-delimited JSON-RPC over a host's stdio, and Streamable HTTP
//! over loopback, each able to cancel a call or drop its connection in the middle of one.

use std::{
    io::{BufRead, BufReader, Read, Write},
    net::{Shutdown, TcpStream},
    path::Path,
    process::{Child, ChildStdin, Command, Stdio},
    sync::mpsc::{Receiver, RecvTimeoutError, channel},
    time::{Duration, Instant},
};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

/// The environment variable every process of a soak host carries (the e2e tests' marker).
pub(super) const MARKER_VAR: &str = "AGENT_TOOLS_E2E_MARKER";

/// How a call ended, as the client saw it.
pub(super) enum Outcome {
    /// The JSON-RPC response (a result or an error).
    Answer(Value),
    /// No response within the deadline.
    Hung,
    /// Cancelled, and the host (rightly) sent no late answer.
    CancelledSilently,
    /// The connection was dropped on purpose before the answer came.
    Dropped,
    /// The connection broke by itself (the host exited or closed it).
    Broken(String),
}

/// What a call does besides waiting for its answer.
#[derive(Clone, Copy)]
pub(super) enum Interrupt {
    None,
    /// `notifications/cancelled` this long after the request.
    Cancel(Duration),
    /// The connection is closed this long after the request.
    Drop(Duration),
}

/// One MCP session of the soak.
pub(super) trait Client: Send {
    /// Calls `tool` as request `id`, interrupted as `interrupt` says; waits at most `deadline`.
    fn call(
        &mut self,
        id: u64,
        tool: &str,
        args: &Value,
        interrupt: Interrupt,
        deadline: Duration,
    ) -> Outcome;
}

fn initialize_request() -> Value {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "agent-tools-soak", "version": "0"}}})
}

fn call_request(id: u64, tool: &str, args: &Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": args}})
}

fn cancel_notification(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": id, "reason": "the soak cancels it"}})
}

/// A host serving one session on its stdio.
pub(super) struct StdioClient {
    pub(super) child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
}

impl StdioClient {
    /// Starts `binary mcp --root ROOT` (marked with `marker`) and initializes the session.
    pub(super) fn start(command: &mut Command, root: &Path, marker: &str) -> Result<StdioClient> {
        let mut child = command
            .args(["mcp", "--trust-project", "--root"])
            .arg(root)
            .env(MARKER_VAR, marker)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .context("start the host")?;
        let stdin = child.stdin.take().context("the host's stdin")?;
        let stdout = child.stdout.take().context("the host's stdout")?;
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut client = StdioClient { child, stdin: Some(stdin), lines };
        client.send(&initialize_request())?;
        match client.wait_for(0, Duration::from_secs(60)) {
            Outcome::Answer(answer) if answer.get("result").is_some() => {}
            _ => bail!("the host did not answer initialize"),
        }
        client.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
        Ok(client)
    }

    pub(super) fn pid(&self) -> u32 {
        self.child.id()
    }

    fn send(&mut self, message: &Value) -> Result<()> {
        let stdin = self.stdin.as_mut().context("the connection is closed")?;
        writeln!(stdin, "{message}")?;
        stdin.flush()?;
        Ok(())
    }

    fn wait_for(&mut self, id: u64, within: Duration) -> Outcome {
        let end = Instant::now() + within;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    let Ok(message) = serde_json::from_str::<Value>(&line) else {
                        return Outcome::Broken(format!("not JSON on stdout: {line:.200}"));
                    };
                    if message.get("method").is_none() && message["id"] == id {
                        return Outcome::Answer(message);
                    }
                }
                Err(RecvTimeoutError::Timeout) => return Outcome::Hung,
                Err(RecvTimeoutError::Disconnected) => {
                    return Outcome::Broken("the host closed its stdout".into());
                }
            }
        }
    }

    /// Closes stdin as a finished client does; whether the host exited within `within`.
    pub(super) fn close(&mut self, within: Duration) -> bool {
        self.stdin = None;
        let end = Instant::now() + within;
        while Instant::now() < end {
            if let Ok(Some(_)) = self.child.try_wait() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }
}

impl Client for StdioClient {
    fn call(
        &mut self,
        id: u64,
        tool: &str,
        args: &Value,
        interrupt: Interrupt,
        deadline: Duration,
    ) -> Outcome {
        if let Err(e) = self.send(&call_request(id, tool, args)) {
            return Outcome::Broken(format!("cannot send the request: {e}"));
        }
        match interrupt {
            Interrupt::None => self.wait_for(id, deadline),
            Interrupt::Cancel(after) => match self.wait_for(id, after) {
                Outcome::Hung => {
                    if let Err(e) = self.send(&cancel_notification(id)) {
                        return Outcome::Broken(format!("cannot send the cancel: {e}"));
                    }
                    // The host drops a cancelled call's answer; one that was already on its
                    // way may still come. Either is right.
                    match self.wait_for(id, Duration::from_secs(10)) {
                        Outcome::Hung => Outcome::CancelledSilently,
                        other => other,
                    }
                }
                other => other,
            },
            Interrupt::Drop(after) => match self.wait_for(id, after) {
                Outcome::Hung => {
                    self.stdin = None;
                    Outcome::Dropped
                }
                other => other,
            },
        }
    }
}

/// One Streamable HTTP session on a loopback host.
pub(super) struct HttpClient {
    authority: String,
    path: String,
    pub(super) session: String,
}

impl HttpClient {
    /// Opens a session on `url` (`http://127.0.0.1:PORT/mcp`).
    pub(super) fn open(url: &str) -> Result<HttpClient> {
        let rest = url.strip_prefix("http://").context("an http URL")?;
        let (authority, path) = rest.split_once('/').context("a path in the URL")?;
        let mut client =
            HttpClient { authority: authority.into(), path: path.into(), session: String::new() };
        let (head, body) = client.post(&initialize_request(), Duration::from_secs(60), None)?;
        client.session = header(&head, "mcp-session-id").context("no Mcp-Session-Id")?;
        if !messages(&body).iter().any(|m| m["id"] == 0 && m.get("result").is_some()) {
            bail!("initialize was not answered: {body:.300}");
        }
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        client.post(&initialized, Duration::from_secs(30), None)?;
        Ok(client)
    }

    /// One exchange on a fresh connection: the response head and its de-chunked body. The
    /// stream is handed to `on_stream` first (to shut it down from another thread).
    fn post(
        &self,
        message: &Value,
        within: Duration,
        on_stream: Option<&dyn Fn(TcpStream)>,
    ) -> Result<(String, String)> {
        self.exchange("POST", &message.to_string(), within, on_stream)
    }

    fn exchange(
        &self,
        method: &str,
        body: &str,
        within: Duration,
        on_stream: Option<&dyn Fn(TcpStream)>,
    ) -> Result<(String, String)> {
        let mut stream = TcpStream::connect(&self.authority)?;
        stream.set_read_timeout(Some(within))?;
        if let Some(hand) = on_stream {
            hand(stream.try_clone()?);
        }
        let mut request = format!(
            "{method} /{} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\
             Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n",
            self.path,
            self.authority,
            body.len()
        );
        if !self.session.is_empty() {
            request.push_str(&format!("Mcp-Session-Id: {}\r\n", self.session));
        }
        request.push_str("\r\n");
        request.push_str(body);
        stream.write_all(request.as_bytes())?;
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw)?;
        let raw = String::from_utf8_lossy(&raw).into_owned();
        let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
        let body = if header(head, "transfer-encoding").is_some_and(|v| v.contains("chunked")) {
            dechunk(body)
        } else {
            body.to_string()
        };
        Ok((head.to_string(), body))
    }

    /// Ends the session (`DELETE`).
    pub(super) fn delete(&self) -> Result<()> {
        self.exchange("DELETE", "", Duration::from_secs(30), None).map(drop)
    }
}

impl Client for HttpClient {
    fn call(
        &mut self,
        id: u64,
        tool: &str,
        args: &Value,
        interrupt: Interrupt,
        deadline: Duration,
    ) -> Outcome {
        let (streams, stream_rx) = channel::<TcpStream>();
        let (answers, answer_rx) = channel();
        let request = call_request(id, tool, args);
        let worker = HttpClient {
            authority: self.authority.clone(),
            path: self.path.clone(),
            session: self.session.clone(),
        };
        std::thread::spawn(move || {
            let hand = move |s: TcpStream| {
                let _ = streams.send(s);
            };
            let _ = answers.send(worker.post(&request, deadline, Some(&hand)));
        });
        let wait = |within: Duration| match answer_rx.recv_timeout(within) {
            Ok(Ok((_, body))) => match messages(&body).into_iter().find(|m| m["id"] == id) {
                Some(answer) => Some(Outcome::Answer(answer)),
                None => Some(Outcome::Broken(format!("no answer in the body: {body:.300}"))),
            },
            Ok(Err(e)) if is_timeout(&e) => Some(Outcome::Hung),
            Ok(Err(e)) => Some(Outcome::Broken(format!("{e:#}"))),
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => Some(Outcome::Broken("lost".into())),
        };
        match interrupt {
            Interrupt::None => wait(deadline + Duration::from_secs(1)).unwrap_or(Outcome::Hung),
            Interrupt::Cancel(after) => wait(after).unwrap_or_else(|| {
                if let Err(e) = self.post(&cancel_notification(id), Duration::from_secs(30), None) {
                    return Outcome::Broken(format!("cannot send the cancel: {e:#}"));
                }
                // The POST's stream answers even a cancelled call (with an error), or ends.
                match wait(Duration::from_secs(30)) {
                    Some(Outcome::Broken(_)) | None => Outcome::CancelledSilently,
                    Some(other) => other,
                }
            }),
            Interrupt::Drop(after) => wait(after).unwrap_or_else(|| {
                if let Ok(stream) = stream_rx.recv_timeout(Duration::from_secs(5)) {
                    let _ = stream.shutdown(Shutdown::Both);
                }
                Outcome::Dropped
            }),
        }
    }
}

fn is_timeout(error: &anyhow::Error) -> bool {
    error.downcast_ref::<std::io::Error>().is_some_and(|e| {
        matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut)
    })
}

fn header(head: &str, name: &str) -> Option<String> {
    head.lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(n, _)| n.trim().eq_ignore_ascii_case(name))
        .map(|(_, v)| v.trim().to_string())
}

/// The JSON-RPC messages of a body: one JSON document, or the data of its events.
fn messages(body: &str) -> Vec<Value> {
    if let Ok(value) = serde_json::from_str::<Value>(body) {
        return match value {
            Value::Array(items) => items,
            other => vec![other],
        };
    }
    body.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str(data.trim()).ok())
        .collect()
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
