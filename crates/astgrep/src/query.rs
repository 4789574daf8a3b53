//! What a search runs: a pattern or a compiled rule, behind one small interface for the walk.

use tree_sitter::Node;

use crate::{
    lang::LangData,
    matcher::{Anchors, Matcher, RawMatch},
    pattern::Pattern,
    rule::RuleSet,
};

/// A pattern or a rule, as the walk sees it.
#[derive(Clone, Copy)]
pub(crate) enum Query<'a> {
    Pattern(&'a Pattern),
    Rule(&'a RuleSet),
}

impl Query<'_> {
    pub(crate) fn data(&self) -> &'static LangData {
        match self {
            Query::Pattern(p) => p.data,
            Query::Rule(r) => r.data,
        }
    }

    /// Words a file must contain to be worth parsing.
    pub(crate) fn literals(&self) -> &[String] {
        match self {
            Query::Pattern(p) => p.literals(),
            Query::Rule(r) => r.literals(),
        }
    }

    /// Whether the query applies to the file at `rel` (a rule's `files` and `ignores`).
    pub(crate) fn applies_to(&self, rel: &str) -> bool {
        match self {
            Query::Pattern(_) => true,
            Query::Rule(r) => r.applies_to(rel),
        }
    }

    /// What the query's matches depend on, as a key for the match cache: its language, its
    /// text as given and how it was compiled (context, strictness, selector).
    pub(crate) fn cache_key(&self) -> String {
        match self {
            Query::Pattern(p) => format!(
                "pattern\0{:?}\0{:?}\0{:?}\0{:?}\0{}",
                p.lang, p.context, p.strictness, p.root_kind, p.source
            ),
            Query::Rule(r) => format!("rule\0{:?}\0{}", r.lang, r.source),
        }
    }

    /// Capture names, indexed like `RawMatch::captures`.
    pub(crate) fn metavariables(&self) -> Vec<String> {
        match self {
            Query::Pattern(p) => p.metavariables(),
            Query::Rule(r) => r.metavariables().to_vec(),
        }
    }

    /// Every match under `root`, and where a candidate ran out of steps; with `comments`, each
    /// match also holds the block comments a rewrite keeps (`RawMatch::comments`, which only a
    /// rewrite reads: a search skips that walk over every match's subtree). A pattern walks only
    /// the subtrees holding its longest literal word (see `Matcher::find_all_near`); a rule
    /// walks everything, since its words may lie in related nodes outside the match.
    pub(crate) fn find_all(
        &self,
        root: Node<'_>,
        src: &[u8],
        budget: u64,
        comments: bool,
    ) -> (Vec<RawMatch>, Vec<usize>) {
        match self {
            Query::Pattern(p) => {
                let anchors = p.literals().first().map(|word| Anchors::of(src, word.as_bytes()));
                let mut matcher = Matcher::with_budget(p, budget);
                matcher.comments = comments;
                let found = matcher.find_all_near(root, src, anchors.as_ref());
                (found, matcher.budget_hits)
            }
            Query::Rule(r) => {
                let mut evaluator = crate::rule::Evaluator::new(r, budget);
                let found = evaluator.find_all(root, src);
                (found, evaluator.budget_hits)
            }
        }
    }
}
