//! Benchmark: time from `launch` to the first stop snapshot, ours against a minimal raw DAP
//! client driving the same adapter in the same run. Run by `cargo xtask bench debug`.
//!
//! Usage: `bench_launch [--iterations N] [--adapters debugpy,lldb,delve] [--python PATH]`.
//! With `BENCH_TRACE` set (an `EnvFilter`, say `agent_tools_debug=trace,agent_tools_support=trace`)
//! every DAP message and spawn step is logged to stderr with its time since the start, to see
//! where a launch spends its time.
//! For each adapter it builds the fixture in a temp folder, warms up once, then alternates
//! ours / raw N times and prints medians:
//! - ours: `launch` with one breakpoint until the snapshot (stop, stack, locals, source, output)
//!   is returned, a fresh supervisor each time (so adapter lookup is included), and with a warm
//!   supervisor (lookup cached, as from the second launch of a run on);
//! - raw: spawn, initialize, launch, initialized, setBreakpoints, configurationDone, the stopped
//!   event, then stackTrace + scopes + variables (the same facts), blocking std I/O, no framework.

#![allow(clippy::print_stdout, clippy::print_stderr)]
// Tests, examples and test programs start and signal programs directly, on purpose.
#![allow(clippy::disallowed_methods)]

use std::{
    io::{BufRead, BufReader, Write},
    net::TcpStream,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use agent_tools_debug::{
    AdapterCommands, DebugArgs, DebugConfig, DebugOutcome, DebugSupervisor, Operation, RunState,
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

struct Case {
    adapter: &'static str,
    fixture: &'static str,
    program: &'static str,
    file: &'static str,
    line: u32,
}

const CASES: &[Case] = &[
    Case { adapter: "debugpy", fixture: "python", program: "buggy.py", file: "buggy.py", line: 11 },
    Case { adapter: "lldb", fixture: "c", program: "buggy", file: "buggy.c", line: 11 },
    Case { adapter: "delve", fixture: "go", program: ".", file: "main.go", line: 15 },
];

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value =
        |flag: &str| args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1)).cloned();
    let iterations: usize = value("--iterations").and_then(|v| v.parse().ok()).unwrap_or(5);
    let wanted: Vec<String> = value("--adapters")
        .map(|v| v.split(',').map(str::to_string).collect())
        .unwrap_or_else(|| CASES.iter().map(|c| c.adapter.to_string()).collect());
    let python = value("--python").map(PathBuf::from);
    if let Ok(filter) = std::env::var("BENCH_TRACE") {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
            .with_timer(tracing_subscriber::fmt::time::uptime())
            .with_writer(std::io::stderr)
            .init();
    }
    let runtime =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    println!(
        "| adapter | ours, fresh supervisor (median) | ours, warm supervisor (median) | raw client to `stopped` (median) | raw client to the same facts (median) | ours warm / raw same facts |"
    );
    println!("|---|---|---|---|---|---|");
    for case in CASES.iter().filter(|c| wanted.iter().any(|w| w == c.adapter)) {
        match bench(&runtime, case, iterations, python.as_deref()) {
            Ok(row) => println!("{row}"),
            Err(e) => println!("| {} | skipped: {e} | | | | |", case.adapter),
        }
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.0} ms", d.as_secs_f64() * 1000.0)
}

fn bench(
    runtime: &tokio::runtime::Runtime,
    case: &Case,
    n: usize,
    python: Option<&Path>,
) -> Result<String, String> {
    let project = prepare(case)?;
    let root = project.path().canonicalize().map_err(|e| e.to_string())?;
    let mut config = DebugConfig {
        stop_wait_seconds: 120,
        launch_timeout_seconds: 300,
        ..DebugConfig::default()
    };
    if let (Some(python), "debugpy") = (python, case.adapter) {
        config.commands = AdapterCommands {
            debugpy: Some(vec![
                python.display().to_string(),
                "-m".into(),
                "debugpy.adapter".into(),
            ]),
            ..Default::default()
        };
    }
    // The command the raw client runs: what our lookup resolved, so both drive the same adapter.
    let reports = agent_tools_debug::adapter_reports(&root, &config);
    let report = reports.iter().find(|r| r.adapter.id() == case.adapter).ok_or("no report")?;
    let command = report
        .command
        .clone()
        .ok_or_else(|| format!("{} is not usable here: {:?}", case.adapter, report.problems))?;
    // The interpreter ours gives the program (the project's): the raw client passes the same.
    let debuggee = agent_tools_debug::adapters::resolve(
        report.adapter,
        &root,
        &config,
        &agent_tools_debug::SearchEnv::from_process(),
        &agent_tools_debug::adapters::Probes::default(),
    )
    .ok()
    .and_then(|c| c.debuggee_python);

    let warm = DebugSupervisor::new(config.clone());
    // Warm-up: build caches (go build), page cache, our probes.
    ours(runtime, &warm, &root, case)?;
    raw(&command, &root, case, debuggee.as_deref())?;
    let (mut fresh_t, mut warm_t, mut raw_stop_t, mut raw_facts_t) =
        (vec![], vec![], vec![], vec![]);
    for i in 0..n {
        if i % 2 == 0 {
            fresh_t.push(ours(runtime, &DebugSupervisor::new(config.clone()), &root, case)?);
            warm_t.push(ours(runtime, &warm, &root, case)?);
            let (s, f) = raw(&command, &root, case, debuggee.as_deref())?;
            raw_stop_t.push(s);
            raw_facts_t.push(f);
        } else {
            let (s, f) = raw(&command, &root, case, debuggee.as_deref())?;
            raw_stop_t.push(s);
            raw_facts_t.push(f);
            warm_t.push(ours(runtime, &warm, &root, case)?);
            fresh_t.push(ours(runtime, &DebugSupervisor::new(config.clone()), &root, case)?);
        }
    }
    let (fresh, warm_m, raw_stop, raw_facts) =
        (median(fresh_t), median(warm_t), median(raw_stop_t), median(raw_facts_t));
    Ok(format!(
        "| {} | {} | {} | {} | {} | {:.2} |",
        case.adapter,
        ms(fresh),
        ms(warm_m),
        ms(raw_stop),
        ms(raw_facts),
        warm_m.as_secs_f64() / raw_facts.as_secs_f64()
    ))
}

fn prepare(case: &Case) -> Result<tempfile::TempDir, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(case.fixture);
    for entry in std::fs::read_dir(&from).map_err(|e| e.to_string())?.flatten() {
        if entry.path().is_file() {
            std::fs::copy(entry.path(), dir.path().join(entry.file_name()))
                .map_err(|e| e.to_string())?;
        }
    }
    if case.fixture == "c" {
        let ok = Command::new("cc")
            .args(["-g", "-O0", "-o", "buggy", "buggy.c"])
            .current_dir(dir.path())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            return Err("cc failed".into());
        }
    }
    Ok(dir)
}

/// Our launch → snapshot; then terminate (not timed).
fn ours(
    runtime: &tokio::runtime::Runtime,
    debug: &DebugSupervisor,
    root: &Path,
    case: &Case,
) -> Result<Duration, String> {
    runtime.block_on(async {
        let cancel = CancellationToken::new();
        let mut bp = DebugArgs::op(Operation::Breakpoints);
        bp.file = Some(case.file.into());
        bp.lines = Some(vec![case.line]);
        debug.call("bench", root, bp, &cancel).await.map_err(|e| e.to_string())?;
        let mut launch = DebugArgs::op(Operation::Launch);
        launch.program = Some(case.program.into());
        let started = Instant::now();
        tracing::trace!(adapter = case.adapter, "ours: launch");
        let outcome =
            debug.call("bench", root, launch, &cancel).await.map_err(|e| e.to_string())?;
        let took = started.elapsed();
        tracing::trace!(adapter = case.adapter, "ours: snapshot returned");
        let stopped =
            matches!(&outcome, DebugOutcome::Started(s) if matches!(s.state, RunState::Stopped(_)));
        debug
            .call("bench", root, DebugArgs::op(Operation::Terminate), &cancel)
            .await
            .map_err(|e| e.to_string())?;
        if !stopped {
            return Err(format!("ours did not stop: {}", agent_tools_debug::render(&outcome)));
        }
        Ok(took)
    })
}

/// The minimal raw client: (to the stopped event, to stack + scopes + variables).
fn raw(
    command: &[String],
    root: &Path,
    case: &Case,
    python: Option<&Path>,
) -> Result<(Duration, Duration), String> {
    use std::os::unix::process::CommandExt;
    let program = root.join(case.program);
    let program = program.canonicalize().unwrap_or(program);
    let started = Instant::now();
    tracing::trace!(adapter = case.adapter, "raw: start");
    let delve = case.adapter == "delve";
    let mut cmd = Command::new(&command[0]);
    cmd.args(&command[1..]).current_dir(root).stderr(Stdio::null()).process_group(0);
    if delve {
        cmd.args(["dap", "-l", "127.0.0.1:0"]).stdin(Stdio::null()).stdout(Stdio::piped());
    } else {
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped());
    }
    let mut child = cmd.spawn().map_err(|e| e.to_string())?;
    let result = (|| {
        let (mut reader, mut writer): (Box<dyn BufRead>, Box<dyn Write>) = if delve {
            let mut out = BufReader::new(child.stdout.take().ok_or("no stdout")?);
            let mut line = String::new();
            out.read_line(&mut line).map_err(|e| e.to_string())?;
            let addr = line.trim().rsplit(' ').next().ok_or("no address")?.to_string();
            std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
            let stream = TcpStream::connect(addr).map_err(|e| e.to_string())?;
            stream.set_nodelay(true).ok();
            (
                Box::new(BufReader::new(stream.try_clone().map_err(|e| e.to_string())?)),
                Box::new(stream),
            )
        } else {
            (
                Box::new(BufReader::new(child.stdout.take().ok_or("no stdout")?)),
                Box::new(child.stdin.take().ok_or("no stdin")?),
            )
        };
        let mut c = Raw { seq: 0, reader: &mut *reader, writer: &mut *writer };
        let init = c.send("initialize", json!({"clientID": "raw", "adapterID": case.adapter, "pathFormat": "path", "linesStartAt1": true, "columnsStartAt1": true}))?;
        c.until(|m| m["request_seq"] == init)?;
        let args = match case.adapter {
            "debugpy" => {
                json!({"program": program, "cwd": root, "console": "internalConsole", "subProcess": false, "python": python.map(|p| vec![p])})
            }
            "lldb" => {
                json!({"program": program, "cwd": root, "preRunCommands": ["settings set target.input-path /dev/null"]})
            }
            _ => json!({"mode": "debug", "program": program, "output": root.join("__raw_bin")}),
        };
        c.send("launch", args)?;
        c.until(|m| m["event"] == "initialized")?;
        let bp = c.send(
            "setBreakpoints",
            json!({"source": {"path": root.join(case.file)}, "breakpoints": [{"line": case.line}]}),
        )?;
        c.until(|m| m["request_seq"] == bp)?;
        let done = c.send("configurationDone", json!({}))?;
        c.until(|m| m["request_seq"] == done)?;
        let stopped = c.until(|m| m["event"] == "stopped")?;
        let at_stop = started.elapsed();
        let thread = stopped["body"]["threadId"].clone();
        let st = c.send("stackTrace", json!({"threadId": thread, "levels": 30}))?;
        let stack = c.until(|m| m["request_seq"] == st)?;
        let frame = stack["body"]["stackFrames"][0]["id"].clone();
        let sc = c.send("scopes", json!({"frameId": frame}))?;
        let scopes = c.until(|m| m["request_seq"] == sc)?;
        let reference = scopes["body"]["scopes"][0]["variablesReference"].clone();
        let vr = c.send("variables", json!({"variablesReference": reference}))?;
        c.until(|m| m["request_seq"] == vr)?;
        let at_facts = started.elapsed();
        let dc = c.send("disconnect", json!({"terminateDebuggee": true}))?;
        let _ = c.until(|m| m["request_seq"] == dc);
        Ok((at_stop, at_facts))
    })();
    // Not timed: make sure nothing lingers.
    drop(child.stdin.take());
    let pid = child.id() as i32;
    std::thread::sleep(Duration::from_millis(50));
    // SAFETY: killpg on the group we created for the adapter; no memory is involved.
    unsafe {
        libc::killpg(pid, libc::SIGKILL);
    }
    let _ = child.wait();
    let _ = std::fs::remove_file(root.join("__raw_bin"));
    result
}

struct Raw<'a> {
    seq: i64,
    reader: &'a mut dyn BufRead,
    writer: &'a mut dyn Write,
}

impl Raw<'_> {
    fn send(&mut self, command: &str, arguments: Value) -> Result<i64, String> {
        self.seq += 1;
        let body =
            json!({"seq": self.seq, "type": "request", "command": command, "arguments": arguments})
                .to_string();
        write!(self.writer, "Content-Length: {}\r\n\r\n{body}", body.len())
            .map_err(|e| e.to_string())?;
        self.writer.flush().map_err(|e| e.to_string())?;
        tracing::trace!(seq = self.seq, command, "raw ->");
        Ok(self.seq)
    }

    fn read(&mut self) -> Result<Value, String> {
        let mut length = 0usize;
        loop {
            let mut line = String::new();
            if self.reader.read_line(&mut line).map_err(|e| e.to_string())? == 0 {
                return Err("the adapter closed the stream".into());
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some(v) = line.strip_prefix("Content-Length:") {
                length = v.trim().parse().map_err(|_| "bad length")?;
            }
        }
        let mut body = vec![0; length];
        self.reader.read_exact(&mut body).map_err(|e| e.to_string())?;
        let message: Value = serde_json::from_slice(&body).map_err(|e| e.to_string())?;
        tracing::trace!(kind = %message["type"], command = %message["command"], event = %message["event"], "raw <-");
        Ok(message)
    }

    fn until(&mut self, want: impl Fn(&Value) -> bool) -> Result<Value, String> {
        loop {
            let m = self.read()?;
            if m["type"] == "request" {
                // Answer reverse requests so the adapter does not wait.
                let body = json!({"seq": 0, "type": "response", "request_seq": m["seq"], "command": m["command"], "success": false}).to_string();
                let _ = write!(self.writer, "Content-Length: {}\r\n\r\n{body}", body.len());
                continue;
            }
            if m["type"] == "response" && m["success"] == false && want(&m) {
                return Err(format!("{} failed: {}", m["command"], m["message"]));
            }
            if want(&m) {
                return Ok(m);
            }
        }
    }
}
