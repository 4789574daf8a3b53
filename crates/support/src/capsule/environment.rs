//! The environment a capsule passes on: an allow-list, so tokens and keys stay outside.

use std::ffi::{OsStr, OsString};

/// Variables passed into a capsule as they are on the host (besides those the caller sets and
/// those the user names in the configuration). Everything else, `*_TOKEN`, `AWS_*`,
/// `SSH_AUTH_SOCK` and the like included, is left out.
pub const PASSED_ENV: &[&str] = &[
    "PATH",
    "LANG",
    "LANGUAGE",
    "TERM",
    "TZ",
    "USER",
    "LOGNAME",
    "SHELL",
    "COLUMNS",
    "LINES",
    "NO_COLOR",
    "FORCE_COLOR",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "PYTHONPATH",
    "PYTHONHOME",
    "NODE_PATH",
    "GOPATH",
    "GOROOT",
    "GOFLAGS",
    "GOTOOLCHAIN",
    "GOPROXY",
    "GOMODCACHE",
    "CARGO_HOME",
    "RUSTUP_HOME",
    "RUSTUP_TOOLCHAIN",
    "JAVA_HOME",
];

/// Whether `name` passes: listed in [`PASSED_ENV`] or `extra`, a locale (`LC_*`), or one of the
/// support crate's own marks (`AGENT_TOOLS_*`: a spawn's lineage, a kernel's descriptors).
pub(super) fn passes(name: &OsStr, extra: &[String]) -> bool {
    let Some(name) = name.to_str() else { return false };
    PASSED_ENV.contains(&name)
        || extra.iter().any(|e| e == name)
        || name.starts_with("LC_")
        || name.starts_with("AGENT_TOOLS_")
}

/// The host's variables that pass, for a command whose environment was cleared.
pub(super) fn passed(extra: &[String]) -> Vec<(OsString, OsString)> {
    std::env::vars_os().filter(|(name, _)| passes(name, extra)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_stay_outside_and_the_toolchain_passes() {
        for secret in ["GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "SSH_AUTH_SOCK", "OPENAI_API_KEY"] {
            assert!(!passes(OsStr::new(secret), &[]), "{secret} must stay outside");
        }
        for kept in ["PATH", "LC_ALL", "VIRTUAL_ENV", "AGENT_TOOLS_LINEAGE"] {
            assert!(passes(OsStr::new(kept), &[]), "{kept} must pass");
        }
        assert!(passes(OsStr::new("ANTHROPIC_API_KEY"), &["ANTHROPIC_API_KEY".into()]));
    }
}
