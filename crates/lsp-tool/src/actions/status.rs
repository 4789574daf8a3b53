//! `status` (servers, roots, trust rule, what is missing) and `reload`.

use super::*;

impl Supervisor {
    pub(super) async fn status_action(&self) -> Result<LspOutput, LspError> {
        let rows = self.status().await?;
        let mut out = format!("lsp status for {}:", self.root().display());
        if rows.is_empty() {
            out.push_str(
                "\nno source files of a language with a configured server were found (scanned 4 levels deep); \
                 servers start on first use of a file",
            );
        }
        for row in &rows {
            out.push('\n');
            out.push_str(&row.render());
        }
        Ok(LspOutput::new(out, json!({"root": self.root().display().to_string(), "servers": rows})))
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
                return Ok(LspOutput::new(
                    "no server is running, so nothing was reloaded; servers start on first use"
                        .into(),
                    json!({"reloaded": []}),
                ));
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
        let mut lines = Vec::new();
        let mut data = Vec::new();
        for target in targets {
            let (server, others) = self.reload_target(&target, cancel).await?;
            let root = display_relative(self.root(), &target.root.root);
            let mut line = format!(
                "reloaded the {} server for root {root}: {} (pid {}) is running",
                target.def.display_languages(),
                server_label(&server),
                server.pid
            );
            if others > 0 {
                line.push_str(&format!(
                    "; the server is shared with {others} other run(s) of this host: they see \
                     the restart too, and their files are sent to it again on their next call"
                ));
            }
            lines.push(line);
            data.push(json!({
                "server": target.def.id,
                "root": root,
                "pid": server.pid,
                "shared_with": others,
            }));
        }
        Ok(LspOutput::new(lines.join("\n"), json!({"reloaded": data})))
    }
}
