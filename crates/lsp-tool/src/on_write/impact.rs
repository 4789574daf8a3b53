//! The impact set of a write: the files whose diagnostics a change can alter, beyond the
//! written ones.
//!
//! Asked of the server while it still has the old text (a renamed or removed declaration has
//! no references once the new text is in): the outline's declarations that the changed lines
//! touch, then the references of each. Where the server cannot answer for the whole project
//! (no references, an error, still indexing), a scan of the project's files of the same
//! language for the changed names (ignore files respected) stands in. Files are ordered
//! nearest first: most references, then most mentions.

use std::{
    collections::BTreeMap,
    ops::Range,
    path::{Path, PathBuf},
    time::Instant,
};

use lsp_types::{
    DocumentSymbol, DocumentSymbolResponse, SymbolKind,
    request::{DocumentSymbolRequest, References},
};
use tokio_util::sync::CancellationToken;

use crate::{
    paths::{path_from_uri, uri_from_path},
    server::{Server, join_all},
};

/// The hunks of lines the old text has that the new one changes or removes (0-based, end
/// exclusive; a pure insertion is an empty range where it goes), from a line diff bounded in
/// time (past it, coarser hunks).
pub(crate) fn changed_hunks(old: &str, new: &str) -> Vec<Range<u32>> {
    if old == new {
        return Vec::new();
    }
    similar::TextDiff::configure()
        .timeout(std::time::Duration::from_millis(200))
        .diff_lines(old, new)
        .ops()
        .iter()
        .filter(|op| op.tag() != similar::DiffTag::Equal)
        .map(|op| {
            let r = op.old_range();
            r.start as u32..r.end as u32
        })
        .collect()
}

/// One declaration of a document's outline.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Declaration {
    pub name: String,
    /// Lines it spans (0-based, inclusive).
    pub lines: (u32, u32),
    /// Where its name is (line, character in the server's encoding).
    pub at: (u32, u32),
    /// Declared inside a function or method body (a local: nothing outside sees it).
    pub local: bool,
    /// A module, namespace or package: too wide to stand for a change inside it.
    pub container: bool,
    /// Index of the enclosing declaration in the flattened outline.
    pub parent: Option<usize>,
}

/// The outline of a `textDocument/documentSymbol` answer, flattened (hierarchical answers
/// keep their nesting as `parent`; flat `SymbolInformation` answers have none).
pub(crate) fn outline(answer: &DocumentSymbolResponse) -> Vec<Declaration> {
    fn container(kind: SymbolKind) -> bool {
        matches!(
            kind,
            SymbolKind::FILE | SymbolKind::MODULE | SymbolKind::NAMESPACE | SymbolKind::PACKAGE
        )
    }
    fn walk(
        items: &[DocumentSymbol],
        parent: Option<usize>,
        local: bool,
        out: &mut Vec<Declaration>,
    ) {
        for item in items {
            let index = out.len();
            out.push(Declaration {
                name: item.name.clone(),
                lines: (item.range.start.line, item.range.end.line),
                at: (item.selection_range.start.line, item.selection_range.start.character),
                local,
                container: container(item.kind),
                parent,
            });
            // What a function, method or constructor declares inside is local.
            let body_is_local = local
                || matches!(
                    item.kind,
                    SymbolKind::FUNCTION | SymbolKind::METHOD | SymbolKind::CONSTRUCTOR
                );
            if let Some(children) = &item.children {
                walk(children, Some(index), body_is_local, out);
            }
        }
    }
    let mut out = Vec::new();
    match answer {
        DocumentSymbolResponse::Nested(items) => walk(items, None, false, &mut out),
        DocumentSymbolResponse::Flat(items) => out.extend(items.iter().map(|i| Declaration {
            name: i.name.clone(),
            lines: (i.location.range.start.line, i.location.range.end.line),
            at: (i.location.range.start.line, i.location.range.start.character),
            local: false,
            container: container(i.kind),
            parent: None,
        })),
    }
    out
}

/// The declarations the changed `lines` (of the old text) touch: for each changed line the
/// innermost declaration that is visible outside its file's bodies (no locals, no modules).
pub(crate) fn touched(outline: &[Declaration], lines: &Range<u32>) -> Vec<Declaration> {
    // A pure insertion touches the line it is inserted before.
    let (first, last) = (lines.start, lines.end.max(lines.start + 1) - 1);
    let overlaps = |d: &Declaration| d.lines.0 <= last && first <= d.lines.1;
    let eligible: Vec<usize> = (0..outline.len())
        .filter(|&i| !outline[i].local && !outline[i].container && overlaps(&outline[i]))
        .collect();
    let has_eligible_child = |i: usize| {
        eligible.iter().any(|&j| {
            let mut p = outline[j].parent;
            while let Some(k) = p {
                if k == i {
                    return true;
                }
                p = outline[k].parent;
            }
            false
        })
    };
    let mut out: Vec<Declaration> = Vec::new();
    for &i in &eligible {
        if !has_eligible_child(i) && !out.iter().any(|d| d.name == outline[i].name) {
            out.push(outline[i].clone());
        }
    }
    out
}

/// What the old text's references say about the files a change can affect.
#[derive(Debug, Default)]
pub(crate) struct Impact {
    /// Files the change can affect, nearest first, with how many references or mentions each.
    pub files: Vec<(PathBuf, usize)>,
    /// The changed declarations' names.
    pub names: Vec<String>,
    /// Why the server's references were not the whole answer (the scan stood in), if so.
    pub scanned_because: Option<String>,
}

/// How many changed declarations are followed per written file.
const MAX_DECLARATIONS: usize = 12;

/// The impact of replacing `old` by `new` in `path`, asked of `server` while it has `old`.
/// Every request ends by `deadline`.
pub(crate) async fn impact_of(
    server: &Server,
    path: &Path,
    old: &str,
    new: Option<&str>,
    deadline: Instant,
    cancel: &CancellationToken,
) -> Impact {
    let deleted = new.is_none();
    let new = new.unwrap_or("");
    let hunks = changed_hunks(old, new);
    if hunks.is_empty() {
        return Impact::default();
    }
    let Some(uri) = uri_from_path(path) else { return Impact::default() };
    let document = lsp_types::TextDocumentIdentifier { uri };
    let mut impact = Impact::default();
    let mut outline_empty = true;
    let declarations = if server.supports("documentSymbolProvider") {
        let params = lsp_types::DocumentSymbolParams {
            text_document: document.clone(),
            work_done_progress_params: Default::default(),
            partial_result_params: Default::default(),
        };
        match server.call_until::<DocumentSymbolRequest>(params, deadline, cancel).await {
            Ok(answer) => {
                let outline = answer.as_ref().map(outline).unwrap_or_default();
                outline_empty = outline.is_empty();
                let mut all: Vec<Declaration> = Vec::new();
                for hunk in &hunks {
                    for d in touched(&outline, hunk) {
                        if !all.iter().any(|a| a.name == d.name) {
                            all.push(d);
                        }
                    }
                }
                all
            }
            Err(e) => {
                impact.scanned_because = Some(format!("the outline failed: {e}"));
                Vec::new()
            }
        }
    } else {
        impact.scanned_because = Some("the server has no outline".into());
        Vec::new()
    };
    let declarations: Vec<Declaration> = declarations.into_iter().take(MAX_DECLARATIONS).collect();
    impact.names = declarations.iter().map(|d| d.name.clone()).collect();
    if outline_empty {
        // A cold server's outline can be empty: the names the changed lines declare stand in.
        for hunk in &hunks {
            for name in declared_names(old, new, hunk) {
                if !impact.names.contains(&name) && impact.names.len() < MAX_DECLARATIONS {
                    impact.names.push(name);
                }
            }
        }
        if !impact.names.is_empty() && impact.scanned_because.is_none() {
            impact.scanned_because = Some("the server's outline did not cover the change".into());
        }
    }
    impact.names.retain(|n| !n.is_empty());
    let mut referenced: BTreeMap<PathBuf, usize> = BTreeMap::new();
    if !declarations.is_empty() {
        if server.supports("referencesProvider") {
            let busy_before = server.busy();
            let answers = join_all(declarations.iter().map(|d| {
                let params = lsp_types::ReferenceParams {
                    text_document_position: lsp_types::TextDocumentPositionParams {
                        text_document: document.clone(),
                        position: lsp_types::Position { line: d.at.0, character: d.at.1 },
                    },
                    work_done_progress_params: Default::default(),
                    partial_result_params: Default::default(),
                    // A definition in another file (C's prototype and body) is affected too.
                    context: lsp_types::ReferenceContext { include_declaration: true },
                };
                server.call_until::<References>(params, deadline, cancel)
            }))
            .await;
            let mut failure = None;
            for answer in answers {
                match answer {
                    Ok(locations) => {
                        for location in locations.into_iter().flatten() {
                            if let Some(file) = path_from_uri(&location.uri).filter(|f| f != path) {
                                *referenced.entry(file).or_default() += 1;
                            }
                        }
                    }
                    Err(e) => failure = Some(format!("references failed: {e}")),
                }
            }
            let busy = busy_before.or_else(|| server.busy());
            impact.scanned_because = impact
                .scanned_because
                .take()
                .or(failure)
                .or(busy.map(|b| format!("the server is {b}, so its references may miss files")));
        } else {
            impact.scanned_because = Some("the server offers no references".into());
        }
    }
    // A cold server (tsserver before its project loads) answers "no references" for a
    // declaration it cannot see used yet: the scan decides then.
    if referenced.is_empty() && impact.scanned_because.is_none() && !declarations.is_empty() {
        impact.scanned_because = Some("the server found no uses of it".into());
    }
    // A deleted file is also named by the files that import it (`from pkg.termui import`,
    // `#include "area.h"`), which references of its declarations do not find.
    if deleted
        && let Some(stem) = path.file_stem().map(|s| s.to_string_lossy().to_string())
        && !stem.is_empty()
    {
        let mut names = impact.names.clone();
        if !names.contains(&stem) {
            names.push(stem);
        }
        impact.scanned_because.get_or_insert_with(|| "the file was deleted".into());
        for (file, count) in scan(server, names, path).await {
            *referenced.entry(file).or_default() += count;
        }
    }
    let mut files: Vec<(PathBuf, usize)> = referenced.into_iter().collect();
    files.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    if impact.scanned_because.is_some() && !impact.names.is_empty() && !deleted {
        for (file, count) in scan(server, impact.names.clone(), path).await {
            if !files.iter().any(|(f, _)| *f == file) {
                files.push((file, count));
            }
        }
    }
    impact.files = files;
    impact
}

/// [`mentions`] of `names` under the server's root, off the async threads; `skip` is the
/// written file itself.
async fn scan(server: &Server, names: Vec<String>, skip: &Path) -> Vec<(PathBuf, usize)> {
    let (root, def, skip) = (server.root.clone(), server.def.clone(), skip.to_path_buf());
    tokio::task::spawn_blocking(move || crate::scan::mentions(&root, &def, &names, &skip))
        .await
        .unwrap_or_default()
}

/// Keywords after which a declared name follows, across the built-in languages.
const DECLARING: &[&str] = &[
    "def",
    "class",
    "function",
    "func",
    "fn",
    "struct",
    "enum",
    "union",
    "interface",
    "type",
    "const",
    "let",
    "var",
    "trait",
    "impl",
    "define",
    "typedef",
];

/// The names the `lines` of `text` that `new` no longer has appear to declare: a word after
/// a declaring keyword, or the first word followed by `(` (a C prototype or definition).
pub(crate) fn declared_names(text: &str, new: &str, lines: &Range<u32>) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let last = lines.end.max(lines.start + 1);
    let kept: std::collections::HashSet<&str> = new.split('\n').collect();
    for line in text
        .split('\n')
        .skip(lines.start as usize)
        .take((last - lines.start) as usize)
        .filter(|l| !kept.contains(l))
    {
        let words: Vec<(usize, &str)> = line
            .match_indices(|c: char| !(c.is_alphanumeric() || c == '_'))
            .scan(0, |start, (at, sep)| {
                let word = (*start, &line[*start..at]);
                *start = at + sep.len();
                Some(word)
            })
            .chain(std::iter::once((0, "")))
            .filter(|(_, w)| !w.is_empty())
            .collect();
        let mut take = |w: &str| {
            if w.len() > 1 && !DECLARING.contains(&w) && !names.iter().any(|n| n == w) {
                names.push(w.to_string());
            }
        };
        for pair in words.windows(2) {
            if DECLARING.contains(&pair[0].1) {
                take(pair[1].1);
            }
        }
        if let Some((_, w)) =
            words.iter().find(|(at, w)| line[at + w.len()..].trim_start().starts_with('('))
        {
            take(w);
        }
    }
    names.truncate(MAX_DECLARATIONS);
    names
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    #[test]
    #[allow(clippy::single_range_in_vec_init)]
    fn changed_hunks_are_the_old_lines_each_edit_replaces() {
        assert_eq!(changed_hunks("a\nb\nc\n", "a\nB\nc\n"), [1..2]);
        assert_eq!(changed_hunks("a\nc\n", "a\nb\nc\n"), [1..1]);
        assert_eq!(changed_hunks("a\nb\nc\n", "a\nc\n"), [1..2]);
        assert!(changed_hunks("a\n", "a\n").is_empty());
        // Two edits far apart (a rename) are two hunks, not the lines between them.
        assert_eq!(changed_hunks("x\n1\n2\n3\nx\n", "y\n1\n2\n3\ny\n"), [0..1, 4..5]);
    }

    fn symbol(name: &str, kind: u64, lines: (u32, u32), children: Vec<Value>) -> Value {
        json!({
            "name": name, "kind": kind,
            "range": {"start": {"line": lines.0, "character": 0}, "end": {"line": lines.1, "character": 1}},
            "selectionRange": {"start": {"line": lines.0, "character": 4}, "end": {"line": lines.0, "character": 5}},
            "children": children,
        })
    }

    #[test]
    fn the_innermost_visible_declaration_stands_for_a_change() {
        let answer = json!([
            symbol("f", 12, (0, 3), vec![symbol("local", 13, (1, 1), vec![])]),
            symbol(
                "C",
                5,
                (5, 12),
                vec![symbol("m", 6, (6, 8), vec![]), symbol("attr", 7, (10, 10), vec![])]
            ),
            symbol("mod", 2, (14, 30), vec![symbol("g", 12, (15, 16), vec![])]),
        ]);
        let outline = outline(&serde_json::from_value(answer).expect("a documentSymbol answer"));
        let names = |lines: Range<u32>| -> Vec<String> {
            touched(&outline, &lines).into_iter().map(|d| d.name).collect()
        };
        // A change in a function's body stands for the function (its inferred type may change).
        assert_eq!(names(1..2), ["f"]);
        // A method's change is the method's, not the class's.
        assert_eq!(names(7..8), ["m"]);
        // A class line outside its members is the class's.
        assert_eq!(names(9..10), ["C"]);
        // A module is never the declaration; what is in it is.
        assert_eq!(names(15..16), ["g"]);
        assert!(names(20..21).is_empty());
        // A change over two declarations names both.
        assert_eq!(names(3..7), ["f", "m"]);
        assert_eq!(touched(&outline, &(7..8))[0].at, (6, 4));
    }

    #[test]
    fn changed_lines_name_what_they_declare_when_the_outline_cannot() {
        let ts = "export function formatPrice(cents: number): string {\n  return x;\n}\n";
        assert_eq!(declared_names(ts, "", &(0..1)), ["formatPrice"]);
        assert_eq!(declared_names("int square_area(int side);\n", "", &(0..1)), ["square_area"]);
        assert_eq!(declared_names("def echo(x):\n    pass\n", "", &(0..1)), ["echo"]);
        assert_eq!(declared_names("func Scale(x int) int {\n", "", &(0..1)), ["Scale"]);
        // Lines the new text still has are no change.
        let old = "def a():\n    xx()\ndef b():\n    yy()\n";
        let new = "def a():\n    zz()\ndef b():\n    ww()\n";
        assert_eq!(declared_names(old, new, &(1..4)), ["xx", "yy"]);
    }
}
