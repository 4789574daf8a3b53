//! The reference harness file tools: `read`, `write`, `edit`, `apply_patch`.
//!
//! A harness may bring its own; these serve the host binary and the tests. Every path is
//! confined to the run's root by handle (`agent-tools-support`'s `fs`), and every write,
//! single or grouped, is crash-atomic through its `journal`.

mod access;
mod apply_patch;
mod edit;
mod edit_symbol;
mod patch;
mod read;
mod symbols;
mod write;

use std::sync::Arc;

use agent_tools_support::{
    Tier,
    family::{FamilyDescriptor, ToolDescriptor},
};

pub use self::{
    apply_patch::{ApplyPatchArgs, ApplyPatchTool},
    edit::{EditArgs, EditTool},
    edit_symbol::Insert,
    read::{ReadArgs, ReadOutput, ReadTool},
    write::{WriteArgs, WriteTool},
};
use crate::attach::{AttachFamily, Attachment};

/// `read` (tier read).
pub const READ: ToolDescriptor = ToolDescriptor {
    name: "read",
    description: "Read a text file, lines numbered: a range (start_line, end_line), one declaration (symbol: a name path, Class/method) or its outline (outline: true).",
    tier: Tier::Read,
};

/// `write` (tier write).
pub const WRITE: ToolDescriptor = ToolDescriptor {
    name: "write",
    description: "Create or replace a file inside the workspace with the given content (atomic; keeps the file's permissions). dry_run: check only.",
    tier: Tier::Write,
};

/// `edit` (tier write).
pub const EDIT: ToolDescriptor = ToolDescriptor {
    name: "edit",
    description: "Replace old_string, exact text that must occur once (add surrounding lines to make it unique) unless replace_all, by new_string. Or symbol (a name path) instead of old_string: new_string replaces that declaration, or with insert goes beside it. dry_run: check only.",
    tier: Tier::Write,
};

/// `apply_patch` (tier write).
pub const APPLY_PATCH: ToolDescriptor = ToolDescriptor {
    name: "apply_patch",
    description: "Apply a unified diff to one or more files, all or nothing: if any hunk fails, no file changes. dry_run: check only.",
    tier: Tier::Write,
};

/// The facade's own family: the harness file tools, which every file-tool wrapper wraps.
pub const FAMILY: FamilyDescriptor =
    FamilyDescriptor { name: "files", tools: &[READ, WRITE, EDIT, APPLY_PATCH] };

/// The reference file tools as a family, all four in the role of file tools (a wrapper hands a
/// call that changed no file, such as a `read`, back as it was).
pub struct ReferenceFileTools;

impl AttachFamily for ReferenceFileTools {
    fn descriptor(&self) -> &'static FamilyDescriptor {
        &FAMILY
    }

    fn attach(self: Box<Self>, to: &mut Attachment<'_>) {
        to.writer_tool(Arc::new(ReadTool::new()))
            .writer_tool(Arc::new(WriteTool::new()))
            .writer_tool(Arc::new(EditTool::new()))
            .writer_tool(Arc::new(ApplyPatchTool::new()));
    }
}
