//! What a change touches: the hunks of a line diff, the outline's declarations they touch,
//! and the names the changed lines declare where no outline covers them (macros, fields, enum
//! members, constants, types, imports and exports).

use std::{collections::HashSet, ops::Range};

use lsp_types::{DocumentSymbol, DocumentSymbolResponse, SymbolKind};

/// How many names the changed lines of one file give at most.
pub(crate) const MAX_NAMES: usize = 16;

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
    /// A function, method or constructor: what its body declares is local.
    pub function: bool,
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
    fn function(kind: SymbolKind) -> bool {
        matches!(kind, SymbolKind::FUNCTION | SymbolKind::METHOD | SymbolKind::CONSTRUCTOR)
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
                function: function(item.kind),
                parent,
            });
            // What a function, method or constructor declares inside is local.
            let body_is_local = local || function(item.kind);
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
            function: function(i.kind),
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
    let kept: HashSet<&str> = new.split('\n').collect();
    for line in text
        .split('\n')
        .skip(lines.start as usize)
        .take((last - lines.start) as usize)
        .filter(|l| !kept.contains(l))
    {
        let words = words(line);
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
    names.truncate(MAX_NAMES);
    names
}

/// Words that are never a declared name, across the built-in languages (types, storage
/// classes, control flow).
const NOT_NAMES: &[&str] = &[
    "int",
    "char",
    "void",
    "long",
    "short",
    "unsigned",
    "signed",
    "float",
    "double",
    "bool",
    "static",
    "extern",
    "inline",
    "volatile",
    "register",
    "return",
    "if",
    "else",
    "for",
    "while",
    "do",
    "switch",
    "case",
    "break",
    "continue",
    "goto",
    "sizeof",
    "include",
    "ifdef",
    "ifndef",
    "endif",
    "elif",
    "undef",
    "pragma",
    "public",
    "private",
    "protected",
    "export",
    "import",
    "from",
    "as",
    "default",
    "async",
    "await",
    "self",
    "this",
    "None",
    "True",
    "False",
    "true",
    "false",
    "null",
    "nil",
    "undefined",
    "string",
    "number",
    "any",
    "pass",
    "package",
    "pub",
    "mut",
    "crate",
    "super",
    "use",
    "mod",
    "new",
    "readonly",
    "abstract",
    "override",
    "virtual",
    "template",
    "typename",
    "namespace",
    "using",
    "auto",
    "size_t",
    "uint8_t",
    "uint16_t",
    "uint32_t",
    "uint64_t",
    "int8_t",
    "int16_t",
    "int32_t",
    "int64_t",
    "in",
    "of",
    "is",
    "not",
    "and",
    "or",
    "with",
    "lambda",
    "yield",
    "raise",
    "try",
    "except",
    "finally",
    "throw",
    "catch",
    "new",
    "delete",
    "defined",
];

/// The words of `line` (letters, digits, `_`) with their byte offsets.
fn words(line: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start = None;
    for (at, c) in line.char_indices().chain(std::iter::once((line.len(), ' '))) {
        match (c.is_alphanumeric() || c == '_', start) {
            (true, None) => start = Some(at),
            (false, Some(from)) => {
                out.push((from, &line[from..at]));
                start = None;
            }
            _ => {}
        }
    }
    out
}

fn is_name(word: &str) -> bool {
    !word.is_empty()
        && !word.starts_with(|c: char| c.is_ascii_digit())
        && !DECLARING.contains(&word)
        && !NOT_NAMES.contains(&word)
}

/// The names one line of code declares, by its shape: a word after a declaring keyword
/// (`#define`, `def`, `struct`, …); at the top level, the word before the first `(` (a C
/// prototype or definition); a field, enum member or constant (`int count;`, `RED = 1,`,
/// `name: str = ""`); the names an `import`/`export` list brings or gives.
pub(crate) fn declared_on_line(line: &str) -> Vec<String> {
    let trimmed = line.trim();
    if trimmed.is_empty() || trimmed.starts_with("//") || trimmed.starts_with("/*") {
        return Vec::new();
    }
    let words = words(line);
    let mut out: Vec<String> = Vec::new();
    let mut take = |w: &str| {
        if is_name(w) && !out.iter().any(|n| n == w) {
            out.push(w.to_string());
        }
    };
    for pair in words.windows(2) {
        if DECLARING.contains(&pair[0].1) {
            take(pair[1].1);
        }
    }
    let top_level = !line.starts_with(char::is_whitespace);
    if top_level
        && !trimmed.starts_with('#')
        && let Some((_, w)) =
            words.iter().find(|(at, w)| line[at + w.len()..].trim_start().starts_with('('))
    {
        take(w);
    }
    let first = trimmed.split(|c: char| !(c.is_alphanumeric() || c == '_')).next().unwrap_or("");
    let listed = if let Some((_, rest)) = trimmed
        .split_once('{')
        .filter(|_| trimmed.starts_with("import ") || trimmed.starts_with("export "))
    {
        // `import { a, b } from "m"`, `export { a }`: the names in braces.
        Some(rest.split('}').next().unwrap_or(rest))
    } else if trimmed.starts_with("from ") {
        // `from m import a, b`.
        trimmed.split_once(" import ").map(|(_, rest)| rest)
    } else {
        None
    };
    if let Some(listed) = listed {
        for (_, w) in self::words(listed) {
            take(w);
        }
    } else if trimmed.starts_with("import ") || trimmed.starts_with("export ") {
    } else if !trimmed.contains('(') {
        let after_first = trimmed[first.len()..].trim_start();
        let statement =
            ["return", "throw", "goto", "break", "continue", "delete", "yield", "await"]
                .contains(&first);
        if (trimmed.ends_with(';') || trimmed.ends_with(',')) && !first.is_empty() && !statement {
            // `int count;`, `RED,`, `RED = 1,`, `char *name[8];`: the name before `=`, `[`,
            // `:`, `;` or `,`.
            let head = trimmed.split(['=', '[', ':', ';', ',']).next().unwrap_or("");
            if let Some((_, w)) = self::words(head).last() {
                take(w);
            }
        } else if after_first.starts_with(':') && !after_first.starts_with("::")
            || after_first.starts_with('=') && !after_first.starts_with("==")
        {
            // `name: str = ""`, `MAX = 10` (an attribute, constant or enum member).
            take(first);
        }
    }
    out
}

/// The names the changed lines of `old` and `new` declare, outside function bodies of `outline`
/// (what a body declares is local; the function itself stands for it): lines that the other
/// text still has are no change.
pub(crate) fn changed_names(old: &str, new: &str, outline: &[Declaration]) -> Vec<String> {
    let in_body = |line: u32| {
        outline.iter().any(|d| (d.function || d.local) && d.lines.0 < line && line <= d.lines.1)
    };
    let old_lines: Vec<&str> = old.split('\n').collect();
    let new_lines: Vec<&str> = new.split('\n').collect();
    let old_set: HashSet<&str> = old_lines.iter().copied().collect();
    let new_set: HashSet<&str> = new_lines.iter().copied().collect();
    let mut names: Vec<String> = Vec::new();
    let diff = similar::TextDiff::configure()
        .timeout(std::time::Duration::from_millis(200))
        .diff_lines(old, new);
    for op in diff.ops().iter().filter(|op| op.tag() != similar::DiffTag::Equal) {
        let (o, n) = (op.old_range(), op.new_range());
        // A hunk inside a function body changes the function, which the outline names.
        let body = !o.is_empty() && (o.start..o.end).all(|l| in_body(l as u32))
            || o.is_empty() && in_body(o.start as u32);
        if body {
            continue;
        }
        let changed = o
            .filter_map(|i| old_lines.get(i).filter(|l| !new_set.contains(*l)))
            .chain(n.filter_map(|i| new_lines.get(i).filter(|l| !old_set.contains(*l))));
        for line in changed {
            for name in declared_on_line(line) {
                if !names.contains(&name) {
                    names.push(name);
                }
            }
        }
    }
    names.truncate(MAX_NAMES);
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
    fn changed_lines_name_macros_fields_members_constants_and_imports() {
        assert_eq!(
            declared_on_line("#define luaS_newliteral(L, s) (luaS_newlstr(L, \"\" s, 1))"),
            ["luaS_newliteral"]
        );
        assert_eq!(
            declared_on_line(
                "LUAI_FUNC l_noret luaG_runerror (lua_State *L, const char *fmt, ...);"
            ),
            ["luaG_runerror"]
        );
        assert_eq!(declared_on_line("  lu_byte marked;"), ["marked"]);
        assert_eq!(declared_on_line("  TM_INDEX = 3,"), ["TM_INDEX"]);
        assert_eq!(declared_on_line("  RED,"), ["RED"]);
        assert_eq!(declared_on_line("    name: str = \"\""), ["name"]);
        assert_eq!(declared_on_line("MAX_SIZE = 10"), ["MAX_SIZE"]);
        assert_eq!(declared_on_line("from .util import echo, style"), ["echo", "style"]);
        assert_eq!(
            declared_on_line("import { isFunction } from './util/isFunction';"),
            ["isFunction"]
        );
        assert_eq!(declared_on_line("export type Shape = Circle | Square;"), ["Shape"]);
        assert!(declared_on_line("    return x == y;").is_empty());
        assert!(declared_on_line("// int commented;").is_empty());
        assert!(declared_on_line("    if (x) {").is_empty());
    }

    #[test]
    fn a_changed_body_is_its_function_and_a_changed_header_line_is_its_names() {
        let answer = json!([symbol("f", 12, (0, 3), vec![]), symbol("S", 23, (5, 8), vec![])]);
        let outline = outline(&serde_json::from_value(answer).expect("a documentSymbol answer"));
        let old =
            "int f(void) {\n  int count = 1;\n  return count;\n}\n\nstruct S {\n  int a;\n};\n";
        let body = old.replace("int count = 1", "int count = 2");
        assert!(changed_names(old, &body, &outline).is_empty());
        let field = old.replace("  int a;", "  int a;\n  long extra;");
        assert_eq!(changed_names(old, &field, &outline), ["extra"]);
        let macro_old = "#define SQ(x) ((x) * (x))\n";
        assert_eq!(changed_names(macro_old, "#define SQ(x, y) ((x) * (y))\n", &[]), ["SQ"]);
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
