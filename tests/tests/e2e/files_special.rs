//! Files that are not regular files, through the real host: a FIFO, a socket and `/dev/zero`
//! are refused at once by `read`, `write`, `edit` and `apply_patch`, and the host answers
//! (`ping`, other calls) while slow calls hold its threads. Issue 27 found that a `read` of a
//! FIFO never answered, and that two such calls stopped the host, `ping` included.

use std::{collections::BTreeMap, fs::File};

use serde_json::{Value, json};

use crate::support::{RawHost, TempProject};

/// The `tools/call` request `id` of `tool` with `args`.
fn call(id: u64, tool: &str, args: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": args}})
}

/// The four file tools on `path`, each as the model would call it.
fn every_file_tool(path: &str) -> [(&'static str, Value); 4] {
    [
        ("read", json!({"path": path, "end_line": 3})),
        ("write", json!({"path": path, "content": "x\n"})),
        ("edit", json!({"path": path, "old_string": "a", "new_string": "b"})),
        (
            "apply_patch",
            json!({"patch": format!("--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-a\n+b\n")}),
        ),
    ]
}

/// The text of a tool result in a JSON-RPC answer.
fn text(answer: &Value) -> &str {
    answer["result"]["content"][0]["text"].as_str().unwrap_or_default()
}

#[test]
fn special_files_are_refused_at_once_and_ping_answers_while_slow_writes_wait() {
    let project = TempProject::new(&[("ok.txt", "fine\n")]);
    let made = std::process::Command::new("mkfifo").arg(project.root.join("pipe")).status();
    assert!(made.is_ok_and(|s| s.success()), "mkfifo");
    let _socket = std::os::unix::net::UnixListener::bind(project.root.join("sock")).expect("bind");
    std::os::unix::fs::symlink("/dev/zero", project.root.join("zero")).expect("symlink");
    // Two worker threads, as on a two-core machine, whatever this one has.
    let mut host = RawHost::start_with_env(
        &project.root,
        "special-files",
        &[],
        &[("TOKIO_WORKER_THREADS", "2")],
    );
    host.initialize();

    // Slow calls first: writes into the root folder wait for its lock, which this test holds
    // as another host's commit would. Four times as many as there are worker threads.
    let folder = File::open(&project.root).expect("open the root folder");
    folder.lock().expect("lock the root folder");
    let slow: Vec<u64> = (100..108).collect();
    for &id in &slow {
        host.send(call(id, "write", json!({"path": format!("slow{id}.txt"), "content": "late\n"})));
    }

    // Then each special file through every file tool, a read of a regular file and a ping.
    let mut expected: BTreeMap<u64, String> = BTreeMap::new();
    let mut id = 200;
    for (name, refusal) in [
        ("pipe", "pipe is a FIFO (named pipe), not a regular file"),
        ("sock", "sock is a socket, not a regular file"),
        ("zero", "zero resolves through a symlink that leaves the run's root"),
    ] {
        for (tool, args) in every_file_tool(name) {
            host.send(call(id, tool, args));
            expected.insert(id, refusal.to_string());
            id += 1;
        }
    }
    host.send(call(id, "read", json!({"path": "ok.txt"})));
    host.send(json!({"jsonrpc": "2.0", "id": 300, "method": "ping"}));

    // All of them are answered while every slow write still waits (none can finish while the
    // folder is locked): the refusals came at once, and nothing waits behind the slow calls.
    let mut waiting: Vec<u64> = expected.keys().copied().chain([id, 300]).collect();
    while !waiting.is_empty() {
        let answer = host.next_message(|m| m.get("method").is_none() && m["id"].is_u64());
        let got = answer["id"].as_u64().expect("an id");
        assert!(!slow.contains(&got), "a write answered while its folder was locked: {answer}");
        waiting.retain(|w| *w != got);
        if got == 300 {
            assert_eq!(answer["result"], json!({}), "{answer}");
        } else if got == id {
            assert_eq!(text(&answer), "1\tfine\n", "{answer}");
        } else {
            assert_eq!(answer["result"]["isError"], true, "{answer}");
            assert!(text(&answer).contains(&expected[&got]), "{}: {answer}", expected[&got]);
        }
    }
    assert!(std::os::unix::fs::FileTypeExt::is_fifo(
        &std::fs::metadata(project.root.join("pipe")).expect("the FIFO").file_type()
    ));

    for &id in &slow {
        assert!(!project.root.join(format!("slow{id}.txt")).exists(), "slow{id}.txt is written");
    }

    // The lock goes: every slow write lands.
    folder.unlock().expect("unlock the root folder");
    for answer in host.answers(slow.iter().copied()) {
        assert_eq!(answer["result"]["isError"], false, "{answer}");
    }
    for id in slow {
        let written = std::fs::read_to_string(project.root.join(format!("slow{id}.txt")));
        assert_eq!(written.expect("a slow write's file"), "late\n");
    }
    assert!(host.finish().success());
}

#[test]
fn dev_zero_itself_is_refused_at_once_as_a_character_device() {
    // A run rooted at /dev reaches the device by its own name. `write` is left out: were it
    // ever let through, it would put a regular file in the place of the machine's /dev/zero.
    let mut host = RawHost::start(std::path::Path::new("/dev"), "special-files-dev", &[]);
    host.initialize();
    let tools: Vec<_> =
        every_file_tool("zero").into_iter().filter(|(t, _)| *t != "write").collect();
    for (n, (tool, args)) in tools.iter().enumerate() {
        host.send(call(n as u64 + 1, tool, args.clone()));
    }
    for answer in host.answers(1..=tools.len() as u64) {
        assert_eq!(answer["result"]["isError"], true, "{answer}");
        assert!(
            text(&answer).contains("zero is a character device, not a regular file"),
            "{answer}"
        );
    }
    assert!(host.finish().success());
}
