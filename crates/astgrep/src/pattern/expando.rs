//! Metavariables in a pattern's text: the spelling lint, and the language's expando (how a `$X` is
//! spelled so the grammar parses it).

use super::is_ident_byte;
use crate::{
    error::AstError,
    lang::{Expando, Lang},
};

/// How many `$` a metavariable has: 1 (`$X`), 2 (`$$X`) or 3 (`$$$X`).
pub(crate) type Dollars = u8;

/// `Some((name, dollars))` when `text` (expando-spelled) is exactly one metavariable.
pub(crate) fn metavar_of(lang: Lang, text: &[u8]) -> Option<(String, Dollars)> {
    let text = std::str::from_utf8(text).ok()?;
    let (mark, body) = match lang.expando() {
        Expando::Dollar => ('$', text),
        Expando::Char(c) => (c, text),
        Expando::JsonString => ('µ', text.strip_prefix('"')?.strip_suffix('"')?),
    };
    let mut rest = body.strip_prefix(mark)?;
    let mut dollars: Dollars = 1;
    while dollars < 3
        && let Some(r) = rest.strip_prefix(mark)
    {
        rest = r;
        dollars += 1;
    }
    let name = rest;
    if !name.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_') {
        return None;
    }
    if name.as_bytes().first().is_some_and(u8::is_ascii_digit) {
        return None;
    }
    if dollars != 3 && name.is_empty() {
        return None;
    }
    if dollars == 2 && lang == Lang::Bash {
        return None;
    }
    Some((name.to_string(), dollars))
}

/// `$NAME`, `$$NAME`, `$$$NAME` or `$$$` exactly (a name of uppercase letters, digits and `_`,
/// not starting with a digit).
fn is_metavariable_spelling(text: &str) -> bool {
    let name = text.trim_start_matches('$');
    let dollars = text.len() - name.len();
    (1..=3).contains(&dollars)
        && (!name.is_empty() || dollars == 3)
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
}

/// The pattern with metavariables spelled so the grammar accepts them.
pub(crate) struct Substituted {
    pub(crate) text: String,
    /// For each byte of `text` (and one past the end), the byte offset in the original.
    pub(crate) map: Vec<usize>,
}

/// Checks metavariable spelling and applies the language's expando.
pub(crate) fn substitute(lang: Lang, pattern: &str) -> Result<Substituted, AstError> {
    let bytes = pattern.as_bytes();
    let mut text = String::with_capacity(pattern.len() + 8);
    let mut map = Vec::with_capacity(pattern.len() + 9);
    let push = |text: &mut String, map: &mut Vec<usize>, s: &str, orig: usize| {
        text.push_str(s);
        map.extend(std::iter::repeat_n(orig, s.len()));
    };
    let quotes = lang.quotes();
    let mut in_string: Option<char> = None;
    // The closing quote of a string whose whole content is one metavariable (`"$A"`).
    let mut closing: Option<usize> = None;
    let mut i = 0;
    while i < bytes.len() {
        let Some(c) = pattern[i..].chars().next() else { break };
        let len = c.len_utf8();
        if closing == Some(i) {
            closing = None;
            push(&mut text, &mut map, &pattern[i..i + len], i);
            i += len;
            continue;
        }
        if let Some(q) = in_string {
            if c == '\\' {
                let next_len = pattern[i + 1..].chars().next().map_or(0, char::len_utf8);
                push(&mut text, &mut map, &pattern[i..i + 1 + next_len], i);
                i += 1 + next_len;
                continue;
            }
            if c == q {
                in_string = None;
            }
            push(&mut text, &mut map, &pattern[i..i + len], i);
            i += len;
            continue;
        }
        if quotes.contains(&c) {
            // As in ast-grep, a string holding exactly one metavariable (`f("$A")`) captures
            // its content; any other `$` in a string is text. Not in bash, whose single-quoted
            // strings never expand.
            if lang != Lang::Bash
                && let Some(end) = pattern[i + len..].find(c).map(|e| i + len + e)
                && is_metavariable_spelling(&pattern[i + len..end])
            {
                closing = Some(end);
                push(&mut text, &mut map, &pattern[i..i + len], i);
                i += len;
                continue;
            }
            in_string = Some(c);
            push(&mut text, &mut map, &pattern[i..i + len], i);
            i += len;
            continue;
        }
        if c != '$' {
            push(&mut text, &mut map, &pattern[i..i + len], i);
            i += len;
            continue;
        }
        let meta = dollar_run(lang, pattern, i)?;
        if meta.is_meta {
            spell(lang, pattern, &meta, &mut |s, orig| push(&mut text, &mut map, s, orig));
        } else {
            push(&mut text, &mut map, &pattern[i..meta.end], i);
        }
        i = meta.end;
    }
    map.push(pattern.len());
    Ok(Substituted { text, map })
}

/// A run of `$` at some offset of a pattern, with the name after it.
struct DollarRun {
    start: usize,
    dollars: usize,
    name_start: usize,
    /// Past the name.
    end: usize,
    /// Whether the run is a metavariable (otherwise it is text).
    is_meta: bool,
}

/// Reads the `$` run at `start` and judges it: a metavariable, text, or (outside bash) a
/// misspelt metavariable, an error that says how to spell it.
fn dollar_run(lang: Lang, pattern: &str, start: usize) -> Result<DollarRun, AstError> {
    let bytes = pattern.as_bytes();
    let mut j = start;
    while j < bytes.len() && bytes[j] == b'$' {
        j += 1;
    }
    let dollars = j - start;
    let name_start = j;
    while j < bytes.len() && is_ident_byte(bytes[j]) {
        j += 1;
    }
    let name = &pattern[name_start..j];
    let prev_ident = start > 0 && is_ident_byte(bytes[start - 1]);
    let next_ident = pattern[j..].chars().next().is_some_and(|c| c.is_alphanumeric());
    let upper_ok = !name.as_bytes().first().is_some_and(u8::is_ascii_digit)
        && name.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
    let word_start =
        (0..start).rev().take_while(|k| is_ident_byte(bytes[*k])).last().unwrap_or(start);
    let word = &pattern[word_start..j];
    let is_meta = if lang == Lang::Bash {
        // In bash `$x`, `$1` and `$$` are ordinary expansions: only `$NAME` and `$$$NAME` are metavariables.
        !prev_ident && upper_ok && ((dollars == 1 && !name.is_empty()) || dollars == 3)
    } else if dollars == 1 && name.is_empty() {
        false
    } else if prev_ident || next_ident {
        return Err(AstError::Pattern(format!(
            "`{word}`: a metavariable must stand for a whole node (an identifier, expression or \
             statement), so `$` cannot sit inside a name. Use `$NAME` for the whole name"
        )));
    } else if dollars > 3 || (dollars == 2 && name.is_empty()) {
        return Err(AstError::Pattern(format!(
            "`{word}` is not a metavariable: use `$NAME` for one named node, `$$NAME` for one \
             node that may be a token, or `$$$NAME` for zero or more siblings"
        )));
    } else if !upper_ok {
        let suggestion = name.to_ascii_uppercase();
        let suggestion = if suggestion.as_bytes().first().is_some_and(u8::is_ascii_digit) {
            format!("X{suggestion}")
        } else {
            suggestion
        };
        return Err(AstError::Pattern(format!(
            "`{word}` is not a metavariable: names are uppercase letters, digits and `_` \
             (write `{}{suggestion}`); `$_` matches any node without binding it",
            "$".repeat(dollars)
        )));
    } else {
        true
    };
    Ok(DollarRun { start, dollars, name_start, end: j, is_meta })
}

/// A metavariable spelt with the language's expando, through `push(text, original offset)`.
fn spell(lang: Lang, pattern: &str, meta: &DollarRun, push: &mut dyn FnMut(&str, usize)) {
    let (start, j, dollars) = (meta.start, meta.end, meta.dollars);
    let name = &pattern[meta.name_start..j];
    let bytes = pattern.as_bytes();
    match lang.expando() {
        Expando::Dollar => push(&pattern[start..j], start),
        Expando::Char(e) => {
            let marks: String = std::iter::repeat_n(e, dollars).collect();
            push(&marks, start);
            push(name, meta.name_start);
        }
        Expando::JsonString => {
            let quoted = start > 0 && bytes[start - 1] == b'"' && bytes.get(j) == Some(&b'"');
            let marks: String = std::iter::repeat_n('µ', dollars).collect();
            if !quoted {
                push("\"", start);
            }
            push(&marks, start);
            push(name, meta.name_start);
            if !quoted {
                push("\"", j);
            }
        }
    }
}
