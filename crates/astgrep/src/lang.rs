//! The bundled languages: ids, file extensions, grammars, metavariable expando and context ladders.

use std::{fmt, path::Path, sync::OnceLock};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A bundled grammar.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Lang {
    Bash,
    C,
    Cpp,
    Dart,
    Go,
    Java,
    Javascript,
    Json,
    Python,
    Rust,
    Tsx,
    Typescript,
}

/// Which kind of context made a fragment parse: the rungs of the ladder, in order.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ContextKind {
    /// Inside a function body.
    Statement,
    /// Where a value is expected.
    Expression,
    /// Inside a class, struct or object body.
    Member,
    /// At the top level of a file.
    Declaration,
}

impl ContextKind {
    pub const ALL: [ContextKind; 4] = [
        ContextKind::Statement,
        ContextKind::Expression,
        ContextKind::Member,
        ContextKind::Declaration,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ContextKind::Statement => "statement",
            ContextKind::Expression => "expression",
            ContextKind::Member => "class member",
            ContextKind::Declaration => "declaration",
        }
    }
}

impl fmt::Display for ContextKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One scaffold: text before and after the hole.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Scaffold {
    pub(crate) before: &'static str,
    pub(crate) after: &'static str,
}

macro_rules! s {
    ($before:expr, $after:expr) => {
        Scaffold { before: $before, after: $after }
    };
}

/// A rung of the ladder: a context kind and the scaffolds tried for it, in order.
pub(crate) type Rung = (ContextKind, &'static [Scaffold]);

/// How `$` is spelled in a pattern before parsing, so metavariables are valid identifiers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Expando {
    /// `$` is already an identifier character (JavaScript, Dart, Java).
    Dollar,
    /// Replaced by this character.
    Char(char),
    /// JSON: a metavariable becomes a string `"µNAME"`.
    JsonString,
}

/// Per-thread-safe grammar data computed once per language.
pub(crate) struct LangData {
    pub(crate) language: tree_sitter::Language,
    /// Maps a node kind id to the first id with the same name and namedness, so aliases compare equal.
    pub(crate) canonical: Vec<u16>,
}

impl Lang {
    pub const ALL: [Lang; 12] = [
        Lang::Bash,
        Lang::C,
        Lang::Cpp,
        Lang::Dart,
        Lang::Go,
        Lang::Java,
        Lang::Javascript,
        Lang::Json,
        Lang::Python,
        Lang::Rust,
        Lang::Tsx,
        Lang::Typescript,
    ];

    pub fn id(self) -> &'static str {
        match self {
            Lang::Bash => "bash",
            Lang::C => "c",
            Lang::Cpp => "cpp",
            Lang::Dart => "dart",
            Lang::Go => "go",
            Lang::Java => "java",
            Lang::Javascript => "javascript",
            Lang::Json => "json",
            Lang::Python => "python",
            Lang::Rust => "rust",
            Lang::Tsx => "tsx",
            Lang::Typescript => "typescript",
        }
    }

    /// File extensions (without the dot) searched for this language.
    pub fn extensions(self) -> &'static [&'static str] {
        match self {
            Lang::Bash => &["sh", "bash"],
            Lang::C => &["c", "h"],
            Lang::Cpp => &["cc", "cpp", "cxx", "c++", "hpp", "hh", "hxx", "h++"],
            Lang::Dart => &["dart"],
            Lang::Go => &["go"],
            Lang::Java => &["java"],
            Lang::Javascript => &["js", "mjs", "cjs", "jsx"],
            Lang::Json => &["json"],
            Lang::Python => &["py", "pyi"],
            Lang::Rust => &["rs"],
            Lang::Tsx => &["tsx"],
            Lang::Typescript => &["ts", "mts", "cts"],
        }
    }

    /// Parses a language id; accepts a few common aliases.
    pub fn from_id(id: &str) -> Option<Lang> {
        let id = id.trim().to_ascii_lowercase();
        let lang = match id.as_str() {
            "bash" | "sh" | "shell" => Lang::Bash,
            "c" => Lang::C,
            "cpp" | "c++" | "cxx" => Lang::Cpp,
            "dart" => Lang::Dart,
            "go" | "golang" => Lang::Go,
            "java" => Lang::Java,
            "javascript" | "js" | "jsx" => Lang::Javascript,
            "json" => Lang::Json,
            "python" | "py" => Lang::Python,
            "rust" | "rs" => Lang::Rust,
            "tsx" => Lang::Tsx,
            "typescript" | "ts" => Lang::Typescript,
            _ => return None,
        };
        Some(lang)
    }

    /// The language of a file, from its extension.
    pub fn from_path(path: &Path) -> Option<Lang> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        Lang::ALL.into_iter().find(|l| l.extensions().contains(&ext.as_str()))
    }

    /// Every id, comma-separated, for error messages.
    pub fn all_ids() -> String {
        Lang::ALL.iter().map(|l| l.id()).collect::<Vec<_>>().join(", ")
    }

    pub(crate) fn expando(self) -> Expando {
        match self {
            Lang::Javascript | Lang::Typescript | Lang::Tsx | Lang::Dart | Lang::Java => {
                Expando::Dollar
            }
            Lang::C | Lang::Cpp => Expando::Char('\u{10000}'),
            Lang::Json => Expando::JsonString,
            Lang::Bash | Lang::Go | Lang::Python | Lang::Rust => Expando::Char('µ'),
        }
    }

    /// Quote characters that open string literals in patterns (where `$` is plain text).
    pub(crate) fn quotes(self) -> &'static [char] {
        match self {
            Lang::Rust => &['"'],
            Lang::Json => &[],
            Lang::Bash => &['\''],
            Lang::Javascript | Lang::Typescript | Lang::Tsx => &['"', '\'', '`'],
            _ => &['"', '\''],
        }
    }

    /// Where a fragment is tried, in order.
    pub(crate) fn ladder(self) -> &'static [Rung] {
        use ContextKind::*;
        match self {
            Lang::Dart => &[
                (Statement, &[s!("void __sgx() { ", " }"), s!("void __sgx() { ", "; }")]),
                (Expression, &[s!("var __sgx = ", ";")]),
                (Member, &[s!("class __Sgx { ", " }"), s!("class __Sgx { ", "; }")]),
                (Declaration, &[s!("", "")]),
            ],
            Lang::Rust => &[
                (Statement, &[s!("fn __sgx() { ", " }"), s!("fn __sgx() { ", "; }")]),
                (Expression, &[s!("fn __sgx() { let _ = ", "; }")]),
                (Member, &[s!("impl __Sgx { ", " }"), s!("struct __Sgx { ", " }")]),
                (Declaration, &[s!("", "")]),
            ],
            Lang::Python => &[
                (Statement, &[s!("", "")]),
                (Expression, &[s!("__sgx = (", ")")]),
                (Member, &[s!("class __Sgx:\n    ", "\n")]),
            ],
            Lang::Javascript | Lang::Typescript | Lang::Tsx => &[
                (Statement, &[s!("function __sgx() { ", " }"), s!("function __sgx() { ", "; }")]),
                (Expression, &[s!("(", ");"), s!("__sgx = ", ";")]),
                (Member, &[s!("class __Sgx { ", " }"), s!("({ ", " });")]),
                (Declaration, &[s!("", "")]),
            ],
            Lang::Go => &[
                (Statement, &[s!("package p\nfunc __sgx() { ", " }")]),
                (Expression, &[s!("package p\nvar __sgx = ", "")]),
                (
                    Member,
                    &[
                        s!("package p\ntype __S struct { ", " }"),
                        s!("package p\ntype __I interface { ", " }"),
                    ],
                ),
                (Declaration, &[s!("package p\n", ""), s!("", "")]),
            ],
            Lang::C => &[
                (Statement, &[s!("void __sgx(void) { ", " }"), s!("void __sgx(void) { ", "; }")]),
                (Expression, &[s!("int __sgx = ", ";")]),
                (Member, &[s!("struct __S { ", " };"), s!("struct __S { ", "; };")]),
                (Declaration, &[s!("", "")]),
            ],
            Lang::Cpp => &[
                (Statement, &[s!("void __sgx() { ", " }"), s!("void __sgx() { ", "; }")]),
                (Expression, &[s!("auto __sgx = ", ";")]),
                (Member, &[s!("class __S { ", " };"), s!("class __S { ", "; };")]),
                (Declaration, &[s!("", "")]),
            ],
            Lang::Java => &[
                (
                    Statement,
                    &[
                        s!("class __S { void __sgx() { ", " } }"),
                        s!("class __S { void __sgx() { ", "; } }"),
                    ],
                ),
                (Expression, &[s!("class __S { Object __x = ", "; }")]),
                (Member, &[s!("class __S { ", " }")]),
                (Declaration, &[s!("", "")]),
            ],
            Lang::Json => {
                &[(Expression, &[s!("", "")]), (Member, &[s!("{ ", " }"), s!("[ ", " ]")])]
            }
            Lang::Bash => &[(Statement, &[s!("", "")]), (Expression, &[s!("__x=$(", ")")])],
        }
    }

    fn ts_language(self) -> tree_sitter::Language {
        match self {
            Lang::Bash => tree_sitter_bash::LANGUAGE.into(),
            Lang::C => tree_sitter_c::LANGUAGE.into(),
            Lang::Cpp => tree_sitter_cpp::LANGUAGE.into(),
            Lang::Dart => tree_sitter_dart::LANGUAGE.into(),
            Lang::Go => tree_sitter_go::LANGUAGE.into(),
            Lang::Java => tree_sitter_java::LANGUAGE.into(),
            Lang::Javascript => tree_sitter_javascript::LANGUAGE.into(),
            Lang::Json => tree_sitter_json::LANGUAGE.into(),
            Lang::Python => tree_sitter_python::LANGUAGE.into(),
            Lang::Rust => tree_sitter_rust::LANGUAGE.into(),
            Lang::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
            Lang::Typescript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
        }
    }

    /// The grammar and its canonical kind table, built once per process.
    pub(crate) fn data(self) -> &'static LangData {
        static DATA: [OnceLock<LangData>; 12] = [const { OnceLock::new() }; 12];
        let index = Lang::ALL.iter().position(|l| *l == self).unwrap_or(0);
        DATA[index].get_or_init(|| {
            let language = self.ts_language();
            let count = language.node_kind_count();
            let mut canonical = Vec::with_capacity(count);
            for id in 0..count {
                let id16 = u16::try_from(id).unwrap_or(u16::MAX);
                let canon = match language.node_kind_for_id(id16) {
                    Some(name) => {
                        let named = language.node_kind_is_named(id16);
                        // The first id with this name and namedness.
                        (0..id16)
                            .find(|other| {
                                language.node_kind_for_id(*other) == Some(name)
                                    && language.node_kind_is_named(*other) == named
                            })
                            .unwrap_or(id16)
                    }
                    None => id16,
                };
                canonical.push(canon);
            }
            LangData { language, canonical }
        })
    }

    /// A parser set to this language.
    pub(crate) fn parser(self) -> tree_sitter::Parser {
        let mut parser = tree_sitter::Parser::new();
        // The bundled grammars are all ABI 14 or 15, which this tree-sitter accepts; a failure
        // here would surface as parse() returning None, which callers report.
        let _ = parser.set_language(&self.data().language);
        parser
    }
}

impl LangData {
    pub(crate) fn canon(&self, kind_id: u16) -> u16 {
        self.canonical.get(usize::from(kind_id)).copied().unwrap_or(kind_id)
    }
}

impl fmt::Display for Lang {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}
