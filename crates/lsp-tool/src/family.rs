//! The lsp family as the facade lists it: its name and its three tools.

use agent_tools_support::{
    Tier,
    family::{FamilyDescriptor, ToolDescriptor},
};

/// `lsp`: questions to the language server (tier read).
pub const LSP: ToolDescriptor =
    ToolDescriptor { name: "lsp", description: crate::LSP_DESCRIPTION, tier: Tier::Read };

/// `lsp_rename`: a rename across the project (tier write).
pub const LSP_RENAME: ToolDescriptor = ToolDescriptor {
    name: "lsp_rename",
    description: crate::RENAME_DESCRIPTION,
    tier: Tier::Write,
};

/// `lsp_code_action`: applies a code action `lsp code_actions` listed (tier write).
pub const LSP_CODE_ACTION: ToolDescriptor = ToolDescriptor {
    name: "lsp_code_action",
    description: crate::CODE_ACTION_DESCRIPTION,
    tier: Tier::Write,
};

/// The lsp family.
pub const FAMILY: FamilyDescriptor =
    FamilyDescriptor { name: "lsp", tools: &[LSP, LSP_RENAME, LSP_CODE_ACTION] };
