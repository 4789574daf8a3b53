//! The ask family as the facade lists it: its name and its one tool, `ask_user`.

use agent_tools_support::{
    Tier,
    family::{FamilyDescriptor, ToolDescriptor},
};

/// `ask_user`: a question on a card (tier read: answering changes nothing).
pub const ASK_USER: ToolDescriptor = ToolDescriptor {
    name: crate::TOOL_NAME,
    description: crate::TOOL_DESCRIPTION,
    tier: Tier::Read,
};

/// The ask family.
pub const FAMILY: FamilyDescriptor = FamilyDescriptor { name: "ask", tools: &[ASK_USER] };
