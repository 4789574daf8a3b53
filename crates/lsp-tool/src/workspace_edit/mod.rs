//! The WorkspaceEdit applier shared by `lsp_rename` and `lsp_code_action`: a server's edit
//! read into ordered steps, planned in memory with version and stale-range checks, committed
//! through support's journal by handle beneath the root, then synced back to the server.

mod commit;
mod parse;
mod plan;
mod text;

pub(crate) use self::commit::commit_edit;
pub(crate) use self::text::{describe_ops, stale_files};
pub(crate) use self::{
    parse::{EditOp, parse_workspace_edit},
    plan::{EditPlan, plan_edit, write_plan},
    text::apply_text_edits,
};

#[cfg(test)]
mod tests {

    /// A range as a server sends it.
    pub(super) fn range(l1: u32, c1: u32, l2: u32, c2: u32) -> lsp_types::Range {
        lsp_types::Range::new(lsp_types::Position::new(l1, c1), lsp_types::Position::new(l2, c2))
    }
}
