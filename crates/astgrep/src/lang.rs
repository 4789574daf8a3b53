//! The bundled languages: ids, file extensions, grammars, metavariable expando and context ladders.

use std::{fmt, path::Path, sync::OnceLock};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::AstError;

/// A language this crate knows. Its grammar is compiled in only with its cargo feature
/// (`lang-<id>`, all on by default): see [`Lang::is_built`].
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

    /// The cargo feature of agent-tools-astgrep that compiles this language's grammar in.
    pub fn feature(self) -> &'static str {
        match self {
            Lang::Bash => "lang-bash",
            Lang::C => "lang-c",
            Lang::Cpp => "lang-cpp",
            Lang::Dart => "lang-dart",
            Lang::Go => "lang-go",
            Lang::Java => "lang-java",
            Lang::Javascript => "lang-javascript",
            Lang::Json => "lang-json",
            Lang::Python => "lang-python",
            Lang::Rust => "lang-rust",
            Lang::Tsx => "lang-tsx",
            Lang::Typescript => "lang-typescript",
        }
    }

    /// Whether this language's grammar is compiled into this build (its feature is on).
    pub fn is_built(self) -> bool {
        self.ts_language().is_some()
    }

    /// The languages compiled into this build, in [`Lang::ALL`] order.
    pub fn built() -> impl Iterator<Item = Lang> {
        Lang::ALL.into_iter().filter(|l| l.is_built())
    }

    /// The ids of the languages compiled into this build, comma-separated, for error messages.
    pub fn built_ids() -> String {
        let ids: Vec<&str> = Lang::built().map(Lang::id).collect();
        if ids.is_empty() {
            "none (this build has no `lang-*` feature of agent-tools-astgrep)".to_string()
        } else {
            ids.join(", ")
        }
    }

    /// `Ok(self)` if the grammar is compiled in, else an error naming the feature to enable.
    pub fn require_built(self) -> Result<Lang, AstError> {
        if self.is_built() { Ok(self) } else { Err(self.not_built()) }
    }

    fn not_built(self) -> AstError {
        AstError::Language(format!(
            "language `{self}` is not in this build: enable the cargo feature `{}` of \
             agent-tools-astgrep (languages in this build: {})",
            self.feature(),
            Lang::built_ids()
        ))
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
            // A decorator or annotation alone (`@pytest.fixture`, `@Component()`, `@Override`)
            // parses only before what it decorates: the last declaration scaffold of Python,
            // JS/TS and Java.
            Lang::Python => &[
                (Statement, &[s!("", "")]),
                (Expression, &[s!("__sgx = (", ")")]),
                (Member, &[s!("class __Sgx:\n    ", "\n")]),
                (Declaration, &[s!("", "\ndef __sgx(): pass\n")]),
            ],
            Lang::Javascript | Lang::Typescript | Lang::Tsx => &[
                (Statement, &[s!("function __sgx() { ", " }"), s!("function __sgx() { ", "; }")]),
                (Expression, &[s!("(", ");"), s!("__sgx = ", ";")]),
                (Member, &[s!("class __Sgx { ", " }"), s!("({ ", " });")]),
                (Declaration, &[s!("", ""), s!("", "\nclass __Sgx {}")]),
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
                (Declaration, &[s!("", ""), s!("", "\nclass __Sgx {}")]),
            ],
            Lang::Json => {
                &[(Expression, &[s!("", "")]), (Member, &[s!("{ ", " }"), s!("[ ", " ]")])]
            }
            Lang::Bash => &[(Statement, &[s!("", "")]), (Expression, &[s!("__x=$(", ")")])],
        }
    }

    /// The compiled-in grammar, or None when its feature is off.
    fn ts_language(self) -> Option<tree_sitter::Language> {
        match self {
            #[cfg(feature = "lang-bash")]
            Lang::Bash => Some(tree_sitter_bash::LANGUAGE.into()),
            #[cfg(feature = "lang-c")]
            Lang::C => Some(tree_sitter_c::LANGUAGE.into()),
            #[cfg(feature = "lang-cpp")]
            Lang::Cpp => Some(tree_sitter_cpp::LANGUAGE.into()),
            #[cfg(feature = "lang-dart")]
            Lang::Dart => Some(tree_sitter_dart::LANGUAGE.into()),
            #[cfg(feature = "lang-go")]
            Lang::Go => Some(tree_sitter_go::LANGUAGE.into()),
            #[cfg(feature = "lang-java")]
            Lang::Java => Some(tree_sitter_java::LANGUAGE.into()),
            #[cfg(feature = "lang-javascript")]
            Lang::Javascript => Some(tree_sitter_javascript::LANGUAGE.into()),
            #[cfg(feature = "lang-json")]
            Lang::Json => Some(tree_sitter_json::LANGUAGE.into()),
            #[cfg(feature = "lang-python")]
            Lang::Python => Some(tree_sitter_python::LANGUAGE.into()),
            #[cfg(feature = "lang-rust")]
            Lang::Rust => Some(tree_sitter_rust::LANGUAGE.into()),
            #[cfg(feature = "lang-tsx")]
            Lang::Tsx => Some(tree_sitter_typescript::LANGUAGE_TSX.into()),
            #[cfg(feature = "lang-typescript")]
            Lang::Typescript => Some(tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into()),
            // Reachable only when some `lang-*` feature is off.
            #[allow(unreachable_patterns)]
            _ => None,
        }
    }

    /// The grammar and its canonical kind table, built once per process; an error naming the
    /// cargo feature when the grammar is not compiled in.
    pub(crate) fn data(self) -> Result<&'static LangData, AstError> {
        static DATA: [OnceLock<Option<LangData>>; 12] = [const { OnceLock::new() }; 12];
        let index = Lang::ALL.iter().position(|l| *l == self).unwrap_or(0);
        let data = DATA[index].get_or_init(|| {
            let language = self.ts_language()?;
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
            Some(LangData { language, canonical })
        });
        data.as_ref().ok_or_else(|| self.not_built())
    }
}

impl fmt::Debug for LangData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LangData").field("kinds", &self.canonical.len()).finish_non_exhaustive()
    }
}

impl LangData {
    /// A parser set to this grammar.
    pub(crate) fn parser(&self) -> tree_sitter::Parser {
        let mut parser = tree_sitter::Parser::new();
        // The bundled grammars are all ABI 14 or 15, which this tree-sitter accepts; a failure
        // here would surface as parse() returning None, which callers report.
        let _ = parser.set_language(&self.language);
        parser
    }

    pub(crate) fn canon(&self, kind_id: u16) -> u16 {
        self.canonical.get(usize::from(kind_id)).copied().unwrap_or(kind_id)
    }
}

impl fmt::Display for Lang {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}
