//! The table of families against what each family registers: the same names, descriptions
//! and tiers, so status, run assembly and the tool list cannot drift apart.

use std::path::Path;

use super::{FAMILIES, FamilyEntry};
use crate::{Config, run::Attach};

/// A run with everything a family can want: vibe mode, and someone to answer questions.
fn everything() -> Attach {
    let attach = Attach::default().with_vibe(true);
    #[cfg(feature = "ask")]
    let attach = attach.with_questions(
        std::sync::Arc::new(agent_tools_ask::NoOperatorPort::new("a test")),
        agent_tools_ask::Target::new("the operator of a test"),
    );
    attach
}

#[tokio::test]
async fn every_family_registers_exactly_the_tools_its_descriptor_declares() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let registry = crate::run::assemble(root, &Config::default(), &everything());
    for family in FAMILIES.iter().filter_map(FamilyEntry::built) {
        let descriptor = family.descriptor;
        let registered = registry
            .families()
            .iter()
            .find(|f| f.name == descriptor.name)
            .unwrap_or_else(|| panic!("{} is not attached", descriptor.name));
        let mut declared: Vec<&str> = descriptor.tool_names().collect();
        declared.sort();
        assert_eq!(registered.tools, declared, "{}", descriptor.name);
        for tool in descriptor.tools {
            let spec = registry
                .tools()
                .iter()
                .map(|t| t.spec())
                .find(|s| s.name == tool.name)
                .unwrap_or_else(|| panic!("{} is not registered", tool.name));
            assert_eq!(spec.description, tool.description, "{}", tool.name);
            assert_eq!(spec.tier, tool.tier, "{}", tool.name);
        }
    }
    let listed: Vec<&str> = registry.families().iter().map(|f| f.name.as_str()).collect();
    let known: Vec<&str> = FAMILIES.iter().map(FamilyEntry::name).collect();
    assert!(listed.iter().all(|name| known.contains(name)), "{listed:?} against {known:?}");
    registry.shutdown().await;
}

#[test]
fn the_table_is_sorted_and_names_each_family_once() {
    let names: Vec<&str> = FAMILIES.iter().map(FamilyEntry::name).collect();
    let mut sorted = names.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(names, sorted);
    for name in ["ask", "astgrep", "debug", "eval", "files", "lsp", "vibe"] {
        assert!(names.contains(&name), "{name} is missing from {names:?}");
    }
}
