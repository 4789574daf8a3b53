//! `agent-tools status`: a doctor that says what is attached and usable here, and what is missing.

use std::path::Path;

use serde::Serialize;

use crate::Config;

/// One family as `status` reports it.
#[derive(Debug, Clone, Serialize)]
pub struct FamilyReport {
    pub family: String,
    pub attached: bool,
    pub tools: Vec<String>,
    /// Facts: what resolves, what was found, what is missing and how to get it.
    pub details: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct StatusReport {
    pub root: String,
    pub config: Option<String>,
    pub families: Vec<FamilyReport>,
}

impl StatusReport {
    pub fn render(&self) -> String {
        let mut out = format!("root: {}\n", self.root);
        out.push_str(&format!(
            "config: {}\n",
            self.config.as_deref().unwrap_or("none found (defaults in use)")
        ));
        for family in &self.families {
            let state = if family.attached { "attached" } else { "not attached" };
            out.push_str(&format!("\n{}: {state}", family.family));
            if !family.tools.is_empty() {
                out.push_str(&format!(" ({})", family.tools.join(", ")));
            }
            out.push('\n');
            for detail in &family.details {
                out.push_str(&format!("  - {detail}\n"));
            }
        }
        out
    }
}

/// Families the specification names that this build does not contain yet.
const NOT_IN_THIS_BUILD: &[(&str, &str)] = &[
    ("ask", "ask_user"),
    ("astgrep", "ast_grep, ast_edit, resolve"),
    ("debug", "debug"),
    ("eval", "eval"),
    ("lsp", "lsp, lsp_rename"),
    ("vibe", "vibe_spawn, vibe_send, vibe_wait, vibe_kill, vibe_list"),
];

/// Builds the report for `root` from the same assembly as a run.
pub fn status_report(root: &Path) -> crate::Result<StatusReport> {
    let config = Config::load(root)?;
    let registry = super::assemble(root, &config);
    let mut families: Vec<FamilyReport> = registry
        .families()
        .iter()
        .map(|f| FamilyReport {
            family: f.name.clone(),
            attached: true,
            tools: f.tools.clone(),
            details: match crate::families::status_details(&f.name, root, &config) {
                details if details.is_empty() => vec![format!("confined to {}", root.display())],
                details => details,
            },
        })
        .collect();
    for (family, tools) in NOT_IN_THIS_BUILD {
        if families.iter().any(|f| f.family == *family) {
            continue;
        }
        families.push(FamilyReport {
            family: family.to_string(),
            attached: false,
            tools: vec![],
            details: vec![format!(
                "not part of this build yet ({tools} will appear when the family lands)"
            )],
        });
    }
    families.sort_by(|a, b| a.family.cmp(&b.family));
    Ok(StatusReport {
        root: root.display().to_string(),
        config: config.source.map(|p| p.display().to_string()),
        families,
    })
}
