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

pub use self::{
    apply_patch::{ApplyPatchArgs, ApplyPatchTool},
    edit::{EditArgs, EditTool},
    edit_symbol::Insert,
    read::{ReadArgs, ReadOutput, ReadTool},
    write::{WriteArgs, WriteTool},
};
use crate::tool::DynTool;

pub(crate) fn reference_tools() -> Vec<DynTool> {
    vec![
        Arc::new(ReadTool::new()),
        Arc::new(WriteTool::new()),
        Arc::new(EditTool::new()),
        Arc::new(ApplyPatchTool::new()),
    ]
}
