//! Language servers shared across the sessions of one `agent-tools mcp --http` host: four
//! sessions at once on one Python checkout (the official Python SDK's Streamable HTTP client,
//! concurrent with `asyncio.gather`) each hover, write a file with a type error of its own
//! (diagnostics on write) and ask for its diagnostics. One basedpyright serves them all, each
//! session gets its own answers, and after the sessions end (DELETE or idle expiry) and the
//! host's SIGTERM, or a SIGTERM while they are all open, nothing of the host's tree is left.

use std::{
    collections::BTreeSet,
    io::{BufRead, BufReader, Write},
    path::{Path, PathBuf},
    process::{Child, ChildStdout, Command, Stdio},
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use serde_json::Value;

use crate::{
    http_host::HttpHost,
    support::{
        TempProject, processes_with_marker, require, require_basedpyright, test_python, tools_home,
    },
};

const SESSIONS: usize = 4;

/// The sessions, each a task of its own: hover the shared module, write `app/s{i}.py` with an
/// error naming the session, ask for that file's diagnostics. Once all are done it prints
/// `READY` and waits for a line on stdin before it ends the sessions, then prints the results.
const CLIENT: &str = r#"
import asyncio, contextlib, json, sys
import httpx
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

url, sessions, terminate = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "delete"

async def run(i, done, go):
    out = {}
    async with contextlib.AsyncExitStack() as stack:
        client = await stack.enter_async_context(httpx.AsyncClient(timeout=httpx.Timeout(60, read=300)))
        read, write, _ = await stack.enter_async_context(
            streamable_http_client(url, http_client=client, terminate_on_close=terminate))
        mcp = await stack.enter_async_context(ClientSession(read, write))
        await mcp.initialize()
        async def call(name, tool, args):
            r = await mcp.call_tool(tool, args)
            out[name] = {"isError": r.isError, "text": r.content[0].text if r.content else ""}
        await call("hover", "lsp", {"action": "hover", "file": "app/shapes.py", "line": 1, "symbol": "area"})
        await call("write", "write", {"path": f"app/s{i}.py",
            "content": f"from app.shapes import area\n\nsession_{i}: str = area({i}.0)\n"})
        await call("diagnostics", "lsp", {"action": "diagnostics", "file": f"app/s{i}.py"})
        done.append(i)
        await go.wait()
    return out

async def main():
    done, go = [], asyncio.Event()
    tasks = [asyncio.create_task(run(i, done, go)) for i in range(sessions)]
    while len(done) < sessions and not any(t.done() for t in tasks):
        await asyncio.sleep(0.05)
    print("READY", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    go.set()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    print(json.dumps([r if isinstance(r, dict) else {"error": repr(r)} for r in results]), flush=True)

asyncio.run(main())
"#;

/// The test venv's Python and a Python checkout served by the venv's basedpyright, or `None`
/// after a loud skip.
fn check(extra_config: &str) -> Option<(PathBuf, TempProject)> {
    let python = test_python();
    if !require("python venv with the `mcp` SDK", python.is_some(), "run `cargo xtask setup`") {
        return None;
    }
    if !require_basedpyright() {
        return None;
    }
    let config = format!(
        "[lsp]\nextra_paths = [\"{}\"]\n{extra_config}",
        tools_home().join("venv/bin").display()
    );
    let project = TempProject::new(&[
        ("agent-tools.toml", &config),
        ("pyproject.toml", "[project]\nname = \"shared\"\nversion = \"0.1.0\"\n"),
        ("app/__init__.py", ""),
        (
            "app/shapes.py",
            "def area(side: float) -> float:\n    \"\"\"The square's area.\"\"\"\n    return side * side\n",
        ),
    ]);
    Some((python?, project))
}

/// The process groups of basedpyright processes in the host's tree: one per server (the
/// launcher and the node process it runs share their group).
fn basedpyright_groups(marker: &str) -> BTreeSet<u32> {
    processes_with_marker(marker)
        .into_iter()
        .filter(|(_, cmdline)| cmdline.contains("basedpyright"))
        .filter_map(|(pid, _)| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            stat.rsplit_once(") ")?.1.split_whitespace().nth(2)?.parse().ok()
        })
        .collect()
}

/// Watches the host's tree until stopped: every basedpyright group seen, and the most at once.
struct Watch {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<(BTreeSet<u32>, usize)>,
}

impl Watch {
    fn start(marker: &str) -> Watch {
        let stop = Arc::new(AtomicBool::new(false));
        let (flag, marker) = (stop.clone(), marker.to_string());
        let thread = std::thread::spawn(move || {
            let (mut seen, mut most) = (BTreeSet::new(), 0);
            while !flag.load(Ordering::Relaxed) {
                let now = basedpyright_groups(&marker);
                most = most.max(now.len());
                seen.extend(now);
                std::thread::sleep(Duration::from_millis(50));
            }
            (seen, most)
        });
        Watch { stop, thread }
    }

    fn finish(self) -> (BTreeSet<u32>, usize) {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().expect("the watcher")
    }
}

/// Starts the client's sessions and waits until they are all open and done with their calls.
fn start_client(python: &Path, host: &HttpHost, end: &str) -> (Child, BufReader<ChildStdout>) {
    let mut client = Command::new(python)
        .arg("-c")
        .arg(CLIENT)
        .args([host.url.as_str(), &SESSIONS.to_string(), end])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the python client");
    let mut stdout = BufReader::new(client.stdout.take().expect("stdout"));
    let mut line = String::new();
    let _ = stdout.read_line(&mut line);
    assert_eq!(line.trim(), "READY", "the client did not get through its calls");
    (client, stdout)
}

/// Runs the client's sessions; `at_ready` runs while they are all open and done with their
/// calls. Returns each session's results by call name.
fn drive(python: &Path, host: &HttpHost, end: &str, at_ready: impl FnOnce()) -> Vec<Value> {
    let (mut client, mut stdout) = start_client(python, host, end);
    at_ready();
    let mut stdin = client.stdin.take().expect("stdin");
    writeln!(stdin).expect("tell the client to end its sessions");
    drop(stdin);
    let mut line = String::new();
    let _ = stdout.read_line(&mut line);
    let status = client.wait().expect("wait for the client");
    assert!(status.success(), "the client failed ({status}): {line}");
    let results: Vec<Value> = serde_json::from_str(&line)
        .unwrap_or_else(|e| panic!("client output is not JSON ({e}): {line}"));
    assert_eq!(results.len(), SESSIONS, "{line}");
    results
}

/// Each session's hover, write and diagnostics answer about its own file only.
fn assert_each_session_got_its_own_answers(results: &[Value]) {
    for (i, session) in results.iter().enumerate() {
        assert_eq!(session["error"], Value::Null, "session {i}: {session}");
        for call in ["hover", "write", "diagnostics"] {
            assert_eq!(session[call]["isError"], false, "session {i} {call}: {session}");
        }
        let text = |call: &str| session[call]["text"].as_str().unwrap_or("").to_string();
        let hover = text("hover");
        assert!(
            hover.contains("def area(side: float) -> float")
                && hover.contains("The square's area."),
            "session {i} hover: {hover}"
        );
        let write = text("write");
        let own = format!("app/s{i}.py:3:");
        assert!(
            write.contains("Diagnostics (basedpyright): 1 new error")
                && write.contains(&own)
                && write.contains("[reportAssignmentType]"),
            "session {i} write: {write}"
        );
        let diagnostics = text("diagnostics");
        assert!(
            diagnostics.starts_with(&format!("1 error in app/s{i}.py (basedpyright"))
                && diagnostics.contains(&format!("session_{i}: str = area({i}.0)")),
            "session {i} diagnostics: {diagnostics}"
        );
        for other in (0..SESSIONS).filter(|o| *o != i) {
            let theirs = format!("app/s{other}.py");
            assert!(
                !write.contains(&theirs) && !diagnostics.contains(&theirs),
                "session {i} was told about session {other}'s file: {write}\n{diagnostics}"
            );
        }
    }
}

#[test]
fn concurrent_sessions_share_one_language_server_and_keep_their_own_results() {
    let Some((python, project)) = check("") else { return };
    let host = HttpHost::start(&project.root, &[]);
    let watch = Watch::start(&host.marker);
    let results = drive(&python, &host, "delete", || {
        let now = basedpyright_groups(&host.marker);
        assert_eq!(now.len(), 1, "one basedpyright for the {SESSIONS} open sessions: {now:?}");
    });
    let (seen, most) = watch.finish();
    assert_eq!(
        (seen.len(), most),
        (1, 1),
        "one basedpyright started for the root while the sessions ran: {seen:?}"
    );
    assert_each_session_got_its_own_answers(&results);
    // Every session was deleted: the shared server went with the last of them.
    host.assert_only_the_host_is_left();
    host.stop();
}

#[test]
fn the_shared_language_server_ends_when_the_last_session_expires() {
    let Some((python, project)) = check("[mcp]\nsession_idle_seconds = 2\n") else { return };
    let host = HttpHost::start(&project.root, &[]);
    let watch = Watch::start(&host.marker);
    let results = drive(&python, &host, "keep", || {});
    assert_each_session_got_its_own_answers(&results);
    // Not deleted: the sessions end by expiry, and the server with the last of them.
    host.assert_only_the_host_is_left();
    let (seen, most) = watch.finish();
    assert_eq!((seen.len(), most), (1, 1), "one basedpyright for all sessions: {seen:?}");
    host.stop();
}

#[test]
fn a_host_stopped_under_open_sessions_ends_the_shared_language_server() {
    let Some((python, project)) = check("") else { return };
    let host = HttpHost::start(&project.root, &[]);
    let (mut client, _stdout) = start_client(&python, &host, "keep");
    let servers = basedpyright_groups(&host.marker);
    assert_eq!(servers.len(), 1, "one basedpyright for the open sessions: {servers:?}");
    // SIGTERM while every session is open on the shared server: the host exits 0 and
    // nothing of its tree is left.
    host.stop();
    let _ = client.kill();
    let _ = client.wait();
}
