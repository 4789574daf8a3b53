//! The astgrep family as the facade lists it: its name and its three tools.

use agent_tools_support::{
    Tier,
    family::{FamilyDescriptor, ToolDescriptor},
};

use crate::tools;

/// `ast_grep`: structural search (tier read).
pub const AST_GREP: ToolDescriptor = ToolDescriptor {
    name: tools::SEARCH,
    description: tools::SEARCH_DESCRIPTION,
    tier: Tier::Read,
};

/// `ast_edit`: a staged rewrite (tier write: its proposal becomes a write through `resolve`).
pub const AST_EDIT: ToolDescriptor =
    ToolDescriptor { name: tools::EDIT, description: tools::EDIT_DESCRIPTION, tier: Tier::Write };

/// `resolve`: accepts or discards a staged rewrite (tier write).
pub const RESOLVE: ToolDescriptor = ToolDescriptor {
    name: tools::RESOLVE,
    description: tools::RESOLVE_DESCRIPTION,
    tier: Tier::Write,
};

/// The astgrep family.
pub const FAMILY: FamilyDescriptor =
    FamilyDescriptor { name: "astgrep", tools: &[AST_GREP, AST_EDIT, RESOLVE] };
