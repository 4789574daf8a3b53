//! Which server serves a file, and from where: the intersection rule (a root marker and a
//! binary that runs), the languages present in the run's root, and the flags a server's
//! version understands.

use agent_tools_support::Unavailable;
use std::{path::Path, sync::Arc};

use super::Supervisor;
use crate::{
    config::ServerDef,
    discover::{self, ResolvedCommand, RootMatch},
    error::LspError,
    paths::display_relative,
};

/// Which server serves a file, and from where.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    pub def: Arc<ServerDef>,
    pub language_id: String,
    pub root: RootMatch,
    pub command: ResolvedCommand,
}

impl Supervisor {
    /// The server definition and language id for a file's extension.
    pub(crate) fn def_for(
        &self,
        path: &Path,
    ) -> Result<Option<(Arc<ServerDef>, String)>, LspError> {
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        Ok(self.defs()?.iter().find_map(|d| d.language_of(ext).map(|l| (d.clone(), l.to_string()))))
    }

    /// Applies the intersection rule for `path`: a marker and a binary, or an `Unavailable`
    /// that says which half is missing.
    pub(crate) fn target_for(&self, path: &Path) -> Result<Target, LspError> {
        let shown = display_relative(&self.inner.root, path);
        let Some((def, language_id)) = self.def_for(path)? else {
            let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
            return Err(LspError::Unavailable(Unavailable {
                resource: "lsp".into(),
                reason: if ext.is_empty() {
                    format!("{shown} has no file extension, so no language server is known for it")
                } else {
                    format!("no language server is configured for .{ext} files ({shown})")
                },
                fix: "add one under [lsp.servers.<id>] in agent-tools.toml".into(),
            }));
        };
        let root = discover::find_root(&def, &self.inner.root, path);
        let project_root = root.as_ref().map_or_else(
            || path.parent().unwrap_or(&self.inner.root).to_path_buf(),
            |r| r.root.clone(),
        );
        let command = discover::resolve_command(
            &def,
            &self.inner.extra_paths,
            &project_root,
            &self.inner.root,
            self.allow_project_code(),
        );
        if let Some(c) = &command
            && let Err(failure) = self.probe(c, &def)
        {
            return Err(LspError::Unavailable(Unavailable {
                resource: format!("lsp ({})", def.display_languages()),
                reason: format!(
                    "{} resolves but does not run (`{} {}` says: {failure})",
                    c.program.display(),
                    c.program.display(),
                    def.version_args.as_deref().unwrap_or_default().join(" ")
                ),
                fix: def.install_hint.clone(),
            }));
        }
        match (root, command) {
            (Some(root), Some(command)) => Ok(Target { def, language_id, root, command }),
            (root, command) => Err(LspError::Unavailable(Unavailable {
                resource: format!("lsp ({})", def.display_languages()),
                reason: missing_half(
                    self.allow_project_code(),
                    &def,
                    root.as_ref(),
                    command.as_ref(),
                    &self.inner.root,
                    path,
                ),
                fix: if command.is_none() {
                    def.install_hint.clone()
                } else {
                    format!("create one of {} at the project's root", def.root_markers.join(", "))
                },
            })),
        }
    }

    /// Targets for every language present in the run's root with both marker and binary.
    pub(crate) fn present_targets(&self) -> Result<Vec<Target>, LspError> {
        let defs = self.defs()?.to_vec();
        let plain: Vec<ServerDef> = defs.iter().map(|d| (**d).clone()).collect();
        let scan = discover::scan(&self.inner.root, &plain);
        let mut out = Vec::new();
        for def in defs {
            let Some(presence) = scan.get(&def.id) else { continue };
            if presence.files == 0 {
                continue;
            }
            for root in &discover::outermost_roots(&def, &self.inner.root, &presence.roots) {
                if let Some(command) = discover::resolve_command(
                    &def,
                    &self.inner.extra_paths,
                    &root.root,
                    &self.inner.root,
                    self.allow_project_code(),
                ) {
                    let language_id = def.languages.keys().next().cloned().unwrap_or_default();
                    out.push(Target { def: def.clone(), language_id, root: root.clone(), command });
                }
            }
        }
        Ok(out)
    }

    /// `command` with the flags its version understands (`flags_since_major`); the version is
    /// probed (once per program) only when a flag is missing from the command.
    pub(super) async fn with_version_flags(
        &self,
        def: &ServerDef,
        mut command: ResolvedCommand,
    ) -> ResolvedCommand {
        let missing: Vec<(u32, String)> = def
            .flags_since_major
            .iter()
            .filter(|(_, flag)| !command.args.contains(flag))
            .cloned()
            .collect();
        let Some(args) = def.version_args.clone().filter(|_| !missing.is_empty()) else {
            return command;
        };
        let pool = self.inner.pool.clone();
        let program = command.program.clone();
        let version = tokio::task::spawn_blocking(move || pool.probe(&program, &args))
            .await
            .ok()
            .and_then(Result::ok)
            .flatten();
        let Some(major) = version.as_deref().and_then(major_version) else { return command };
        for (since, flag) in missing {
            if major >= since {
                command.args.push(flag);
            }
        }
        command
    }

    /// The program's version (`Ok(None)` when it has no version flag), or why it does not run.
    pub(super) fn probe(
        &self,
        command: &ResolvedCommand,
        def: &ServerDef,
    ) -> Result<Option<String>, String> {
        let Some(args) = def.version_args.as_ref() else { return Ok(None) };
        self.inner.pool.probe(&command.program, args)
    }

    pub(super) fn version_of(&self, command: &ResolvedCommand, def: &ServerDef) -> Option<String> {
        self.probe(command, def).unwrap_or_else(Some)
    }
}

/// Says which half of the intersection rule failed.
pub(super) fn missing_half(
    allow_project_code: bool,
    def: &ServerDef,
    root: Option<&RootMatch>,
    command: Option<&ResolvedCommand>,
    run_root: &Path,
    path: &Path,
) -> String {
    let marker_part = match root {
        Some(r) => format!("marker {} found in {}", r.marker, display_relative(run_root, &r.root)),
        None => format!(
            "no root marker ({}) between {} and the run's root",
            def.root_markers.join(", "),
            display_relative(run_root, path.parent().unwrap_or(run_root))
        ),
    };
    let binary_part = match command {
        Some(c) => format!("binary resolved at {}", c.program.display()),
        None => format!(
            "none of {} resolves (searched {})",
            def.program_names().join(", "),
            if allow_project_code {
                "PATH, .venv/bin, venv/bin, node_modules/.bin"
            } else {
                "PATH; project-local folders are not searched because project code may not run here"
            }
        ),
    };
    format!("{marker_part}, but {binary_part}")
        .replace(", but binary resolved", "; binary resolved")
}

/// The major version in a `--version` line: the first number after the word `version`
/// (`Debian clangd version 16.0.6 (15~deb12u1)` → 16).
fn major_version(line: &str) -> Option<u32> {
    let lower = line.to_lowercase();
    let after = &lower[lower.find("version")? + "version".len()..];
    let digits: String = after
        .trim_start_matches(|c: char| !c.is_ascii_digit())
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

#[cfg(test)]
mod version_tests {
    use super::major_version;

    #[test]
    fn the_major_version_is_read_from_what_servers_print() {
        assert_eq!(major_version("Debian clangd version 16.0.6 (15~deb12u1)"), Some(16));
        assert_eq!(major_version("clangd version 19.1.7"), Some(19));
        assert_eq!(major_version("Ubuntu clangd version 14.0.0-1ubuntu1.1"), Some(14));
        assert_eq!(major_version("clangd: no version here"), None);
    }
}
