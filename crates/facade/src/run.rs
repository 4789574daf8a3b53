//! Run assembly: a run's root, configuration and surface ([`RunSetup`]), and its registry built
//! from what a host can attach ([`Attach`], [`assemble`]). The `agent-tools` host and the Python
//! bindings both start their runs here.

use std::path::{Path, PathBuf};

pub use crate::attach::Attach;
use crate::{
    Config, Registry, RegistryBuilder, RunInfo, SurfaceKind,
    families::{FamilyEntry, RunParts},
};

/// Everything one run needs: its identity, its registry and the surface it serves.
pub struct HostRun {
    pub info: RunInfo,
    pub registry: Registry,
    pub config: Config,
    pub surface_kind: SurfaceKind,
}

impl HostRun {
    pub fn surface(&self) -> crate::Surface {
        self.registry.surface(self.surface_kind).with_max_output_chars(self.config.output.max_chars)
    }
}

/// Builds the registry of a run from what this host can attach.
///
/// Every family of the table ([`crate::families::FAMILIES`]) built in makes itself from the
/// run's configuration and what `attach` brings, or stays out (no one to answer questions,
/// vibe mode off). The run's capsule is made here, once, and every exec-tier family starts its
/// processes in it.
pub fn assemble(root: &Path, config: &Config, attach: &Attach) -> Registry {
    let programs = crate::capsule::configured_programs(root, config);
    assemble_in(
        root,
        config,
        attach,
        crate::capsule::make_or_refuse(root, &config.capsule, &programs),
    )
}

/// [`assemble`] with the run's capsule given.
pub fn assemble_in(
    root: &Path,
    config: &Config,
    attach: &Attach,
    capsule: std::sync::Arc<dyn agent_tools_support::capsule::Capsule>,
) -> Registry {
    let run = RunParts { root, config, attach, capsule: &capsule };
    crate::families::FAMILIES
        .iter()
        .filter_map(FamilyEntry::built)
        .filter_map(|family| (family.for_run)(&run))
        .fold(RegistryBuilder::new(), |builder, family| builder.with_boxed_family(family))
        .with_approval_policy(config.approval.policy)
        .build()
}

/// `root` (default: the current directory) as an existing directory, canonical.
pub fn resolve_root(root: Option<PathBuf>) -> Result<PathBuf, String> {
    let root = match root {
        Some(r) => r,
        None => std::env::current_dir()
            .map_err(|e| format!("cannot read the current directory: {e}"))?,
    };
    let canonical = std::fs::canonicalize(&root)
        .map_err(|e| format!("--root {}: {e}; give an existing directory", root.display()))?;
    if !canonical.is_dir() {
        return Err(format!("--root {}: not a directory", root.display()));
    }
    Ok(canonical)
}

/// A run before its registry exists: root, configuration and surface. The MCP host builds the
/// registry only after `initialize`, when it knows what the client can do (elicitation).
#[derive(Debug, Clone)]
pub struct RunSetup {
    pub info: RunInfo,
    pub config: Config,
    pub surface_kind: SurfaceKind,
}

impl RunSetup {
    /// The run `info` with `config`: its surface is `surface` when given, else the
    /// configuration's `[mcp] surface` (default `build`), and the configuration is held to that
    /// surface's ceiling.
    pub fn new(
        info: RunInfo,
        mut config: Config,
        surface: Option<SurfaceKind>,
    ) -> Result<RunSetup, String> {
        let surface_kind = match surface {
            Some(s) => s,
            None => match &config.mcp.surface {
                Some(s) => s.parse().map_err(|e| format!("config mcp.surface: {e}"))?,
                None => SurfaceKind::Build,
            },
        };
        config.apply_ceiling(surface_kind.ceiling());
        Ok(RunSetup { info, config, surface_kind })
    }

    /// The run's capsule is `kind` when given (`--capsule`), else the configuration's; checked
    /// here once, so a sandbox that was asked for by name (`bwrap`, `landlock`, `prefix`) and
    /// cannot be made stops the host before any run starts. `auto` (the default) never stops
    /// it: where no capsule can be made, the exec tier refuses to start, saying why.
    pub fn with_capsule(
        mut self,
        kind: Option<crate::capsule::CapsuleKind>,
    ) -> Result<RunSetup, String> {
        if let Some(kind) = kind {
            self.config.capsule.kind = kind;
        }
        if self.config.capsule.kind == crate::capsule::CapsuleKind::Auto {
            return Ok(self);
        }
        let programs = crate::capsule::configured_programs(&self.info.root, &self.config);
        crate::capsule::make(&self.info.root, &self.config.capsule, &programs)
            .map_err(|e| format!("--capsule: {e}"))?;
        Ok(self)
    }

    /// The run with its registry, built from what `attach` brings.
    pub fn assemble(self, attach: &Attach) -> HostRun {
        let registry = assemble(&self.info.root, &self.config, attach);
        HostRun { info: self.info, registry, config: self.config, surface_kind: self.surface_kind }
    }
}

/// Prepares a run: root, configuration, surface; no registry yet. The project's own
/// configuration file is not trusted (see [`prepare_run_trusting`]).
pub fn prepare_run(
    root: Option<PathBuf>,
    surface: Option<SurfaceKind>,
) -> Result<RunSetup, String> {
    prepare_run_trusting(root, surface, false)
}

/// [`prepare_run`]; `trust_project` trusts the project's `agent-tools.toml` in full.
pub fn prepare_run_trusting(
    root: Option<PathBuf>,
    surface: Option<SurfaceKind>,
    trust_project: bool,
) -> Result<RunSetup, String> {
    let root = resolve_root(root)?;
    let config = Config::load_trusting(&root, trust_project).map_err(|e| e.to_string())?;
    RunSetup::new(RunInfo::new(root), config, surface)
}

/// Starts a run for `args`: root, configuration, registry (with nothing beyond the configuration
/// attached: no question port, vibe mode only if the configuration turns it on).
pub fn start_run(root: Option<PathBuf>, surface: Option<SurfaceKind>) -> Result<HostRun, String> {
    Ok(prepare_run(root, surface)?.assemble(&Attach::default()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_runs_surface_is_the_given_one_else_the_configurations_else_build() {
        let parse = |text: &str| Config::parse(text, Path::new("agent-tools.toml")).unwrap();
        let setup = |config: Config, surface| RunSetup::new(RunInfo::new("/"), config, surface);
        let plan = parse("[mcp]\nsurface = \"plan\"\n");
        assert_eq!(setup(plan.clone(), None).unwrap().surface_kind, SurfaceKind::Plan);
        let given = setup(plan, Some(SurfaceKind::Build)).unwrap();
        assert_eq!(given.surface_kind, SurfaceKind::Build);
        assert_eq!(setup(Config::default(), None).unwrap().surface_kind, SurfaceKind::Build);
        let err = setup(parse("[mcp]\nsurface = \"nope\"\n"), None).unwrap_err();
        assert!(err.starts_with("config mcp.surface: "), "{err}");
    }
}
