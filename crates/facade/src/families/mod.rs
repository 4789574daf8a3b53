//! Adapters from each family crate into the registry, one file per family.
//!
//! Each family file adds its `RegistryBuilder::with_<family>` (an inherent impl lives
//! beside the adapter), implements `TypedTool` for its tools over the family crate's domain API,
//! and offers `status_details` for `agent-tools status`. Each sits behind the cargo feature
//! of the same name, so a harness that wants one family pays for no other.

use std::path::Path;

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

use crate::Config;

/// Facts `agent-tools status` shows for a family that has no run resource to ask (astgrep,
/// ask) or is not attached (vibe outside vibe mode): what resolves, what is missing. A family
/// with a resource is asked through [`crate::Registry::status_of`], so the report is the run's
/// own setup.
#[allow(clippy::match_single_binding, reason = "one arm per family, each behind its feature")]
pub fn status_details(family: &str, root: &Path, config: &Config) -> Vec<String> {
    let _ = (root, config);
    match family {
        // A family without a resource adds one arm: `#[cfg(feature = "x")] "x" => x::status_details(root, config),`
        #[cfg(feature = "astgrep")]
        "astgrep" => astgrep::status_details(root, config),
        #[cfg(feature = "ask")]
        "ask" => ask::status_details(root, config),
        #[cfg(feature = "vibe")]
        "vibe" => vibe::status_details(root, config),
        _ => Vec::new(),
    }
}
