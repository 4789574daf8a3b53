//! `status` (servers, roots, trust rule, what is missing) and `reload`.

use super::{result::*, *};

pub(crate) async fn status_action(sup: &Supervisor) -> Result<LspOutput, LspError> {
    let servers = sup.status().await?;
    let root = sup.root().display().to_string();
    Ok(LspOutput::from_result(LspResult::Status(StatusAnswer { root, servers })))
}

pub(crate) async fn reload_action(
    sup: &Supervisor,
    args: &LspArgs,
    cancel: &CancellationToken,
) -> Result<LspOutput, LspError> {
    let mut targets = Vec::new();
    if args.file.is_some() {
        let path = file_arg(sup, args)?;
        targets.push(sup.target_for(&path)?);
    } else {
        let running = sup.running();
        if running.is_empty() {
            let nothing = ReloadAnswer { reloaded: Vec::new() };
            return Ok(LspOutput::from_result(LspResult::Reload(nothing)));
        }
        for server in running {
            let language_id = server.def.languages.keys().next().cloned().unwrap_or_default();
            let root = crate::discover::RootMatch {
                root: server.root.clone(),
                marker: discover::find_root(&server.def, sup.root(), &server.root)
                    .map(|r| r.marker)
                    .unwrap_or_default(),
            };
            targets.push(Target {
                def: server.def.clone(),
                language_id,
                root,
                command: server.command.clone(),
            });
        }
    }
    let mut reloaded = Vec::new();
    for target in targets {
        let (server, others) = sup.reload_target(&target, cancel).await?;
        reloaded.push(Reloaded {
            server: target.def.id.clone(),
            languages: target.def.display_languages(),
            root: display_relative(sup.root(), &target.root.root),
            label: server_label(&server),
            pid: server.pid,
            shared_with: others,
        });
    }
    Ok(LspOutput::from_result(LspResult::Reload(ReloadAnswer { reloaded })))
}
