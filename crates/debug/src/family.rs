//! The debug family as the facade lists it: its name and its one tool, `debug`.

use agent_tools_support::{
    Tier,
    family::{FamilyDescriptor, ToolDescriptor},
};

/// `debug`: drives a debug adapter (tier exec: it starts the program).
pub const DEBUG: ToolDescriptor = ToolDescriptor {
    name: crate::TOOL_NAME,
    description: crate::TOOL_DESCRIPTION,
    tier: Tier::Exec,
};

/// The debug family.
pub const FAMILY: FamilyDescriptor = FamilyDescriptor { name: "debug", tools: &[DEBUG] };
