//! Outlines: a file's declarations from its tree-sitter tree (no language server), each with
//! its kind, name path and lines, nested; and name paths resolved to one declaration.
//!
//! Usable alone:
//!
//! ```
//! # #[cfg(feature = "lang-python")] {
//! use agent_tools_astgrep::{Lang, outline};
//!
//! let source = "class Parser:\n    @property\n    def name(self):\n        return 1\n";
//! let outline = outline::outline(Lang::Python, source).unwrap();
//! let name = outline.resolve("Parser/name").unwrap();
//! assert_eq!((name.start_line, name.end_line), (2, 4)); // the decorator included
//! # }
//! ```

mod name_path;
mod rules;

use serde::Serialize;

pub use self::name_path::{Candidate, Unresolved};
use crate::{error::AstError, lang::Lang};

/// What a declaration is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SymbolKind {
    Function,
    Method,
    Constructor,
    Property,
    Class,
    Struct,
    Union,
    Enum,
    Interface,
    Trait,
    Impl,
    Namespace,
    Module,
    TypeAlias,
    Constant,
    Variable,
    Field,
    Macro,
    Prototype,
}

impl SymbolKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SymbolKind::Function => "function",
            SymbolKind::Method => "method",
            SymbolKind::Constructor => "constructor",
            SymbolKind::Property => "property",
            SymbolKind::Class => "class",
            SymbolKind::Struct => "struct",
            SymbolKind::Union => "union",
            SymbolKind::Enum => "enum",
            SymbolKind::Interface => "interface",
            SymbolKind::Trait => "trait",
            SymbolKind::Impl => "impl",
            SymbolKind::Namespace => "namespace",
            SymbolKind::Module => "module",
            SymbolKind::TypeAlias => "type",
            SymbolKind::Constant => "constant",
            SymbolKind::Variable => "variable",
            SymbolKind::Field => "field",
            SymbolKind::Macro => "macro",
            SymbolKind::Prototype => "prototype",
        }
    }
}

/// One declaration of a file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Symbol {
    pub kind: SymbolKind,
    /// Its own name (`parse`).
    pub name: String,
    /// The names from the outermost declaration inwards, joined by `/` (`Parser/parse`); a Go
    /// method is named by its receiver's type (`Server/Start`), a C++ `Foo::bar` defined out of
    /// its class by its qualifier (`Foo/bar`).
    pub name_path: String,
    /// The header of an `impl` block (`impl Display for Point`), whose name is its type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// First line, 1-based: its doc comment, decorators or attributes included.
    pub start_line: usize,
    /// Last line, 1-based.
    pub end_line: usize,
    /// Byte range of the declaration, doc comment, decorators and attributes included: from
    /// the first of them (after its line's indentation) to the declaration's last byte.
    #[serde(skip)]
    pub start_byte: usize,
    #[serde(skip)]
    pub end_byte: usize,
    /// Where the name is: 0-based line and byte column (what a language server is asked at).
    #[serde(skip)]
    pub name_line: usize,
    #[serde(skip)]
    pub name_column: usize,
    /// Declarations inside it (methods of a class, fields of a struct); never locals.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<Symbol>,
}

/// A file's declarations, nested, in source order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Outline {
    pub lang: Lang,
    pub symbols: Vec<Symbol>,
    /// 1-based lines where the parser met text it could not parse (a declaration there may
    /// be missing or cut short).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub error_lines: Vec<usize>,
}

/// The declarations of `source`, written in `lang`.
///
/// Fails only when the grammar is not in this build or the parser gives up; a file with
/// syntax errors still has an outline, with [`Outline::error_lines`] saying where.
pub fn outline(lang: Lang, source: &str) -> Result<Outline, AstError> {
    let data = lang.require_built()?.data()?;
    let mut parser = data.parser();
    let Some(tree) = parser.parse(source, None) else {
        return Err(AstError::Language(format!(
            "the {lang} parser could not parse this file (it gave up)"
        )));
    };
    let root = tree.root_node();
    let walker = rules::Walker { lang, source };
    let symbols = walker.children(root, &[]);
    let mut error_lines = Vec::new();
    if root.has_error() {
        collect_errors(root, &mut error_lines);
    }
    Ok(Outline { lang, symbols, error_lines })
}

/// The outline of a file, its language from its extension; `None` for a language without a
/// bundled grammar.
pub fn outline_file(path: &std::path::Path, source: &str) -> Option<Result<Outline, AstError>> {
    let lang = Lang::from_path(path).filter(|l| *l != Lang::Json)?;
    Some(outline(lang, source))
}

fn collect_errors(node: tree_sitter::Node<'_>, lines: &mut Vec<usize>) {
    if lines.len() >= 10 {
        return;
    }
    if node.is_error() || node.is_missing() {
        let line = node.start_position().row + 1;
        if !lines.contains(&line) {
            lines.push(line);
        }
        return;
    }
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        if child.has_error() {
            collect_errors(child, lines);
        }
    }
}

/// A symbol and how deep it sits, as [`Outline::flatten`] lists them.
#[derive(Debug, Clone, Copy)]
pub struct Row<'a> {
    pub depth: usize,
    pub symbol: &'a Symbol,
}

impl Outline {
    /// Every symbol in source order, parents before their children.
    pub fn flatten(&self) -> Vec<Row<'_>> {
        fn walk<'a>(symbols: &'a [Symbol], depth: usize, out: &mut Vec<Row<'a>>) {
            for symbol in symbols {
                out.push(Row { depth, symbol });
                walk(&symbol.children, depth + 1, out);
            }
        }
        let mut out = Vec::new();
        walk(&self.symbols, 0, &mut out);
        out
    }

    /// The outline as text, one symbol a line, nested by indentation: `kind name_path
    /// start-end`, at most `max_rows` rows (a note says how many more there are).
    pub fn render(&self, max_rows: usize) -> String {
        let rows = self.flatten();
        let mut out = String::new();
        for row in rows.iter().take(max_rows) {
            let s = row.symbol;
            let lines = if s.start_line == s.end_line {
                s.start_line.to_string()
            } else {
                format!("{}-{}", s.start_line, s.end_line)
            };
            let detail = s.detail.as_deref().map(|d| format!(" ({d})")).unwrap_or_default();
            out.push_str(&format!(
                "{:indent$}{} {} {lines}{detail}\n",
                "",
                s.kind.as_str(),
                s.name_path,
                indent = row.depth * 2
            ));
        }
        if rows.len() > max_rows {
            out.push_str(&format!(
                "[{} more declarations not shown; ask for one by name path]\n",
                rows.len() - max_rows
            ));
        }
        out
    }
}
