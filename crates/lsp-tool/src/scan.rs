//! A scan of the project's files for names (word boundaries, ignore files respected): what
//! stands in where a language server cannot say which files use a declaration.

use std::path::{Path, PathBuf};

use crate::config::ServerDef;

/// Files read by one scan for names, and the largest file read.
const SCAN_MAX_FILES: usize = 20_000;
const SCAN_MAX_BYTES: u64 = 4 << 20;

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80
}

/// How often `name` occurs in `text` as a whole word.
fn word_count(text: &[u8], name: &str) -> usize {
    memchr::memmem::find_iter(text, name.as_bytes())
        .filter(|&at| {
            let before = at.checked_sub(1).map(|i| text[i]);
            let after = text.get(at + name.len()).copied();
            !before.is_some_and(is_word_byte) && !after.is_some_and(is_word_byte)
        })
        .count()
}

/// Files under `root` of `def`'s languages (ignore files respected) that mention any of
/// `names` as a word, most mentions first; `skip` is left out.
pub(crate) fn mentions(
    root: &Path,
    def: &ServerDef,
    names: &[String],
    skip: &Path,
) -> Vec<(PathBuf, usize)> {
    let mut found = Vec::new();
    let walker = ignore::WalkBuilder::new(root)
        .hidden(true)
        .parents(true)
        .filter_entry(|e| {
            !e.file_type().is_some_and(|t| t.is_dir())
                || !crate::discover::SKIP_DIRS.contains(&e.file_name().to_string_lossy().as_ref())
        })
        .build();
    for entry in walker.flatten().take(SCAN_MAX_FILES) {
        let path = entry.path();
        if path == skip || !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        if def.language_of(ext).is_none()
            || entry.metadata().map_or(true, |m| m.len() > SCAN_MAX_BYTES)
        {
            continue;
        }
        let Ok(text) = std::fs::read(path) else { continue };
        let count: usize = names.iter().map(|n| word_count(&text, n)).sum();
        if count > 0 {
            found.push((path.to_path_buf(), count));
        }
    }
    found.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_counted_as_whole_words() {
        assert_eq!(word_count(b"echo(x); echo_all(); re_echo; echo", "echo"), 2);
        assert_eq!(word_count(b"$echo echo$", "echo"), 0);
    }
}
