//! Unified diffs: parsing, and applying every hunk in memory before anything is written.

use std::path::Path;

/// One file section of a unified diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct FilePatch {
    /// `None` for `/dev/null` (the file is created).
    pub old_path: Option<String>,
    /// `None` for `/dev/null` (the file is deleted).
    pub new_path: Option<String>,
    pub hunks: Vec<Hunk>,
}

impl FilePatch {
    /// The path the section is about, for messages.
    pub(super) fn path(&self) -> &str {
        self.new_path.as_deref().or(self.old_path.as_deref()).unwrap_or("?")
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Hunk {
    pub old_start: usize,
    pub header: String,
    pub lines: Vec<HunkLine>,
    /// `\ No newline at end of file` followed the last new-side line.
    pub new_missing_newline: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum HunkLine {
    Context(String),
    Remove(String),
    Add(String),
}

fn strip_prefix_path(raw: &str) -> Option<String> {
    // `--- a/x\t2024-01-01` — drop a timestamp after a tab.
    let raw = raw.split('\t').next().unwrap_or(raw).trim_end();
    if raw == "/dev/null" { None } else { Some(raw.to_string()) }
}

fn parse_range_start(spec: &str) -> Option<usize> {
    spec.split(',').next()?.parse().ok()
}

/// Parses a unified diff (plain or `git diff` style) into file sections.
pub(super) fn parse(patch: &str) -> Result<Vec<FilePatch>, String> {
    let lines: Vec<&str> = patch.lines().collect();
    let mut files: Vec<FilePatch> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if let Some(old) = line.strip_prefix("--- ") {
            let Some(new) = lines.get(i + 1).and_then(|l| l.strip_prefix("+++ ")) else {
                return Err(format!(
                    "line {}: `--- {old}` is not followed by a `+++ ` line",
                    i + 1
                ));
            };
            let (mut old_path, mut new_path) = (strip_prefix_path(old), strip_prefix_path(new));
            // git style: a/ and b/ prefixes on both sides (or one side /dev/null).
            let git_style = old_path.as_deref().is_none_or(|p| p.starts_with("a/"))
                && new_path.as_deref().is_none_or(|p| p.starts_with("b/"));
            if git_style {
                old_path = old_path.map(|p| p[2..].to_string());
                new_path = new_path.map(|p| p[2..].to_string());
            }
            if old_path.is_none() && new_path.is_none() {
                return Err(format!("line {}: both sides are /dev/null", i + 1));
            }
            files.push(FilePatch { old_path, new_path, hunks: Vec::new() });
            i += 2;
            continue;
        }
        if line.starts_with("@@") {
            let Some(file) = files.last_mut() else {
                return Err(format!(
                    "line {}: hunk header before any `---`/`+++` file header",
                    i + 1
                ));
            };
            let inner = line.trim_start_matches('@').trim_start();
            let old_spec =
                inner.split_whitespace().next().and_then(|s| s.strip_prefix('-')).ok_or_else(
                    || {
                        format!(
                            "line {}: malformed hunk header `{line}`; expected `@@ -12,5 +12,6 @@`",
                            i + 1
                        )
                    },
                )?;
            let old_start = parse_range_start(old_spec)
                .ok_or_else(|| format!("line {}: malformed hunk header `{line}`", i + 1))?;
            let mut hunk = Hunk {
                old_start,
                header: line.to_string(),
                lines: Vec::new(),
                new_missing_newline: false,
            };
            i += 1;
            while i < lines.len() {
                let body = lines[i];
                if body.starts_with("@@")
                    || body.starts_with("--- ")
                        && lines.get(i + 1).is_some_and(|l| l.starts_with("+++ "))
                {
                    break;
                }
                if body.starts_with("diff ") {
                    break;
                }
                match body.chars().next() {
                    Some(' ') => hunk.lines.push(HunkLine::Context(body[1..].to_string())),
                    Some('-') => hunk.lines.push(HunkLine::Remove(body[1..].to_string())),
                    Some('+') => hunk.lines.push(HunkLine::Add(body[1..].to_string())),
                    Some('\\') => {
                        if matches!(
                            hunk.lines.last(),
                            Some(HunkLine::Add(_)) | Some(HunkLine::Context(_))
                        ) {
                            hunk.new_missing_newline = true;
                        }
                    }
                    // An empty line inside a hunk is an empty context line (editors strip the space).
                    None => hunk.lines.push(HunkLine::Context(String::new())),
                    Some(_) => break,
                }
                i += 1;
            }
            file.hunks.push(hunk);
            continue;
        }
        i += 1;
    }
    if files.is_empty() {
        return Err("argument `patch`: no file sections found; expected a unified diff with `--- a/path`, `+++ b/path` and `@@ -l,n +l,n @@` hunks".into());
    }
    for file in &files {
        if file.hunks.is_empty() && file.old_path.is_some() && file.new_path.is_some() {
            return Err(format!("argument `patch`: the section for {} has no hunks", file.path()));
        }
    }
    Ok(files)
}

/// Applies `file`'s hunks to `original` (absent for a new file) and returns the new text.
pub(super) fn apply(
    file: &FilePatch,
    original: Option<&str>,
    shown_path: &Path,
) -> Result<String, String> {
    let original = original.unwrap_or("");
    let crlf = original.contains("\r\n");
    let newline = if crlf { "\r\n" } else { "\n" };
    let ends_with_newline = original.is_empty() || original.ends_with('\n');
    let mut lines: Vec<String> =
        original.lines().map(|l| l.trim_end_matches('\r').to_string()).collect();
    let mut cursor = 0usize;
    let mut missing_newline_at_end = !ends_with_newline;
    for (n, hunk) in file.hunks.iter().enumerate() {
        let old: Vec<&str> = hunk
            .lines
            .iter()
            .filter_map(|l| match l {
                HunkLine::Context(s) | HunkLine::Remove(s) => Some(s.as_str()),
                HunkLine::Add(_) => None,
            })
            .collect();
        let new: Vec<String> = hunk
            .lines
            .iter()
            .filter_map(|l| match l {
                HunkLine::Context(s) | HunkLine::Add(s) => Some(s.clone()),
                HunkLine::Remove(_) => None,
            })
            .collect();
        let hint = hunk.old_start.saturating_sub(1).max(cursor);
        let at = find_block(&lines, &old, hint, cursor).ok_or_else(|| {
            let first = old.first().copied().unwrap_or("");
            format!(
                "hunk {} of {} ({}) does not apply: its {} original line(s) starting with {:?} were not found \
                 at or after line {}; the file may differ from what the patch expects, read it again and \
                 regenerate the patch",
                n + 1,
                shown_path.display(),
                hunk.header,
                old.len(),
                first,
                cursor + 1
            )
        })?;
        let touches_end = at + old.len() == lines.len();
        lines.splice(at..at + old.len(), new.iter().cloned());
        cursor = at + new.len();
        if touches_end {
            missing_newline_at_end = hunk.new_missing_newline;
        }
    }
    let mut text = lines.join(newline);
    if !lines.is_empty() && !missing_newline_at_end {
        text.push_str(newline);
    }
    Ok(text)
}

/// Where `block` occurs in `lines` at or after `min`, nearest to `hint` first.
fn find_block(lines: &[String], block: &[&str], hint: usize, min: usize) -> Option<usize> {
    let matches_at = |at: usize| {
        at + block.len() <= lines.len()
            && block.iter().enumerate().all(|(k, l)| lines[at + k] == *l)
    };
    if block.is_empty() {
        return Some(hint.min(lines.len()));
    }
    let last = lines.len().checked_sub(block.len())?;
    let hint = hint.clamp(min, last.max(min));
    for distance in 0..=lines.len() {
        let after = hint + distance;
        if after <= last && matches_at(after) {
            return Some(after);
        }
        if distance > 0 && hint >= distance + min && matches_at(hint - distance) {
            return Some(hint - distance);
        }
        if after > last && hint < distance + min {
            break;
        }
    }
    None
}
