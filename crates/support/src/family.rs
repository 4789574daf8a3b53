//! A tool family's identity as data: its name and, for each of its tools, the name, description
//! and tier. Each family crate declares its own once (`family::FAMILY`); the facade builds its
//! tools' specs from it and lists it for `agent-tools status`, so nothing else repeats it.

use crate::Tier;

/// One tool as its family declares it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolDescriptor {
    /// The name a client calls it by (`ast_grep`).
    pub name: &'static str,
    /// What the model reads about it in the tool list.
    pub description: &'static str,
    /// What it may do, and so which surfaces show it.
    pub tier: Tier,
}

/// One family: the name the registry and `agent-tools status` know it by, and its tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FamilyDescriptor {
    /// The family's name, which is also the cargo feature of the facade that builds it in.
    pub name: &'static str,
    pub tools: &'static [ToolDescriptor],
}

impl FamilyDescriptor {
    /// The tool called `name`, if this family has one.
    pub fn tool(&self, name: &str) -> Option<&'static ToolDescriptor> {
        self.tools.iter().find(|t| t.name == name)
    }

    /// The tools' names, in the order the family declares them.
    pub fn tool_names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.tools.iter().map(|t| t.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FAMILY: FamilyDescriptor = FamilyDescriptor {
        name: "pair",
        tools: &[
            ToolDescriptor { name: "look", description: "Looks.", tier: Tier::Read },
            ToolDescriptor { name: "touch", description: "Touches.", tier: Tier::Write },
        ],
    };

    #[test]
    fn a_family_finds_its_tools_by_name_and_lists_them_in_order() {
        assert_eq!(FAMILY.tool("touch").map(|t| t.tier), Some(Tier::Write));
        assert_eq!(FAMILY.tool("run"), None);
        assert_eq!(FAMILY.tool_names().collect::<Vec<_>>(), ["look", "touch"]);
    }
}
