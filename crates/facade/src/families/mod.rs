//! The families this build knows, in one table ([`FAMILIES`]), and the adapter from each family
//! crate into the registry, one file per family.
//!
//! Each family file implements [`AttachFamily`] for the family (`LspFamily`, `EvalFamily`, …:
//! its tools as `TypedTool`s over the family crate's domain API, built from the crate's
//! `family::FAMILY` descriptor) and gives its table entry: how a run makes it from its
//! configuration, and what `agent-tools status` says of it. Run assembly, `agent-tools status`
//! and the tests that hold descriptors and registered tools together all read this table. Each
//! family sits behind the cargo feature of its name, so a harness that wants one family pays
//! for no other.

use std::{path::Path, sync::Arc};

use agent_tools_support::capsule::Capsule;

use crate::{AttachFamily, Config, FamilyDescriptor, attach::Attach, files};

#[cfg(feature = "ask")]
pub(crate) mod ask;
#[cfg(feature = "astgrep")]
mod astgrep;
#[cfg(feature = "debug")]
mod debug;
// Diagnostics on write: the wrapper the lsp family puts around the file tools.
#[cfg(feature = "lsp")]
mod diagnostics;
#[cfg(feature = "eval")]
mod eval;
#[cfg(feature = "lsp")]
mod lsp;
#[cfg(feature = "vibe")]
pub(crate) mod vibe;

#[cfg(feature = "ask")]
pub use self::ask::AskFamily;
#[cfg(feature = "astgrep")]
pub use self::astgrep::AstgrepFamily;
#[cfg(feature = "debug")]
pub use self::debug::DebugFamily;
#[cfg(feature = "eval")]
pub use self::eval::EvalFamily;
#[cfg(feature = "lsp")]
pub use self::lsp::LspFamily;
#[cfg(feature = "vibe")]
pub use self::vibe::VibeFamily;

/// A family of this build's table.
pub enum FamilyEntry {
    /// Built in.
    Built(&'static BuiltFamily),
    /// Left out of this build: the cargo feature of agent-tools that builds it in (its name).
    Left(&'static str),
}

impl FamilyEntry {
    /// The family's name.
    pub fn name(&self) -> &'static str {
        match self {
            FamilyEntry::Built(family) => family.descriptor.name,
            FamilyEntry::Left(feature) => feature,
        }
    }

    /// The family, when it is built in.
    pub fn built(&self) -> Option<&'static BuiltFamily> {
        match self {
            FamilyEntry::Built(family) => Some(family),
            FamilyEntry::Left(_) => None,
        }
    }
}

/// A family built in: what it is, how a run makes it, what `agent-tools status` says of it.
pub struct BuiltFamily {
    /// The family's name and tools, from its crate.
    pub descriptor: &'static FamilyDescriptor,
    /// The family for one run, or None when the run lacks what it needs (someone to answer
    /// questions, vibe mode).
    pub(crate) for_run: fn(&RunParts<'_>) -> Option<Box<dyn AttachFamily>>,
    /// See [`BuiltFamily::details`].
    pub(crate) details: fn(&Path, &Config) -> Vec<String>,
}

impl BuiltFamily {
    /// Facts `agent-tools status` shows for the family when no attached run resource speaks
    /// for it (astgrep and ask have none; vibe outside vibe mode is not attached): what
    /// resolves, what is missing, why it is not attached. A family with a resource is asked
    /// through [`crate::Registry::status_of`], so the report is the run's own setup.
    pub fn details(&self, root: &Path, config: &Config) -> Vec<String> {
        (self.details)(root, config)
    }
}

/// What a run gives its families to be made from.
#[cfg_attr(
    not(all(
        feature = "ask",
        feature = "astgrep",
        feature = "debug",
        feature = "eval",
        feature = "lsp",
        feature = "vibe"
    )),
    allow(dead_code, reason = "each part serves families that a build may leave out")
)]
pub(crate) struct RunParts<'a> {
    pub(crate) root: &'a Path,
    pub(crate) config: &'a Config,
    pub(crate) attach: &'a Attach,
    /// Where the exec-tier families start their processes.
    pub(crate) capsule: &'a Arc<dyn Capsule>,
}

/// No facts beyond what the family's run resource says.
pub(crate) fn no_details(_root: &Path, _config: &Config) -> Vec<String> {
    Vec::new()
}

/// The facade's own file tools, in every run.
const FILES: BuiltFamily =
    BuiltFamily { descriptor: &files::FAMILY, for_run: file_tools, details: no_details };

fn file_tools(_run: &RunParts<'_>) -> Option<Box<dyn AttachFamily>> {
    Some(Box::new(files::ReferenceFileTools))
}

/// The table entry of the family `$feature`, whose adapter is the module of the same name.
macro_rules! entry {
    ($feature:tt, $module:ident) => {{
        #[cfg(feature = $feature)]
        let entry = FamilyEntry::Built(&$module::ENTRY);
        #[cfg(not(feature = $feature))]
        let entry = FamilyEntry::Left($feature);
        entry
    }};
}

/// Every family, sorted by name: the facade's own file tools and one per family crate, built in
/// or not.
pub const FAMILIES: &[FamilyEntry] = &[
    entry!("ask", ask),
    entry!("astgrep", astgrep),
    entry!("debug", debug),
    entry!("eval", eval),
    FamilyEntry::Built(&FILES),
    entry!("lsp", lsp),
    entry!("vibe", vibe),
];

#[cfg(test)]
mod tests;
