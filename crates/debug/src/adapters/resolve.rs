//! Resolving how to start an adapter for a root (a configured command, or the built-in
//! lookup with its probes), or why it cannot start, and the `adapters` report.

use agent_tools_support::Unavailable;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::Serialize;

use super::{
    AdapterKind, Probes, SearchEnv, delve_candidates, delve_go_fit, find_marker, go_binary,
    lldb_candidates, lldb_version, minor, parse_delve_version, parse_go_version, probe_python,
    python_candidates,
};
use crate::{config::DebugConfig, error::DebugError};

/// What `adapters` says about one adapter.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct AdapterReport {
    pub adapter: AdapterKind,
    /// Marker found and binary found (and, for delve, a Go it supports).
    pub usable: bool,
    /// The markers looked for in the root.
    pub markers: Vec<String>,
    /// The marker found, relative to the root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub marker: Option<String>,
    /// The command that would start the adapter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Facts that make it unusable, or worth knowing.
    pub problems: Vec<String>,
    pub notes: Vec<String>,
    /// How to install what is missing.
    pub install: String,
}

/// A resolved way to start an adapter.
#[derive(Debug, Clone)]
pub struct AdapterCommand {
    pub kind: AdapterKind,
    pub argv: Vec<String>,
    pub version: Option<String>,
    /// debugpy: the interpreter that runs the program (the project's).
    pub debuggee_python: Option<PathBuf>,
    pub notes: Vec<String>,
}

/// Resolves how to start `kind` for `root`, or says why it cannot be started.
pub fn resolve(
    kind: AdapterKind,
    root: &Path,
    config: &DebugConfig,
    env: &SearchEnv,
    probes: &Probes,
) -> Result<AdapterCommand, DebugError> {
    resolve_with(kind, root, config, env, probes, true)
}

/// `resolve`, optionally without the version probes that only a report needs (`lldb --version`
/// loads all of LLDB: ~300 ms that a launch should not pay; lldb-dap says its version itself).
pub fn resolve_with(
    kind: AdapterKind,
    root: &Path,
    config: &DebugConfig,
    env: &SearchEnv,
    probes: &Probes,
    versions: bool,
) -> Result<AdapterCommand, DebugError> {
    let configured = match kind {
        AdapterKind::Dart => &config.commands.dart,
        AdapterKind::Debugpy => &config.commands.debugpy,
        AdapterKind::Lldb => &config.commands.lldb,
        AdapterKind::Delve => &config.commands.delve,
    };
    if configured.as_ref().is_some_and(|argv| argv.is_empty() || argv[0].is_empty()) {
        return Err(DebugError::Unavailable(Unavailable {
            resource: format!("debug adapter {}", kind.id()),
            reason: format!("[debug.commands] {} is empty", kind.id()),
            fix: "give the full command line, or remove the entry to use the built-in lookup"
                .into(),
        }));
    }
    match kind {
        AdapterKind::Debugpy => resolve_debugpy(root, config, env, probes),
        AdapterKind::Lldb => resolve_lldb(config, env, probes, versions),
        AdapterKind::Delve => resolve_delve(config, env, probes),
        AdapterKind::Dart => resolve_dart(config, env, probes),
    }
}

/// The adapter is missing: what was looked for, and how to install it.
fn unavailable(kind: AdapterKind, reason: String) -> DebugError {
    DebugError::Unavailable(Unavailable {
        resource: format!("debug adapter {}", kind.id()),
        reason,
        fix: kind.install_hint().to_string(),
    })
}

/// debugpy: the configured command, or the first Python (the project's first) that has
/// debugpy; the program runs on the project's Python either way.
fn resolve_debugpy(
    root: &Path,
    config: &DebugConfig,
    env: &SearchEnv,
    probes: &Probes,
) -> Result<AdapterCommand, DebugError> {
    let kind = AdapterKind::Debugpy;
    let candidates = python_candidates(root, env);
    let project = candidates.first().cloned();
    let mut notes = Vec::new();
    let mut project_version = None;
    if let Some(p) = &project
        && let Some((version, _)) = probe_python(probes, p)
    {
        if minor(&version).is_some_and(|m| m < 8) && version.starts_with("3.") {
            notes.push(format!(
                "the program's Python {} is {version}; debugpy needs 3.8 or newer",
                p.display()
            ));
        }
        project_version = Some(version);
    }
    if let Some(argv) = &config.commands.debugpy {
        return Ok(AdapterCommand {
            kind,
            argv: argv.clone(),
            version: None,
            debuggee_python: project,
            notes,
        });
    }
    let mut tried = Vec::new();
    for python in &candidates {
        match probe_python(probes, python) {
            Some((version, Some(debugpy))) => {
                if Some(python) != project.as_ref()
                    && let Some(p) = &project
                {
                    notes.push(format!(
                        "the project's Python {} has no debugpy; the adapter runs on {} \
                         (Python {version}, debugpy {debugpy}) and starts the program \
                         with the project's Python {}",
                        p.display(),
                        python.display(),
                        project_version.as_deref().unwrap_or("?")
                    ));
                }
                return Ok(AdapterCommand {
                    kind,
                    argv: vec![python.display().to_string(), "-m".into(), "debugpy.adapter".into()],
                    version: Some(format!("debugpy {debugpy} on Python {version}")),
                    debuggee_python: project.clone().or(Some(python.clone())),
                    notes,
                });
            }
            Some((version, None)) => {
                tried.push(format!("{} (Python {version}, no debugpy)", python.display()))
            }
            None => tried.push(format!("{} (does not run)", python.display())),
        }
    }
    Err(unavailable(
        kind,
        if tried.is_empty() {
            "no Python found: looked for .venv/bin/python, venv/bin/python, $VIRTUAL_ENV and \
         python3 on PATH"
                .to_string()
        } else {
            format!("no Python with debugpy: tried {}", tried.join(", "))
        },
    ))
}

/// lldb-dap: the configured command or the first found; its version only when asked.
fn resolve_lldb(
    config: &DebugConfig,
    env: &SearchEnv,
    probes: &Probes,
    versions: bool,
) -> Result<AdapterCommand, DebugError> {
    let kind = AdapterKind::Lldb;
    let argv = match &config.commands.lldb {
        Some(argv) => argv.clone(),
        None => match lldb_candidates(env).first() {
            Some(p) => vec![p.display().to_string()],
            None => {
                return Err(unavailable(
                    kind,
                    "no lldb-dap found: looked for lldb-dap, lldb-dap-NN, \
                     /usr/lib/llvm-NN/bin/lldb-dap and lldb-vscode[-NN]"
                        .to_string(),
                ));
            }
        },
    };
    let version = if versions { lldb_version(probes, Path::new(&argv[0])) } else { None };
    Ok(AdapterCommand { kind, argv, version, debuggee_python: None, notes: Vec::new() })
}

/// dlv: the configured command or the first found, checked against the Go it builds with.
fn resolve_delve(
    config: &DebugConfig,
    env: &SearchEnv,
    probes: &Probes,
) -> Result<AdapterCommand, DebugError> {
    let kind = AdapterKind::Delve;
    let dlv = match &config.commands.delve {
        Some(argv) => argv.clone(),
        None => match delve_candidates(env).first() {
            Some(p) => vec![p.display().to_string()],
            None => {
                return Err(unavailable(
                    kind,
                    "no dlv found: looked on PATH, in $GOPATH/bin and ~/go/bin".into(),
                ));
            }
        },
    };
    let version =
        probes.run(&[dlv[0].clone(), "version".into()]).and_then(|t| parse_delve_version(&t));
    let mut notes = Vec::new();
    match go_binary(env) {
        None => notes.push("no `go` found on PATH: delve cannot build Go programs".into()),
        Some(go) => {
            let go_version = probes
                .run(&[go.display().to_string(), "version".into()])
                .and_then(|t| parse_go_version(&t));
            if let (Some(d), Some(g)) = (&version, &go_version)
                && let Err(problem) = delve_go_fit(d, g)
            {
                return Err(DebugError::Unavailable(Unavailable {
                    resource: "debug adapter delve".into(),
                    reason: problem,
                    fix: kind.install_hint().to_string(),
                }));
            }
            if let Some(g) = go_version {
                notes.push(format!("builds with go{g}"));
            }
        }
    }
    Ok(AdapterCommand {
        kind,
        argv: dlv,
        version: version.map(|v| format!("delve {v}")),
        debuggee_python: None,
        notes,
    })
}

/// `dart debug_adapter`: the configured command or `dart` on PATH.
fn resolve_dart(
    config: &DebugConfig,
    env: &SearchEnv,
    probes: &Probes,
) -> Result<AdapterCommand, DebugError> {
    let kind = AdapterKind::Dart;
    let argv = match &config.commands.dart {
        Some(argv) => argv.clone(),
        None => match env.which("dart") {
            Some(p) => vec![p.display().to_string(), "debug_adapter".into()],
            None => return Err(unavailable(kind, "no `dart` on PATH".into())),
        },
    };
    let version = probes
        .run(&[argv[0].clone(), "--version".into()])
        .and_then(|t| t.lines().next().map(|l| l.trim().to_string()));
    Ok(AdapterCommand { kind, argv, version, debuggee_python: None, notes: Vec::new() })
}

/// The `adapters` report for `root`.
pub fn report(
    kind: AdapterKind,
    root: &Path,
    config: &DebugConfig,
    env: &SearchEnv,
    probes: &Probes,
) -> AdapterReport {
    let marker = find_marker(kind, root, root)
        .map(|m| m.strip_prefix(root).unwrap_or(&m).display().to_string());
    let mut problems = Vec::new();
    let mut notes = Vec::new();
    if marker.is_none() {
        problems.push(format!("no marker in the root (looked for {})", kind.markers().join(", ")));
    }
    let (command, version) = match resolve(kind, root, config, env, probes) {
        Ok(cmd) => {
            notes.extend(cmd.notes.clone());
            if let Some(python) = &cmd.debuggee_python {
                notes.push(format!("programs run with {}", python.display()));
            }
            (Some(cmd.argv.clone()), cmd.version.clone())
        }
        Err(DebugError::Unavailable(Unavailable { reason, .. })) => {
            problems.push(reason);
            (None, None)
        }
        Err(other) => {
            problems.push(other.to_string());
            (None, None)
        }
    };
    if kind == AdapterKind::Dart && command.is_some() && config.commands.dart.is_some() {
        notes.push("command from [debug.commands] dart".into());
    }
    AdapterReport {
        adapter: kind,
        usable: marker.is_some() && command.is_some(),
        markers: kind.markers().iter().map(|m| m.to_string()).collect(),
        marker,
        command,
        version,
        problems,
        notes,
        install: kind.install_hint().to_string(),
    }
}
