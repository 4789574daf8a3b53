//! What a server leaves out of a project-wide answer. A server answers for the files it has
//! loaded: basedpyright drops a file the client closed, a cold index has not read every file.
//! The files that import one of the answer's files and name the symbol through that import
//! are opened and the server is asked once more; those still missing are returned, for the
//! answer to say.

use std::{future::Future, path::PathBuf};

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

/// How long the server gets to take in the opened files before it is asked again.
const REOPEN_WAIT: Duration = Duration::from_secs(5);

/// `ask`'s answer, asked again once with the importers it left out open (`files` lists the
/// files an answer names), and those it still leaves out (shown paths).
pub(super) async fn asked_with_importers_open<T, Ask, Fut>(
    sup: &Supervisor,
    server: &Server,
    addressed: &Addressed,
    files: impl Fn(&T) -> Vec<PathBuf>,
    ask: Ask,
    cancel: &CancellationToken,
) -> Result<(T, Vec<String>), LspError>
where
    Ask: Fn() -> Fut,
    Fut: Future<Output = Result<T, LspError>>,
{
    let first = ask().await?;
    let Some(name) = identifier(&addressed.symbol) else { return Ok((first, Vec::new())) };
    let mut named = files(&first);
    named.extend(path_from_uri(&addressed.document.uri));
    let missing = importers_missing(server, named, name).await;
    if missing.is_empty() {
        return Ok((first, Vec::new()));
    }
    for path in &missing {
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        let language = server.def.language_of(ext).unwrap_or("plaintext");
        // A file that cannot be opened stays left out and is said below.
        let _ = server.sync(path, language, Save::Skip, sup.run_id()).await;
    }
    let _ = server.wait_ready(Scope::Project, Instant::now() + REOPEN_WAIT, cancel).await;
    let again = ask().await?;
    let listed = files(&again);
    let still: Vec<String> = missing
        .iter()
        .filter(|path| !listed.contains(path))
        .map(|path| display_relative(sup.root(), path))
        .collect();
    Ok((again, still))
}

/// The references of `addressed` (the declaration included), asked again with the importers
/// the server left out open; and those it still leaves out.
pub(super) async fn complete_references(
    sup: &Supervisor,
    server: &Server,
    addressed: &Addressed,
    what: &str,
    cancel: &CancellationToken,
) -> Result<(Vec<Location>, Vec<String>), LspError> {
    let ask = || async {
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
    };
    let files = |locations: &Vec<Location>| -> Vec<PathBuf> {
        locations.iter().filter_map(|l| path_from_uri(&l.uri)).collect()
    };
    asked_with_importers_open(sup, server, addressed, files, ask, cancel).await
}

/// The importers of `named` that name `name` through their import but are not among `named`,
/// read off the async threads; at most [`MAX_REOPENED`]. One that only says the name as a word
/// may mean a name of its own, which a server that has it loaded rightly leaves out.
async fn importers_missing(server: &Server, mut named: Vec<PathBuf>, name: &str) -> Vec<PathBuf> {
    named.sort();
    named.dedup();
    let (root, def, name) = (server.root.clone(), server.def.clone(), name.to_string());
    let mut found = tokio::task::spawn_blocking(move || {
        crate::scan::unedited_importers(&root, &def, &named, &name)
    })
    .await
    .unwrap_or_default();
    found.retain(|(_, how)| *how == Mention::ThroughImport);
    found.truncate(MAX_REOPENED);
    found.into_iter().map(|(path, _)| path).collect()
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
