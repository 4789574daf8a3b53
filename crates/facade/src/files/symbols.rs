//! Declarations of a file by name path, for `read` and `edit`: found in the tree-sitter outline
//! of agent-tools-astgrep (feature `astgrep`); a build without it says so.

use agent_tools_support::fs::RelPath;

/// One declaration as the file tools use it.
#[derive(Debug, Clone)]
pub(super) struct Declaration {
    pub kind: &'static str,
    pub name_path: String,
    /// 1-based lines, doc comment, decorators and attributes included.
    pub start_line: usize,
    pub end_line: usize,
    /// Its bytes: from the first doc comment, decorator or attribute (after the indentation of
    /// its line) to its last byte.
    pub start_byte: usize,
    pub end_byte: usize,
    /// Blank lines between it and the sibling after it (else the one before it), which a new
    /// sibling is separated by.
    pub blank_lines: Option<usize>,
}

/// Most declarations an outline lists.
pub(super) const MAX_OUTLINE_ROWS: usize = 300;

#[cfg(feature = "astgrep")]
mod imp {
    use agent_tools_astgrep::{
        Lang,
        outline::{Outline, Symbol, outline_file},
    };

    use super::*;

    fn outline_of(rel: &RelPath, text: &str) -> Result<Outline, String> {
        match outline_file(std::path::Path::new(&rel.to_string()), text) {
            Some(Ok(outline)) => Ok(outline),
            Some(Err(e)) => Err(format!("{rel} cannot be outlined: {e}")),
            None => Err(format!(
                "{rel} is in no language with an outline (outlines cover {}); read it by lines",
                Lang::built()
                    .filter(|l| *l != Lang::Json)
                    .map(Lang::id)
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }

    /// The declaration `name_path` names in `text`, or why there is not exactly one.
    pub(in crate::files) fn find(
        rel: &RelPath,
        text: &str,
        name_path: &str,
    ) -> Result<Declaration, String> {
        let outline = outline_of(rel, text)?;
        let symbol =
            outline.resolve(name_path).map_err(|e| format!("argument `symbol`: in {rel}, {e}"))?;
        let siblings = siblings(&outline.symbols, symbol).unwrap_or(&outline.symbols);
        let at = siblings.iter().position(|s| std::ptr::eq(s, symbol));
        let gap = |a: &Symbol, b: &Symbol| {
            text.get(a.end_byte..b.start_byte)
                .map(|between| between.matches('\n').count().saturating_sub(1))
        };
        let blank_lines = at.and_then(|i| match (siblings.get(i + 1), i.checked_sub(1)) {
            (Some(next), _) => gap(symbol, next),
            (None, Some(prev)) => gap(&siblings[prev], symbol),
            (None, None) => None,
        });
        Ok(Declaration {
            kind: symbol.kind.as_str(),
            name_path: symbol.name_path.clone(),
            start_line: symbol.start_line,
            end_line: symbol.end_line,
            start_byte: symbol.start_byte,
            end_byte: symbol.end_byte,
            blank_lines,
        })
    }

    /// The list `symbol` is one of.
    fn siblings<'a>(list: &'a [Symbol], symbol: &Symbol) -> Option<&'a [Symbol]> {
        if list.iter().any(|s| std::ptr::eq(s, symbol)) {
            return Some(list);
        }
        list.iter().find_map(|s| siblings(&s.children, symbol))
    }

    /// The outline of `text` as the model reads it (at most `max_rows` declarations), and how
    /// many declarations it has.
    pub(in crate::files) fn outline(
        rel: &RelPath,
        text: &str,
        max_rows: usize,
    ) -> Result<(String, usize), String> {
        let outline = outline_of(rel, text)?;
        let count = outline.flatten().len();
        let mut shown = outline.render(max_rows);
        if !outline.error_lines.is_empty() {
            let lines: Vec<String> = outline.error_lines.iter().map(ToString::to_string).collect();
            shown.push_str(&format!(
                "[{rel} does not parse at line {}: declarations there may be missing]\n",
                lines.join(", ")
            ));
        }
        Ok((shown, count))
    }

    /// Whether `rel` is in a language with an outline.
    pub(in crate::files) fn has_outline(rel: &RelPath) -> bool {
        Lang::from_path(std::path::Path::new(&rel.to_string())).is_some_and(|l| l != Lang::Json)
    }
}

#[cfg(not(feature = "astgrep"))]
mod imp {
    use super::*;

    const NO_OUTLINES: &str = "this build has no outlines (builtin-agent-tools without its `astgrep` feature); address code by lines";

    pub(in crate::files) fn find(_: &RelPath, _: &str, _: &str) -> Result<Declaration, String> {
        Err(NO_OUTLINES.into())
    }

    pub(in crate::files) fn outline(
        _: &RelPath,
        _: &str,
        _: usize,
    ) -> Result<(String, usize), String> {
        Err(NO_OUTLINES.into())
    }

    pub(in crate::files) fn has_outline(_: &RelPath) -> bool {
        false
    }
}

pub(super) use imp::{find, has_outline, outline};
