//! The unified diff of a rewrite, built from the replaced ranges themselves: each replaced byte
//! range is a known change, so only the lines it touches are compared, never the whole file (a
//! whole-file line diff is quadratic in the lines a rewrite adds: 100 s for 100,000 lines).

use std::ops::Range;

use similar::{Algorithm, DiffOp, DiffTag, algorithms::Capture};

/// Lines around each change, as `diff -u` shows them.
const CONTEXT: usize = 3;

/// Above this many lines (old and new together) the changed lines of one region are shown as
/// removed then added, without a line diff inside them (Myers is quadratic in that size).
const MAX_LINE_DIFF: usize = 2_000;

/// Where each line of a text starts; a text ending in a line break has one more start, at its
/// end (an empty last "line" that is never shown).
struct Lines<'a> {
    text: &'a str,
    starts: Vec<usize>,
}

impl<'a> Lines<'a> {
    fn new(text: &'a str) -> Lines<'a> {
        let mut starts = Vec::with_capacity(text.len() / 32 + 1);
        starts.push(0);
        starts.extend(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| i + 1));
        Lines { text, starts }
    }

    /// The index of the line starting at byte `offset`, which must be a line start.
    fn index_of_start(&self, offset: usize) -> usize {
        self.starts.partition_point(|s| *s < offset)
    }

    /// The start of the line holding byte `offset`.
    fn line_start(&self, offset: usize) -> usize {
        self.starts[self.starts.partition_point(|s| *s <= offset).max(1) - 1]
    }

    /// The end (after the line break) of the line holding byte `offset`; the text's end for the
    /// last line.
    fn line_end(&self, offset: usize) -> usize {
        let next = self.starts.partition_point(|s| *s <= offset);
        self.starts.get(next).copied().unwrap_or(self.text.len())
    }

    /// Line `i`, with its line break.
    fn line(&self, i: usize) -> &'a str {
        let end = self.starts.get(i + 1).copied().unwrap_or(self.text.len());
        &self.text[self.starts[i]..end]
    }

    /// Lines `range`, each with its line break.
    fn slice(&self, range: Range<usize>) -> Vec<&'a str> {
        range.map(|i| self.line(i)).collect()
    }

    /// How many lines the text has (the empty one after a final line break not counted).
    fn count(&self) -> usize {
        if self.starts.last() == Some(&self.text.len()) {
            self.starts.len() - 1
        } else {
            self.starts.len()
        }
    }
}

/// The unified diff (`--- a/REL`, `+++ b/REL`, hunks with 3 lines of context) of `old` turned
/// into `new` by `edits`: for each replacement, in order and not overlapping, the byte range
/// it replaced in `old` and the range of its text in `new`.
pub(super) fn unified(
    old: &str,
    new: &str,
    edits: &[(Range<usize>, Range<usize>)],
    rel: &str,
) -> String {
    let (a, b) = (Lines::new(old), Lines::new(new));
    // Regions of whole lines, in both texts, holding every replacement: a region's text before
    // its first replacement and after its last is the same on both sides, and so is everything
    // between two regions.
    let mut regions: Vec<(Range<usize>, Range<usize>)> = Vec::new();
    for (o, n) in edits {
        let (os, ns) = (a.line_start(o.start), b.line_start(n.start));
        let (oe, ne) = (a.line_end(o.end.max(o.start)), b.line_end(n.end.max(n.start)));
        match regions.last_mut() {
            Some((ro, rn)) if os < ro.end || ns < rn.end => {
                ro.end = ro.end.max(oe);
                rn.end = rn.end.max(ne);
            }
            _ => regions.push((os..oe, ns..ne)),
        }
    }
    let mut ops: Vec<DiffOp> = Vec::new();
    let (mut old_at, mut new_at) = (0, 0);
    for (ro, rn) in regions {
        let (o0, n0) = (a.index_of_start(ro.start), b.index_of_start(rn.start));
        let o1 = if ro.end == old.len() { a.count() } else { a.index_of_start(ro.end) };
        let n1 = if rn.end == new.len() { b.count() } else { b.index_of_start(rn.end) };
        if o0 > old_at {
            push(
                &mut ops,
                DiffOp::Equal { old_index: old_at, new_index: new_at, len: o0 - old_at },
            );
        }
        region_ops(&a, &b, o0..o1, n0..n1, &mut ops);
        (old_at, new_at) = (o1, n1);
    }
    if a.count() > old_at {
        let len = a.count() - old_at;
        push(&mut ops, DiffOp::Equal { old_index: old_at, new_index: new_at, len });
    }
    let mut out = String::new();
    for (i, hunk) in similar::group_diff_ops(ops, CONTEXT).iter().enumerate() {
        if i == 0 {
            out.push_str(&format!("--- a/{rel}\n+++ b/{rel}\n"));
        }
        write_hunk(&mut out, hunk, &a, &b);
    }
    out
}

/// The operations of one region: equal lines at either end, and a line diff of the rest when
/// it is small, else its lines removed then added.
fn region_ops(
    a: &Lines<'_>,
    b: &Lines<'_>,
    old: Range<usize>,
    new: Range<usize>,
    ops: &mut Vec<DiffOp>,
) {
    let (mut o0, mut n0, mut o1, mut n1) = (old.start, new.start, old.end, new.end);
    let head = o0;
    while o0 < o1 && n0 < n1 && a.line(o0) == b.line(n0) {
        o0 += 1;
        n0 += 1;
    }
    if o0 > head {
        push(ops, DiffOp::Equal { old_index: head, new_index: new.start, len: o0 - head });
    }
    let mut tail = 0;
    while o1 > o0 && n1 > n0 && a.line(o1 - 1) == b.line(n1 - 1) {
        o1 -= 1;
        n1 -= 1;
        tail += 1;
    }
    match (o1 - o0, n1 - n0) {
        (0, 0) => {}
        (0, new_len) => push(ops, DiffOp::Insert { old_index: o0, new_index: n0, new_len }),
        (old_len, 0) => push(ops, DiffOp::Delete { old_index: o0, old_len, new_index: n0 }),
        (old_len, new_len) if old_len + new_len > MAX_LINE_DIFF => {
            push(ops, DiffOp::Replace { old_index: o0, old_len, new_index: n0, new_len });
        }
        _ => {
            let (x, y) = (a.slice(o0..o1), b.slice(n0..n1));
            // Plain Myers operations, in order: `capture_diff_slices` also compacts them, and a
            // compacted sequence may step back in the old text (an insertion placed before the
            // equal line that precedes it), which the joining below must not see.
            let mut capture = Capture::new();
            let _ = similar::algorithms::diff_slices(Algorithm::Myers, &mut capture, &x, &y);
            for op in capture.into_ops() {
                push(ops, shifted(op, o0, n0));
            }
        }
    }
    if tail > 0 {
        push(ops, DiffOp::Equal { old_index: o1, new_index: n1, len: tail });
    }
}

/// Appends `op`, joined to the run it continues: equal lines to equal lines (a hunk's context is
/// counted per run), changed lines to changed lines (shown as one block removed, then added, as
/// `diff -u` shows adjacent changed lines).
fn push(ops: &mut Vec<DiffOp>, op: DiffOp) {
    let Some(last) = ops.last_mut() else {
        ops.push(op);
        return;
    };
    match (*last, op) {
        (DiffOp::Equal { old_index, new_index, len }, DiffOp::Equal { len: more, .. }) => {
            *last = DiffOp::Equal { old_index, new_index, len: len + more };
        }
        (DiffOp::Equal { .. }, _) | (_, DiffOp::Equal { .. }) => ops.push(op),
        (before, after) => {
            let (old, new) = (before.old_range(), before.new_range());
            *last = DiffOp::Replace {
                old_index: old.start,
                old_len: after.old_range().end - old.start,
                new_index: new.start,
                new_len: after.new_range().end - new.start,
            };
        }
    }
}

/// `op` with its line indices moved by `old` and `new`.
fn shifted(op: DiffOp, old: usize, new: usize) -> DiffOp {
    match op {
        DiffOp::Equal { old_index, new_index, len } => {
            DiffOp::Equal { old_index: old_index + old, new_index: new_index + new, len }
        }
        DiffOp::Delete { old_index, old_len, new_index } => {
            DiffOp::Delete { old_index: old_index + old, old_len, new_index: new_index + new }
        }
        DiffOp::Insert { old_index, new_index, new_len } => {
            DiffOp::Insert { old_index: old_index + old, new_index: new_index + new, new_len }
        }
        DiffOp::Replace { old_index, old_len, new_index, new_len } => DiffOp::Replace {
            old_index: old_index + old,
            old_len,
            new_index: new_index + new,
            new_len,
        },
    }
}

/// `start,len` as a hunk header writes it: `start` alone for one line, the line before for none.
fn hunk_range(range: Range<usize>) -> String {
    match range.len() {
        1 => format!("{}", range.start + 1),
        0 => format!("{},0", range.start),
        len => format!("{},{len}", range.start + 1),
    }
}

fn write_hunk(out: &mut String, hunk: &[DiffOp], a: &Lines<'_>, b: &Lines<'_>) {
    let (Some(first), Some(last)) = (hunk.first(), hunk.last()) else { return };
    out.push_str(&format!(
        "@@ -{} +{} @@\n",
        hunk_range(first.old_range().start..last.old_range().end),
        hunk_range(first.new_range().start..last.new_range().end)
    ));
    let mut line = |tag: char, text: &str| {
        out.push(tag);
        out.push_str(text);
        if !text.ends_with('\n') {
            out.push_str("\n\\ No newline at end of file\n");
        }
    };
    for op in hunk {
        let (tag, old, new) = op.as_tag_tuple();
        match tag {
            DiffTag::Equal => old.for_each(|i| line(' ', a.line(i))),
            DiffTag::Delete => old.for_each(|i| line('-', a.line(i))),
            DiffTag::Insert => new.for_each(|i| line('+', b.line(i))),
            DiffTag::Replace => {
                old.for_each(|i| line('-', a.line(i)));
                new.for_each(|i| line('+', b.line(i)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Applies a unified diff to `old`: what `patch` would make of it.
    fn apply(old: &str, diff: &str) -> String {
        let lines: Vec<&str> = old.split_inclusive('\n').collect();
        let mut out = String::new();
        let mut at = 0;
        let mut rows = diff.split_inclusive('\n').peekable();
        while let Some(row) = rows.next() {
            if row.starts_with("---") || row.starts_with("+++") {
                continue;
            }
            if let Some(header) = row.strip_prefix("@@ -") {
                let old_range = header.split(' ').next().unwrap_or_default();
                let (start, len) = match old_range.split_once(',') {
                    Some((s, l)) => (s.parse::<usize>().unwrap(), l.parse::<usize>().unwrap()),
                    None => (old_range.parse::<usize>().unwrap(), 1),
                };
                let first = if len == 0 { start } else { start - 1 };
                while at < first {
                    out.push_str(lines[at]);
                    at += 1;
                }
                continue;
            }
            let no_newline = rows.peek().is_some_and(|r| r.starts_with("\\ No newline"));
            let text = &row[1..];
            let text = if no_newline { text.strip_suffix('\n').unwrap_or(text) } else { text };
            if no_newline {
                rows.next();
            }
            match &row[..1] {
                " " => {
                    assert_eq!(lines[at], text, "context line {at}");
                    out.push_str(text);
                    at += 1;
                }
                "-" => {
                    assert_eq!(lines[at], text, "removed line {at}");
                    at += 1;
                }
                "+" => out.push_str(text),
                other => panic!("unexpected diff row {other:?}"),
            }
        }
        for l in &lines[at..] {
            out.push_str(l);
        }
        out
    }

    /// `old` with `edits` (byte range, replacement) applied, and the ranges in both texts.
    fn rewrite(
        old: &str,
        edits: &[(Range<usize>, &str)],
    ) -> (String, Vec<(Range<usize>, Range<usize>)>) {
        let mut new = String::new();
        let mut ranges = Vec::new();
        let mut at = 0;
        for (r, text) in edits {
            new.push_str(&old[at..r.start]);
            let start = new.len();
            new.push_str(text);
            ranges.push((r.clone(), start..new.len()));
            at = r.end;
        }
        new.push_str(&old[at..]);
        (new, ranges)
    }

    fn check(old: &str, edits: &[(Range<usize>, &str)]) -> String {
        let (new, ranges) = rewrite(old, edits);
        let diff = unified(old, &new, &ranges, "f");
        assert_eq!(apply(old, &diff), new, "diff:\n{diff}");
        diff
    }

    #[test]
    fn a_replaced_line_is_one_hunk_with_its_context() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\n";
        let diff = check(old, &[(6..7, "D")]);
        assert_eq!(diff, "--- a/f\n+++ b/f\n@@ -1,7 +1,7 @@\n a\n b\n c\n-d\n+D\n e\n f\n g\n");
    }

    #[test]
    fn the_same_as_a_whole_file_line_diff_on_small_rewrites() {
        let old: String = (0..40).map(|i| format!("line {i}\n")).collect();
        let at = |line: usize| old.match_indices('\n').nth(line).map_or(0, |(i, _)| i + 1);
        let cases: Vec<Vec<(Range<usize>, &str)>> = vec![
            vec![(at(3)..at(4), "x\ny\n")],
            vec![(at(3)..at(3) + 4, "LINE"), (at(20)..at(22), "")],
            vec![(at(0)..at(0), "first\n"), (at(39)..old.len(), "last")],
            vec![(at(10) + 2..at(12) + 3, "n\nm"), (at(12) + 4..at(12) + 5, "Q")],
        ];
        for edits in cases {
            let (new, ranges) = rewrite(&old, &edits);
            let ours = check(&old, &edits);
            let whole = similar::TextDiff::from_lines(old.as_str(), new.as_str())
                .unified_diff()
                .context_radius(3)
                .header("a/f", "b/f")
                .to_string();
            assert_eq!(ours, whole, "edits {ranges:?}");
        }
    }

    #[test]
    fn edits_at_the_ends_and_without_final_newline_apply() {
        check("x", &[(0..1, "y\n")]);
        check("a\n", &[(2..2, "b\n")]);
        check("a\nb", &[(2..3, "c\nd")]);
        check("a\nb\n", &[(0..1, ""), (2..4, "")]);
        check("", &[(0..0, "new\n")]);
        check("p\nq\nr\n", &[(0..1, "P"), (1..2, "\n\n"), (4..5, "R")]);
    }

    #[test]
    fn adjacent_changed_lines_are_one_block_removed_then_added() {
        let old: String = (0..1000).map(|i| format!("print({i})\n")).collect();
        let edits: Vec<(Range<usize>, &str)> =
            old.match_indices("print").map(|(i, _)| (i..i + 5, "log")).collect();
        let diff = check(&old, &edits);
        let removed: String = (0..1000).map(|i| format!("-print({i})\n")).collect();
        let added: String = (0..1000).map(|i| format!("+log({i})\n")).collect();
        assert_eq!(diff, format!("--- a/f\n+++ b/f\n@@ -1,1000 +1,1000 @@\n{removed}{added}"));
    }

    proptest::proptest! {
        /// Any set of replacements: the diff applied to the old text gives the new text.
        #[test]
        fn the_diff_of_any_rewrite_applies(
            old in "[ab\n]{0,60}",
            cuts in proptest::collection::vec((0usize..60, 0usize..4, "[abc\n]{0,6}"), 0..6),
        ) {
            let mut edits: Vec<(Range<usize>, &str)> = Vec::new();
            let mut at = 0;
            let mut sorted = cuts.clone();
            sorted.sort_by_key(|c| c.0);
            for (start, len, text) in &sorted {
                let start = (*start).max(at).min(old.len());
                let end = (start + len).min(old.len());
                edits.push((start..end, text.as_str()));
                at = end;
            }
            check(&old, &edits);
        }
    }
}
