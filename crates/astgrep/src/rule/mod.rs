//! ast-grep's rule language: a rule object (or a whole rule config with `rule`, `constraints`,
//! `utils`, `transform`, `fix`) compiled for one language, and its evaluation on a tree.
//!
//! What ast-grep refuses is refused when the rule is read, not when it runs: a transform cycle
//! (`transform.rs`) and a utility that reaches itself at the same node (`config.rs`). Fix and
//! rewrite templates live beside the rules in `fixer.rs`: the edit stager (`crate::edit`)
//! depends on them, and nothing here depends on the stager.

mod config;
mod eval;
pub(crate) mod fixer;
mod parse;
mod selector;
mod transform;

use std::collections::HashMap;

use crate::{
    lang::{Lang, LangData},
    pattern::Pattern,
};

pub(crate) use eval::Evaluator;
pub(crate) use transform::Transform;

/// A compiled rule config: what `ast_grep` and `ast_edit` take as `rule`.
#[derive(Debug)]
pub struct RuleSet {
    pub(crate) lang: Lang,
    pub(crate) data: &'static LangData,
    pub(crate) rule: Rule,
    pub(crate) constraints: Vec<(String, Rule)>,
    pub(crate) utils: HashMap<String, Rule>,
    /// Capturing metavariables of every pattern, in order of first appearance (`$X`, `$$$X`).
    pub(crate) vars: Vec<String>,
    /// Transformed variables, in order, usable in `fix` and `rewrite`.
    pub(crate) transforms: Vec<(String, Transform)>,
    pub(crate) fix: Option<Fix>,
    /// `rewriters` by id, for `rewrite` transforms (each with its own rule, transforms and fix;
    /// a rewriter's `vars` include those of the rule around it). Empty inside a rewriter.
    pub(crate) rewriters: Vec<(String, RuleSet)>,
    /// Canonical kinds a match can have; the traversal tries only these. `None` (a rewriter
    /// without a kind) tries every node.
    pub(crate) kinds: Option<Vec<u16>>,
    pub(crate) literals: Vec<String>,
    /// The rule as given, as compact JSON.
    pub(crate) source: String,
    /// `files` and `ignores`: which files (by path relative to the root) the rule applies to.
    pub(crate) globs: Option<FileGlobs>,
}

/// A rule config's `files` (a file must match one, when given) and `ignores` (it must match
/// none), matched against the path relative to the root as ast-grep matches them against the
/// path relative to its project.
#[derive(Debug)]
pub(crate) struct FileGlobs {
    pub(crate) files: Option<globset::GlobSet>,
    pub(crate) ignores: Option<globset::GlobSet>,
}

/// `fix`: the template and the relations that widen the replaced range to a sibling (the
/// adjacent one with the default `stopBy: neighbor`).
#[derive(Debug)]
pub(crate) struct Fix {
    pub(crate) template: String,
    pub(crate) expand_start: Option<Relation>,
    pub(crate) expand_end: Option<Relation>,
}

/// One compiled rule.
#[derive(Debug)]
pub(crate) enum Rule {
    Pattern(Box<Pattern>),
    Kind(u16),
    Regex(regex::Regex),
    NthChild(Box<NthChild>),
    /// Line and column (in characters; `None`: any column), 0-based.
    Range {
        start: (usize, Option<usize>),
        end: (usize, Option<usize>),
    },
    Inside(Box<Relation>),
    Has(Box<Relation>),
    Follows(Box<Relation>),
    Precedes(Box<Relation>),
    All(Vec<Rule>),
    Any(Vec<Rule>),
    Not(Box<Rule>),
    Matches(String),
}

/// A relational rule: the other node's rule, how far to look, and an optional field.
#[derive(Debug)]
pub(crate) struct Relation {
    pub(crate) rule: Rule,
    pub(crate) stop_by: StopBy,
    pub(crate) field: Option<std::num::NonZeroU16>,
}

#[derive(Debug)]
pub(crate) enum StopBy {
    Neighbor,
    End,
    Rule(Rule),
}

/// `nthChild`: position `a*n + b` (1-based) among named siblings, optionally those matching `of`.
#[derive(Debug)]
pub(crate) struct NthChild {
    pub(crate) a: i64,
    pub(crate) b: i64,
    pub(crate) reverse: bool,
    pub(crate) of: Option<Rule>,
}

impl NthChild {
    /// `An+B`, `2n`, `-n+3`, `odd`, `even`, or a number.
    fn parse_formula(s: &str) -> Option<(i64, i64)> {
        let s: String =
            s.chars().filter(|c| !c.is_whitespace()).collect::<String>().to_ascii_lowercase();
        match s.as_str() {
            "odd" => return Some((2, 1)),
            "even" => return Some((2, 0)),
            _ => {}
        }
        let Some(at) = s.find('n') else {
            return s.parse().ok().filter(|n| *n >= 1).map(|n| (0, n));
        };
        let a = match &s[..at] {
            "" | "+" => 1,
            "-" => -1,
            other => other.parse().ok()?,
        };
        let rest = &s[at + 1..];
        let b = if rest.is_empty() { 0 } else { rest.parse().ok()? };
        Some((a, b))
    }
}

impl RuleSet {
    /// Compiles a rule object, or a rule config holding `rule` (and `constraints`, `utils`,
    /// `transform`, `fix`), for `lang`. Errors name the key and say what would work.
    pub fn compile(lang: Lang, value: &serde_json::Value) -> Result<RuleSet, crate::AstError> {
        config::compile(lang, value)
    }

    /// The `language` a rule config names, if any.
    pub fn language_of(value: &serde_json::Value) -> Option<&str> {
        value.get("rule").and(value.get("language")).and_then(|l| l.as_str())
    }

    pub fn lang(&self) -> Lang {
        self.lang
    }

    /// The capturing metavariables, with `$` or `$$$`.
    pub fn metavariables(&self) -> &[String] {
        &self.vars
    }

    /// The rule as compact JSON.
    pub fn source(&self) -> &str {
        &self.source
    }

    pub fn literals(&self) -> &[String] {
        &self.literals
    }

    /// Every match of the rule in `source` (one file's text), in pre-order. For tests and
    /// in-memory hosts.
    pub fn match_source(&self, source: &str) -> Vec<crate::RawMatch> {
        let mut parser = self.data.parser();
        let Some(tree) = parser.parse(source, None) else { return Vec::new() };
        Evaluator::new(self, crate::DEFAULT_STEP_BUDGET)
            .find_all(tree.root_node(), source.as_bytes())
    }

    /// The `fix` template of the config, if it has one.
    pub fn fix_template(&self) -> Option<&str> {
        self.fix.as_ref().map(|f| f.template.as_str())
    }

    /// Whether the rule applies to the file at `rel` (relative to the root, `/`-separated),
    /// by its `files` and `ignores`.
    pub fn applies_to(&self, rel: &str) -> bool {
        self.globs.as_ref().is_none_or(|g| {
            g.files.as_ref().is_none_or(|f| f.is_match(rel))
                && g.ignores.as_ref().is_none_or(|i| !i.is_match(rel))
        })
    }

    /// Whether a node of canonical kind `kind` can match.
    pub(crate) fn tries(&self, kind: u16) -> bool {
        self.kinds.as_ref().is_none_or(|k| k.contains(&kind))
    }
}
