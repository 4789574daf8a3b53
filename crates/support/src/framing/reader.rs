//! Reading Content-Length framed messages, bounded in header and body size.

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, BufReader};

use super::{DEFAULT_MAX_BODY, FrameError, MAX_HEADER};

/// Reads framed messages from `R` (a server's stdout, a socket).
///
/// Not cancel-safe: a read dropped midway leaves the stream inside a message. Keep the reader
/// in one task and stop that task when the connection is done.
#[derive(Debug)]
pub struct FrameReader<R> {
    input: BufReader<R>,
    max_body: usize,
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    /// A reader that accepts bodies up to [`DEFAULT_MAX_BODY`].
    pub fn new(input: R) -> Self {
        FrameReader { input: BufReader::new(input), max_body: DEFAULT_MAX_BODY }
    }

    /// Accept bodies up to `limit` bytes instead.
    pub fn with_max_body(mut self, limit: usize) -> Self {
        self.max_body = limit;
        self
    }

    /// The next message as JSON; `Ok(None)` when the stream ended cleanly between messages.
    pub async fn read_value(&mut self) -> Result<Option<Value>, FrameError> {
        let Some(body) = self.read_body().await? else { return Ok(None) };
        serde_json::from_slice(&body).map(Some).map_err(|e| FrameError::NotJson(e.to_string()))
    }

    /// The next message's body bytes; `Ok(None)` when the stream ended cleanly between
    /// messages. A body over the limit is skipped (read and dropped) and refused, so the
    /// stream stays in step.
    pub async fn read_body(&mut self) -> Result<Option<Vec<u8>>, FrameError> {
        let Some(length) = self.read_header().await? else { return Ok(None) };
        if length > self.max_body {
            let skipped =
                tokio::io::copy(&mut (&mut self.input).take(length as u64), &mut tokio::io::sink())
                    .await
                    .map_err(FrameError::stream)?;
            if skipped < length as u64 {
                return Err(truncated(format!("after {skipped} of {length} body bytes")));
            }
            return Err(FrameError::TooLarge { size: length, limit: self.max_body });
        }
        let mut body = vec![0; length];
        match self.input.read_exact(&mut body).await {
            Ok(_) => Ok(Some(body)),
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                Err(truncated(format!("inside a body of {length} bytes")))
            }
            Err(e) => Err(FrameError::stream(e)),
        }
    }

    /// Reads header lines up to the blank line; the Content-Length, or `None` at a clean end.
    async fn read_header(&mut self) -> Result<Option<usize>, FrameError> {
        let mut length: Option<usize> = None;
        let mut names: Vec<String> = Vec::new();
        let mut header_bytes = 0usize;
        let mut line = Vec::new();
        loop {
            line.clear();
            let read = self.read_line(&mut line, MAX_HEADER - header_bytes.min(MAX_HEADER)).await?;
            header_bytes += read;
            if read == 0 {
                return if names.is_empty() && header_bytes == 0 {
                    Ok(None)
                } else {
                    Err(truncated("inside a message header".into()))
                };
            }
            let text = String::from_utf8_lossy(&line);
            let text = text.trim_end_matches(['\r', '\n']);
            if text.is_empty() {
                if names.is_empty() {
                    // Stray blank lines between messages are tolerated.
                    header_bytes = 0;
                    continue;
                }
                break;
            }
            let (name, value) = text.split_once(':').unwrap_or((text, ""));
            let name = name.trim();
            if name.eq_ignore_ascii_case("content-length") {
                let value = value.trim();
                length =
                    Some(value.parse().map_err(|_| FrameError::BadLength { value: value.into() })?);
            }
            names.push(name.to_string());
        }
        length.map(Some).ok_or_else(|| FrameError::MissingLength { headers: names.join(", ") })
    }

    /// Reads one line (through `\n`) into `line`, at most `limit` bytes; the bytes read.
    async fn read_line(&mut self, line: &mut Vec<u8>, limit: usize) -> Result<usize, FrameError> {
        let mut read = 0;
        loop {
            let available = self.input.fill_buf().await.map_err(FrameError::stream)?;
            if available.is_empty() {
                return Ok(read);
            }
            let (used, done) = match available.iter().position(|b| *b == b'\n') {
                Some(at) => (at + 1, true),
                None => (available.len(), false),
            };
            if read + used > limit {
                return Err(FrameError::HeaderTooLong { limit: MAX_HEADER });
            }
            line.extend_from_slice(&available[..used]);
            self.input.consume(used);
            read += used;
            if done {
                return Ok(read);
            }
        }
    }
}

fn truncated(context: String) -> FrameError {
    FrameError::Truncated(context)
}
