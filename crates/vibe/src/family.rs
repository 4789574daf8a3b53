//! The vibe family as the facade lists it: its name and its five tools.

use agent_tools_support::{
    Tier,
    family::{FamilyDescriptor, ToolDescriptor},
};

use crate::tools;

// All tier read: what a worker may do is its own ceiling, the caller's.

/// `vibe_spawn`: starts a background worker.
pub const VIBE_SPAWN: ToolDescriptor =
    ToolDescriptor { name: tools::SPAWN, description: tools::SPAWN_DESCRIPTION, tier: Tier::Read };

/// `vibe_send`: briefs a worker again.
pub const VIBE_SEND: ToolDescriptor =
    ToolDescriptor { name: tools::SEND, description: tools::SEND_DESCRIPTION, tier: Tier::Read };

/// `vibe_wait`: waits for workers.
pub const VIBE_WAIT: ToolDescriptor =
    ToolDescriptor { name: tools::WAIT, description: tools::WAIT_DESCRIPTION, tier: Tier::Read };

/// `vibe_kill`: stops a worker.
pub const VIBE_KILL: ToolDescriptor =
    ToolDescriptor { name: tools::KILL, description: tools::KILL_DESCRIPTION, tier: Tier::Read };

/// `vibe_list`: the run's workers.
pub const VIBE_LIST: ToolDescriptor =
    ToolDescriptor { name: tools::LIST, description: tools::LIST_DESCRIPTION, tier: Tier::Read };

/// The vibe family.
pub const FAMILY: FamilyDescriptor = FamilyDescriptor {
    name: "vibe",
    tools: &[VIBE_SPAWN, VIBE_SEND, VIBE_WAIT, VIBE_KILL, VIBE_LIST],
};
