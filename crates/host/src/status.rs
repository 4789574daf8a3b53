//! `agent-tools status`: a doctor that says what is attached and usable here, and what is missing.

use std::path::Path;

use serde::Serialize;

use agent_tools::Config;

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
    /// Where the run's kernels, debuggers and workers start, and what confines them.
    pub capsule: String,
    pub families: Vec<FamilyReport>,
}

impl StatusReport {
    pub fn render(&self) -> String {
        let mut out = format!("root: {}\n", self.root);
        out.push_str(&format!(
            "config: {}\n",
            self.config.as_deref().unwrap_or("none found (defaults in use)")
        ));
        out.push_str(&format!("capsule: {}\n", self.capsule));
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

/// Every family, the cargo feature that builds it in, and its tools.
const FAMILIES: &[(&str, bool, &str)] = &[
    ("ask", cfg!(feature = "ask"), "ask_user"),
    ("astgrep", cfg!(feature = "astgrep"), "ast_grep, ast_edit, resolve"),
    ("debug", cfg!(feature = "debug"), "debug"),
    ("eval", cfg!(feature = "eval"), "eval"),
    ("lsp", cfg!(feature = "lsp"), "lsp, lsp_rename, lsp_code_action"),
    ("vibe", cfg!(feature = "vibe"), "vibe_spawn, vibe_send, vibe_wait, vibe_kill, vibe_list"),
];

/// Builds the report for `root` from the same assembly as a run.
pub fn status_report(root: &Path) -> agent_tools::Result<StatusReport> {
    let config = Config::load(root)?;
    let capsule = agent_tools::capsule::make_or_refuse(root, &config.capsule);
    let capsule_line = capsule.describe();
    let registry =
        agent_tools::run::assemble_in(root, &config, &agent_tools::run::Attach::default(), capsule);
    let mut families: Vec<FamilyReport> = registry
        .families()
        .iter()
        .map(|f| FamilyReport {
            family: f.name.clone(),
            attached: true,
            tools: f.tools.clone(),
            details: match agent_tools::status_details(&f.name, root, &config) {
                details if details.is_empty() => vec![format!("confined to {}", root.display())],
                details => details,
            },
        })
        .collect();
    // Built in, but attached only when a run has what they need (someone to answer; vibe mode).
    #[cfg(feature = "ask")]
    report_unattached(&mut families, "ask", root, &config);
    #[cfg(feature = "vibe")]
    report_unattached(&mut families, "vibe", root, &config);
    for (family, built_in, tools) in FAMILIES {
        if *built_in || families.iter().any(|f| f.family == *family) {
            continue;
        }
        families.push(FamilyReport {
            family: family.to_string(),
            attached: false,
            tools: vec![],
            details: vec![format!(
                "not in this build: the cargo feature `{family}` of agent-tools is off ({tools} need it)"
            )],
        });
    }
    families.sort_by(|a, b| a.family.cmp(&b.family));
    Ok(StatusReport {
        root: root.display().to_string(),
        config: config.source.map(|p| p.display().to_string()),
        capsule: capsule_line,
        families,
    })
}

/// Reports `family` as built in but not attached to this run, with the reason from its details.
#[cfg(any(feature = "ask", feature = "vibe"))]
fn report_unattached(families: &mut Vec<FamilyReport>, family: &str, root: &Path, config: &Config) {
    if families.iter().any(|f| f.family == family) {
        return;
    }
    families.push(FamilyReport {
        family: family.to_string(),
        attached: false,
        tools: vec![],
        details: agent_tools::status_details(family, root, config),
    });
}
