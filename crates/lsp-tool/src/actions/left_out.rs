//! References a server leaves out. A server answers for the files it has loaded: basedpyright
//! drops a file the client closed, a cold index has not read every file. The files that import
//! one of the answer's files and name the symbol are opened and the server is asked once more;
//! those that name it through their import and are still missing are said.

use std::path::PathBuf;

use lsp_types::{Location, request::References};

use super::addressed::Addressed;
use super::*;
use crate::{
    paths::{display_relative, path_from_uri},
    scan::Mention,
    server::{Save, Scope, Server},
};

/// How many left-out importers are opened before the server is asked again (a common name in
/// a module many files import must not open the whole project).
const MAX_REOPENED: usize = 64;

/// The references of `addressed`, asked once more with the left-out importers open, and the
/// importers naming it through their import that the server still left out (shown paths).
pub(super) async fn complete_references(
    sup: &Supervisor,
    server: &Server,
    addressed: &Addressed,
    what: &str,
    cancel: &CancellationToken,
) -> Result<(Vec<Location>, Vec<String>), LspError> {
    let first = ask(server, addressed, what, cancel).await?;
    let Some(name) = identifier(&addressed.symbol) else { return Ok((first, Vec::new())) };
    let missing = importers_missing(server, addressed, &first, name).await;
    if missing.is_empty() {
        return Ok((first, Vec::new()));
    }
    for (path, _) in &missing {
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        let language = server.def.language_of(ext).unwrap_or("plaintext");
        // A file that cannot be opened stays left out and is said below.
        let _ = server.sync(path, language, Save::Skip, sup.run_id()).await;
    }
    let budget = Instant::now() + Duration::from_secs(5);
    let _ = server.wait_ready(Scope::Project, budget, cancel).await;
    let again = ask(server, addressed, what, cancel).await?;
    let listed = listed_files(&again);
    let still: Vec<String> = missing
        .iter()
        .filter(|(path, how)| *how == Mention::ThroughImport && !listed.contains(path))
        .map(|(path, _)| display_relative(sup.root(), path))
        .collect();
    Ok((again, still))
}

async fn ask(
    server: &Server,
    addressed: &Addressed,
    what: &str,
    cancel: &CancellationToken,
) -> Result<Vec<Location>, LspError> {
    let params = lsp_types::ReferenceParams {
        text_document_position: addressed.position_params(),
        work_done_progress_params: Default::default(),
        partial_result_params: Default::default(),
        context: lsp_types::ReferenceContext { include_declaration: true },
    };
    let refs = server
        .call::<References>(params, cancel)
        .await
        .map_err(|e| request_failed(server, what, e))?;
    Ok(refs.unwrap_or_default())
}

fn listed_files(locations: &[Location]) -> Vec<PathBuf> {
    locations.iter().filter_map(|l| path_from_uri(&l.uri)).collect()
}

/// The importers of the answer's files (and of the addressed one) that name `name` but are
/// not in the answer, read off the async threads; at most [`MAX_REOPENED`].
async fn importers_missing(
    server: &Server,
    addressed: &Addressed,
    answer: &[Location],
    name: &str,
) -> Vec<(PathBuf, Mention)> {
    let mut files = listed_files(answer);
    files.extend(path_from_uri(&addressed.document.uri));
    files.sort();
    files.dedup();
    let (root, def, name) = (server.root.clone(), server.def.clone(), name.to_string());
    let mut found = tokio::task::spawn_blocking(move || {
        crate::scan::unedited_importers(&root, &def, &files, &name)
    })
    .await
    .unwrap_or_default();
    found.truncate(MAX_REOPENED);
    found
}

/// The identifier a symbol ends with: `method` of `Class/method`, `area` of `lib.area`.
fn identifier(symbol: &str) -> Option<&str> {
    symbol
        .rsplit(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
        .find(|word| !word.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_identifier_is_the_last_word_of_a_name_path_or_a_qualified_name() {
        assert_eq!(identifier("Class/method"), Some("method"));
        assert_eq!(identifier("lib.area"), Some("area"));
        assert_eq!(identifier("area"), Some("area"));
        assert_eq!(identifier("scale::factor"), Some("factor"));
        assert_eq!(identifier("area("), Some("area"));
        assert_eq!(identifier("()"), None);
    }
}
