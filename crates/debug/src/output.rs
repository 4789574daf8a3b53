//! The debuggee's output: one bounded ring merging DAP `output` events, the adapter's own stdio
//! (delve prints the program's output there) and `runInTerminal` children, read with a cursor.

use std::collections::VecDeque;

use schemars::JsonSchema;
use serde::Serialize;

/// Oldest entries are dropped past this many characters in the ring.
pub const RING_CHARS: usize = 64 * 1024;
/// Oldest entries are dropped past this many entries.
pub const RING_ENTRIES: usize = 1000;

/// One piece of output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct OutputEntry {
    /// Position in the session's output; cursors count these.
    pub seq: u64,
    /// `stdout` or `stderr`.
    pub stream: String,
    pub text: String,
}

/// A bounded ring of output entries with global sequence numbers.
#[derive(Debug, Default)]
pub struct OutputRing {
    entries: VecDeque<OutputEntry>,
    chars: usize,
    next_seq: u64,
    /// Entries dropped from the front because the ring was full.
    dropped: u64,
    /// Where the "new output since the last call" cursor stands.
    delivered: u64,
}

/// What a read of the ring returned.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub struct OutputChunk {
    pub entries: Vec<OutputEntry>,
    /// Pass this as `since` to continue after this chunk.
    pub next: u64,
    /// Entries that fell out of the ring before they were read.
    pub dropped: u64,
    /// Entries that are there but did not fit in this chunk (read on with `since: next`).
    pub more: u64,
    /// Older new entries left out so that the newest fit (read them with `since:
    /// earlier_since`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub earlier: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub earlier_since: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl OutputChunk {
    /// The entries' text, stderr lines marked.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let mut last_stream = "";
        for entry in &self.entries {
            if entry.stream == "stderr"
                && last_stream != "stderr"
                && !out.is_empty()
                && !out.ends_with('\n')
            {
                out.push('\n');
            }
            out.push_str(&entry.text);
            last_stream = &entry.stream;
        }
        out
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty() && self.dropped == 0
    }
}

impl OutputRing {
    /// Appends `text` on `stream`, normalising `\r\n` to `\n`.
    pub fn push(&mut self, stream: &str, text: &str) {
        if text.is_empty() {
            return;
        }
        let text = text.replace("\r\n", "\n");
        // Consecutive pieces on one stream are joined: adapters send chunks ("total", " ", "8\n").
        if let Some(last) = self.entries.back_mut()
            && last.stream == stream
            && last.seq >= self.delivered
            && !last.text.ends_with('\n')
            && last.text.len() + text.len() < 4096
        {
            self.chars += text.chars().count();
            last.text.push_str(&text);
        } else {
            self.chars += text.chars().count();
            self.entries.push_back(OutputEntry {
                seq: self.next_seq,
                stream: stream.to_string(),
                text,
            });
            self.next_seq += 1;
        }
        while self.entries.len() > RING_ENTRIES
            || (self.chars > RING_CHARS && self.entries.len() > 1)
        {
            if let Some(old) = self.entries.pop_front() {
                self.chars -= old.text.chars().count();
                self.dropped += 1;
            }
        }
    }

    /// Where the "new since the last call" cursor stands.
    pub fn delivered(&self) -> u64 {
        self.delivered
    }

    /// The sequence number the next entry will get.
    pub fn end(&self) -> u64 {
        self.next_seq
    }

    /// The new output since the last read, newest first when it does not all fit: the tail of
    /// at most `max_chars`, saying how many older entries were left out and where they start.
    /// With `since`, entries from that cursor on instead. Advances the "delivered" cursor.
    pub fn read(&mut self, since: Option<u64>, max_chars: usize) -> OutputChunk {
        if since.is_some() {
            return self.read_from(since, max_chars);
        }
        let from = self.delivered;
        let mut budget = max_chars;
        let mut first = None;
        for entry in self.entries.iter().rev().filter(|e| e.seq >= from) {
            let len = entry.text.chars().count();
            if len > budget {
                break;
            }
            budget -= len;
            first = Some(entry.seq);
        }
        let first_new = self.entries.iter().find(|e| e.seq >= from).map(|e| e.seq);
        match (first, first_new) {
            (Some(first), Some(first_new)) if first > first_new => {
                let mut chunk = self.read_from(Some(first), max_chars);
                chunk.earlier =
                    self.entries.iter().filter(|e| e.seq >= from && e.seq < first).count() as u64;
                chunk.earlier_since = first_new;
                chunk.dropped = first_new.saturating_sub(from).min(self.dropped);
                chunk
            }
            _ => self.read_from(None, max_chars),
        }
    }

    fn read_from(&mut self, since: Option<u64>, max_chars: usize) -> OutputChunk {
        let since = since.unwrap_or(self.delivered);
        let first_kept = self.entries.front().map_or(self.next_seq, |e| e.seq);
        let dropped = first_kept.saturating_sub(since).min(self.dropped);
        let mut chunk = OutputChunk { next: since.max(first_kept), dropped, ..Default::default() };
        let mut budget = max_chars;
        for entry in self.entries.iter().filter(|e| e.seq >= since) {
            let len = entry.text.chars().count();
            if len > budget {
                if chunk.entries.is_empty() {
                    let cut: String = entry.text.chars().take(budget).collect();
                    chunk.entries.push(OutputEntry {
                        seq: entry.seq,
                        stream: entry.stream.clone(),
                        text: format!("{cut}…(+{} chars cut)\n", len - budget),
                    });
                    chunk.next = entry.seq + 1;
                    continue;
                }
                chunk.more += 1;
                continue;
            }
            if chunk.more > 0 {
                chunk.more += 1;
                continue;
            }
            budget -= len;
            chunk.entries.push(entry.clone());
            chunk.next = entry.seq + 1;
        }
        if chunk.entries.is_empty() && chunk.more == 0 {
            chunk.next = self.next_seq.max(since);
        }
        self.delivered = self.delivered.max(chunk.next);
        chunk
    }

    /// The last `n` characters of everything in the ring on `stream` (for error messages).
    pub fn tail(&self, stream: &str, n: usize) -> String {
        let text: String =
            self.entries.iter().filter(|e| e.stream == stream).map(|e| e.text.as_str()).collect();
        let count = text.chars().count();
        text.chars().skip(count.saturating_sub(n)).collect()
    }

    /// Every entry's text (for tests and exit summaries).
    pub fn all_text(&self) -> String {
        self.entries.iter().map(|e| e.text.as_str()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_returns_only_what_is_new_and_chunks_are_joined() {
        let mut ring = OutputRing::default();
        ring.push("stdout", "total");
        ring.push("stdout", " 8\r\n");
        ring.push("stderr", "oops\n");
        let first = ring.read(None, 1000);
        assert_eq!(first.text(), "total 8\noops\n");
        assert_eq!(first.next, 2);
        ring.push("stdout", "done\n");
        let second = ring.read(None, 1000);
        assert_eq!(second.text(), "done\n");
        assert!(ring.read(None, 1000).entries.is_empty());
        assert_eq!(ring.read(Some(0), 1000).entries.len(), 3);
    }

    #[test]
    fn a_full_ring_drops_the_oldest_and_says_how_many() {
        let mut ring = OutputRing::default();
        for i in 0..(RING_ENTRIES + 10) {
            ring.push("stdout", &format!("line {i}\n"));
        }
        let chunk = ring.read(Some(0), usize::MAX);
        assert_eq!(chunk.dropped, 10);
        assert_eq!(chunk.entries.len(), RING_ENTRIES);
    }

    #[test]
    fn a_read_is_bounded_and_the_rest_follows_on_the_next_read() {
        let mut ring = OutputRing::default();
        ring.push("stdout", &"a".repeat(50));
        ring.push("stdout", "\n");
        ring.push("stderr", &"b".repeat(50));
        let chunk = ring.read(Some(0), 60);
        assert_eq!(chunk.entries.len(), 1);
        assert_eq!(chunk.more, 1);
        let rest = ring.read(Some(chunk.next), 60);
        assert_eq!(rest.entries.len(), 1);
        assert_eq!(rest.more, 0);
    }

    #[test]
    fn new_output_that_does_not_fit_shows_its_tail_and_where_the_rest_starts() {
        let mut ring = OutputRing::default();
        for i in 0..100 {
            ring.push("stdout", &format!("line {i:03}\n"));
        }
        let tail = ring.read(None, 90);
        assert_eq!(tail.text().lines().last(), Some("line 099"));
        assert_eq!(tail.earlier, 90);
        assert_eq!(tail.earlier_since, 0);
        let head = ring.read(Some(tail.earlier_since), 90);
        assert_eq!(head.text().lines().next(), Some("line 000"));
        assert!(ring.read(None, 90).entries.is_empty());
    }
}
