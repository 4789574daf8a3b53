//! The eval family as the facade lists it: its name and its one tool, `eval`.

use agent_tools_support::{
    Tier,
    family::{FamilyDescriptor, ToolDescriptor},
};

/// `eval`: a cell in a persistent kernel (tier exec: it runs code).
pub const EVAL: ToolDescriptor = ToolDescriptor {
    name: crate::TOOL_NAME,
    description: crate::TOOL_DESCRIPTION,
    tier: Tier::Exec,
};

/// The eval family.
pub const FAMILY: FamilyDescriptor = FamilyDescriptor { name: "eval", tools: &[EVAL] };
