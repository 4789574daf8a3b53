//! Evaluating a compiled rule at a node: bindings shared across patterns by name, relational
//! walks with `stopBy` and `field`, and the traversal that finds every match in a tree.

use tree_sitter::Node;

use super::{NthChild, Relation, Rule, RuleSet, StopBy, Transform};
use crate::matcher::{Capture, Matcher, RawMatch};

/// Bindings by metavariable name (without `$`).
type Env<'t> = Vec<(String, Capture<'t>)>;

/// How deep `matches` may nest (utility rules referring to each other), and how deep
/// rewriters may run inside each other's captures.
const MAX_DEPTH: usize = 64;

pub(crate) struct Evaluator<'r> {
    set: &'r RuleSet,
    /// The config's `rewriters` (those of the top rule, also while running a rewriter).
    rewriters: &'r [(String, RuleSet)],
    /// How many rewriters this evaluation runs inside.
    nesting: usize,
    budget: u64,
    /// Byte offsets of candidates where a pattern's step budget ran out.
    pub(crate) budget_hits: Vec<usize>,
}

impl<'r> Evaluator<'r> {
    pub(crate) fn new(set: &'r RuleSet, budget: u64) -> Self {
        Evaluator { set, rewriters: &set.rewriters, nesting: 0, budget, budget_hits: Vec::new() }
    }

    /// Every node under `root` the rule (and its constraints) matches, in pre-order.
    pub(crate) fn find_all(&mut self, root: Node<'_>, src: &[u8]) -> Vec<RawMatch> {
        let mut out = Vec::new();
        let mut cursor = root.walk();
        loop {
            let node = cursor.node();
            if self.set.tries(self.set.data.canon(node.kind_id())) {
                let mut env = Env::new();
                if self.eval(&self.set.rule, node, src, &mut env, 0)
                    && self.constraints_hold(src, &mut env)
                {
                    out.push(self.finish(node, src, env, None));
                }
            }
            if cursor.goto_first_child() {
                continue;
            }
            if !crate::cursor::skip_subtree(&mut cursor) {
                return out;
            }
        }
    }

    /// Whether every constraint holds for its single-node capture. What a constraint's own
    /// patterns bind joins the match (usable in `fix`), as in ast-grep.
    fn constraints_hold<'t>(&mut self, src: &[u8], env: &mut Env<'t>) -> bool {
        for (name, rule) in &self.set.constraints {
            let Some(Capture::One(node)) =
                env.iter().find(|(n, _)| n == name).map(|(_, c)| c.clone())
            else {
                continue;
            };
            if !self.try_at(rule, node, src, env, 0) {
                return false;
            }
        }
        true
    }

    /// The match at `node` with bindings `env`; `enclosing` is the top rule's bindings when
    /// this evaluates a rewriter (None: `env` is the top rule's).
    fn finish<'t>(
        &mut self,
        node: Node<'t>,
        src: &[u8],
        env: Env<'t>,
        enclosing: Option<&Env<'t>>,
    ) -> RawMatch {
        let captures = self
            .set
            .vars
            .iter()
            .map(|v| {
                let bare = v.trim_start_matches('$');
                env.iter().find(|(n, _)| n == bare).and_then(|(_, c)| match c {
                    Capture::One(n) => Some(n.byte_range()),
                    Capture::Many(span) => span.map(|(a, b)| a.start_byte()..b.end_byte()),
                })
            })
            .collect::<Vec<_>>();
        let mut replace = node.byte_range();
        if let Some(fix) = &self.set.fix {
            // As ast-grep: the range reaches the one sibling the relation finds (with the
            // default `stopBy: neighbor`, only the adjacent one), never a run of siblings.
            if let Some(rel) = &fix.expand_start {
                let mut scratch = env.clone();
                if let Some(n) =
                    self.sibling_find(rel, node, |n| n.prev_sibling(), src, &mut scratch, 0)
                {
                    replace.start = n.start_byte();
                }
            }
            if let Some(rel) = &fix.expand_end {
                let mut scratch = env.clone();
                if let Some(n) =
                    self.sibling_find(rel, node, |n| n.next_sibling(), src, &mut scratch, 0)
                {
                    replace.end = n.end_byte();
                }
            }
        }
        let mut rewritten = Vec::new();
        for (i, (_, t)) in self.set.transforms.iter().enumerate() {
            if let Transform::Rewrite { rewriters, join_by, .. } = t {
                let top = enclosing.unwrap_or(&env);
                let text =
                    self.rewrite(t.source_name(), rewriters, join_by.as_deref(), &env, top, src);
                rewritten.push((i, text));
            }
        }
        let start = node.start_position();
        RawMatch {
            range: node.byte_range(),
            start: (start.row, start.column),
            captures,
            replace,
            comments: Vec::new(),
            rewritten,
        }
    }

    /// A `rewrite` transform: the text of capture `name` with every descendant (in pre-order,
    /// outermost first) that one of the rewriters `ids` matches replaced by that rewriter's
    /// fix, as ast-grep does; with `join_by`, only the rewritten parts, joined by it. A
    /// rewriter starts from the top rule's bindings (`enclosing`), not from another rewriter's.
    fn rewrite<'t>(
        &mut self,
        name: &str,
        ids: &[String],
        join_by: Option<&str>,
        env: &Env<'t>,
        enclosing: &Env<'t>,
        src: &[u8],
    ) -> String {
        let nodes: Vec<Node<'t>> = match env.iter().find(|(n, _)| n == name).map(|(_, c)| c) {
            Some(Capture::One(n)) => vec![*n],
            Some(Capture::Many(Some((first, last)))) => {
                let mut out = Vec::new();
                let mut at = Some(*first);
                while let Some(n) = at {
                    if n.is_named() && !n.is_extra() {
                        out.push(n);
                    }
                    if n.id() == last.id() {
                        break;
                    }
                    at = n.next_sibling();
                }
                out
            }
            _ => return String::new(),
        };
        let (Some(first), Some(last)) = (nodes.first(), nodes.last()) else {
            return String::new();
        };
        let span = first.start_byte()..last.end_byte();
        let Ok(text) = std::str::from_utf8(src) else { return String::new() };
        let rules: Vec<&RuleSet> = ids
            .iter()
            .filter_map(|id| self.rewriters.iter().find(|(i, _)| i == id).map(|(_, r)| r))
            .collect();
        let mut edits: Vec<(std::ops::Range<usize>, String)> = Vec::new();
        if self.nesting < MAX_DEPTH {
            for node in &nodes {
                let mut cursor = node.walk();
                loop {
                    let at = cursor.node();
                    let free = edits.last().is_none_or(|(r, _)| at.start_byte() >= r.end);
                    let done =
                        free && self.rewrite_at(&rules, at, src, text, enclosing, &mut edits);
                    if !done && cursor.goto_first_child() {
                        continue;
                    }
                    if !crate::cursor::skip_subtree(&mut cursor) {
                        break;
                    }
                }
            }
        }
        edits.retain(|(r, _)| r.start >= span.start && r.end <= span.end);
        if let Some(joiner) = join_by {
            return edits.into_iter().map(|(_, t)| t).collect::<Vec<_>>().join(joiner);
        }
        let mut out = String::new();
        let mut pos = span.start;
        for (r, t) in edits {
            out.push_str(&text[pos..r.start]);
            out.push_str(&t);
            pos = r.end;
        }
        out.push_str(&text[pos..span.end]);
        out
    }

    /// Tries the rewriters at `node` in order; the first that matches adds its edit.
    fn rewrite_at<'t>(
        &mut self,
        rules: &[&RuleSet],
        node: Node<'t>,
        src: &[u8],
        text: &str,
        enclosing: &Env<'t>,
        edits: &mut Vec<(std::ops::Range<usize>, String)>,
    ) -> bool {
        for rule in rules {
            if !rule.tries(rule.data.canon(node.kind_id())) {
                continue;
            }
            let mut inner = Evaluator {
                set: rule,
                rewriters: self.rewriters,
                nesting: self.nesting + 1,
                budget: self.budget,
                budget_hits: Vec::new(),
            };
            let mut scoped = enclosing.clone();
            if inner.eval(&rule.rule, node, src, &mut scoped, 0)
                && inner.constraints_hold(src, &mut scoped)
            {
                let m = inner.finish(node, src, scoped, Some(enclosing));
                self.budget_hits.append(&mut inner.budget_hits);
                edits.push((m.replace.clone(), super::fixer::fix_text(rule, &m, text)));
                return true;
            }
            self.budget_hits.append(&mut inner.budget_hits);
        }
        false
    }

    fn eval<'t>(
        &mut self,
        rule: &Rule,
        node: Node<'t>,
        src: &[u8],
        env: &mut Env<'t>,
        depth: usize,
    ) -> bool {
        match rule {
            Rule::Pattern(p) => self.pattern_at(p, node, src, env),
            Rule::Kind(k) => self.set.data.canon(node.kind_id()) == *k,
            Rule::Regex(re) => {
                std::str::from_utf8(&src[node.byte_range()]).is_ok_and(|t| re.is_match(t))
            }
            Rule::Range { start, end } => {
                let (s, e) = (node.start_position(), node.end_position());
                let at = |(line, column): (usize, Option<usize>), row, byte, byte_column| {
                    line == row && column.is_none_or(|c| c == char_column(src, byte, byte_column))
                };
                at(*start, s.row, node.start_byte(), s.column)
                    && at(*end, e.row, node.end_byte(), e.column)
            }
            Rule::NthChild(nth) => self.nth_child_at(nth, node, src, env, depth),
            Rule::Inside(rel) => self.inside(rel, node, src, env, depth),
            Rule::Has(rel) => self.has(rel, node, src, env, depth),
            Rule::Follows(rel) => {
                self.sibling_find(rel, node, |n| n.prev_sibling(), src, env, depth).is_some()
            }
            Rule::Precedes(rel) => {
                self.sibling_find(rel, node, |n| n.next_sibling(), src, env, depth).is_some()
            }
            Rule::All(rules) => {
                let mark = env.len();
                for r in rules {
                    if !self.eval(r, node, src, env, depth + 1) {
                        env.truncate(mark);
                        return false;
                    }
                }
                true
            }
            Rule::Any(rules) => rules.iter().any(|r| self.try_at(r, node, src, env, depth)),
            Rule::Not(r) => {
                let mut scratch = env.clone();
                !self.eval(r, node, src, &mut scratch, depth + 1)
            }
            Rule::Matches(name) => {
                if depth > MAX_DEPTH {
                    return false;
                }
                let set = self.set;
                match set.utils.get(name) {
                    Some(r) => self.eval(r, node, src, env, depth + 1),
                    None => false,
                }
            }
        }
    }

    /// A pattern at `node`, seeded with what `env` already binds; its new bindings join `env`.
    fn pattern_at<'t>(
        &mut self,
        p: &crate::pattern::Pattern,
        node: Node<'t>,
        src: &[u8],
        env: &mut Env<'t>,
    ) -> bool {
        let names = p.metavariables();
        let mut seeded = crate::matcher::Env::new();
        for (i, name) in names.iter().enumerate() {
            let bare = name.trim_start_matches('$');
            if let Some((_, c)) = env.iter().find(|(n, _)| n == bare)
                && let Ok(i) = u16::try_from(i)
            {
                seeded.push((i, c.clone()));
            }
        }
        let seeds = seeded.len();
        let mut matcher = Matcher::with_budget(p, self.budget);
        if !matcher.match_here(node, src, &mut seeded) {
            if matcher.exceeded() {
                self.budget_hits.push(node.start_byte());
            }
            return false;
        }
        for (i, c) in seeded.into_iter().skip(seeds) {
            if let Some(name) = names.get(usize::from(i)) {
                let bare = name.trim_start_matches('$').to_string();
                if !env.iter().any(|(n, _)| *n == bare) {
                    env.push((bare, c));
                }
            }
        }
        true
    }

    /// `nthChild`, as ast-grep counts: every named sibling, comments included (they are named
    /// nodes), or only those `ofRule` matches, each tried on its own copy of the bindings; the
    /// node's own `ofRule` bindings then join the match.
    fn nth_child_at<'t>(
        &mut self,
        nth: &NthChild,
        node: Node<'t>,
        src: &[u8],
        env: &mut Env<'t>,
        depth: usize,
    ) -> bool {
        let Some(parent) = node.parent() else { return false };
        let mut position = 0i64;
        let mut count = 0i64;
        let mut cursor = parent.walk();
        for sibling in parent.named_children(&mut cursor) {
            let counted = match &nth.of {
                Some(of) => {
                    let mut scratch = env.clone();
                    self.eval(of, sibling, src, &mut scratch, depth + 1)
                }
                None => true,
            };
            if counted {
                count += 1;
                if sibling.id() == node.id() {
                    position = count;
                }
            }
        }
        if position == 0 {
            return false;
        }
        if nth.reverse {
            position = count - position + 1;
        }
        let at = if nth.a == 0 {
            position == nth.b
        } else {
            let k = position - nth.b;
            k % nth.a == 0 && k / nth.a >= 0
        };
        at && nth.of.as_ref().is_none_or(|of| self.try_at(of, node, src, env, depth))
    }

    /// `inside`: an ancestor (in the relation's field, up to its `stopBy`) matches.
    fn inside<'t>(
        &mut self,
        rel: &Relation,
        node: Node<'t>,
        src: &[u8],
        env: &mut Env<'t>,
        depth: usize,
    ) -> bool {
        let mut child = node;
        while let Some(parent) = child.parent() {
            let in_field = rel.field.is_none_or(|f| is_field_child(parent, child, f));
            if in_field && self.try_at(&rel.rule, parent, src, env, depth) {
                return true;
            }
            if self.stops(rel, parent, src, env, depth) {
                return false;
            }
            child = parent;
        }
        false
    }

    /// `has`: a descendant (from the relation's field, down to its `stopBy`) matches.
    fn has<'t>(
        &mut self,
        rel: &Relation,
        node: Node<'t>,
        src: &[u8],
        env: &mut Env<'t>,
        depth: usize,
    ) -> bool {
        let mut stack: Vec<Node<'t>> = Vec::new();
        let mut cursor = node.walk();
        let children: Vec<Node<'t>> = match rel.field {
            Some(f) => node.children_by_field_id(f, &mut cursor).collect(),
            None => node.children(&mut cursor).collect(),
        };
        stack.extend(children.into_iter().rev());
        while let Some(n) = stack.pop() {
            if self.try_at(&rel.rule, n, src, env, depth) {
                return true;
            }
            if self.stops(rel, n, src, env, depth) {
                continue;
            }
            let mut c = n.walk();
            let kids: Vec<Node<'t>> = n.children(&mut c).collect();
            stack.extend(kids.into_iter().rev());
        }
        false
    }

    /// Evaluates `rule` at `node`, keeping its bindings only on success.
    fn try_at<'t>(
        &mut self,
        rule: &Rule,
        node: Node<'t>,
        src: &[u8],
        env: &mut Env<'t>,
        depth: usize,
    ) -> bool {
        let mark = env.len();
        if self.eval(rule, node, src, env, depth + 1) {
            true
        } else {
            env.truncate(mark);
            false
        }
    }

    /// The first sibling in one direction (`step`) that matches the relation's rule, walking
    /// until the relation's `stopBy` says stop (the stop node itself is tried).
    fn sibling_find<'t>(
        &mut self,
        rel: &Relation,
        node: Node<'t>,
        step: impl Fn(&Node<'t>) -> Option<Node<'t>>,
        src: &[u8],
        env: &mut Env<'t>,
        depth: usize,
    ) -> Option<Node<'t>> {
        let mut at = step(&node);
        while let Some(n) = at {
            if self.try_at(&rel.rule, n, src, env, depth) {
                return Some(n);
            }
            if self.stops(rel, n, src, env, depth) {
                return None;
            }
            at = step(&n);
        }
        None
    }

    /// Whether a relational walk stops after `node`.
    fn stops<'t>(
        &mut self,
        rel: &Relation,
        node: Node<'t>,
        src: &[u8],
        env: &Env<'t>,
        depth: usize,
    ) -> bool {
        match &rel.stop_by {
            StopBy::Neighbor => true,
            StopBy::End => false,
            StopBy::Rule(stop) => {
                let mut scratch = env.clone();
                self.eval(stop, node, src, &mut scratch, depth + 1)
            }
        }
    }
}

/// The column of byte offset `at` in characters, given its column in bytes (tree-sitter's).
fn char_column(src: &[u8], at: usize, byte_column: usize) -> usize {
    let line = &src[at.saturating_sub(byte_column)..at];
    std::str::from_utf8(line).map_or(byte_column, |l| l.chars().count())
}

fn is_field_child(parent: Node<'_>, child: Node<'_>, field: std::num::NonZeroU16) -> bool {
    let mut cursor = parent.walk();
    parent.children_by_field_id(field, &mut cursor).any(|c| c.id() == child.id())
}
