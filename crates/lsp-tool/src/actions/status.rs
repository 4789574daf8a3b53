//! `status` (servers, roots, trust rule, what is missing) and `reload`.

use super::{result::*, *};

impl Supervisor {
    pub(super) async fn status_action(&self) -> Result<LspOutput, LspError> {
        let servers = self.status().await?;
        let root = self.root().display().to_string();
        Ok(LspOutput::from_result(LspResult::Status(StatusAnswer { root, servers })))
    }

    pub(super) async fn reload_action(
        &self,
        args: &LspArgs,
        cancel: &CancellationToken,
    ) -> Result<LspOutput, LspError> {
        let mut targets = Vec::new();
        if args.file.is_some() {
            let path = self.file_arg(args)?;
            targets.push(self.target_for(&path)?);
        } else {
            let running = self.running();
            if running.is_empty() {
                let nothing = ReloadAnswer { reloaded: Vec::new() };
                return Ok(LspOutput::from_result(LspResult::Reload(nothing)));
            }
            for server in running {
                let language_id = server.def.languages.keys().next().cloned().unwrap_or_default();
                let root = crate::discover::RootMatch {
                    root: server.root.clone(),
                    marker: discover::find_root(&server.def, self.root(), &server.root)
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
            let (server, others) = self.reload_target(&target, cancel).await?;
            reloaded.push(Reloaded {
                server: target.def.id.clone(),
                languages: target.def.display_languages(),
                root: display_relative(self.root(), &target.root.root),
                label: server_label(&server),
                pid: server.pid,
                shared_with: others,
            });
        }
        Ok(LspOutput::from_result(LspResult::Reload(ReloadAnswer { reloaded })))
    }
}
