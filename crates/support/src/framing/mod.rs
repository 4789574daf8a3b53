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
//! How to adopt (a server's stdout and stdin; here `cat`, which sends every frame back):
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::{process::Stdio, time::Duration};
//! use agent_tools_support::{framing::{FrameReader, FrameWriter}, process};
//! use serde_json::json;
//!
//! let mut command = tokio::process::Command::new("cat");
//! command.stdin(Stdio::piped()).stdout(Stdio::piped());
//! let process::Spawned { mut child, group } = process::spawn(command).await?;
//! let mut reader = FrameReader::new(child.stdout.take().unwrap());
//! let writer = FrameWriter::spawn(child.stdin.take().unwrap(), Duration::from_secs(10));
//! let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}});
//! writer.send(&initialize).await?;
//! writer.close().await?; // what is queued is written, then the server's stdin is closed
//! let mut received = Vec::new();
//! while let Some(message) = reader.read_value().await? {
//!     // dispatch `message`; replies from the reader task go through `writer.try_send`
//!     received.push(message);
//! }
//! assert_eq!(received, [initialize]); // then a clean end of the stream: `Ok(None)`
//! group.terminate(Duration::from_secs(2)).await;
//! child.wait().await?;
//! # Ok(()) }
//! ```

mod reader;
mod writer;

pub use self::{reader::FrameReader, writer::FrameWriter};

/// The largest body [`FrameReader::new`] accepts: language servers send workspace-wide
/// results of tens of megabytes; anything larger is a broken peer.
pub const DEFAULT_MAX_BODY: usize = 64 * 1024 * 1024;

/// The longest header section accepted before its blank line.
pub const MAX_HEADER: usize = 8 * 1024;

/// How many messages may wait for the writer before a send waits for room.
pub const QUEUE_MESSAGES: usize = 256;

/// What went wrong on a framed stream: the crate's [`Error`](crate::Error), by the name framing
/// code reads best with.
pub type FrameError = crate::Error;

/// Frames `body` with its Content-Length header.
pub fn frame(body: &[u8]) -> Vec<u8> {
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out
}
