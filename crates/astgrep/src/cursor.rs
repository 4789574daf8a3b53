//! The preorder step every walk over a tree-sitter tree ends with (the matcher's, the pattern
//! compiler's, the rule evaluator's).

/// Moves `cursor` past the current node's subtree to the next node in preorder; `false` when
/// the walk is over. Every preorder walk of the crate ends its step with this.
pub(crate) fn skip_subtree(cursor: &mut tree_sitter::TreeCursor<'_>) -> bool {
    loop {
        if cursor.goto_next_sibling() {
            return true;
        }
        if !cursor.goto_parent() {
            return false;
        }
    }
}
