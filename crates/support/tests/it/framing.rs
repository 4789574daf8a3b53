//! Content-Length framing: round trips, split reads, refused and broken messages, and a writer
//! whose peer (a real process) never reads.

use std::{process::Stdio, time::Duration};

use agent_tools_support::{
    framing::{FrameError, FrameReader, FrameWriter, MAX_HEADER, frame},
    process::{self, Spawned},
};
use serde_json::{Value, json};
use tokio::io::{AsyncWriteExt, DuplexStream};

/// Feeds `bytes` to a reader `chunk` bytes at a time, yielding between writes, so headers and
/// bodies arrive split anywhere; reads every message until the end or the first error.
async fn check(bytes: Vec<u8>, chunk: usize, max_body: usize) -> Vec<Result<Value, FrameError>> {
    let (mut input, output) = tokio::io::duplex(7);
    let feeder = tokio::spawn(async move {
        for piece in bytes.chunks(chunk) {
            input.write_all(piece).await.unwrap();
            tokio::task::yield_now().await;
        }
    });
    let mut reader = FrameReader::new(output).with_max_body(max_body);
    let mut read = Vec::new();
    loop {
        match reader.read_value().await {
            Ok(Some(message)) => read.push(Ok(message)),
            Ok(None) => break,
            Err(e @ FrameError::TooLarge { .. }) => read.push(Err(e)),
            Err(e) => {
                read.push(Err(e));
                break;
            }
        }
    }
    feeder.await.unwrap();
    read
}

fn messages() -> Vec<Value> {
    vec![
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}),
        // Content-Length counts bytes, not characters.
        json!({"seq": 2, "type": "event", "body": {"output": "grüße, 世界 🎉\r\n"}}),
        json!({"big": "x".repeat(100_000)}),
    ]
}

#[tokio::test]
async fn messages_round_trip_through_the_writer_and_the_reader() {
    let (ours, theirs): (DuplexStream, DuplexStream) = tokio::io::duplex(1024);
    let writer = FrameWriter::spawn(ours, Duration::from_secs(30));
    let reader_task = tokio::spawn(async move {
        let mut reader = FrameReader::new(theirs);
        let mut read = Vec::new();
        while let Some(message) = reader.read_value().await.unwrap() {
            read.push(message);
        }
        read
    });
    for message in messages() {
        writer.send(&message).await.unwrap();
    }
    writer.close().await.unwrap();

    assert_eq!(reader_task.await.unwrap(), messages(), "all arrive, then a clean end");
    let after = writer.send(&json!({})).await.unwrap_err();
    assert!(matches!(after, FrameError::Closed(_)), "{after}");
    assert!(writer.close().await.is_ok(), "closing twice is fine");
}

#[tokio::test]
async fn messages_split_into_single_bytes_are_read_whole() {
    let mut bytes = Vec::new();
    for message in messages() {
        bytes.extend(frame(message.to_string().as_bytes()));
    }
    let read = check(bytes, 1, 1 << 20).await;
    assert_eq!(read, messages().into_iter().map(Ok).collect::<Vec<_>>());
}

#[tokio::test]
async fn header_names_are_case_insensitive_and_other_headers_are_ignored() {
    let body = br#"{"ok":true}"#;
    let mut bytes = Vec::new();
    bytes.extend(b"\r\n"); // a stray blank line between messages is tolerated
    bytes.extend(format!("content-length:{}\r\n", body.len()).as_bytes());
    bytes.extend(b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n");
    bytes.extend(body);
    bytes.extend(format!("CONTENT-LENGTH: {}\n\n", body.len()).as_bytes());
    bytes.extend(body);

    let read = check(bytes, 5, 1 << 20).await;

    assert_eq!(read, vec![Ok(json!({"ok": true})), Ok(json!({"ok": true}))]);
}

#[tokio::test]
async fn a_message_over_the_limit_is_refused_with_its_size_and_skipped() {
    let mut bytes = frame(json!({"big": "x".repeat(5000)}).to_string().as_bytes());
    bytes.extend(frame(br#"{"next":1}"#));

    let read = check(bytes, 100, 1000).await;

    let refused = read[0].clone().unwrap_err();
    assert_eq!(refused, FrameError::TooLarge { size: 5010, limit: 1000 });
    assert_eq!(
        refused.to_string(),
        "a message of 5010 bytes is larger than the limit of 1000 bytes; it was skipped"
    );
    assert_eq!(read[1], Ok(json!({"next": 1})), "the stream stays in step");
}

#[tokio::test]
async fn broken_headers_and_ends_say_what_is_wrong() {
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (
            b"Content-Type: x\r\n\r\n{}".to_vec(),
            "a message header has no Content-Length header (it had: Content-Type)",
        ),
        (
            b"Content-Length: ten\r\n\r\n".to_vec(),
            "a message header has Content-Length `ten`, which is not a byte count",
        ),
        (
            b"Content-Length: 10\r\n\r\n{\"a\":".to_vec(),
            "the stream ended inside a message (inside a body of 10 bytes)",
        ),
        (b"Content-Len".to_vec(), "the stream ended inside a message (inside a message header)"),
        (
            frame(b"{not json}"),
            "a message body is not JSON: key must be a string at line 1 column 2",
        ),
        (
            vec![b'a'; MAX_HEADER + 1],
            "a message header is longer than 8192 bytes without its closing blank line",
        ),
    ];
    for (bytes, expected) in cases {
        let read = check(bytes, 3, 1 << 20).await;
        let error = read.last().cloned().expect("one result").unwrap_err();
        assert_eq!(error.to_string(), expected);
    }
    assert_eq!(check(Vec::new(), 1, 10).await, vec![], "an empty stream is a clean end");
}

#[tokio::test]
async fn a_writer_whose_peer_never_reads_stops_at_the_deadline() {
    // `sleep` never reads its stdin: the pipe fills and no write makes progress.
    let mut command = tokio::process::Command::new("sleep");
    command.arg("300").stdin(Stdio::piped());
    let Spawned { mut child, group } = process::spawn(command).await.unwrap();
    let deadline = Duration::from_millis(200);
    let writer = FrameWriter::spawn(child.stdin.take().unwrap(), deadline);

    // Far more than a pipe buffer holds.
    writer.send(&json!({"big": "x".repeat(4 << 20)})).await.unwrap();
    let reason = writer.stopped().await;

    assert_eq!(reason, FrameError::WriteDeadline(deadline));
    assert_eq!(
        reason.to_string(),
        "the peer did not read its input for 200 ms (the write deadline); the connection was \
         closed"
    );
    assert_eq!(writer.send(&json!({})).await.unwrap_err(), reason, "later sends fail the same");
    assert_eq!(writer.try_send(&json!({})).unwrap_err(), reason);
    assert_eq!(writer.close().await.unwrap_err(), reason);
    group.terminate(Duration::from_secs(5)).await;
    child.wait().await.unwrap();
}

#[tokio::test]
async fn a_full_queue_is_refused_without_waiting_and_a_dead_peer_stops_the_writer() {
    let mut command = tokio::process::Command::new("sleep");
    command.arg("300").stdin(Stdio::piped());
    let Spawned { mut child, group } = process::spawn(command).await.unwrap();
    let writer = FrameWriter::spawn(child.stdin.take().unwrap(), Duration::from_secs(600));
    // The first message fills the pipe; the writer task waits on it while the queue fills.
    writer.send(&json!({"big": "x".repeat(4 << 20)})).await.unwrap();

    let full = loop {
        if let Err(e) = writer.try_send(&json!({"small": 1})) {
            break e;
        }
        tokio::task::yield_now().await;
    };

    assert_eq!(full, FrameError::QueueFull(agent_tools_support::framing::QUEUE_MESSAGES));
    assert_eq!(
        full.to_string(),
        "the writer's queue is full (256 messages wait): the peer is not reading"
    );
    group.terminate(Duration::from_secs(5)).await;
    child.wait().await.unwrap();
    let reason = writer.stopped().await;
    assert!(reason.to_string().starts_with("the connection is closed: cannot write"), "{reason}");
}
