//! The pattern compiler: metavariable lint, expando, the context ladder and the compiled tree.
//!
//! A pattern's metavariables are spelled so the grammar parses them (`expando.rs`), then the
//! pattern is parsed in each context of the language's ladder (`crate::lang`: statement,
//! expression, class member, declaration scaffolds); [`Pattern::compile`] says which parse
//! wins, and the node or nodes exactly filling the hole become the pattern (`tree.rs`).

mod expando;
mod tree;

use tree_sitter::Node;

use self::tree::select_hole;
pub(crate) use self::{
    expando::{metavar_of, substitute},
    tree::{first_error, named_text, significant_children},
};

use crate::{
    error::AstError,
    lang::{ContextKind, Expando, Lang, LangData},
    strictness::Strictness,
};

/// One node of a compiled pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PNode {
    /// `$NAME` (index into `Pattern::vars`) or `$_` (None): exactly one named node.
    Var(Option<u16>),
    /// `$$NAME`: exactly one node, named or not (an operator, a keyword).
    Token(Option<u16>),
    /// `$$$NAME` or `$$$`: zero or more siblings.
    Multi(Option<u16>),
    /// A token or a string-like node without metavariables: kind and exact text, and for a
    /// string the text of its named parts (compared when the quotes may differ).
    Leaf { kind: u16, named: bool, text: Box<[u8]>, core: Option<Box<[u8]>> },
    /// A node whose significant children must all be accounted for.
    Inner { kind: u16, named: bool, children: Vec<PNode> },
}

impl PNode {
    pub(crate) fn is_var_like(&self) -> bool {
        matches!(self, PNode::Var(_) | PNode::Token(_) | PNode::Multi(_))
    }
}

/// A compiled pattern, ready to be matched against files of its language.
#[derive(Debug, Clone)]
pub struct Pattern {
    pub(crate) lang: Lang,
    /// The grammar of `lang`: holding it proves the grammar is compiled in.
    pub(crate) data: &'static LangData,
    /// One node, or a sequence of siblings (a multi-statement pattern).
    pub(crate) nodes: Vec<PNode>,
    /// Names of the capturing metavariables, indexed by `PNode::Var`/`Multi`.
    pub(crate) vars: Vec<String>,
    /// Which of `vars` are `$$$` lists.
    pub(crate) multi: Vec<bool>,
    /// Words every match contains, longest first: the literal pre-filter.
    pub(crate) literals: Vec<String>,
    /// The words of `literals` that come from named leaves (identifiers, numbers, strings),
    /// which are all a level ignoring the pattern's unnamed tokens (`ast`, `relaxed`) requires.
    pub(crate) named_literals: Vec<String>,
    pub(crate) strictness: Strictness,
    /// Set by a `selector`: the kind every match must have.
    pub(crate) root_kind: Option<u16>,
    pub(crate) context: ContextKind,
    sexp: String,
    pub(crate) source: String,
}

impl Pattern {
    /// Compiles `pattern` for `lang`, trying every context of the ladder (or only `context`).
    ///
    /// A context whose parse has no ERROR or MISSING node wins. When none has, the first whose
    /// only errors sit at metavariables standing where the grammar wants a whole statement,
    /// member, arm or pair (`match $X { $$$ }`, `class $C { $$$ }`) is used. A parse that starts
    /// with an unnamed token or turns a keyword of the pattern into a name (C++ `if (…)` read
    /// as a member declaration) is never used.
    pub fn compile(
        lang: Lang,
        pattern: &str,
        context: Option<ContextKind>,
    ) -> Result<Pattern, AstError> {
        let data = lang.data()?;
        let trimmed = pattern.trim();
        if trimmed.is_empty() {
            return Err(AstError::Pattern(
                "the pattern is empty; give a code fragment such as `foo($X)`".into(),
            ));
        }
        let lead = pattern.len() - pattern.trim_start().len();
        let subst = substitute(lang, trimmed)?;
        let mut attempts: Vec<(ContextKind, Option<ErrorAt>)> = Vec::new();
        let mut fallback: Option<Pattern> = None;
        let mut rejected: Option<String> = None;
        let mut parser = data.parser();
        for (kind, scaffolds) in lang.ladder() {
            if context.is_some_and(|c| c != *kind) {
                continue;
            }
            let mut rung_error: Option<ErrorAt> = None;
            for scaffold in *scaffolds {
                if is_indented(scaffold.before) && subst.text.contains('\n') {
                    // An indented scaffold (Python class body) cannot hold a multi-line fragment;
                    // one whose last line holds code (Go's `package p\nfunc … { `) can.
                    continue;
                }
                let source = format!("{}{}{}", scaffold.before, subst.text, scaffold.after);
                let hole = scaffold.before.len()..scaffold.before.len() + subst.text.len();
                let Some(tree) = parser.parse(&source, None) else { continue };
                let root = tree.root_node();
                let clean = !root.has_error();
                if !clean {
                    if rung_error.is_none() {
                        rung_error = first_error(root).map(|off| {
                            let rel = off.saturating_sub(hole.start).min(subst.text.len());
                            let orig = subst.map.get(rel).copied().unwrap_or(trimmed.len());
                            ErrorAt::new(pattern, lead + orig)
                        });
                    }
                    if fallback.is_some() || !errors_at_metavariables(lang, root, source.as_bytes())
                    {
                        continue;
                    }
                }
                let Some(hole_nodes) = select_hole(root, hole.start, hole.end) else {
                    continue;
                };
                if let Some(why) = bogus_parse(lang, data, &hole_nodes, source.as_bytes()) {
                    if rejected.is_none() {
                        rejected = Some(format!("as a {kind} {why}"));
                    }
                    continue;
                }
                let compiled =
                    build_pattern(lang, data, source.as_bytes(), &hole_nodes, *kind, trimmed)?;
                if clean {
                    return Ok(compiled);
                }
                fallback = Some(compiled);
            }
            attempts.push((*kind, rung_error));
        }
        if let Some(compiled) = fallback {
            return Ok(compiled);
        }
        let tried: Vec<&str> = attempts.iter().map(|(k, _)| k.as_str()).collect();
        let furthest = attempts.iter().filter_map(|(_, e)| e.as_ref()).max_by_key(|e| e.offset);
        let per_rung: Vec<String> = attempts
            .iter()
            .map(|(k, e)| match e {
                Some(e) => format!("{k} {}:{}", e.line, e.column),
                None => format!("{k}: not a whole node"),
            })
            .collect();
        let first = match furthest {
            Some(e) => format!("first error at {}:{} near `{}`", e.line, e.column, e.near),
            None => "it parses, but not as whole nodes in any context".to_string(),
        };
        let rejected = rejected
            .map(|r| format!("; it parses only {r}, which would silently match nothing"))
            .unwrap_or_default();
        Err(AstError::Pattern(format!(
            "unparsable as {lang}: tried {}; {first} ({}){rejected}. Write a complete {lang} statement, \
             expression, member or declaration (for a part such as a `catch` clause, the whole \
             construct around it, or a rule with `pattern: {{context, selector}}`); metavariables \
             stand for whole nodes",
            tried.join(", "),
            per_rung.join(", ")
        )))
    }

    /// Compiles `context` (code around the part to match) and takes its first node of kind
    /// `selector` as the pattern, as ast-grep's `pattern: {context, selector}` does; that kind
    /// is then required of every match.
    pub fn contextual(lang: Lang, context: &str, selector: &str) -> Result<Pattern, AstError> {
        let data = lang.data()?;
        let kind_id = data.language.id_for_node_kind(selector, true);
        if kind_id == 0 {
            return Err(AstError::Pattern(format!(
                "`selector`: `{selector}` is not a node kind of {lang}; give a named kind of the \
                 grammar, such as the kind `pattern`'s S-expression shows"
            )));
        }
        let trimmed = context.trim();
        let subst = substitute(lang, trimmed)?;
        let mut parser = data.parser();
        let mut tried = Vec::new();
        // The context as a whole file first, then in each scaffold of the ladder.
        let mut scaffolds: Vec<(ContextKind, &str, &str)> =
            vec![(ContextKind::Declaration, "", "")];
        for (kind, list) in lang.ladder() {
            scaffolds.extend(list.iter().map(|s| (*kind, s.before, s.after)));
        }
        for (kind, before, after) in scaffolds {
            let source = format!("{before}{}{after}", subst.text);
            let Some(tree) = parser.parse(&source, None) else { continue };
            let root = tree.root_node();
            if root.has_error() && !errors_at_metavariables(lang, root, source.as_bytes()) {
                tried.push(kind.as_str());
                continue;
            }
            let hole = before.len()..before.len() + subst.text.len();
            let Some(node) = first_of_kind(root, data, data.canon(kind_id), hole) else {
                return Err(AstError::Pattern(format!(
                    "`selector`: the context has no `{selector}` node; its shape is {}",
                    root.to_sexp()
                )));
            };
            let mut compiled =
                build_pattern_unchecked(lang, data, source.as_bytes(), &[node], kind, trimmed);
            compiled.root_kind = Some(data.canon(kind_id));
            return Ok(compiled);
        }
        Err(AstError::Pattern(format!(
            "`context` does not parse as {lang} (tried {}); write complete code around the part to match",
            tried.join(", ")
        )))
    }

    /// `$X`, `$$X` or `$_` alone, as a rule's `pattern` (ast-grep's way to name the matched node
    /// for a fix or transform): any named node (`$$X`: any node), bound to the name. `None`
    /// when `pattern` is anything else; `$$$X` alone is an error (a list is not one node).
    pub(crate) fn lone_metavariable(
        lang: Lang,
        pattern: &str,
    ) -> Result<Option<Pattern>, AstError> {
        let data = lang.data()?;
        let trimmed = pattern.trim();
        let subst = substitute(lang, trimmed)?;
        let Some((name, dollars)) = metavar_of(lang, subst.text.as_bytes()) else {
            return Ok(None);
        };
        if dollars == 3 {
            return Err(AstError::Pattern(format!(
                "`{trimmed}` alone stands for a list of siblings, not one node; write `${}` to \
                 bind the node the rule matches",
                if name.is_empty() { "_".to_string() } else { name }
            )));
        }
        let mut builder = Builder {
            lang,
            data,
            src: &[],
            vars: Vec::new(),
            multi: Vec::new(),
            literals: Vec::new(),
            named_literals: Vec::new(),
        };
        let index = builder.var_index(&name, false);
        let node = if dollars == 2 { PNode::Token(index) } else { PNode::Var(index) };
        let sexp = render_sexp(std::slice::from_ref(&node), &builder.vars, &data.language);
        Ok(Some(Pattern {
            lang,
            data,
            nodes: vec![node],
            vars: builder.vars,
            multi: builder.multi,
            literals: Vec::new(),
            named_literals: Vec::new(),
            strictness: Strictness::Smart,
            root_kind: None,
            context: ContextKind::Expression,
            sexp,
            source: trimmed.to_string(),
        }))
    }

    /// The same pattern compared at another strictness level.
    pub fn with_strictness(mut self, strictness: Strictness) -> Pattern {
        self.strictness = strictness;
        self
    }

    pub fn strictness(&self) -> Strictness {
        self.strictness
    }

    /// The canonical kind every match has, when the pattern fixes one.
    pub(crate) fn root_kind(&self) -> Option<u16> {
        self.root_kind.or(match self.nodes.first() {
            Some(PNode::Leaf { kind, .. } | PNode::Inner { kind, .. }) if self.nodes.len() == 1 => {
                Some(*kind)
            }
            _ => None,
        })
    }

    pub fn lang(&self) -> Lang {
        self.lang
    }

    /// The context of the ladder that parsed the pattern.
    pub fn context(&self) -> ContextKind {
        self.context
    }

    /// The parsed shape, as an S-expression.
    pub fn sexp(&self) -> &str {
        &self.sexp
    }

    /// The pattern as given (trimmed).
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Words a file must contain to be worth parsing.
    /// At `signature` (leaves compare by kind) none; where the pattern's unnamed tokens are
    /// ignored, only the words of its named leaves.
    pub fn literals(&self) -> &[String] {
        if !self.strictness.compares_text() {
            &[]
        } else if self.strictness.ignores_pattern_tokens() {
            &self.named_literals
        } else {
            &self.literals
        }
    }

    /// The capturing metavariables, in order of first appearance, with `$` or `$$$`.
    pub fn metavariables(&self) -> Vec<String> {
        self.vars
            .iter()
            .zip(&self.multi)
            .map(|(v, m)| if *m { format!("$$${v}") } else { format!("${v}") })
            .collect()
    }

    /// True when the pattern is a sequence of siblings rather than one node.
    pub fn is_sequence(&self) -> bool {
        self.nodes.len() > 1
    }
}

/// True when the scaffold's text before the hole ends in a line of only indentation: the
/// hole's lines after the first would lack that indentation.
fn is_indented(before: &str) -> bool {
    before.rsplit_once('\n').is_some_and(|(_, last)| !last.is_empty() && last.trim().is_empty())
}

/// Where a parse error is in the pattern, 1-based.
#[derive(Debug, Clone)]
struct ErrorAt {
    offset: usize,
    line: usize,
    column: usize,
    near: String,
}

impl ErrorAt {
    fn new(pattern: &str, offset: usize) -> ErrorAt {
        let offset = offset.min(pattern.len());
        let offset = (0..=offset).rev().find(|o| pattern.is_char_boundary(*o)).unwrap_or(0);
        let before = &pattern[..offset];
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        let near: String = pattern[offset..].chars().take(12).collect();
        let near = if near.trim().is_empty() { "end of pattern".to_string() } else { near };
        ErrorAt { offset, line, column, near: near.replace('\n', "⏎") }
    }
}

/// Builds the pattern from the node(s) filling the hole; an error when they are only
/// metavariables.
fn build_pattern(
    lang: Lang,
    data: &'static LangData,
    src: &[u8],
    hole_nodes: &[Node<'_>],
    context: ContextKind,
    trimmed: &str,
) -> Result<Pattern, AstError> {
    let compiled = build_pattern_unchecked(lang, data, src, hole_nodes, context, trimmed);
    if compiled.nodes.iter().all(PNode::is_var_like) {
        return Err(AstError::Pattern(format!(
            "`{trimmed}` is only a metavariable: it would match every node. Put code around it, \
             for example `foo($X)` or `$X.unwrap()`, or use a rule: there `pattern: \"$X\"` \
             beside `kind` (or another rule) names the node the rule matches"
        )));
    }
    Ok(compiled)
}

fn build_pattern_unchecked(
    lang: Lang,
    data: &'static LangData,
    src: &[u8],
    hole_nodes: &[Node<'_>],
    context: ContextKind,
    trimmed: &str,
) -> Pattern {
    let mut builder = Builder {
        lang,
        data,
        src,
        vars: Vec::new(),
        multi: Vec::new(),
        literals: Vec::new(),
        named_literals: Vec::new(),
    };
    let nodes: Vec<PNode> = hole_nodes.iter().map(|n| builder.build(*n)).collect();
    let sorted = |mut words: Vec<String>| {
        words.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        words.dedup();
        words
    };
    let literals = sorted(builder.literals);
    let named_literals = sorted(builder.named_literals);
    let sexp = render_sexp(&nodes, &builder.vars, &data.language);
    Pattern {
        lang,
        data,
        nodes,
        vars: builder.vars,
        multi: builder.multi,
        literals,
        named_literals,
        strictness: Strictness::Smart,
        root_kind: None,
        context,
        sexp,
        source: trimmed.to_string(),
    }
}

/// The first node of canonical kind `kind` in pre-order that lies inside `hole`.
fn first_of_kind<'t>(
    root: Node<'t>,
    data: &LangData,
    kind: u16,
    hole: std::ops::Range<usize>,
) -> Option<Node<'t>> {
    let mut cursor = root.walk();
    loop {
        let node = cursor.node();
        if data.canon(node.kind_id()) == kind
            && node.start_byte() >= hole.start
            && node.end_byte() <= hole.end
        {
            return Some(node);
        }
        if cursor.goto_first_child() {
            continue;
        }
        if !crate::cursor::skip_subtree(&mut cursor) {
            return None;
        }
    }
}

/// True when every ERROR and MISSING node of the parse is a metavariable standing where the
/// grammar wants a whole element (statement, member, arm, pair) or a terminator the grammar
/// wanted after one: `match $X { $$$ }`, `{ $$$ }` in Java (`;` missing after `$$$`).
///
/// An ERROR `$X` right after another named node (`foo($A $B)`) is not: that is a
/// malformed pattern, not a list element.
fn errors_at_metavariables(lang: Lang, root: Node<'_>, src: &[u8]) -> bool {
    let mut stack = vec![root];
    let mut seen_error = false;
    while let Some(node) = stack.pop() {
        if node.is_missing() {
            let before = &src[..node.start_byte()];
            let before = before.trim_ascii_end();
            let word_start = before
                .iter()
                .rposition(|b| {
                    !(b.is_ascii_alphanumeric() || *b == b'_' || *b == b'$' || *b >= 0x80)
                })
                .map_or(0, |i| i + 1);
            if metavar_of(lang, &before[word_start..]).is_none() {
                return false;
            }
            seen_error = true;
            continue;
        }
        if node.is_error() {
            let text = src[node.byte_range()].trim_ascii();
            let Some((_, dollars)) = metavar_of(lang, text) else { return false };
            seen_error = true;
            // `$$$` may stand for zero or more of whatever the grammar wanted there
            // (`class $C $$$_ { … }`: the heritage clauses), even right after a named node.
            if dollars == 3 {
                continue;
            }
            let mut prev = node.prev_sibling();
            while let Some(p) = prev.filter(|p| p.is_extra()) {
                prev = p.prev_sibling();
            }
            if let Some(p) = prev
                && p.is_named()
                && !src[p.byte_range()].trim_ascii_end().ends_with(b";")
                && !src[p.byte_range()].trim_ascii_end().ends_with(b",")
                && !src[p.byte_range()].trim_ascii_end().ends_with(b"}")
            {
                return false;
            }
            seen_error = true;
            continue;
        }
        if node.has_error() {
            let mut cursor = node.walk();
            if cursor.goto_first_child() {
                loop {
                    stack.push(cursor.node());
                    if !cursor.goto_next_sibling() {
                        break;
                    }
                }
            }
        }
    }
    seen_error
}

/// Keywords that, parsed as a name, mean the grammar misread the pattern (C++ `if (…) {…}` as
/// a member declaration of type `if`, Java `catch (…) {…}` as a constructor named `catch`).
const CONTROL_KEYWORDS: &[&str] = &[
    "if", "else", "for", "while", "do", "switch", "case", "catch", "try", "finally", "return",
    "throw", "goto", "defer",
];

/// Why a parse of the pattern is not acceptable, if it is not.
fn bogus_parse(lang: Lang, data: &LangData, nodes: &[Node<'_>], src: &[u8]) -> Option<String> {
    let first = nodes.first()?;
    if !first.is_named() {
        return Some(format!(
            "that starts with the token `{}`",
            String::from_utf8_lossy(&src[first.byte_range()])
        ));
    }
    let mut leaf = *first;
    while let Some(child) = leaf.child(0) {
        leaf = child;
    }
    let text = std::str::from_utf8(&src[leaf.byte_range()]).ok()?;
    if leaf.is_named()
        && CONTROL_KEYWORDS.contains(&text)
        && data.language.id_for_node_kind(text, false) != 0
        && metavar_of(lang, text.as_bytes()).is_none()
    {
        return Some(format!("where the keyword `{text}` became a `{}`", leaf.kind()));
    }
    None
}

pub(super) fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Kinds compared by text when they hold no metavariable (their text may live between children).
fn is_stringish(kind: &str) -> bool {
    (kind.contains("string") || kind.contains("template") || kind.contains("heredoc"))
        && !kind.contains("substitution")
}

struct Builder<'s> {
    lang: Lang,
    data: &'static LangData,
    src: &'s [u8],
    vars: Vec<String>,
    multi: Vec<bool>,
    literals: Vec<String>,
    named_literals: Vec<String>,
}

impl Builder<'_> {
    fn var_index(&mut self, name: &str, multi: bool) -> Option<u16> {
        if name.is_empty() || name.starts_with('_') {
            return None;
        }
        if let Some(i) = self.vars.iter().position(|v| v == name) {
            return u16::try_from(i).ok();
        }
        self.vars.push(name.to_string());
        self.multi.push(multi);
        u16::try_from(self.vars.len() - 1).ok()
    }

    fn build(&mut self, node: Node<'_>) -> PNode {
        let text = &self.src[node.byte_range()];
        if let Some((name, dollars)) = metavar_of(self.lang, text) {
            let index = self.var_index(&name, dollars == 3);
            return match dollars {
                3 => PNode::Multi(index),
                2 => PNode::Token(index),
                _ => PNode::Var(index),
            };
        }
        let kind = self.data.canon(node.kind_id());
        let named = node.is_named();
        let mut children = Vec::new();
        significant_children(node, &mut children);
        // A metavariable the parser skipped as an ERROR extra (`{ $$$ }` in a JSON object or a
        // Dart class body) is still part of the pattern.
        if node.has_error() {
            children.clear();
            let mut cursor = node.walk();
            if cursor.goto_first_child() {
                loop {
                    let child = cursor.node();
                    if !child.is_missing() && (!child.is_extra() || child.is_error()) {
                        children.push(child);
                    }
                    if !cursor.goto_next_sibling() {
                        break;
                    }
                }
            }
        }
        let has_mark = match self.lang.expando() {
            Expando::Dollar => text.contains(&b'$'),
            Expando::Char(c) => {
                let mut buf = [0u8; 4];
                memchr::memmem::find(text, c.encode_utf8(&mut buf).as_bytes()).is_some()
            }
            Expando::JsonString => memchr::memmem::find(text, "µ".as_bytes()).is_some(),
        };
        if children.is_empty() || (is_stringish(node.kind()) && !has_mark) {
            self.add_literals(text, named);
            let core = (!children.is_empty()).then(|| named_text(node, self.src).into());
            return PNode::Leaf { kind, named, text: text.into(), core };
        }
        let children = children.into_iter().map(|c| self.build(c)).collect();
        PNode::Inner { kind, named, children }
    }

    fn add_literals(&mut self, text: &[u8], named: bool) {
        for word in text.split(|b| !is_ident_byte(*b)) {
            if word.len() >= 2
                && let Ok(w) = std::str::from_utf8(word)
            {
                self.literals.push(w.to_string());
                if named {
                    self.named_literals.push(w.to_string());
                }
            }
        }
    }
}

/// The compiled pattern as an S-expression: `(kind child …)`, tokens quoted, metavariables as `$X`.
fn render_sexp(nodes: &[PNode], vars: &[String], language: &tree_sitter::Language) -> String {
    fn one(node: &PNode, vars: &[String], language: &tree_sitter::Language, out: &mut String) {
        let var = |i: &Option<u16>| {
            i.and_then(|i| vars.get(usize::from(i))).map_or("_".to_string(), |v| v.clone())
        };
        match node {
            PNode::Var(i) => out.push_str(&format!("${}", var(i))),
            PNode::Token(i) => out.push_str(&format!("$${}", var(i))),
            PNode::Multi(i) => {
                let name = var(i);
                out.push_str(&format!("$$${}", if name == "_" { String::new() } else { name }));
            }
            PNode::Leaf { kind, named, text, .. } => {
                let text = String::from_utf8_lossy(text);
                let short: String = text.chars().take(40).collect();
                let short = short.replace('\n', "\\n");
                if *named {
                    let kind = language.node_kind_for_id(*kind).unwrap_or("?");
                    out.push_str(&format!("({kind} {short:?})"));
                } else {
                    out.push_str(&format!("{short:?}"));
                }
            }
            PNode::Inner { kind, children, .. } => {
                out.push('(');
                out.push_str(language.node_kind_for_id(*kind).unwrap_or("?"));
                for child in children {
                    out.push(' ');
                    one(child, vars, language, out);
                }
                out.push(')');
            }
        }
    }
    let mut out = String::new();
    for (i, node) in nodes.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        one(node, vars, language, &mut out);
    }
    if nodes.len() > 1 { format!("(sequence {out})") } else { out }
}
