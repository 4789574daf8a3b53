//! Fix and rewrite templates, beside the rules that use them: `$X` substitution with
//! re-indentation, and a file's matches replaced (the edit stager depends on this, never the
//! reverse).

use std::ops::Range;

use crate::{
    error::AstError,
    lang::Lang,
    matcher::RawMatch,
    pattern::Pattern,
    rule::{RuleSet, Transform},
};

/// A parsed rewrite template.
#[derive(Debug, Clone)]
enum Seg {
    Text(String),
    Var(usize),
}

/// Parses a template as ast-grep does: `$NAME` or `$$NAME` is one capture, `$$$NAME` a list;
/// a name starts with `A`–`Z` or `_` and runs over `A`–`Z`, `0`–`9`, `_` (so `$Abc` is `$A`
/// then `bc`, and `$$$$A` is `$` then `$$$A`); any other `$` is text.
fn compile_template(lang: Lang, rewrite: &str, names: &[String]) -> Result<Vec<Seg>, AstError> {
    let bare: Vec<&str> = names.iter().map(|n| n.trim_start_matches('$')).collect();
    let bytes = rewrite.as_bytes();
    let mut segs = Vec::new();
    let mut text = String::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'$' {
            let Some(c) = rewrite[i..].chars().next() else { break };
            text.push(c);
            i += c.len_utf8();
            continue;
        }
        let start = i;
        let mut dollars = 1;
        while dollars < 3 && bytes.get(start + dollars) == Some(&b'$') {
            dollars += 1;
        }
        let name_start = start + dollars;
        let first_ok = bytes.get(name_start).is_some_and(|b| b.is_ascii_uppercase() || *b == b'_');
        if !first_ok {
            // Not a metavariable here: this `$` is text, and the next one may start one.
            text.push('$');
            i = start + 1;
            continue;
        }
        let mut end = name_start;
        while end < bytes.len()
            && (bytes[end].is_ascii_uppercase()
                || bytes[end].is_ascii_digit()
                || bytes[end] == b'_')
        {
            end += 1;
        }
        let name = &rewrite[name_start..end];
        let spelled = &rewrite[start..end];
        i = end;
        if lang == Lang::Bash && dollars == 2 {
            // `$$` is the shell's process id: `$$NAME` is that, then text.
            text.push_str(spelled);
            continue;
        }
        if name.starts_with('_') {
            return Err(AstError::Rewrite(format!(
                "`{spelled}` binds nothing, so it cannot be substituted; name it in the pattern (`$X`) to reuse it"
            )));
        }
        match bare.iter().position(|b| *b == name) {
            Some(index) => {
                if !text.is_empty() {
                    segs.push(Seg::Text(std::mem::take(&mut text)));
                }
                segs.push(Seg::Var(index));
            }
            None if lang == Lang::Bash => text.push_str(spelled),
            None => {
                return Err(AstError::Rewrite(format!(
                    "`{spelled}` is not bound by the pattern; the pattern binds {}{}",
                    if names.is_empty() {
                        "no metavariables".to_string()
                    } else {
                        names.join(", ")
                    },
                    if rewrite[end..].starts_with(|c: char| c.is_ascii_lowercase()) {
                        format!(
                            " (a name is uppercase letters, digits and `_`, so `{spelled}{}` reads as `{spelled}` then text)",
                            rewrite[end..]
                                .chars()
                                .take_while(char::is_ascii_alphanumeric)
                                .collect::<String>()
                        )
                    } else {
                        String::new()
                    }
                )));
            }
        }
    }
    if !text.is_empty() {
        segs.push(Seg::Text(text));
    }
    Ok(segs)
}

/// The text of `range` with the indentation of its first line taken off its later lines: what
/// a transformation reads of a multi-line capture, as in ast-grep.
fn deindented(src: &str, range: std::ops::Range<usize>) -> String {
    let text = &src[range.clone()];
    if !text.contains('\n') {
        return text.to_string();
    }
    let from = line_indent(src, range.start);
    let lines: Vec<&str> = text
        .split('\n')
        .enumerate()
        .map(|(i, l)| if i == 0 { l } else { l.strip_prefix(from).unwrap_or(l.trim_start()) })
        .collect();
    lines.join("\n")
}

fn line_indent(src: &str, offset: usize) -> &str {
    let line_start = src[..offset].rfind('\n').map_or(0, |i| i + 1);
    let line = &src[line_start..];
    let end = line.find(|c: char| c != ' ' && c != '\t').unwrap_or(line.len());
    &line[..end.min(offset - line_start)]
}

/// The replacement for one match: captures substituted, multi-line text re-indented;
/// `values` are the transformed variables, numbered after the captures.
fn expand(segs: &[Seg], m: &RawMatch, src: &str, values: &[String]) -> String {
    let mut out =
        Expansion { out: String::new(), base: line_indent(src, m.replace.start), pending: None };
    let comments = orphans(segs, m, src);
    let mut placed = vec![false; comments.len()];
    for seg in segs {
        if let Seg::Var(_) = seg {
            for (k, (who, text)) in comments.iter().enumerate() {
                if who.is_none() && !placed[k] {
                    out.out.push_str(text);
                    out.out.push(' ');
                    placed[k] = true;
                }
            }
        }
        match seg {
            Seg::Text(t) => out.text(t),
            Seg::Var(index) if *index >= m.captures.len() => {
                out.value(values.get(*index - m.captures.len()).map(String::as_str));
            }
            Seg::Var(index) => {
                if let Some(Some(range)) = m.captures.get(*index) {
                    out.capture(src, range.clone());
                }
            }
        }
        if let Seg::Var(index) = seg {
            for (k, (who, text)) in comments.iter().enumerate() {
                if *who == Some(*index) && !placed[k] {
                    out.out.push(' ');
                    out.out.push_str(text);
                    placed[k] = true;
                }
            }
        }
    }
    for (k, (_, text)) in comments.iter().enumerate() {
        if !placed[k] {
            out.out.push(' ');
            out.out.push_str(text);
        }
    }
    out.out
}

/// Comments inside the replaced code that no capture holds (and the template does not
/// repeat), each with the capture it followed in the source (None: before the first): a
/// rewrite keeps them there.
fn orphans<'s>(segs: &[Seg], m: &RawMatch, src: &'s str) -> Vec<(Option<usize>, &'s str)> {
    let owner = |c: &std::ops::Range<usize>| -> Option<usize> {
        m.captures
            .iter()
            .enumerate()
            .filter_map(|(i, r)| r.as_ref().filter(|r| r.end <= c.start).map(|r| (i, r.end)))
            .max_by_key(|(_, end)| *end)
            .map(|(i, _)| i)
    };
    m.comments
        .iter()
        .map(|c| (owner(c), &src[c.clone()]))
        .filter(|(_, text)| !segs.iter().any(|s| matches!(s, Seg::Text(t) if t.contains(text))))
        .collect()
}

/// A replacement being written, line by line, at the match's indentation.
struct Expansion<'s> {
    out: String,
    /// The indentation of the match's first line in the file.
    base: &'s str,
    /// Indentation owed to the next text on the line (after a capture ending in a line break).
    pending: Option<String>,
}

impl Expansion<'_> {
    /// The indentation the current output line will have in the file: the first line sits at
    /// the match's own line.
    fn current_indent(&self) -> String {
        let at_line = self.out.rfind('\n').map_or(0, |i| i + 1);
        let own: String =
            self.out[at_line..].chars().take_while(|c| *c == ' ' || *c == '\t').collect();
        if at_line == 0 { format!("{}{own}", self.base) } else { own }
    }

    /// Template text: its later lines at the match's indentation.
    fn text(&mut self, t: &str) {
        for (i, piece) in t.split('\n').enumerate() {
            if let Some(indent) = self.pending.take()
                && i == 0
                && !piece.is_empty()
            {
                self.out.push_str(&indent);
            }
            if i > 0 {
                self.out.push('\n');
                if !piece.is_empty() {
                    self.out.push_str(self.base);
                }
            }
            self.out.push_str(piece);
        }
    }

    /// A transformed value: de-indented text (see `Template::values`) whose later lines take
    /// the indentation of the line it lands on, as ast-grep indents it.
    fn value(&mut self, value: Option<&str>) {
        if let Some(indent) = self.pending.take() {
            self.out.push_str(&indent);
        }
        let Some(v) = value else { return };
        let to = self.current_indent();
        for (i, line) in v.split('\n').enumerate() {
            if i > 0 {
                self.out.push('\n');
                if !line.trim().is_empty() {
                    self.out.push_str(&to);
                }
            }
            self.out.push_str(line);
        }
    }

    /// A capture's code, its later lines moved from their indentation in the source to the
    /// line's here.
    fn capture(&mut self, src: &str, range: Range<usize>) {
        let text = &src[range.clone()];
        if let Some(indent) = self.pending.take() {
            self.out.push_str(&indent);
        }
        if !text.contains('\n') {
            self.out.push_str(text);
            return;
        }
        let from = line_indent(src, range.start);
        let to = self.current_indent();
        for (i, line) in text.split('\n').enumerate() {
            if i > 0 {
                self.out.push('\n');
                if !line.trim().is_empty() {
                    self.out.push_str(&to);
                    self.out.push_str(line.strip_prefix(from).unwrap_or(line.trim_start()));
                }
            } else {
                self.out.push_str(line);
            }
        }
        // A capture ending in a line break (Go's newline terminator): what follows on that
        // line lines up with where the capture began.
        if text.ends_with('\n') {
            self.pending = Some(to);
        }
    }
}

/// The source with every kept match replaced: outermost matches win, nested ones are counted.
/// Only the range a match's pattern tokens cover is replaced, so a trailing comment or `;`
/// inside the matched node that the pattern does not mention stays.
pub(crate) fn apply_rewrites(
    src: &str,
    matches: &[RawMatch],
    template: &Template<'_>,
) -> Rewritten {
    let mut matches: Vec<&RawMatch> = matches.iter().collect();
    matches.sort_by(|a, b| a.range.start.cmp(&b.range.start).then(b.range.end.cmp(&a.range.end)));
    let mut kept: Vec<&RawMatch> = Vec::new();
    let mut skipped = 0;
    let mut last_end = 0;
    for m in matches {
        if !kept.is_empty() && m.range.start < last_end {
            skipped += 1;
            continue;
        }
        last_end = m.range.end;
        kept.push(m);
    }
    let mut new = String::with_capacity(src.len());
    let mut edits = Vec::with_capacity(kept.len());
    let mut at = 0;
    for m in &kept {
        new.push_str(&src[at..m.replace.start]);
        let values = template.values(m, src);
        let start = new.len();
        new.push_str(&expand(&template.segs, m, src, &values));
        edits.push((m.replace.clone(), start..new.len()));
        at = m.replace.end;
    }
    new.push_str(&src[at..]);
    Rewritten { text: new, edits, kept: kept.len(), skipped }
}

/// A file's text after its rewrite.
pub(crate) struct Rewritten {
    pub(crate) text: String,
    /// For each replacement, in order: the byte range it replaced in the old text and the range
    /// of its text in the new one.
    pub(crate) edits: Vec<(Range<usize>, Range<usize>)>,
    /// Matches rewritten, and matches skipped because they lie inside (or overlap) one of those.
    pub(crate) kept: usize,
    pub(crate) skipped: usize,
}

/// Rewrites every match of `pattern` in `source` (one file's text) with the template
/// `rewrite`, as `ast_edit` would, and returns the new text. For tests and in-memory hosts.
pub fn rewrite_source(pattern: &Pattern, rewrite: &str, source: &str) -> Result<String, AstError> {
    let segs = compile_template(pattern.lang(), rewrite, &pattern.metavariables())?;
    let matches = crate::match_source(pattern, source);
    let template = Template { segs, transforms: &[], names: pattern.metavariables() };
    Ok(apply_rewrites(source, &matches, &template).text)
}

/// Refuses a rule config's `fix` template that uses a metavariable the rule neither binds
/// nor computes with `transform`, as ast-grep does when it reads the rule.
pub(crate) fn check_fix(
    lang: Lang,
    template: &str,
    vars: &[String],
    transforms: &[(String, Transform)],
) -> Result<(), AstError> {
    Template::new(lang, template, vars.to_vec(), transforms).map(|_| ())
}

/// What the `fix` of `rules` writes for one of its matches (a rewriter's edit).
pub(crate) fn fix_text(rules: &RuleSet, m: &RawMatch, src: &str) -> String {
    let Some(fix) = rules.fix_template() else { return String::new() };
    match Template::new(rules.lang(), fix, rules.metavariables().to_vec(), &rules.transforms) {
        Ok(template) => expand(&template.segs, m, src, &template.values(m, src)),
        // Checked when the rule was compiled.
        Err(_) => String::new(),
    }
}

/// Applies the `fix` of rule config `rules` (with its transforms and expansions) to every match
/// in `source` (one file's text), as `ast_edit` would, and returns the new text. For tests and
/// in-memory hosts.
pub fn fix_source(rules: &RuleSet, source: &str) -> Result<String, AstError> {
    let fix = rules.fix_template().ok_or_else(|| {
        AstError::Rewrite(
            "the rule config has no `fix`: give one, as a string or {template}".into(),
        )
    })?;
    let template =
        Template::new(rules.lang(), fix, rules.metavariables().to_vec(), &rules.transforms)?;
    Ok(apply_rewrites(source, &rules.match_source(source), &template).text)
}

/// A compiled rewrite: segments, and the transformations that compute extra variables.
pub(crate) struct Template<'a> {
    segs: Vec<Seg>,
    transforms: &'a [(String, Transform)],
    /// Capture names (`$X`, `$$$X`), indexed like `RawMatch::captures`.
    names: Vec<String>,
}

impl<'a> Template<'a> {
    /// Compiles `rewrite` for captures `names` and the variables `transforms` compute.
    pub(crate) fn new(
        lang: Lang,
        rewrite: &str,
        names: Vec<String>,
        transforms: &'a [(String, Transform)],
    ) -> Result<Template<'a>, AstError> {
        let mut all_names = names.clone();
        all_names.extend(transforms.iter().map(|(n, _)| format!("${n}")));
        let segs = compile_template(lang, rewrite, &all_names)?;
        Ok(Template { segs, transforms, names })
    }

    /// The transformed variables of one match, in order.
    fn values(&self, m: &RawMatch, src: &str) -> Vec<String> {
        let mut values: Vec<String> = Vec::with_capacity(self.transforms.len());
        for (i, (_, t)) in self.transforms.iter().enumerate() {
            if let Some((_, text)) = m.rewritten.iter().find(|(at, _)| *at == i) {
                values.push(text.clone());
                continue;
            }
            let name = t.source_name();
            let from_capture = self
                .names
                .iter()
                .position(|n| n.trim_start_matches('$') == name)
                .and_then(|at| m.captures.get(at).cloned().flatten())
                .map(|r| deindented(src, r));
            let text = from_capture.or_else(|| {
                self.transforms[..i]
                    .iter()
                    .position(|(n, _)| n == name)
                    .map(|at| values[at].clone())
            });
            values.push(t.apply(&text.unwrap_or_default()));
        }
        values
    }
}
