//! Column units and the one function every column conversion goes through.
//!
//! LSP columns count UTF-16 code units unless the server agreed to UTF-8 (bytes) during
//! `initialize`; people and this crate's output count characters. A line with `é` or an emoji
//! is where a wrong conversion shows, so every conversion goes through [`convert_column`].

use serde::Serialize;

/// What a column counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ColumnUnit {
    /// UTF-8 bytes (LSP `utf-8`, and Rust string indices).
    Utf8,
    /// UTF-16 code units (LSP `utf-16`, the protocol's default).
    Utf16,
    /// Unicode scalar values (what `path:line:col` in our output counts).
    Char,
}

impl ColumnUnit {
    /// The LSP name of an encoding a server chose; anything but `utf-8`/`utf-32` is UTF-16.
    pub fn from_lsp(name: Option<&str>) -> ColumnUnit {
        match name {
            Some("utf-8") => ColumnUnit::Utf8,
            Some("utf-32") => ColumnUnit::Char,
            _ => ColumnUnit::Utf16,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ColumnUnit::Utf8 => "utf-8",
            ColumnUnit::Utf16 => "utf-16",
            ColumnUnit::Char => "utf-32",
        }
    }

    fn width(self, c: char) -> u32 {
        match self {
            ColumnUnit::Utf8 => c.len_utf8() as u32,
            ColumnUnit::Utf16 => c.len_utf16() as u32,
            ColumnUnit::Char => 1,
        }
    }
}

/// Converts `column` on `line` from one unit to another.
///
/// A column past the end of the line (rust-analyzer has sent `4294967295`) is clamped to the
/// line's end; a column inside a character (half a surrogate pair, the middle of a UTF-8
/// sequence) is moved to that character's start. `line` must not include its line break.
pub(crate) fn convert_column(line: &str, column: u32, from: ColumnUnit, to: ColumnUnit) -> u32 {
    if from == to {
        let end = line.chars().map(|c| from.width(c)).sum::<u32>();
        return column.min(end);
    }
    let mut seen_from = 0u32;
    let mut seen_to = 0u32;
    for c in line.chars() {
        let next = seen_from + from.width(c);
        if next > column {
            return seen_to;
        }
        seen_from = next;
        seen_to += to.width(c);
    }
    seen_to
}

/// The byte offset in `line` of a column in `unit` (clamped to the line's end).
pub(crate) fn byte_offset(line: &str, column: u32, unit: ColumnUnit) -> usize {
    convert_column(line, column, unit, ColumnUnit::Utf8) as usize
}

#[cfg(test)]
mod tests {
    use super::{ColumnUnit::*, convert_column};

    // `s = "é🙂"; print(undefined_name)`: `undefined_name` starts at char 16,
    // UTF-16 unit 17 (the emoji is a surrogate pair) and byte 20 (é is 2 bytes, 🙂 is 4).
    const LINE: &str = "s = \"é🙂\"; print(undefined_name)";

    #[test]
    fn a_line_with_an_accent_and_an_emoji_converts_exactly_in_every_direction() {
        assert_eq!(convert_column(LINE, 16, Char, Utf16), 17);
        assert_eq!(convert_column(LINE, 16, Char, Utf8), 20);
        assert_eq!(convert_column(LINE, 17, Utf16, Char), 16);
        assert_eq!(convert_column(LINE, 20, Utf8, Char), 16);
        assert_eq!(convert_column(LINE, 20, Utf8, Utf16), 17);
        assert_eq!(convert_column(LINE, 17, Utf16, Utf8), 20);
        assert_eq!(&LINE[20..34], "undefined_name");
    }

    #[test]
    fn columns_before_the_special_characters_are_unchanged() {
        for col in 0..=5 {
            assert_eq!(convert_column(LINE, col, Char, Utf16), col);
            assert_eq!(convert_column(LINE, col, Utf8, Char), col);
        }
    }

    #[test]
    fn a_column_inside_a_character_moves_to_its_start() {
        // Byte 6 is the second byte of é (bytes 5..7); UTF-16 unit 7 is inside the emoji (6..8).
        assert_eq!(convert_column(LINE, 6, Utf8, Char), 5);
        assert_eq!(convert_column(LINE, 7, Utf16, Utf8), 7);
    }

    #[test]
    fn a_column_past_the_end_is_clamped() {
        let chars = LINE.chars().count() as u32;
        assert_eq!(convert_column(LINE, u32::MAX, Utf16, Char), chars);
        assert_eq!(convert_column(LINE, u32::MAX, Utf8, Utf8), LINE.len() as u32);
        assert_eq!(convert_column("", 3, Utf16, Utf8), 0);
    }
}
