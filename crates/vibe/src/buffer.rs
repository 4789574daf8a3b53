//! Bounded text capture: the tail of a stream, and UTF-8 decoding across chunk boundaries.

/// Keeps the last `cap` characters of everything pushed, and counts what was cut.
#[derive(Debug, Clone)]
pub(crate) struct TailBuffer {
    text: String,
    total_chars: usize,
    cap: usize,
}

impl TailBuffer {
    pub(crate) fn new(cap: usize) -> Self {
        TailBuffer { text: String::new(), total_chars: 0, cap: cap.max(1) }
    }

    pub(crate) fn push(&mut self, chunk: &str) {
        self.text.push_str(chunk);
        self.total_chars += chunk.chars().count();
        if self.text.len() > self.cap.saturating_mul(4).saturating_add(4096) {
            self.trim();
        }
    }

    fn trim(&mut self) {
        let chars = self.text.chars().count();
        if chars > self.cap {
            let cut = self.text.char_indices().nth(chars - self.cap).map_or(0, |(i, _)| i);
            self.text.drain(..cut);
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.total_chars == 0
    }

    /// The kept text and, when something was cut, a note saying how much.
    pub(crate) fn snapshot(&self) -> (String, Option<String>) {
        let mut copy = self.clone();
        copy.trim();
        let kept = copy.text.chars().count();
        let note = (self.total_chars > kept).then(|| {
            format!(
                "[output capped: showing the last {kept} of {} characters; the first {} were cut]",
                self.total_chars,
                self.total_chars - kept
            )
        });
        (copy.text, note)
    }

    pub(crate) fn clear(&mut self) {
        self.text.clear();
        self.total_chars = 0;
    }
}

/// Decodes UTF-8 from chunks that may split a character; invalid bytes become U+FFFD.
#[derive(Debug, Default)]
pub(crate) struct Utf8Carry {
    pending: Vec<u8>,
}

impl Utf8Carry {
    pub(crate) fn decode(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        let valid_up_to = match std::str::from_utf8(&self.pending) {
            Ok(_) => self.pending.len(),
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            Err(_) => self.pending.len(),
        };
        let rest = self.pending.split_off(valid_up_to);
        let text = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending = rest;
        text
    }

    pub(crate) fn finish(&mut self) -> String {
        let text = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_is_kept_and_the_cut_is_counted() {
        let mut buffer = TailBuffer::new(5);
        buffer.push("hello ");
        buffer.push("world");
        let (text, note) = buffer.snapshot();
        assert_eq!(text, "world");
        assert_eq!(
            note.as_deref(),
            Some("[output capped: showing the last 5 of 11 characters; the first 6 were cut]")
        );
    }

    #[test]
    fn a_split_character_is_decoded_whole() {
        let mut carry = Utf8Carry::default();
        let bytes = "é!".as_bytes();
        assert_eq!(carry.decode(&bytes[..1]), "");
        assert_eq!(carry.decode(&bytes[1..]), "é!");
        assert_eq!(carry.finish(), "");
    }
}
