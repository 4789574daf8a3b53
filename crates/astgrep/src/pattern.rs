//! The pattern compiler: metavariable lint, expando, the context ladder and the compiled tree.

use tree_sitter::Node;

use crate::{
    error::AstError,
    lang::{ContextKind, Expando, Lang, LangData},
};

/// One node of a compiled pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PNode {
    /// `$NAME` (index into `Pattern::vars`) or `$_` (None): exactly one named node.
    Var(Option<u16>),
    /// `$$$NAME` or `$$$`: zero or more siblings.
    Multi(Option<u16>),
    /// A token or a string-like node without metavariables: kind and exact text.
    Leaf { kind: u16, named: bool, text: Box<[u8]> },
    /// A node whose significant children must all be accounted for.
    Inner { kind: u16, named: bool, children: Vec<PNode> },
}

impl PNode {
    pub(crate) fn is_var_like(&self) -> bool {
        matches!(self, PNode::Var(_) | PNode::Multi(_))
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
    context: ContextKind,
    sexp: String,
    source: String,
}

impl Pattern {
    /// Compiles `pattern` for `lang`, trying every context of the ladder (or only `context`).
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
        let mut parser = data.parser();
        for (kind, scaffolds) in lang.ladder() {
            if context.is_some_and(|c| c != *kind) {
                continue;
            }
            let mut rung_error: Option<ErrorAt> = None;
            for scaffold in *scaffolds {
                if scaffold.before.ends_with(' ')
                    && scaffold.before.contains('\n')
                    && subst.text.contains('\n')
                {
                    // An indented scaffold (Python class body) cannot hold a multi-line fragment.
                    continue;
                }
                let source = format!("{}{}{}", scaffold.before, subst.text, scaffold.after);
                let hole = scaffold.before.len()..scaffold.before.len() + subst.text.len();
                let Some(tree) = parser.parse(&source, None) else { continue };
                let root = tree.root_node();
                if root.has_error() {
                    let at = first_error(root).map(|off| {
                        let rel = off.saturating_sub(hole.start).min(subst.text.len());
                        let orig = subst.map.get(rel).copied().unwrap_or(trimmed.len());
                        ErrorAt::new(pattern, lead + orig)
                    });
                    if rung_error.is_none() {
                        rung_error = at;
                    }
                    continue;
                }
                let Some(hole_nodes) = select_hole(root, hole.start, hole.end) else {
                    continue;
                };
                let mut builder = Builder {
                    lang,
                    data,
                    src: source.as_bytes(),
                    vars: Vec::new(),
                    multi: Vec::new(),
                    literals: Vec::new(),
                };
                let nodes: Vec<PNode> = hole_nodes.iter().map(|n| builder.build(*n)).collect();
                if nodes.iter().all(PNode::is_var_like) {
                    return Err(AstError::Pattern(format!(
                        "`{trimmed}` is only a metavariable: it would match every node. Put code around it, \
                         for example `foo($X)` or `$X.unwrap()`"
                    )));
                }
                let mut literals = builder.literals;
                literals.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
                literals.dedup();
                let sexp = render_sexp(&nodes, &builder.vars, &data.language);
                return Ok(Pattern {
                    lang,
                    data,
                    nodes,
                    vars: builder.vars,
                    multi: builder.multi,
                    literals,
                    context: *kind,
                    sexp,
                    source: trimmed.to_string(),
                });
            }
            attempts.push((*kind, rung_error));
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
        Err(AstError::Pattern(format!(
            "unparsable as {lang}: tried {}; {first} ({}). Write a complete {lang} statement, expression, \
             member or declaration; metavariables stand for whole nodes",
            tried.join(", "),
            per_rung.join(", ")
        )))
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
    pub fn literals(&self) -> &[String] {
        &self.literals
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

/// Byte offset of the first ERROR or MISSING node in pre-order.
pub(crate) fn first_error(root: Node<'_>) -> Option<usize> {
    let mut cursor = root.walk();
    loop {
        let node = cursor.node();
        if node.is_error() || node.is_missing() {
            return Some(node.start_byte());
        }
        if node.has_error() && cursor.goto_first_child() {
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return None;
            }
        }
    }
}

/// Children that take part in matching: no comments or other extras, no MISSING nodes.
pub(crate) fn significant_children<'t>(node: Node<'t>, out: &mut Vec<Node<'t>>) {
    out.clear();
    let mut cursor = node.walk();
    if cursor.goto_first_child() {
        loop {
            let child = cursor.node();
            if !child.is_extra() && !child.is_missing() {
                out.push(child);
            }
            if !cursor.goto_next_sibling() {
                break;
            }
        }
    }
}

/// The node(s) exactly filling `start..end`: the innermost single node, or siblings tiling it.
fn select_hole(root: Node<'_>, start: usize, end: usize) -> Option<Vec<Node<'_>>> {
    let node = root.descendant_for_byte_range(start, end)?;
    // The file node itself is never the pattern: a fragment filling a whole scaffold-less file
    // is its top-level children.
    if node.start_byte() == start && node.end_byte() == end && node.parent().is_some() {
        // Prefer the innermost named node of that exact range.
        let mut best = node;
        if !best.is_named() {
            let mut up = best.parent();
            while let Some(p) = up {
                if p.start_byte() != start || p.end_byte() != end {
                    break;
                }
                if p.is_named() {
                    best = p;
                    break;
                }
                up = p.parent();
            }
        }
        return Some(vec![best]);
    }
    let mut children = Vec::new();
    significant_children(node, &mut children);
    let inside: Vec<Node<'_>> =
        children.into_iter().filter(|c| c.end_byte() > start && c.start_byte() < end).collect();
    let first = inside.first()?;
    let last = inside.last()?;
    if first.start_byte() != start || last.end_byte() != end {
        return None;
    }
    Some(inside)
}

fn is_ident_byte(b: u8) -> bool {
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

    /// `Some((name, is_multi))` when `text` is exactly one metavariable.
    fn metavar(&self, text: &[u8]) -> Option<(String, bool)> {
        let text = std::str::from_utf8(text).ok()?;
        let (mark, body) = match self.lang.expando() {
            Expando::Dollar => ('$', text),
            Expando::Char(c) => (c, text),
            Expando::JsonString => ('µ', text.strip_prefix('"')?.strip_suffix('"')?),
        };
        let rest = body.strip_prefix(mark)?;
        let (multi, name) = match rest.strip_prefix(mark) {
            Some(r) => (true, r.strip_prefix(mark)?),
            None => (false, rest),
        };
        if !name.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_') {
            return None;
        }
        if name.as_bytes().first().is_some_and(u8::is_ascii_digit) {
            return None;
        }
        if !multi && name.is_empty() {
            return None;
        }
        Some((name.to_string(), multi))
    }

    fn build(&mut self, node: Node<'_>) -> PNode {
        let text = &self.src[node.byte_range()];
        if let Some((name, multi)) = self.metavar(text) {
            let index = self.var_index(&name, multi);
            return if multi { PNode::Multi(index) } else { PNode::Var(index) };
        }
        let kind = self.data.canon(node.kind_id());
        let named = node.is_named();
        let mut children = Vec::new();
        significant_children(node, &mut children);
        let has_mark = match self.lang.expando() {
            Expando::Dollar => text.contains(&b'$'),
            Expando::Char(c) => {
                let mut buf = [0u8; 4];
                memchr::memmem::find(text, c.encode_utf8(&mut buf).as_bytes()).is_some()
            }
            Expando::JsonString => memchr::memmem::find(text, "µ".as_bytes()).is_some(),
        };
        if children.is_empty() || (is_stringish(node.kind()) && !has_mark) {
            self.add_literals(text);
            return PNode::Leaf { kind, named, text: text.into() };
        }
        let children = children.into_iter().map(|c| self.build(c)).collect();
        PNode::Inner { kind, named, children }
    }

    fn add_literals(&mut self, text: &[u8]) {
        for word in text.split(|b| !is_ident_byte(*b)) {
            if word.len() >= 2
                && let Ok(w) = std::str::from_utf8(word)
            {
                self.literals.push(w.to_string());
            }
        }
    }
}

/// The pattern with metavariables spelled so the grammar accepts them.
pub(crate) struct Substituted {
    pub(crate) text: String,
    /// For each byte of `text` (and one past the end), the byte offset in the original.
    pub(crate) map: Vec<usize>,
}

/// Checks metavariable spelling and applies the language's expando.
pub(crate) fn substitute(lang: Lang, pattern: &str) -> Result<Substituted, AstError> {
    let bytes = pattern.as_bytes();
    let mut text = String::with_capacity(pattern.len() + 8);
    let mut map = Vec::with_capacity(pattern.len() + 9);
    let push = |text: &mut String, map: &mut Vec<usize>, s: &str, orig: usize| {
        text.push_str(s);
        map.extend(std::iter::repeat_n(orig, s.len()));
    };
    let quotes = lang.quotes();
    let mut in_string: Option<char> = None;
    let mut i = 0;
    while i < bytes.len() {
        let Some(c) = pattern[i..].chars().next() else { break };
        let len = c.len_utf8();
        if let Some(q) = in_string {
            if c == '\\' {
                let next_len = pattern[i + 1..].chars().next().map_or(0, char::len_utf8);
                push(&mut text, &mut map, &pattern[i..i + 1 + next_len], i);
                i += 1 + next_len;
                continue;
            }
            if c == q {
                in_string = None;
            }
            push(&mut text, &mut map, &pattern[i..i + len], i);
            i += len;
            continue;
        }
        if quotes.contains(&c) {
            in_string = Some(c);
            push(&mut text, &mut map, &pattern[i..i + len], i);
            i += len;
            continue;
        }
        if c != '$' {
            push(&mut text, &mut map, &pattern[i..i + len], i);
            i += len;
            continue;
        }
        let start = i;
        let mut j = i;
        while j < bytes.len() && bytes[j] == b'$' {
            j += 1;
        }
        let dollars = j - start;
        let name_start = j;
        while j < bytes.len() && is_ident_byte(bytes[j]) {
            j += 1;
        }
        let name = &pattern[name_start..j];
        let prev_ident = start > 0 && is_ident_byte(bytes[start - 1]);
        let next_ident = pattern[j..].chars().next().is_some_and(|c| c.is_alphanumeric());
        let upper_ok = !name.as_bytes().first().is_some_and(u8::is_ascii_digit)
            && name.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
        let word_start =
            (0..start).rev().take_while(|k| is_ident_byte(bytes[*k])).last().unwrap_or(start);
        let word = &pattern[word_start..j];
        let is_meta = if lang == Lang::Bash {
            // In bash `$x`, `$1` and `$$` are ordinary expansions: only `$NAME` and `$$$NAME` are metavariables.
            !prev_ident && upper_ok && ((dollars == 1 && !name.is_empty()) || dollars == 3)
        } else {
            if dollars == 1 && name.is_empty() {
                false
            } else if prev_ident || next_ident {
                return Err(AstError::Pattern(format!(
                    "`{word}`: a metavariable must stand for a whole node (an identifier, expression or \
                     statement), so `$` cannot sit inside a name. Use `$NAME` for the whole name"
                )));
            } else if dollars == 2 || dollars > 3 {
                return Err(AstError::Pattern(format!(
                    "`{word}` is not a metavariable: use `$NAME` for one node or `$$$NAME` for zero or more \
                     siblings"
                )));
            } else if !upper_ok {
                let suggestion = name.to_ascii_uppercase();
                let suggestion = if suggestion.as_bytes().first().is_some_and(u8::is_ascii_digit) {
                    format!("X{suggestion}")
                } else {
                    suggestion
                };
                return Err(AstError::Pattern(format!(
                    "`{word}` is not a metavariable: names are uppercase letters, digits and `_` \
                     (write `{}{suggestion}`); `$_` matches any node without binding it",
                    "$".repeat(dollars)
                )));
            } else {
                true
            }
        };
        if !is_meta {
            push(&mut text, &mut map, &pattern[start..j], start);
            i = j;
            continue;
        }
        match lang.expando() {
            Expando::Dollar => push(&mut text, &mut map, &pattern[start..j], start),
            Expando::Char(e) => {
                let marks: String = std::iter::repeat_n(e, dollars).collect();
                push(&mut text, &mut map, &marks, start);
                push(&mut text, &mut map, name, name_start);
            }
            Expando::JsonString => {
                let quoted = start > 0 && bytes[start - 1] == b'"' && bytes.get(j) == Some(&b'"');
                let marks: String = std::iter::repeat_n('µ', dollars).collect();
                if quoted {
                    push(&mut text, &mut map, &marks, start);
                    push(&mut text, &mut map, name, name_start);
                } else {
                    push(&mut text, &mut map, "\"", start);
                    push(&mut text, &mut map, &marks, start);
                    push(&mut text, &mut map, name, name_start);
                    push(&mut text, &mut map, "\"", j);
                }
            }
        }
        i = j;
    }
    map.push(pattern.len());
    Ok(Substituted { text, map })
}

/// The compiled pattern as an S-expression: `(kind child …)`, tokens quoted, metavariables as `$X`.
fn render_sexp(nodes: &[PNode], vars: &[String], language: &tree_sitter::Language) -> String {
    fn one(node: &PNode, vars: &[String], language: &tree_sitter::Language, out: &mut String) {
        let var = |i: &Option<u16>| {
            i.and_then(|i| vars.get(usize::from(i))).map_or("_".to_string(), |v| v.clone())
        };
        match node {
            PNode::Var(i) => out.push_str(&format!("${}", var(i))),
            PNode::Multi(i) => {
                let name = var(i);
                out.push_str(&format!("$$${}", if name == "_" { String::new() } else { name }));
            }
            PNode::Leaf { kind, named, text } => {
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
