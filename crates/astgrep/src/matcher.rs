//! The matcher: compiled pattern against a syntax tree, with backtracking `$$$` and a step budget.
//!
//! Semantics (see the crate README): unnamed tokens and comments of the code may be skipped, named
//! children may not, so a pattern accounts for every named child of what it matches unless it
//! ends with `$$$`. A metavariable seen twice must capture the same code, compared as token
//! sequences without whitespace, comments and trailing commas.

use std::ops::Range;

use tree_sitter::Node;

use crate::{
    lang::LangData,
    pattern::{PNode, Pattern, named_text, significant_children},
    strictness::Strictness,
};

/// Steps one candidate may take before the matcher gives up on it and says so.
pub const DEFAULT_STEP_BUDGET: u64 = 200_000;

/// What a metavariable captured.
#[derive(Debug, Clone)]
pub(crate) enum Capture<'t> {
    One(Node<'t>),
    /// The first and last sibling a `$$$` took (separators included); None when empty.
    Many(Option<(Node<'t>, Node<'t>)>),
}

/// One match: byte range and the captured byte ranges (None for an empty `$$$`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawMatch {
    pub range: Range<usize>,
    /// Row and column (0-based, column in bytes) of the start.
    pub start: (usize, usize),
    /// Captures, indexed like `Pattern::metavariables`.
    pub captures: Vec<Option<Range<usize>>>,
    /// What a rewrite replaces: from the first to the last code token the pattern's tokens and
    /// metavariables matched, so a trailing comment or `;` the pattern does not mention stays.
    pub replace: Range<usize>,
    /// Block comments inside `replace` but outside every capture: a rewrite keeps them. Only
    /// a rewrite reads them: `match_source` and `ast_edit` fill them, a search leaves them empty.
    pub comments: Vec<Range<usize>>,
    /// The values of a rule's `rewrite` transforms, by index in its transforms: computed while
    /// matching, where the captured nodes are at hand.
    pub(crate) rewritten: Vec<(usize, String)>,
}

/// Where a literal word of a pattern occurs in one file: sorted start offsets and the length.
pub(crate) struct Anchors {
    pub(crate) starts: Vec<usize>,
    pub(crate) len: usize,
}

impl Anchors {
    /// Every occurrence of `word` in `src` that can be the word of a token (see [`is_word_at`]),
    /// overlapping ones included.
    pub(crate) fn of(src: &[u8], word: &[u8]) -> Anchors {
        let finder = memchr::memmem::Finder::new(word);
        let mut starts = Vec::new();
        let mut at = 0;
        while let Some(i) = src.get(at..).and_then(|rest| finder.find(rest)) {
            if is_word_at(src, at + i, word) {
                starts.push(at + i);
            }
            at += i + 1;
        }
        Anchors { starts, len: word.len() }
    }

    /// Whether an occurrence lies wholly inside `start..end`.
    fn within(&self, start: usize, end: usize) -> bool {
        let i = self.starts.partition_point(|s| *s < start);
        self.starts.get(i).is_some_and(|s| s + self.len <= end)
    }
}

/// Whether the occurrence of a pattern's literal `word` (a maximal run of `A-Z a-z 0-9 _` in one
/// of its tokens) at `at` in `src` can be that word of the same token in the code. A word that
/// starts with a letter or `_` is a keyword, a name or a name-like part of a token, and the
/// lexer takes the longest name, so in code its token is never followed by a name character
/// and never preceded by a letter or `_` (a digit may precede it: Python reads `1if` as `1`
/// `if`). So `let` in `delete` or `letter` is not an occurrence. A word starting with a digit
/// is taken anywhere (`10or` is `10` `or`).
pub(crate) fn is_word_at(src: &[u8], at: usize, word: &[u8]) -> bool {
    let is_name = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    if !word.first().is_some_and(|b| b.is_ascii_alphabetic() || *b == b'_') {
        return true;
    }
    let before = at.checked_sub(1).and_then(|i| src.get(i));
    let after = src.get(at + word.len());
    !before.is_some_and(|b| b.is_ascii_alphabetic() || *b == b'_')
        && !after.is_some_and(|b| is_name(*b))
}

/// Whether `word` occurs in `src` as the word of a token could (see [`is_word_at`]).
pub(crate) fn contains_word(finder: &memchr::memmem::Finder<'_>, src: &[u8]) -> bool {
    let word = finder.needle();
    let mut at = 0;
    while let Some(i) = src.get(at..).and_then(|rest| finder.find(rest)) {
        if is_word_at(src, at + i, word) {
            return true;
        }
        at += i + 1;
    }
    false
}

/// Matches one pattern against trees of its language.
pub struct Matcher<'p> {
    pattern: &'p Pattern,
    data: &'static LangData,
    budget: u64,
    steps: u64,
    exceeded: bool,
    /// Byte offsets of candidates abandoned because the step budget ran out.
    pub budget_hits: Vec<usize>,
    /// Whether each match records its orphan block comments (`RawMatch::comments`), which
    /// only a rewrite needs.
    pub(crate) comments: bool,
    /// Whether the walk skips subtrees that cannot hold the pattern's root kind (off only in
    /// the test that checks it changes nothing).
    prune: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Every named candidate must be consumed.
    Full,
    /// Match a prefix (sequence patterns).
    Prefix,
}

/// Bindings by metavariable index, plus `(TOUCHED, node)` for every code token a pattern leaf
/// matched (so the covered range backtracks with the bindings).
pub(crate) type Env<'t> = Vec<(u16, Capture<'t>)>;

/// The index marking a matched token rather than a binding.
const TOUCHED: u16 = u16::MAX;

impl<'p> Matcher<'p> {
    pub fn new(pattern: &'p Pattern) -> Self {
        Self::with_budget(pattern, DEFAULT_STEP_BUDGET)
    }

    pub fn with_budget(pattern: &'p Pattern, budget: u64) -> Self {
        Matcher {
            pattern,
            data: pattern.data,
            budget,
            steps: 0,
            exceeded: false,
            budget_hits: Vec::new(),
            comments: true,
            prune: true,
        }
    }

    /// Every match in the tree under `root`, in pre-order (outer before inner, then by position).
    pub fn find_all(&mut self, root: Node<'_>, src: &[u8]) -> Vec<RawMatch> {
        self.find_all_near(root, src, None)
    }

    /// As `find_all`, trying only subtrees that hold one of `anchors` (where one of the
    /// pattern's literal words occurs in `src`): every match's text contains each of its
    /// words, so a subtree without any occurrence holds no match and is not walked.
    pub(crate) fn find_all_near(
        &mut self,
        root: Node<'_>,
        src: &[u8],
        anchors: Option<&Anchors>,
    ) -> Vec<RawMatch> {
        let mut out = Vec::new();
        let nodes = &self.pattern.nodes;
        let root_kind = self.pattern.root_kind.or(match nodes.first() {
            Some(PNode::Leaf { kind, .. } | PNode::Inner { kind, .. }) => Some(*kind),
            _ => None,
        });
        let sequence = nodes.len() > 1;
        // Kinds whose subtrees cannot hold the root kind are not entered: most of the walk's
        // cost is tree-sitter's cursor stepping over every node.
        let holders = root_kind.filter(|_| self.prune).and_then(|k| self.data.holders(k));
        let mut children = Vec::new();
        let mut cursor = root.walk();
        loop {
            let node = cursor.node();
            if anchors.is_some_and(|a| !a.within(node.start_byte(), node.end_byte())) {
                if !crate::cursor::skip_subtree(&mut cursor) {
                    return out;
                }
                continue;
            }
            let enter = holders.is_none_or(|h| {
                h.get(usize::from(node.kind_id())).is_none_or(|may| *may) || node.has_error()
            });
            if sequence {
                if enter && node.child_count() >= nodes.len() {
                    self.code_children(node, &mut children);
                    self.sequence_at(&children, src, root_kind, &mut out);
                }
            } else if root_kind.is_none_or(|k| self.data.canon(node.kind_id()) == k) {
                self.begin();
                let mut env = Env::new();
                if self.node(&nodes[0], node, src, &mut env) {
                    let mut found = self.finish(node.byte_range(), node.start_position(), env);
                    if self.comments {
                        found.comments = orphan_comments(node, src, &found);
                    }
                    out.push(found);
                } else if self.exceeded {
                    self.budget_hits.push(node.start_byte());
                }
            }
            if enter && cursor.goto_first_child() {
                continue;
            }
            if !crate::cursor::skip_subtree(&mut cursor) {
                return out;
            }
        }
    }

    fn sequence_at(
        &mut self,
        children: &[Node<'_>],
        src: &[u8],
        first_kind: Option<u16>,
        out: &mut Vec<RawMatch>,
    ) {
        let nodes = &self.pattern.nodes;
        let mut start = 0;
        while start < children.len() {
            let first = children[start];
            if !first.is_named()
                || first_kind.is_some_and(|k| self.data.canon(first.kind_id()) != k)
            {
                start += 1;
                continue;
            }
            self.begin();
            let mut env = Env::new();
            match self.list(nodes, 0, children, start, src, &mut env, Mode::Prefix) {
                Some(end) if end > start => {
                    let last = children[end - 1];
                    let range = first.start_byte()..last.end_byte();
                    out.push(self.finish(range, first.start_position(), env));
                    start = end;
                }
                _ => {
                    if self.exceeded {
                        self.budget_hits.push(first.start_byte());
                    }
                    start += 1;
                }
            }
        }
    }

    fn begin(&mut self) {
        self.steps = 0;
        self.exceeded = false;
    }

    fn finish(&self, range: Range<usize>, start: tree_sitter::Point, env: Env<'_>) -> RawMatch {
        let mut captures = vec![None; self.pattern.vars.len()];
        let (replace, bindings) = covered(&env);
        for (index, capture) in bindings {
            let range = match capture {
                Capture::One(n) => Some(n.byte_range()),
                Capture::Many(span) => span.map(|(a, b)| a.start_byte()..b.end_byte()),
            };
            if let Some(slot) = captures.get_mut(usize::from(*index)) {
                *slot = range;
            }
        }
        let replace = replace.unwrap_or_else(|| range.clone());
        RawMatch {
            range,
            start: (start.row, start.column),
            captures,
            replace,
            comments: Vec::new(),
            rewritten: Vec::new(),
        }
    }

    /// Whether the last candidate ran out of steps.
    pub(crate) fn exceeded(&self) -> bool {
        self.exceeded
    }

    /// Matches the (single-node) pattern at `node` exactly, extending `env` on success.
    pub(crate) fn match_here<'t>(&mut self, node: Node<'t>, src: &[u8], env: &mut Env<'t>) -> bool {
        let Some(first) = self.pattern.nodes.first() else { return false };
        if self.pattern.root_kind.is_some_and(|k| self.data.canon(node.kind_id()) != k) {
            return false;
        }
        self.begin();
        let mark = env.len();
        if self.node(first, node, src, env) {
            true
        } else {
            env.truncate(mark);
            false
        }
    }

    /// The children of a code node that take part in matching at this strictness.
    fn code_children<'t>(&self, node: Node<'t>, out: &mut Vec<Node<'t>>) {
        if self.pattern.strictness.skips_extras() {
            significant_children(node, out);
            return;
        }
        out.clear();
        let mut cursor = node.walk();
        if cursor.goto_first_child() {
            loop {
                let child = cursor.node();
                if !child.is_missing() {
                    out.push(child);
                }
                if !cursor.goto_next_sibling() {
                    break;
                }
            }
        }
    }

    fn tick(&mut self) -> bool {
        self.steps += 1;
        if self.steps > self.budget {
            self.exceeded = true;
        }
        !self.exceeded
    }

    fn node<'t>(&mut self, p: &PNode, n: Node<'t>, src: &[u8], env: &mut Env<'t>) -> bool {
        if !self.tick() {
            return false;
        }
        let strictness = self.pattern.strictness;
        match p {
            PNode::Var(index) => n.is_named() && self.bind(*index, Capture::One(n), src, env),
            PNode::Token(index) => self.bind(*index, Capture::One(n), src, env),
            PNode::Multi(_) => false,
            PNode::Leaf { kind, text, core, .. } => {
                if self.data.canon(n.kind_id()) != *kind {
                    return false;
                }
                let same = !strictness.compares_text()
                    || src.get(n.byte_range()) == Some(&text[..])
                    || (strictness.ignores_pattern_tokens()
                        && core.as_ref().is_some_and(|c| named_text(n, src) == c[..]));
                if same {
                    env.push((TOUCHED, Capture::One(n)));
                }
                same
            }
            PNode::Inner { kind, children, .. } => {
                if self.data.canon(n.kind_id()) != *kind {
                    return false;
                }
                let mut kids = Vec::new();
                self.code_children(n, &mut kids);
                self.list(children, 0, &kids, 0, src, env, Mode::Full).is_some()
            }
        }
    }

    /// Matches `ps[pi..]` against `cs[ci..]`; returns the index after the last consumed candidate.
    #[allow(clippy::too_many_arguments)]
    fn list<'t>(
        &mut self,
        ps: &[PNode],
        pi: usize,
        cs: &[Node<'t>],
        ci: usize,
        src: &[u8],
        env: &mut Env<'t>,
        mode: Mode,
    ) -> Option<usize> {
        if !self.tick() {
            return None;
        }
        let strictness = self.pattern.strictness;
        let Some(p) = ps.get(pi) else {
            return match mode {
                Mode::Prefix => Some(ci),
                Mode::Full => cs[ci..].iter().all(|c| !c.is_named()).then_some(cs.len()),
            };
        };
        if strictness.ignores_pattern_tokens() && matches!(p, PNode::Leaf { named: false, .. }) {
            return self.list(ps, pi + 1, cs, ci, src, env, mode);
        }
        if let PNode::Multi(index) = p {
            // Lazy first, then longer: backtracking over every end position after a named node.
            // A non-empty capture starts at a named node: a separator before it belongs to the
            // fixed element it follows, never to the `$$$`.
            let from = (ci..cs.len()).find(|&c| cs[c].is_named()).unwrap_or(cs.len());
            for end in std::iter::once(ci).chain(from + 1..=cs.len()) {
                if end > ci && !cs[end - 1].is_named() {
                    continue;
                }
                let mark = env.len();
                let taken = if end > ci { Some((cs[from], cs[end - 1])) } else { None };
                if self.bind(*index, Capture::Many(taken), src, env) {
                    if let Some(done) = self.list(ps, pi + 1, cs, end, src, env, mode) {
                        return Some(done);
                    }
                    // An empty `$$$` takes its separator with it: `f($$$A, $B)` matches `f(x)`.
                    if end == ci
                        && is_comma(ps.get(pi + 1))
                        && let Some(done) = self.list(ps, pi + 2, cs, end, src, env, mode)
                    {
                        return Some(done);
                    }
                }
                env.truncate(mark);
                if self.exceeded {
                    return None;
                }
            }
            return None;
        }
        // A trailing comma in the pattern is optional before a closing delimiter or the end, and
        // before a `$$$` only when that `$$$` binds nothing (`foo($A, $$$R)` on `foo(1)`).
        if strictness != Strictness::Cst && is_optional_comma(p, ps.get(pi + 1)) {
            let mark = env.len();
            let skipped = match ps.get(pi + 1) {
                Some(PNode::Multi(index)) => {
                    if self.bind(*index, Capture::Many(None), src, env) {
                        self.list(ps, pi + 2, cs, ci, src, env, mode)
                    } else {
                        None
                    }
                }
                _ => self.list(ps, pi + 1, cs, ci, src, env, mode),
            };
            if let Some(done) = skipped {
                return Some(done);
            }
            env.truncate(mark);
        }
        let mut c = ci;
        while c < cs.len() {
            let mark = env.len();
            if self.node(p, cs[c], src, env)
                && let Some(done) = self.list(ps, pi + 1, cs, c + 1, src, env, mode)
            {
                return Some(done);
            }
            env.truncate(mark);
            // A named extra that is not a comment (Python's `\` line continuation) is skipped
            // before a token of the pattern, or at a strictness that ignores the pattern's
            // tokens, as ast-grep skips it: `1 \⏎ + 2` is `$A + $B`, but `f \⏎ (x)` is not
            // `$F($$$A)`.
            let skippable = !cs[c].is_named()
                || (is_trivia(cs[c]) && (is_token(p) || strictness.ignores_pattern_tokens()));
            if self.exceeded || !skippable || !strictness.skips_code_tokens() {
                return None;
            }
            // Unnamed tokens of the code (a trailing comma, an optional `;`) may be skipped.
            c += 1;
        }
        None
    }

    fn bind<'t>(
        &mut self,
        index: Option<u16>,
        capture: Capture<'t>,
        src: &[u8],
        env: &mut Env<'t>,
    ) -> bool {
        let Some(index) = index else { return true };
        if let Some((_, earlier)) = env.iter().find(|(i, _)| *i == index) {
            return same_code(earlier, &capture, src);
        }
        env.push((index, capture));
        true
    }
}

/// A named extra that is not a comment, such as Python's `\` line continuation.
fn is_trivia(node: Node<'_>) -> bool {
    node.is_extra() && !node.kind().contains("comment")
}

/// Whether a pattern node is one unnamed token.
fn is_token(p: &PNode) -> bool {
    matches!(p, PNode::Leaf { named: false, .. })
}

/// Block comments under `node` inside the replaced range and outside every capture.
fn orphan_comments(node: Node<'_>, src: &[u8], m: &RawMatch) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut stack = vec![node];
    while let Some(n) = stack.pop() {
        let r = n.byte_range();
        if r.start >= m.replace.end || r.end <= m.replace.start {
            continue;
        }
        if m.captures.iter().flatten().any(|c| c.start <= r.start && r.end <= c.end) {
            continue;
        }
        if n.is_extra() {
            if src.get(r.clone()).is_some_and(|t| t.starts_with(b"/*"))
                && m.replace.start <= r.start
                && r.end <= m.replace.end
            {
                out.push(r);
            }
            continue;
        }
        let mut cursor = n.walk();
        stack.extend(n.children(&mut cursor));
    }
    out.sort_by_key(|r| r.start);
    out
}

/// The range from the first to the last code node the pattern matched, and the real bindings.
fn covered<'e, 't>(env: &'e Env<'t>) -> (Option<Range<usize>>, Vec<&'e (u16, Capture<'t>)>) {
    let mut range: Option<Range<usize>> = None;
    let mut bindings = Vec::new();
    for entry in env {
        let span = match &entry.1 {
            Capture::One(n) => Some(n.byte_range()),
            Capture::Many(span) => span.map(|(a, b)| a.start_byte()..b.end_byte()),
        };
        if let Some(span) = span {
            range = Some(match range {
                Some(r) => r.start.min(span.start)..r.end.max(span.end),
                None => span,
            });
        }
        if entry.0 != TOUCHED {
            bindings.push(entry);
        }
    }
    (range, bindings)
}

fn is_comma(p: Option<&PNode>) -> bool {
    matches!(p, Some(PNode::Leaf { named: false, text, .. }) if &text[..] == b",")
}

/// A comma before a closing delimiter, the end, or a `$$$` (which may be empty) is optional.
fn is_optional_comma(p: &PNode, next: Option<&PNode>) -> bool {
    if !is_comma(Some(p)) {
        return false;
    }
    match next {
        None => true,
        Some(PNode::Multi(_)) => true,
        Some(PNode::Leaf { named: false, text, .. }) => {
            matches!(&text[..], b")" | b"]" | b"}" | b">")
        }
        Some(_) => false,
    }
}

/// The nodes of a capture: one node, or the siblings from the first to the last taken.
fn nodes_of<'t>(capture: &Capture<'t>) -> Vec<Node<'t>> {
    match capture {
        Capture::One(n) => vec![*n],
        Capture::Many(None) => Vec::new(),
        Capture::Many(Some((first, last))) => {
            let mut out = vec![*first];
            let mut at = *first;
            while at.id() != last.id() {
                match at.next_sibling() {
                    Some(next) => {
                        at = next;
                        out.push(next);
                    }
                    None => break,
                }
            }
            out
        }
    }
}

/// Structural equality of two captures: same tokens, ignoring whitespace, comments and trailing commas.
pub(crate) fn same_code(a: &Capture<'_>, b: &Capture<'_>, src: &[u8]) -> bool {
    let mut ta = Vec::new();
    let mut tb = Vec::new();
    for n in nodes_of(a) {
        tokens(n, src, &mut ta);
    }
    for n in nodes_of(b) {
        tokens(n, src, &mut tb);
    }
    strip_trailing_commas(&mut ta);
    strip_trailing_commas(&mut tb);
    ta == tb
}

/// The token texts under `node`, without comments and other extras.
pub(crate) fn tokens<'s>(node: Node<'_>, src: &'s [u8], out: &mut Vec<&'s [u8]>) {
    if node.is_extra() || node.is_missing() {
        return;
    }
    if node.child_count() == 0 || is_text_node(node.kind()) {
        if let Some(text) = src.get(node.byte_range()) {
            out.push(text);
        }
        return;
    }
    let mut cursor = node.walk();
    if cursor.goto_first_child() {
        loop {
            tokens(cursor.node(), src, out);
            if !cursor.goto_next_sibling() {
                break;
            }
        }
    }
}

fn is_text_node(kind: &str) -> bool {
    (kind.contains("string") || kind.contains("template") || kind.contains("heredoc"))
        && !kind.contains("substitution")
}

fn strip_trailing_commas(tokens: &mut Vec<&[u8]>) {
    let mut out: Vec<&[u8]> = Vec::with_capacity(tokens.len());
    for (i, t) in tokens.iter().enumerate() {
        if *t == b"," {
            let next = tokens.get(i + 1);
            if next.is_none_or(|n| matches!(*n, b")" | b"]" | b"}")) {
                continue;
            }
        }
        out.push(t);
    }
    *tokens = out;
}

#[cfg(all(test, feature = "lang-rust", feature = "lang-python"))]
mod tests {
    use super::Matcher;
    use crate::{Lang, Pattern};

    /// Every `.rs` file under `dir`, recursively.
    fn rust_files(dir: &std::path::Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                rust_files(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(std::fs::read_to_string(&path).unwrap_or_default());
            }
        }
    }

    fn both_walks(lang: Lang, pattern: &str, source: &str) -> (usize, usize) {
        let pattern = Pattern::compile(lang, pattern, None).expect("compiles");
        let mut parser = pattern.data.parser();
        let tree = parser.parse(source, None).expect("parses");
        let mut pruned = Matcher::new(&pattern);
        let mut full = Matcher::new(&pattern);
        full.prune = false;
        let a = pruned.find_all(tree.root_node(), source.as_bytes());
        let b = full.find_all(tree.root_node(), source.as_bytes());
        assert_eq!(a, b, "pruning changed the matches of `{}`", pattern.source());
        (a.len(), b.len())
    }

    #[test]
    fn skipping_subtrees_that_cannot_hold_the_root_kind_changes_no_match() {
        let mut sources = Vec::new();
        rust_files(std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/src")), &mut sources);
        // Broken code (the pruning trusts the grammar only where the tree has no error) and
        // calls in places the grammar lists (macros' token trees hold none).
        sources.push("fn f() { g(1); let x = (h(2); vec![k(3)]; #[a(m())] struct S; }".into());
        let patterns =
            ["$F($$$ARGS)", "$A.unwrap()", "let $X = $E;", "Some($X)", "$A; $B;", "// $C"];
        let mut found = 0;
        for source in &sources {
            for pattern in patterns {
                found += both_walks(Lang::Rust, pattern, source).0;
            }
        }
        assert!(found > 1000, "the sources hold matches ({found})");
        let python =
            "def f(x):\n    print(g(x), [h(y) for y in x])\n    # c(1)\n    return f'{k(2)}'\n";
        for pattern in ["$F($$$ARGS)", "print($$$A)", "[$E for $X in $L]"] {
            both_walks(Lang::Python, pattern, python);
        }
    }
}
