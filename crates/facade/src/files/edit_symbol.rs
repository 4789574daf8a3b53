//! `edit` by name path: the new text of a file whose declaration is replaced whole, or gets a
//! sibling declaration before or after it, indented as it is; every other byte kept.

use agent_tools_support::fs::RelPath;
use schemars::JsonSchema;
use serde::Deserialize;

use super::symbols;

// Where `edit` puts `new_string` relative to the declaration `symbol` names (no doc comment:
// it would go into the schema, and the tool list has a token budget).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Insert {
    Before,
    After,
}

/// The new text of the file, and what the edit did, as the result says it.
pub(super) struct Planned {
    pub updated: String,
    /// Byte offset of the first byte changed.
    pub at: usize,
    pub summary: String,
}

/// `text` with the declaration `name_path` replaced by `new_string`, or `new_string` inserted
/// as its sibling.
pub(super) fn plan(
    rel: &RelPath,
    text: &str,
    name_path: &str,
    new_string: &str,
    insert: Option<Insert>,
) -> Result<Planned, String> {
    let target = symbols::find(rel, text, name_path)?;
    let line_start = text[..target.start_byte].rfind('\n').map_or(0, |i| i + 1);
    let indent: String = text[line_start..target.start_byte]
        .chars()
        .take_while(|c| *c == ' ' || *c == '\t')
        .collect();
    let eol = if text[target.start_byte..].contains("\r\n") { "\r\n" } else { "\n" };
    let body = reindent(new_string, &indent, eol);
    if body.trim().is_empty() {
        return Err(format!(
            "argument `new_string` is empty; give the whole new declaration (to delete {} {}, \
             use old_string with its text)",
            target.kind, target.name_path
        ));
    }
    let what = format!("{} {}", target.kind, target.name_path);
    // A one-line declaration (a field, a macro, a prototype) sits among others like it; a
    // longer one is set apart as its neighbours are.
    let blank = match target.end_line > target.start_line {
        true => target.blank_lines.unwrap_or(1),
        false => 0,
    };
    let gap = eol.repeat(blank);
    let (updated, at, verb) = match insert {
        None => {
            let updated =
                [&text[..target.start_byte], body.as_str(), &text[target.end_byte..]].concat();
            (updated, target.start_byte, "replaced")
        }
        Some(Insert::Before) => {
            let piece = format!("{body}{eol}{gap}{indent}");
            let updated =
                [&text[..target.start_byte], piece.as_str(), &text[target.start_byte..]].concat();
            (updated, target.start_byte, "inserted before")
        }
        Some(Insert::After) => {
            let mut line_end =
                text[target.end_byte..].find('\n').map_or(text.len(), |i| target.end_byte + i);
            if text[..line_end].ends_with('\r') {
                line_end -= 1;
            }
            let piece = format!("{eol}{gap}{indent}{body}");
            let updated = [&text[..line_end], piece.as_str(), &text[line_end..]].concat();
            (updated, line_end + eol.len() + gap.len(), "inserted after")
        }
    };
    if updated == text {
        return Err(format!("`new_string` is the text of {what} already; nothing would change"));
    }
    let first = line_of(&updated, at);
    let last = first + body.matches('\n').count();
    let summary = match insert {
        None => format!(
            "{verb} {what} (was lines {}-{}, now {first}-{last})",
            target.start_line, target.end_line
        ),
        Some(_) => format!("{verb} {what}: lines {first}-{last}"),
    };
    Ok(Planned { updated, at, summary })
}

/// `new_string` without its trailing line breaks, its lines moved left by their common
/// indentation and then right by `indent` (all but the first, which lands after the target's
/// own indentation), line breaks written as `eol`. A first line at column 0 over lines indented
/// deeper than the target is a declaration copied without its first indentation: those lines
/// keep theirs.
fn reindent(new_string: &str, indent: &str, eol: &str) -> String {
    let trimmed = new_string.trim_start_matches(['\n', '\r']).trim_end_matches(['\n', '\r']);
    let lines: Vec<&str> = trimmed.lines().collect();
    let width = |l: &&str| l.len() - l.trim_start_matches([' ', '\t']).len();
    let first = lines.first().map_or(0, width);
    let rest = lines.iter().skip(1).filter(|l| !l.trim().is_empty()).map(width).min();
    let common = match rest {
        Some(rest) if first == 0 && !indent.is_empty() && rest > indent.len() => indent.len(),
        Some(rest) => rest.min(first),
        None => first,
    };
    let mut out = String::new();
    for (i, line) in lines.iter().enumerate() {
        if i > 0 {
            out.push_str(eol);
        }
        if line.trim().is_empty() {
            continue;
        }
        if i > 0 {
            out.push_str(indent);
        }
        let cut = if i == 0 { first.min(common) } else { common };
        out.push_str(line.get(cut..).unwrap_or(line.trim_start()));
    }
    out
}

fn line_of(text: &str, byte: usize) -> usize {
    text[..byte].matches('\n').count() + 1
}
