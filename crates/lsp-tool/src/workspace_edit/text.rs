//! Text edits against file content: positions to byte offsets in the server's column unit,
//! the edits applied, stale ranges found, and each edit described for a model.

use std::path::{Path, PathBuf};

use super::{EditOp, parse::TextChange};
use crate::{
    encoding::{ColumnUnit, byte_offset},
    paths::display_relative,
};

fn offset_of(
    text: &str,
    line_starts: &[usize],
    pos: lsp_types::Position,
    encoding: ColumnUnit,
) -> usize {
    let (line, character) = (pos.line as usize, pos.character);
    let Some(&start) = line_starts.get(line) else { return text.len() };
    let end = line_starts.get(line + 1).copied().unwrap_or(text.len());
    let line_text = text[start..end].trim_end_matches('\n').trim_end_matches('\r');
    start + byte_offset(line_text, character, encoding)
}

/// Applies text edits (ranges in `encoding`) to `text`; overlapping edits are an error.
pub(crate) fn apply_text_edits(
    text: &str,
    edits: &[TextChange],
    encoding: ColumnUnit,
) -> Result<String, String> {
    let mut line_starts = vec![0];
    line_starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
    let mut spans: Vec<(usize, usize, usize, &str)> = edits
        .iter()
        .enumerate()
        .map(|(i, (range, new_text))| {
            let start = offset_of(text, &line_starts, range.start, encoding);
            let end = offset_of(text, &line_starts, range.end, encoding);
            (start, end.max(start), i, new_text.as_str())
        })
        .collect();
    spans.sort_by_key(|&(s, e, i, _)| (s, e, i));
    for pair in spans.windows(2) {
        if pair[1].0 < pair[0].1 {
            return Err("the server sent overlapping edits".into());
        }
    }
    let mut out = text.to_string();
    for &(start, end, _, new_text) in spans.iter().rev() {
        out.replace_range(start..end, new_text);
    }
    Ok(out)
}

/// The files whose edit ranges do not cover `old_name` in their current text: the server
/// computed the edit from a view of the file that is no longer on disk (a formatter, `git
/// checkout` or `sed` changed it). Files the server has open are checked by version instead.
pub(crate) fn stale_files(
    ops: &[EditOp],
    old_name: &str,
    encoding: ColumnUnit,
    is_open: &dyn Fn(&Path) -> bool,
) -> Vec<PathBuf> {
    let mut stale = Vec::new();
    for op in ops {
        let EditOp::Text { path, edits, .. } = op else { continue };
        if is_open(path) || stale.contains(path) {
            continue;
        }
        let Some(text) = crate::paths::read_text(path) else { continue };
        let mut line_starts = vec![0];
        line_starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        let covers = |(range, _): &TextChange| {
            let start = offset_of(&text, &line_starts, range.start, encoding);
            let end = offset_of(&text, &line_starts, range.end, encoding);
            text.get(start..end.max(start)).is_some_and(|slice| slice.contains(old_name))
        };
        if !edits.iter().all(covers) {
            stale.push(path.clone());
        }
    }
    stale
}

/// One line per edit, for a model to see what a code action would change: `path:line:col
/// replace `old` with `new`` (texts cut to 60 characters), and the resource operations.
pub(crate) fn describe_ops(root: &Path, ops: &[EditOp], encoding: ColumnUnit) -> Vec<String> {
    let cut = |t: &str| {
        let one = t.replace('\n', "⏎");
        if one.chars().count() > 60 {
            one.chars().take(60).collect::<String>() + "…"
        } else {
            one
        }
    };
    let mut out = Vec::new();
    for op in ops {
        match op {
            EditOp::Text { path, edits, .. } => {
                let shown = display_relative(root, path);
                let text = crate::paths::read_source(path).unwrap_or_default();
                let mut line_starts = vec![0];
                line_starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
                for (range, new_text) in edits {
                    let start = offset_of(&text, &line_starts, range.start, encoding);
                    let end = offset_of(&text, &line_starts, range.end, encoding);
                    let old = text.get(start..end.max(start)).unwrap_or("");
                    let line = u64::from(range.start.line) + 1;
                    let col = text[line_starts.get(line as usize - 1).copied().unwrap_or(0)
                        ..start.min(text.len())]
                        .chars()
                        .count()
                        + 1;
                    out.push(match (old.is_empty(), new_text.is_empty()) {
                        (true, _) => format!("{shown}:{line}:{col} insert `{}`", cut(new_text)),
                        (false, true) => format!("{shown}:{line}:{col} delete `{}`", cut(old)),
                        _ => format!(
                            "{shown}:{line}:{col} replace `{}` with `{}`",
                            cut(old),
                            cut(new_text)
                        ),
                    });
                }
            }
            EditOp::Create { path, .. } => {
                out.push(format!("create {}", display_relative(root, path)))
            }
            EditOp::Rename { from, to, .. } => out.push(format!(
                "rename {} → {}",
                display_relative(root, from),
                display_relative(root, to)
            )),
            EditOp::Delete { path, .. } => {
                out.push(format!("delete {}", display_relative(root, path)))
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workspace_edit::tests::range;

    #[test]
    fn text_edits_apply_from_the_end_with_utf16_columns() {
        let text = "s = \"é🙂\"; old(old)\nold\n";
        let edits = vec![
            (range(0, 11, 0, 14), "new".to_string()),
            (range(0, 15, 0, 18), "new".to_string()),
            (range(1, 0, 1, 3), "new".to_string()),
        ];
        assert_eq!(
            apply_text_edits(text, &edits, ColumnUnit::Utf16).unwrap(),
            "s = \"é🙂\"; new(new)\nnew\n"
        );
        let overlapping =
            vec![(range(0, 0, 0, 5), "a".to_string()), (range(0, 3, 0, 6), "b".to_string())];
        assert!(apply_text_edits(text, &overlapping, ColumnUnit::Utf16).is_err());
    }
}
