//! The names and descriptions of the three tools over this crate (`ast_grep`, `ast_edit`,
//! `resolve`), so every host that registers them says the same thing.

pub const SEARCH: &str = "ast_grep";
pub const EDIT: &str = "ast_edit";
pub const RESOLVE: &str = "resolve";

pub const SEARCH_DESCRIPTION: &str = "Find code by syntax, not text: `pattern` is code with \
metavariables ($X one node, $$$X any number, same name = same code), parsed as statement, \
expression, member or declaration; ignores formatting and comments. For context (inside a \
function, containing a call) use `rule`, ast-grep's rule language. Gives file:line:col, code, \
captures.";

pub const EDIT_DESCRIPTION: &str = "Rewrite what ast_grep's `pattern` or `rule` finds: each match \
becomes `rewrite` (or the rule's `fix`) with captures substituted, indentation kept. Writes \
nothing: gives a diff and an edit_id for resolve.";

pub const RESOLVE_DESCRIPTION: &str = "Accept or discard an ast_edit change. accept writes all its \
files or none, and nothing if any changed since staging.";

#[cfg(test)]
mod tests {
    #[test]
    fn the_descriptions_are_one_paragraph_without_doubled_spaces() {
        for text in [super::SEARCH_DESCRIPTION, super::EDIT_DESCRIPTION, super::RESOLVE_DESCRIPTION]
        {
            assert!(!text.contains("  ") && !text.contains('\n'), "{text:?}");
        }
    }
}
