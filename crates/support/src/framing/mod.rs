//! Content-Length framing, as LSP and DAP put JSON messages on a byte stream: bounded reads
//! and a writer that gives up on a peer that stops reading.
//!
//! Pure byte framing over [`AsyncRead`](tokio::io::AsyncRead) and
//! [`AsyncWrite`](tokio::io::AsyncWrite) with `serde_json` values; no JSON-RPC or DAP logic.
//!
//! - [`FrameReader`] reads `Content-Length: N\r\n\r\n` + N bytes. Header names are matched
//!   case-insensitively, other headers (`Content-Type`) are ignored, `Content-Length` is
//!   required. A body larger than the limit is refused with its size and the limit, and
//!   skipped, so the next message can still be read. A clean end of the stream between
//!   messages is `Ok(None)`; an end inside a message is an error.
//! - [`FrameWriter`] owns the writing half in a task behind a bounded queue. A write that makes
//!   no progress for the deadline (the peer stopped reading its input) stops the writer with
//!   [`FrameError::WriteDeadline`] instead of blocking forever; every later send fails with it.
//!
//! How to adopt (a server's stdout and stdin):
//!
//! ```no_run
//! # async fn run(mut child: tokio::process::Child) -> Result<(), agent_tools_support::framing::FrameError> {
//! use std::time::Duration;
//! use agent_tools_support::framing::{FrameReader, FrameWriter};
//! use serde_json::json;
//!
//! let mut reader = FrameReader::new(child.stdout.take().unwrap());
//! let writer = FrameWriter::spawn(child.stdin.take().unwrap(), Duration::from_secs(10));
//! writer.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}})).await?;
//! while let Some(message) = reader.read_value().await? {
//!     // dispatch `message`; replies from the reader task go through `writer.try_send`
//! #   let _ = message;
//! }
//! writer.close().await?; // what is queued is written, then the server's stdin is closed
//! # Ok(()) }
//! ```

mod reader;
mod writer;

use std::time::Duration;

pub use self::{reader::FrameReader, writer::FrameWriter};
use crate::duration::human;

/// The largest body [`FrameReader::new`] accepts: language servers send workspace-wide
/// results of tens of megabytes; anything larger is a broken peer.
pub const DEFAULT_MAX_BODY: usize = 64 * 1024 * 1024;

/// The longest header section accepted before its blank line.
pub const MAX_HEADER: usize = 8 * 1024;

/// How many messages may wait for the writer before a send waits for room.
pub const QUEUE_MESSAGES: usize = 256;

/// What went wrong on a framed stream. Clone, so every handle of a stopped writer reports the
/// same reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("a message of {size} bytes is larger than the limit of {limit} bytes; it was skipped")]
    TooLarge { size: usize, limit: usize },
    #[error("a message header has no Content-Length header (it had: {headers})")]
    MissingLength { headers: String },
    #[error("a message header has Content-Length `{value}`, which is not a byte count")]
    BadLength { value: String },
    #[error("a message header is longer than {limit} bytes without its closing blank line")]
    HeaderTooLong { limit: usize },
    #[error("the stream ended inside a message ({0})")]
    Truncated(String),
    #[error("a message body is not JSON: {0}")]
    NotJson(String),
    #[error(
        "the peer did not read its input for {} (the write deadline); the connection was closed",
        human(*.0)
    )]
    WriteDeadline(Duration),
    #[error("the writer's queue is full ({0} messages wait): the peer is not reading")]
    QueueFull(usize),
    #[error("the connection is closed: {0}")]
    Closed(String),
    #[error("the stream failed: {0}")]
    Io(String),
}

impl From<std::io::Error> for FrameError {
    fn from(e: std::io::Error) -> Self {
        FrameError::Io(e.to_string())
    }
}

/// Frames `body` with its Content-Length header.
pub fn frame(body: &[u8]) -> Vec<u8> {
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out
}
