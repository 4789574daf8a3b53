//! A planned WorkspaceEdit committed for a run: written all or nothing, the server told about
//! every change, and the diagnostics it introduced returned.

use lsp_types::FileChangeType;
use tokio_util::sync::CancellationToken;

use super::{EditPlan, write_plan};
use crate::{
    Before, error::LspError, on_write::WrittenFile, on_write::diagnostics_after_write,
    on_write::report::WriteDiagnostics, paths::uri_from_path, server::Server,
    supervisor::Supervisor,
};

/// How many edited files of one rename get a baseline from their earlier content.
const MAX_BASELINES: usize = 10;

/// Writes a planned WorkspaceEdit (all or nothing), tells `server` about every change and
/// returns the diagnostics it introduced; `what` names the operation in errors.
pub(crate) async fn commit_edit(
    sup: &Supervisor,
    server: &Server,
    plan: &EditPlan,
    what: &str,
    cancel: &CancellationToken,
) -> Result<Option<WriteDiagnostics>, LspError> {
    // Baselines cost a server round each: the first files get one, a large rename's rest
    // take their current diagnostics as the baseline (and say so).
    let before: Vec<WrittenFile> = plan
        .files
        .keys()
        .enumerate()
        .map(|(i, p)| WrittenFile {
            path: p.clone(),
            before: match agent_tools_support::fs::read_regular(p, "file") {
                Ok(_) if i >= MAX_BASELINES => Before::Unknown,
                Ok(bytes) => Before::Contents(bytes.into()),
                Err(_) => Before::Absent,
            },
        })
        .collect();
    write_plan(sup.root(), plan).map_err(|e| {
        LspError::Failed(format!("{what}: writing failed ({e}); no file was changed"))
    })?;
    // Tell the server what changed: deleted files are closed, and a watched-file event
    // covers all. The edited files' new content goes out, all of it before any answer is
    // taken, in the diagnostics check below (which keeps them open, so servers with a
    // lazily updated index, such as clangd, answer the next question from it).
    let mut events = Vec::new();
    for (changed, state) in &plan.files {
        match state {
            Some(_) => {
                let created = plan.created.contains(changed)
                    || plan.renamed.iter().any(|(_, to)| to == changed);
                events.push((
                    changed.clone(),
                    if created { FileChangeType::CREATED } else { FileChangeType::CHANGED },
                ));
            }
            None => {
                server.close(changed).await;
                events.push((changed.clone(), FileChangeType::DELETED));
            }
        }
    }
    server.files_changed(&events).await;
    if !plan.renamed.is_empty() {
        let files: Vec<lsp_types::FileRename> = plan
            .renamed
            .iter()
            .filter_map(|(a, b)| {
                Some(lsp_types::FileRename {
                    old_uri: uri_from_path(a)?.as_str().to_string(),
                    new_uri: uri_from_path(b)?.as_str().to_string(),
                })
            })
            .collect();
        let params = lsp_types::RenameFilesParams { files };
        server.notify::<lsp_types::notification::DidRenameFiles>(params).await;
    }
    let written: Vec<WrittenFile> = before.into_iter().filter(|f| f.path.is_file()).collect();
    Ok(diagnostics_after_write(sup, &written, cancel).await)
}
