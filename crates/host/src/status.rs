//! `agent-tools status`: a doctor that says what is attached and usable here, and what is missing.

use serde::Serialize;

use agent_tools::{
    Family, Registry, Surface,
    families::{BuiltFamily, FAMILIES, FamilyEntry},
    run::{Attach, RunSetup},
};

/// One family as `status` reports it.
#[derive(Debug, Clone, Serialize)]
pub struct FamilyReport {
    pub family: String,
    pub attached: bool,
    /// The tools the model sees on the run's surface.
    pub tools: Vec<String>,
    /// The family's tools the surface's ceiling hides, each with its tier (`lsp_rename (write)`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hidden: Vec<String>,
    /// Facts: what resolves, what was found, what is missing and how to get it.
    pub details: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct StatusReport {
    pub root: String,
    pub config: Option<String>,
    /// The surface reported on and its ceiling, for example `plan (up to read-tier tools)`.
    pub surface: String,
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
        out.push_str(&format!("surface: {}\n", self.surface));
        out.push_str(&format!("capsule: {}\n", self.capsule));
        for family in &self.families {
            let state = if family.attached { "attached" } else { "not attached" };
            out.push_str(&format!("\n{}: {state}", family.family));
            if !family.tools.is_empty() {
                out.push_str(&format!(" ({})", family.tools.join(", ")));
            }
            out.push('\n');
            if !family.hidden.is_empty() {
                out.push_str(&format!(
                    "  - hidden on this surface: {}\n",
                    family.hidden.join(", ")
                ));
            }
            for detail in &family.details {
                out.push_str(&format!("  - {detail}\n"));
            }
        }
        out
    }
}

/// Builds the report for the run `setup` describes (root, configuration as trusted, surface,
/// capsule) from the same assembly as that run, with what `attach` brings; nothing is started.
/// Every family of the facade's table is reported: attached, built in but not attached, or
/// left out of this build.
pub fn status_report(setup: &RunSetup, attach: &Attach) -> StatusReport {
    let root = setup.info.root.as_path();
    let config = &setup.config;
    // A capsule that cannot be made is reported, not fatal: saying so is the doctor's job.
    let programs = agent_tools::capsule::configured_programs(root, config);
    let capsule = agent_tools::capsule::make_or_refuse(root, &config.capsule, &programs);
    let capsule_line = capsule.describe();
    let registry = agent_tools::run::assemble_in(root, config, attach, capsule);
    let surface = registry.surface(setup.surface_kind);
    let info = surface.info();
    let surface_line = format!("{} (up to {}-tier tools)", info.kind, info.ceiling);
    let mut families: Vec<FamilyReport> = FAMILIES
        .iter()
        .map(|entry| match entry {
            FamilyEntry::Built(family) => {
                let name = family.descriptor.name;
                match registry.families().iter().find(|f| f.name == name) {
                    Some(attached) => attached_report(attached, family, &registry, &surface, setup),
                    // Built in, but attached only when a run has what it needs (someone to
                    // answer; vibe mode): its details say which.
                    None => FamilyReport {
                        family: name.to_string(),
                        attached: false,
                        tools: vec![],
                        hidden: vec![],
                        details: family.details(root, config),
                    },
                }
            }
            FamilyEntry::Left(feature) => FamilyReport {
                family: feature.to_string(),
                attached: false,
                tools: vec![],
                hidden: vec![],
                details: vec![format!(
                    "not in this build: the cargo feature `{feature}` of agent-tools is off"
                )],
            },
        })
        .collect();
    families.sort_by(|a, b| a.family.cmp(&b.family));
    StatusReport {
        root: root.display().to_string(),
        config: config.source.as_ref().map(|p| p.display().to_string()),
        surface: surface_line,
        capsule: capsule_line,
        families,
    }
}

/// The report of a family attached to the run: the tools its surface shows, those its ceiling
/// hides, and what its run resource (else the family itself) says.
fn attached_report(
    attached: &Family,
    family: &BuiltFamily,
    registry: &Registry,
    surface: &Surface,
    setup: &RunSetup,
) -> FamilyReport {
    let root = setup.info.root.as_path();
    let (tools, hidden): (Vec<&String>, Vec<&String>) =
        attached.tools.iter().partition(|name| surface.get(name).is_some());
    let details = registry
        .status_of(&attached.name, root)
        .unwrap_or_else(|| family.details(root, &setup.config));
    FamilyReport {
        family: attached.name.clone(),
        attached: true,
        tools: tools.into_iter().cloned().collect(),
        hidden: hidden
            .into_iter()
            .map(|name| match registry.tools().iter().find(|t| &t.spec().name == name) {
                Some(tool) => format!("{name} ({})", tool.spec().tier),
                None => name.clone(),
            })
            .collect(),
        details: if details.is_empty() {
            vec![format!("confined to {}", root.display())]
        } else {
            details
        },
    }
}
