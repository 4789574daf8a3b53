//! The bundled languages: ids, file extensions, grammars, metavariable expando and context ladders.

use std::{collections::HashMap, fmt, path::Path, sync::OnceLock};

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
    /// The grammar's `node-types.json`, when its crate ships it: what each kind may contain.
    node_types: Option<&'static str>,
    /// By canonical kind id, built on first use: [`LangData::holders`].
    holders: Box<[OnceLock<Option<Box<[bool]>>>]>,
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

    /// The grammar's `node-types.json`, or None when its feature is off.
    fn node_types(self) -> Option<&'static str> {
        match self {
            #[cfg(feature = "lang-bash")]
            Lang::Bash => Some(tree_sitter_bash::NODE_TYPES),
            #[cfg(feature = "lang-c")]
            Lang::C => Some(tree_sitter_c::NODE_TYPES),
            #[cfg(feature = "lang-cpp")]
            Lang::Cpp => Some(tree_sitter_cpp::NODE_TYPES),
            #[cfg(feature = "lang-dart")]
            Lang::Dart => Some(tree_sitter_dart::NODE_TYPES),
            #[cfg(feature = "lang-go")]
            Lang::Go => Some(tree_sitter_go::NODE_TYPES),
            #[cfg(feature = "lang-java")]
            Lang::Java => Some(tree_sitter_java::NODE_TYPES),
            #[cfg(feature = "lang-javascript")]
            Lang::Javascript => Some(tree_sitter_javascript::NODE_TYPES),
            #[cfg(feature = "lang-json")]
            Lang::Json => Some(tree_sitter_json::NODE_TYPES),
            #[cfg(feature = "lang-python")]
            Lang::Python => Some(tree_sitter_python::NODE_TYPES),
            #[cfg(feature = "lang-rust")]
            Lang::Rust => Some(tree_sitter_rust::NODE_TYPES),
            #[cfg(feature = "lang-tsx")]
            Lang::Tsx => Some(tree_sitter_typescript::TSX_NODE_TYPES),
            #[cfg(feature = "lang-typescript")]
            Lang::Typescript => Some(tree_sitter_typescript::TYPESCRIPT_NODE_TYPES),
            #[allow(unreachable_patterns)]
            _ => None,
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
            let holders = (0..count).map(|_| OnceLock::new()).collect();
            Some(LangData { language, canonical, node_types: self.node_types(), holders })
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
        crate::alloc::init();
        let mut parser = tree_sitter::Parser::new();
        // The bundled grammars are all ABI 14 or 15, which this tree-sitter accepts; a failure
        // here would surface as parse() returning None, which callers report.
        let _ = parser.set_language(&self.language);
        parser
    }

    pub(crate) fn canon(&self, kind_id: u16) -> u16 {
        self.canonical.get(usize::from(kind_id)).copied().unwrap_or(kind_id)
    }

    /// By kind id (not canonical: index it with `Node::kind_id`): whether a node of that kind
    /// can have a descendant of the canonical kind `target`, by the grammar's
    /// `node-types.json`; a kind the file does not describe may. None when the grammar ships
    /// no such file or it does not parse. It describes error-free trees only: a subtree with
    /// an error (`Node::has_error`) may hold anything. A walk looking for `target` skips what
    /// cannot hold it (in Rust a macro's token tree, a string, an attribute's path).
    pub(crate) fn holders(&self, target: u16) -> Option<&[bool]> {
        let cell = self.holders.get(usize::from(target))?;
        cell.get_or_init(|| self.compute_holders(target)).as_deref()
    }

    fn compute_holders(&self, target: u16) -> Option<Box<[bool]>> {
        #[derive(Deserialize)]
        struct TypeRef {
            #[serde(rename = "type")]
            kind: String,
            named: bool,
        }
        #[derive(Deserialize)]
        struct Children {
            types: Vec<TypeRef>,
        }
        #[derive(Deserialize)]
        struct NodeType {
            #[serde(rename = "type")]
            kind: String,
            named: bool,
            #[serde(default)]
            fields: HashMap<String, Children>,
            children: Option<Children>,
            #[serde(default)]
            subtypes: Vec<TypeRef>,
            #[serde(default)]
            extra: bool,
        }
        let types: Vec<NodeType> = serde_json::from_str(self.node_types?).ok()?;
        let mut index: HashMap<(&str, bool), usize> = HashMap::new();
        for (at, t) in types.iter().enumerate() {
            index.entry((t.kind.as_str(), t.named)).or_insert(at);
        }
        let target_name = self.language.node_kind_for_id(target)?;
        let target_named = self.language.node_kind_is_named(target);
        // Unnamed children are listed only in fields, so an unnamed target is not followed.
        if !target_named {
            return None;
        }
        let target_at = *index.get(&(target_name, target_named))?;
        if types.get(target_at).is_some_and(|t| t.extra) {
            return None;
        }
        // Who may have each type as a child (a supertype stands for its subtypes).
        let mut parents = vec![Vec::new(); types.len()];
        for t in &types {
            let from = index[&(t.kind.as_str(), t.named)];
            let listed = t.fields.values().chain(&t.children).flat_map(|c| &c.types);
            for child in listed.chain(&t.subtypes) {
                if let Some(&to) = index.get(&(child.kind.as_str(), child.named)) {
                    parents[to].push(from);
                }
            }
        }
        // An extra (a comment) may sit anywhere, and is listed as nobody's child; older
        // grammars do not mark extras, so a target nobody lists is taken for one.
        if parents[target_at].is_empty() {
            return None;
        }
        // Everything with a path down to the target.
        let mut holds = vec![false; types.len()];
        let mut todo = vec![target_at];
        while let Some(at) = todo.pop() {
            for &p in &parents[at] {
                if !holds[p] {
                    holds[p] = true;
                    todo.push(p);
                }
            }
        }
        let by_id = (0..self.canonical.len())
            .map(|id| {
                let id = u16::try_from(id).unwrap_or(u16::MAX);
                let described = self
                    .language
                    .node_kind_for_id(id)
                    .and_then(|name| index.get(&(name, self.language.node_kind_is_named(id))));
                described.is_none_or(|&at| holds[at])
            })
            .collect();
        Some(by_id)
    }
}

impl fmt::Display for Lang {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

#[cfg(all(test, feature = "lang-rust"))]
mod tests {
    use super::Lang;

    #[test]
    fn holders_follow_node_types() {
        let data = Lang::Rust.data().expect("built");
        let id = |name: &str| data.canon(data.language.id_for_node_kind(name, true));
        let holders = data.holders(id("call_expression")).expect("rust ships node-types.json");
        let holds = |name: &str| holders[usize::from(data.language.id_for_node_kind(name, true))];
        assert!(holds("block") && holds("function_item") && holds("arguments"));
        assert!(holds("call_expression"), "a call's arguments may hold calls");
        assert!(!holds("token_tree") && !holds("identifier") && !holds("string_literal"));
        // A comment may sit anywhere, so nothing is skipped looking for one.
        assert!(data.holders(id("line_comment")).is_none());
    }
}
