//! `diagnostics "*"`: the language's own checker, once per real project root (nested markers an
//! enclosing config covers are not projects of their own), with the settings the server uses,
//! under the trust rule; a checker that fails is reported as a failure, never as "no errors".

use std::{path::Path, time::Duration};

use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::{
    actions::{CheckRunReport, LspOutput, MAX_DIAGNOSTICS, ProjectCheckReport},
    check,
    config::{PYRIGHT_MODE, ServerDef},
    diagnostics::{self, Diagnostic},
    discover,
    error::LspError,
    paths::display_relative,
    supervisor::Supervisor,
    trust,
};

/// A pyright configuration in the project itself (which the server and the CLI both read).
fn has_pyright_config(root: &Path) -> bool {
    root.join("pyrightconfig.json").is_file()
        || std::fs::read_to_string(root.join("pyproject.toml"))
            .is_ok_and(|t| t.contains("[tool.pyright") || t.contains("[tool.basedpyright"))
}

/// Arguments that make a checker agree with the server and leave nothing in the tree.
fn checker_args(sup: &Supervisor, root: &Path, format: &str) -> Result<Vec<String>, String> {
    let private = sup.private_dir();
    let key: String = root
        .display()
        .to_string()
        .chars()
        .map(|c| if c.is_alphanumeric() { c } else { '_' })
        .collect();
    let mut args = Vec::new();
    match format {
        "pyright-json" => {
            if !has_pyright_config(root) {
                // The CLI's default mode differs from the server's: give it the server's.
                let dir =
                    private.ok_or("no private folder for the checker's configuration")?.join(&key);
                // The run's own folder, outside the project.
                #[allow(
                    clippy::disallowed_methods,
                    reason = "a private folder outside the project"
                )]
                std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
                let mut env = json!({"root": root.display().to_string()});
                if root.join("src").is_dir() {
                    env["extraPaths"] = json!([root.join("src").display().to_string()]);
                }
                let config = json!({
                    "typeCheckingMode": PYRIGHT_MODE,
                    "include": [root.display().to_string()],
                    "executionEnvironments": [env],
                });
                let file = dir.join("pyrightconfig.json");
                #[allow(
                    clippy::disallowed_methods,
                    reason = "a private folder outside the project"
                )]
                std::fs::write(&file, config.to_string()).map_err(|e| e.to_string())?;
                args.extend(["-p".to_string(), file.display().to_string()]);
            }
            if !sup.allow_project_code() {
                let dirs = discover::search_dirs(&[], root, sup.root(), false);
                if let Some(python) = ["python3", "python"]
                    .iter()
                    .find_map(|n| discover::resolve_program(n, &dirs, root, false))
                {
                    args.extend(["--pythonpath".to_string(), python.display().to_string()]);
                }
            }
        }
        "tsc" => {
            if !root.join("tsconfig.json").is_file() {
                return Err(format!(
                    "no tsconfig.json in {}, so tsc has no project to check",
                    display_relative(sup.root(), root)
                ));
            }
            // Incremental builds write a .tsbuildinfo into the tree; keep it private.
            let dir = private.ok_or("no private folder for tsc's build info")?;
            args.extend([
                "--incremental".to_string(),
                "--tsBuildInfoFile".to_string(),
                dir.join(format!("{key}.tsbuildinfo")).display().to_string(),
            ]);
        }
        "cargo-json" if !sup.allow_project_code() => {
            if let Some(what) = trust::cargo_runs_project_code(root) {
                return Err(format!(
                    "not run: cargo check would execute code of the project ({what}); to allow it, {}",
                    trust::HOW_TO_ALLOW
                ));
            }
        }
        _ => {}
    }
    Ok(args)
}

pub(crate) async fn project_check(
    sup: &Supervisor,
    cancel: &CancellationToken,
) -> Result<LspOutput, LspError> {
    let defs = sup.defs()?.to_vec();
    let plain: Vec<_> = defs.iter().map(|d| (**d).clone()).collect();
    let scan = discover::scan(sup.root(), &plain);
    let mut report = ProjectCheckReport {
        runs: Vec::new(),
        notes: Vec::new(),
        total: 0,
        summary: String::new(),
        diagnostics: Vec::new(),
    };
    let timeout = Duration::from_millis(sup.config().check_timeout_ms);
    for def in &defs {
        let Some(presence) = scan.get(&def.id).filter(|p| p.files > 0) else { continue };
        let Some(format) = def.check_format.as_deref().filter(|_| !def.check_commands.is_empty())
        else {
            report.notes.push(format!(
                "{}: no project check is defined; use `diagnostics` per file",
                def.display_languages()
            ));
            continue;
        };
        let roots = discover::outermost_roots(def, sup.root(), &presence.roots);
        if roots.is_empty() {
            report.notes.push(format!(
                "{}: files present but no root marker ({}), so no project to check",
                def.display_languages(),
                def.root_markers.join(", ")
            ));
            continue;
        }
        for root in roots.iter().take(5) {
            let (run, diags) = check_root(sup, def, format, &root.root, timeout, cancel).await;
            report.runs.push(run);
            report.diagnostics.extend(diags);
        }
        if roots.len() > 5 {
            report.notes.push(format!(
                "{}: {} more project roots not checked",
                def.display_languages(),
                roots.len() - 5
            ));
        }
    }
    if report.runs.is_empty() && report.notes.is_empty() {
        report.notes.push(
            "no source files of a known language found in the workspace; nothing to check".into(),
        );
    }
    diagnostics::sort(&mut report.diagnostics);
    report.diagnostics.dedup();
    report.total = report.diagnostics.len();
    report.summary = diagnostics::count_phrase(&report.diagnostics, "");
    report.diagnostics.truncate(MAX_DIAGNOSTICS);
    let answer = crate::actions::DiagnosticsAnswer::Project(report);
    Ok(LspOutput::from_result(crate::actions::LspResult::Diagnostics(answer)))
}

/// Runs `def`'s checker on one project root, in the run's capsule: what ran and how it
/// ended, and the diagnostics it printed.
async fn check_root(
    sup: &Supervisor,
    def: &ServerDef,
    format: &str,
    root: &Path,
    timeout: Duration,
    cancel: &CancellationToken,
) -> (CheckRunReport, Vec<Diagnostic>) {
    let shown_root = display_relative(sup.root(), root);
    let dirs = discover::search_dirs(sup.extra_paths(), root, sup.root(), sup.allow_project_code());
    let found = def.check_commands.iter().find_map(|c| {
        let (name, rest) = c.split_first()?;
        discover::resolve_program(name, &dirs, root, sup.allow_project_code())
            .map(|p| (p, rest.to_vec()))
    });
    let names: Vec<String> = def.check_commands.iter().filter_map(|c| c.first().cloned()).collect();
    let Some((program, mut args)) = found else {
        let detail = format!("none of {} resolves; {}", names.join(", "), def.install_hint);
        let run = CheckRunReport {
            command: names.join(" or "),
            root: shown_root,
            outcome: "not_run".into(),
            diagnostics: 0,
            detail: Some(detail),
        };
        return (run, Vec::new());
    };
    let command = format!(
        "{} {}",
        program.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default(),
        args.join(" ")
    );
    match checker_args(sup, root, format) {
        Ok(more) => args.extend(more),
        Err(why) => {
            let run = CheckRunReport {
                command,
                root: shown_root,
                outcome: "not_run".into(),
                diagnostics: 0,
                detail: Some(why),
            };
            return (run, Vec::new());
        }
    }
    let env: Vec<(String, String)> =
        if sup.allow_project_code() { Vec::new() } else { crate::toolchain::toolchain_pins() };
    match check::run_command(sup.checker_capsule(), &program, &args, root, &env, timeout, cancel)
        .await
    {
        Ok((stdout, stderr, status)) => {
            let diags = check::parse(format, &stdout, &stderr, root, sup.root());
            let failed = status.is_none_or(|s| s != 0) && diags.is_empty();
            let detail = failed.then(|| {
                let tail: Vec<&str> = stderr
                    .lines()
                    .chain(stdout.lines())
                    .filter(|l| !l.trim().is_empty())
                    .take(5)
                    .collect();
                format!(
                    "the checker failed (exit {}) without diagnostics: {}",
                    status.map_or("by signal".into(), |s| s.to_string()),
                    tail.join(" | ")
                )
            });
            let run = CheckRunReport {
                command,
                root: shown_root,
                outcome: if failed { "failed".into() } else { "ok".into() },
                diagnostics: diags.len(),
                detail,
            };
            (run, diags)
        }
        Err(e) => {
            let run = CheckRunReport {
                command,
                root: shown_root,
                outcome: "failed".into(),
                diagnostics: 0,
                detail: Some(e),
            };
            (run, Vec::new())
        }
    }
}
