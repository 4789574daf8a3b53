//! A scripted debug adapter speaking real DAP over stdio, for tests: it stands in for the Dart SDK
//! (`dart debug_adapter`, not installable offline) and takes the rare paths on demand (a crash
//! mid-session, no `initialized`, a `stopped` event before the step's reply, huge values,
//! reverse requests, an adapter that ignores SIGTERM, a debuggee in its own process group).
//!
//! Usage: `agent-tools-fake-dap SCRIPT.json` (or `FAKE_DAP_SCRIPT=...`); `--version` prints a
//! Dart-like version line. The script describes the "program" as a trace of lines the fake
//! walks through; see `Script` below.

#![allow(clippy::print_stdout, clippy::print_stderr)]
// Tests, examples and test programs start and signal programs directly, on purpose.
#![allow(clippy::disallowed_methods)]

use std::{
    collections::{BTreeMap, HashMap},
    io::{BufRead, BufReader, Write},
    process::{Child, Command, Stdio},
};

use serde::Deserialize;
use serde_json::{Value, json};

/// One line the program passes, in order.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default)]
struct Step {
    line: u64,
    name: Option<String>,
    /// Locals at this line: name → value.
    locals: BTreeMap<String, String>,
    /// Printed to stdout when this line runs.
    output: Option<String>,
    /// Printed to stderr when this line runs.
    stderr: Option<String>,
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default)]
struct ExceptionAt {
    /// Index into `trace` of the line that throws.
    at: usize,
    id: String,
    description: String,
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default)]
struct Quirks {
    /// Never send `initialized` (and never answer `launch`).
    never_initialized: bool,
    /// Fail `launch` with this message (no `initialized`).
    launch_error: Option<String>,
    /// Answer `launch` at once instead of after `configurationDone`.
    launch_response_first: bool,
    /// Exit with status 3, without answering, when this request arrives.
    crash_on: Option<String>,
    /// Send the `stopped` event before the reply to a step.
    stopped_before_reply: bool,
    /// Add a local `huge` with a value this long, and `many` with 1000 children.
    huge_value: Option<usize>,
    /// Send `runInTerminal` with these args after `initialized`.
    run_in_terminal: Option<Vec<String>>,
    /// Send a `startDebugging` request after `initialized`.
    start_debugging: bool,
    /// Start `sleep 300` in a process group of its own and report it as the debuggee.
    spawn_debuggee: bool,
    /// Ignore `disconnect`, stdin EOF and SIGTERM: only SIGKILL ends it.
    linger: bool,
    /// Abort (SIGABRT) after answering `disconnect`, as lldb-dap does.
    abort_on_disconnect: bool,
}

/// The script: a program as a trace, plus quirks.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default)]
struct Script {
    /// The source file, relative to the launch `cwd` (or absolute).
    source: String,
    trace: Vec<Step>,
    exception: Option<ExceptionAt>,
    exit_code: i64,
    capabilities: Value,
    quirks: Quirks,
    /// Append every request and reverse-request answer here (for assertions).
    log: Option<String>,
}

struct Fake {
    script: Script,
    out: std::io::Stdout,
    seq: i64,
    source: String,
    breakpoints: HashMap<String, Vec<u64>>,
    filters: Vec<String>,
    pc: usize,
    stops: i64,
    launch_seq: Option<i64>,
    debuggee: Option<Child>,
    running: bool,
    done: bool,
}

fn read_message(reader: &mut impl BufRead) -> Option<Value> {
    let mut length = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            if length.is_some() {
                break;
            }
            continue;
        }
        if let Some(v) = line.strip_prefix("Content-Length:") {
            length = v.trim().parse::<usize>().ok();
        }
    }
    let mut body = vec![0u8; length?];
    reader.read_exact(&mut body).ok()?;
    serde_json::from_slice(&body).ok()
}

impl Fake {
    fn log(&self, text: &str) {
        if let Some(path) = &self.script.log
            && let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(path)
        {
            let _ = writeln!(f, "{text}");
        }
    }

    fn send(&mut self, mut message: Value) {
        self.seq += 1;
        message["seq"] = json!(self.seq);
        let body = message.to_string();
        let mut lock = self.out.lock();
        let _ = write!(lock, "Content-Length: {}\r\n\r\n{body}", body.len());
        let _ = lock.flush();
    }

    fn respond(&mut self, request: &Value, body: Value) {
        self.send(json!({
            "type": "response", "request_seq": request["seq"], "command": request["command"],
            "success": true, "body": body,
        }));
    }

    fn fail(&mut self, request: &Value, message: &str) {
        self.send(json!({
            "type": "response", "request_seq": request["seq"], "command": request["command"],
            "success": false, "message": message,
            "body": {"error": {"id": 1, "format": message}},
        }));
    }

    fn event(&mut self, event: &str, body: Value) {
        self.send(json!({"type": "event", "event": event, "body": body}));
    }

    fn emit_output(&mut self, index: usize) {
        let Some(step) = self.script.trace.get(index).cloned() else { return };
        if let Some(text) = step.output {
            self.event("output", json!({"category": "stdout", "output": text}));
        }
        if let Some(text) = step.stderr {
            self.event("output", json!({"category": "stderr", "output": text}));
        }
    }

    fn has_breakpoint(&self, index: usize) -> bool {
        let Some(step) = self.script.trace.get(index) else { return false };
        self.breakpoints.get(&self.source).is_some_and(|lines| lines.contains(&step.line))
    }

    fn throws_at(&self, index: usize) -> Option<ExceptionAt> {
        self.script.exception.clone().filter(|e| e.at == index)
    }

    fn stop(&mut self, reason: &str, extra: Value) {
        self.stops += 1;
        self.running = false;
        let mut body = json!({"reason": reason, "threadId": 1, "allThreadsStopped": true});
        if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
            b.extend(e.clone());
        }
        self.event("stopped", body);
    }

    fn exit(&mut self, code: i64) {
        self.running = false;
        self.done = true;
        self.event("exited", json!({"exitCode": code}));
        self.event("terminated", json!({}));
    }

    /// Runs from `pc`; `resuming` means the line at `pc` runs first without stopping again.
    fn run(&mut self, resuming: bool) {
        self.running = true;
        let mut i = self.pc;
        let mut first = resuming;
        while i < self.script.trace.len() {
            if !first {
                if let Some(e) = self.throws_at(i) {
                    self.pc = i;
                    let catches = self.filters.iter().any(|f| f == "Unhandled" || f == "All");
                    if catches {
                        self.stop("exception", json!({"text": e.id, "description": e.description}));
                    } else {
                        self.event(
                            "output",
                            json!({"category": "stderr", "output": format!("Unhandled exception:\n{}\n", e.description)}),
                        );
                        self.exit(255);
                    }
                    return;
                }
                if self.has_breakpoint(i) {
                    self.pc = i;
                    self.stop("breakpoint", json!({"hitBreakpointIds": [1]}));
                    return;
                }
            }
            if first && self.throws_at(i).is_some() {
                // Continuing from an exception stop: the program dies of it.
                self.exit(255);
                return;
            }
            first = false;
            self.emit_output(i);
            i += 1;
        }
        self.pc = i;
        let code = self.script.exit_code;
        self.exit(code);
    }

    fn step(&mut self, request: &Value) {
        let before = self.script.quirks.stopped_before_reply;
        if !before {
            self.respond(request, json!({}));
        }
        if self.throws_at(self.pc).is_some() {
            self.exit(255);
        } else {
            self.emit_output(self.pc);
            self.pc += 1;
            if self.pc >= self.script.trace.len() {
                let code = self.script.exit_code;
                self.exit(code);
            } else {
                self.stop("step", json!({}));
            }
        }
        if before {
            self.respond(request, json!({}));
        }
    }

    fn locals(&self) -> Vec<Value> {
        let mut vars: Vec<Value> = self
            .script
            .trace
            .get(self.pc)
            .map(|s| {
                s.locals
                    .iter()
                    .map(|(k, v)| json!({"name": k, "value": v, "type": "int", "variablesReference": 0, "evaluateName": k}))
                    .collect()
            })
            .unwrap_or_default();
        if let Some(n) = self.script.quirks.huge_value {
            vars.push(json!({"name": "huge", "value": "y".repeat(n), "type": "String", "variablesReference": 0}));
            vars.push(json!({"name": "many", "value": "List (1000 items)", "type": "List<int>", "variablesReference": 3, "indexedVariables": 1000}));
        }
        vars
    }

    /// The capabilities, with the script's extra ones.
    fn initialize(&mut self, request: &Value) {
        let mut caps = json!({
            "supportsConfigurationDoneRequest": true,
            "supportsExceptionInfoRequest": true,
            "supportsTerminateRequest": true,
            "supportsConditionalBreakpoints": true,
            "supportsLogPoints": true,
            "exceptionBreakpointFilters": [
                {"filter": "All", "label": "All Exceptions", "default": false},
                {"filter": "Unhandled", "label": "Uncaught Exceptions", "default": true},
            ],
        });
        if let (Some(c), Some(extra)) = (caps.as_object_mut(), self.script.capabilities.as_object())
        {
            c.extend(extra.clone());
        }
        self.respond(request, caps);
    }

    /// `launch`/`attach`: the source, the script's launch quirks, `initialized`.
    fn launch(&mut self, request: &Value, args: &Value) {
        let cwd = args["cwd"].as_str().unwrap_or(".").to_string();
        self.source = if self.script.source.starts_with('/') {
            self.script.source.clone()
        } else {
            format!("{cwd}/{}", self.script.source)
        };
        if let Some(message) = self.script.quirks.launch_error.clone() {
            self.event("output", json!({"category": "stderr", "output": format!("{message}\n")}));
            self.fail(request, &message);
            return;
        }
        if self.script.quirks.never_initialized {
            return;
        }
        if self.script.quirks.launch_response_first {
            self.respond(request, json!({}));
        } else {
            self.launch_seq = request["seq"].as_i64();
        }
        self.event("initialized", json!({}));
        if let Some(argv) = self.script.quirks.run_in_terminal.clone() {
            self.send(json!({"type": "request", "command": "runInTerminal", "arguments": {
                "kind": "integrated", "title": "fake", "cwd": cwd, "args": argv, "env": {"FAKE_DAP": "1"},
            }}));
        }
        if self.script.quirks.start_debugging {
            self.send(json!({"type": "request", "command": "startDebugging", "arguments": {
                "request": "attach", "configuration": {"name": "child"},
            }}));
        }
    }

    /// Each breakpoint lands on the next line of the trace, in the script's source only.
    fn set_breakpoints(&mut self, request: &Value, args: &Value) {
        let path = args["source"]["path"].as_str().unwrap_or_default().to_string();
        let lines: Vec<u64> = args["breakpoints"]
            .as_array()
            .map(|b| b.iter().filter_map(|x| x["line"].as_u64()).collect())
            .unwrap_or_default();
        let trace_lines: Vec<u64> = self.script.trace.iter().map(|s| s.line).collect();
        let mut placed = Vec::new();
        let mut landed_lines = Vec::new();
        for (i, line) in lines.iter().enumerate() {
            match trace_lines.iter().filter(|l| *l >= line).min() {
                Some(landed) if path == self.source => {
                    landed_lines.push(*landed);
                    placed.push(json!({"id": i + 1, "verified": true, "line": landed}));
                }
                _ => placed.push(json!({"id": i + 1, "verified": false, "message": format!("no code at or after line {line}")})),
            }
        }
        self.breakpoints.insert(path, landed_lines);
        self.respond(request, json!({"breakpoints": placed}));
    }

    /// The held launch response, the `process` event, then the run to the first stop.
    fn configuration_done(&mut self, request: &Value) {
        self.respond(request, json!({}));
        if let Some(seq) = self.launch_seq.take() {
            self.send(json!({"type": "response", "request_seq": seq, "command": "launch", "success": true}));
        }
        let pid = if self.script.quirks.spawn_debuggee {
            use std::os::unix::process::CommandExt;
            match Command::new("sleep").arg("300").stdin(Stdio::null()).process_group(0).spawn() {
                Ok(child) => {
                    let pid = child.id();
                    self.debuggee = Some(child);
                    pid
                }
                Err(_) => std::process::id(),
            }
        } else {
            std::process::id()
        };
        self.event(
            "process",
            json!({"name": self.source, "systemProcessId": pid, "startMethod": "launch"}),
        );
        self.run(false);
    }

    /// The current step's frame above a library frame.
    fn stack_trace(&mut self, request: &Value) {
        let step = self.script.trace.get(self.pc).cloned().unwrap_or_default();
        let base = self.stops * 1000;
        let name = std::path::Path::new(&self.source)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        self.respond(request, json!({"stackFrames": [
            {"id": base, "name": step.name.unwrap_or_else(|| "main".into()), "line": step.line, "column": 1,
             "source": {"path": self.source, "name": name}},
            {"id": base + 1, "name": "_startIsolate", "line": 300, "column": 5, "presentationHint": "subtle",
             "source": {"name": "isolate_patch.dart", "path": "/sdk/lib/isolate/isolate_patch.dart", "presentationHint": "deemphasize"}},
        ], "totalFrames": 2}));
    }

    /// Ends the adapter (and the debuggee it spawned), as the script's quirks say.
    fn disconnect(&mut self, request: &Value, args: &Value) {
        self.respond(request, json!({}));
        if self.script.quirks.linger {
            return;
        }
        if let Some(mut child) = self.debuggee.take()
            && args["terminateDebuggee"].as_bool().unwrap_or(true)
        {
            let _ = child.kill();
            let _ = child.wait();
        }
        if self.script.quirks.abort_on_disconnect {
            std::process::abort();
        }
        std::process::exit(0);
    }

    fn handle(&mut self, request: &Value) {
        let command = request["command"].as_str().unwrap_or_default().to_string();
        let args = request["arguments"].clone();
        self.log(&format!("request {command}"));
        if self.script.quirks.crash_on.as_deref() == Some(command.as_str()) {
            eprintln!("fake-dap: crashing on purpose at `{command}`");
            std::process::exit(3);
        }
        match command.as_str() {
            "initialize" => self.initialize(request),
            "launch" | "attach" => self.launch(request, &args),
            "setBreakpoints" => self.set_breakpoints(request, &args),
            "setExceptionBreakpoints" => {
                self.filters = args["filters"]
                    .as_array()
                    .map(|f| f.iter().filter_map(|x| x.as_str().map(str::to_string)).collect())
                    .unwrap_or_default();
                self.respond(request, json!({}));
            }
            "setFunctionBreakpoints" => {
                self.respond(request, json!({"breakpoints": [{"verified": false}]}));
            }
            "configurationDone" => self.configuration_done(request),
            "threads" => self.respond(request, json!({"threads": [{"id": 1, "name": "main"}]})),
            "stackTrace" => self.stack_trace(request),
            "scopes" => {
                let n = self.locals().len();
                self.respond(request, json!({"scopes": [
                    {"name": "Locals", "presentationHint": "locals", "variablesReference": 1, "namedVariables": n, "expensive": false},
                    {"name": "Globals", "variablesReference": 2, "expensive": true},
                ]}));
            }
            "variables" => match args["variablesReference"].as_i64() {
                Some(1) => {
                    let vars = self.locals();
                    self.respond(request, json!({"variables": vars}));
                }
                Some(2) => self.respond(request, json!({"variables": [{"name": "counter", "value": "1", "variablesReference": 0}]})),
                Some(3) => {
                    let start = args["start"].as_u64().unwrap_or(0);
                    let count = args["count"].as_u64().unwrap_or(1000);
                    let vars: Vec<Value> = (start..(start + count).min(1000))
                        .map(|i| json!({"name": format!("[{i}]"), "value": (i * i).to_string(), "type": "int", "variablesReference": 0}))
                        .collect();
                    self.respond(request, json!({"variables": vars}));
                }
                _ => self.fail(request, "invalid variablesReference"),
            },
            "evaluate" => {
                let expression = args["expression"].as_str().unwrap_or_default().to_string();
                match self.locals().into_iter().find(|v| v["name"] == expression.as_str()) {
                    Some(v) => self.respond(request, json!({"result": v["value"], "type": v["type"], "variablesReference": v["variablesReference"]})),
                    None => self.fail(request, &format!("Undefined name '{expression}'.")),
                }
            }
            "exceptionInfo" => {
                let e = self.script.exception.clone().unwrap_or_default();
                self.respond(request, json!({
                    "exceptionId": e.id, "description": e.description, "breakMode": "unhandled",
                    "details": {"stackTrace": format!("#0 main ({}:{})", self.source, self.script.trace.get(e.at).map_or(0, |s| s.line))},
                }));
            }
            "continue" => {
                self.respond(request, json!({"allThreadsContinued": true}));
                self.run(true);
            }
            "next" | "stepIn" | "stepOut" => self.step(request),
            "pause" => {
                self.respond(request, json!({}));
                if self.running && !self.done {
                    self.stop("pause", json!({}));
                }
            }
            "terminate" => {
                self.respond(request, json!({}));
                self.exit(143);
            }
            "disconnect" => self.disconnect(request, &args),
            _ => self.fail(request, &format!("unsupported request `{command}`")),
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--version") {
        println!("Dart SDK version: 3.4.0 (fake adapter for tests)");
        return;
    }
    let path = args
        .iter()
        .find(|a| !a.starts_with('-') && *a != "debug_adapter")
        .cloned()
        .or_else(|| std::env::var("FAKE_DAP_SCRIPT").ok());
    let script: Script = match path.map(std::fs::read_to_string) {
        Some(Ok(text)) => match serde_json::from_str(&text) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("fake-dap: bad script: {e}");
                std::process::exit(2);
            }
        },
        Some(Err(e)) => {
            eprintln!("fake-dap: cannot read the script: {e}");
            std::process::exit(2);
        }
        None => Script::default(),
    };
    if script.quirks.linger {
        // SAFETY: setting a signal disposition to SIG_IGN at start-up, before any thread exists.
        unsafe {
            libc::signal(libc::SIGTERM, libc::SIG_IGN);
        }
    }
    let mut fake = Fake {
        script,
        out: std::io::stdout(),
        seq: 0,
        source: String::new(),
        breakpoints: HashMap::new(),
        filters: Vec::new(),
        pc: 0,
        stops: 0,
        launch_seq: None,
        debuggee: None,
        running: false,
        done: false,
    };
    let mut reader = BufReader::new(std::io::stdin());
    while let Some(message) = read_message(&mut reader) {
        match message["type"].as_str() {
            Some("request") => fake.handle(&message),
            Some("response") => {
                let text = format!(
                    "response {} success={} message={}",
                    message["command"].as_str().unwrap_or_default(),
                    message["success"],
                    message["message"].as_str().unwrap_or_default()
                );
                fake.log(&text);
            }
            _ => {}
        }
    }
    if fake.script.quirks.linger {
        loop {
            std::thread::sleep(std::time::Duration::from_secs(60));
        }
    }
    if let Some(mut child) = fake.debuggee.take() {
        let _ = child.kill();
        let _ = child.wait();
    }
}
