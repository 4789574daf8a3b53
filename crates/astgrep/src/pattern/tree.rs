//! Syntax-tree helpers of the compiler and the matcher: the first error, the significant children,
//! the node(s) filling the pattern's hole, and a string's named text.

use tree_sitter::Node;

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
        if !crate::cursor::skip_subtree(&mut cursor) {
            return None;
        }
    }
}

/// Children that take part in matching: no comments or unnamed extras, no MISSING nodes. A
/// named extra that is not a comment (Python's `\` line continuation) stays, as ast-grep keeps
/// it: `re.compile \` then `(x)` on the next line is not `$F($$$A)`.
pub(crate) fn significant_children<'t>(node: Node<'t>, out: &mut Vec<Node<'t>>) {
    out.clear();
    let mut cursor = node.walk();
    if cursor.goto_first_child() {
        loop {
            let child = cursor.node();
            let skipped =
                child.is_extra() && (!child.is_named() || child.kind().contains("comment"));
            if !skipped && !child.is_missing() {
                out.push(child);
            }
            if !cursor.goto_next_sibling() {
                break;
            }
        }
    }
}

/// The node(s) exactly filling `start..end`: the innermost single node, or siblings tiling it.
pub(super) fn select_hole(root: Node<'_>, start: usize, end: usize) -> Option<Vec<Node<'_>>> {
    let node = root.descendant_for_byte_range(start, end)?;
    // The file node itself is never the pattern: a fragment filling a whole scaffold-less file
    // is its top-level children.
    // Go wraps the statements of a block in a `statement_list`: several statements filling
    // the hole are a sequence (matched among any statements), not that wrapper, and the
    // terminators between them (`;` or a newline) are not part of it.
    if node.kind() == "statement_list" && node.start_byte() == start && node.end_byte() == end {
        let mut children = Vec::new();
        significant_children(node, &mut children);
        children.retain(Node::is_named);
        if children.len() > 1 {
            return Some(children);
        }
    }
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

/// The texts of the named leaves under `node`, concatenated: a string without its quotes.
pub(crate) fn named_text(node: Node<'_>, src: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut stack = vec![node];
    while let Some(n) = stack.pop() {
        if n.child_count() == 0 {
            if n.is_named() {
                out.extend_from_slice(&src[n.byte_range()]);
            }
            continue;
        }
        for i in (0..n.child_count()).rev() {
            if let Some(c) = n.child(i as u32) {
                stack.push(c);
            }
        }
    }
    out
}
