//! The impact set of a write: the files whose diagnostics a change can alter, beyond the
//! written ones.
//!
//! Asked of the server while it still has the old text (a renamed or removed declaration has
//! no references once the new text is in): the outline's declarations that the changed lines
//! touch, then the references of each. A server's references cover only the files it has
//! loaded, so the files that import the written one and name what changed are added. The
//! changed lines also name what no outline covers
//! (macros, fields, enum members, constants, imports): those, and everything where the server
//! cannot answer for the whole project (no references, an error, still indexing), are found by
//! a scan of the project's files for the names (ignore files respected). A header or module
//! whose users the server could not name brings in the files that include or import it
//! (transitively for headers). Files are ordered nearest first: references, then mentions,
//! then includers by depth.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    time::Instant,
};

use lsp_types::request::{DocumentSymbolRequest, References};
use tokio_util::sync::CancellationToken;

use super::declarations::{
    Declaration, MAX_NAMES, changed_hunks, changed_names, declared_names, outline, touched,
};
use crate::{
    paths::{path_from_uri, uri_from_path},
    server::{Feature, Server},
};

/// What the old text's references, the scan and the include graph say about the files a
/// change can affect.
#[derive(Debug, Default)]
pub(crate) struct Impact {
    /// Files the change can affect, nearest first, with how many references or mentions each.
    pub files: Vec<(PathBuf, usize)>,
    /// The changed declarations' names.
    pub names: Vec<String>,
    /// Why the server's references were not the whole answer (the scan stood in), if so.
    pub scanned_because: Option<String>,
    /// How the files were looked for (the server's references, a scan for the names, the
    /// files that include it), for a report that says what was checked.
    pub searched: Vec<String>,
    /// The server gave the outline and the references of every changed declaration (none
    /// failed, it was not indexing), whatever else stood in.
    pub server_answered: bool,
    /// Lines changed whose declarations could not be told, so the files they affect could
    /// not be determined (`None` when they could).
    pub undetermined: Option<String>,
}

/// How many changed declarations are followed per written file.
const MAX_DECLARATIONS: usize = 12;

/// The impact of replacing `old` by `new` in `path`, asked of `server` while it has `old`.
/// Every request ends by `deadline`.
pub(crate) async fn impact_of(
    server: &Server,
    path: &Path,
    old: &str,
    new: Option<&str>,
    deadline: Instant,
    cancel: &CancellationToken,
) -> Impact {
    let deleted = new.is_none();
    let new = new.unwrap_or("");
    let hunks = changed_hunks(old, new);
    if hunks.is_empty() {
        return Impact::default();
    }
    let mut impact = Impact::default();
    let outline = ask_outline(server, path, deadline, cancel, &mut impact).await;
    let mut declarations: Vec<Declaration> = Vec::new();
    for hunk in &hunks {
        for d in touched(&outline, hunk) {
            if !declarations.iter().any(|a| a.name == d.name) {
                declarations.push(d);
            }
        }
    }
    declarations.truncate(MAX_DECLARATIONS);
    impact.names = declarations.iter().map(|d| d.name.clone()).collect();
    // What the outline does not name: a macro, a field, an enum member, an import. A cold
    // server's outline can be empty: then the declaring lines stand in.
    let mut unreferenced: Vec<String> = changed_names(old, new, &outline);
    if outline.is_empty() {
        for hunk in &hunks {
            unreferenced.extend(declared_names(old, new, hunk));
        }
    }
    unreferenced.retain(|n| !impact.names.contains(n));
    unreferenced.dedup();
    unreferenced.truncate(MAX_NAMES);
    impact.names.extend(unreferenced.iter().cloned());
    let mut referenced =
        ask_references(server, path, &declarations, deadline, cancel, &mut impact).await;
    if !unreferenced.is_empty() && impact.scanned_because.is_none() {
        let shown: Vec<String> = unreferenced.iter().map(|n| format!("`{n}`")).collect();
        impact.scanned_because =
            Some(format!("the server's outline does not name {}", shown.join(", ")));
    }
    if deleted {
        impact.scanned_because.get_or_insert_with(|| "the file was deleted".into());
    }
    // Without an outline, changed lines that declare nothing recognisable cannot be told
    // apart from a declaration of an unknown shape.
    let outline_missing = !impact.server_answered && outline.is_empty();
    if impact.names.is_empty() && !deleted && outline_missing && has_code(old, new) {
        impact.undetermined = Some(format!(
            "which declarations the change to lines {} declares could not be told",
            line_list(&hunks)
        ));
    }
    // A deleted file is also named by the files that import it, which references of its
    // declarations do not find; so is a header whose users the server could not name.
    let mut files: Vec<(PathBuf, usize)> = std::mem::take(&mut referenced).into_iter().collect();
    files.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    if impact.scanned_because.is_some() && !impact.names.is_empty() {
        impact.searched.push("a name scan of the project".into());
        add(&mut files, scan(server, impact.names.clone(), path).await);
    } else if let Some(importing) = importers_naming(server, path, impact.names.clone()).await {
        // A server's references cover the files it has loaded: basedpyright leaves out a file
        // the client closed, a cold index what it has not read. A file that imports this one
        // and names what changed is a user whatever the server said (the name scan above
        // finds these too).
        impact.searched.push("the files that import it".into());
        let missed = importing.iter().filter(|(f, _)| !files.iter().any(|(g, _)| g == f)).count();
        if missed > 0 {
            impact.scanned_because =
                Some(format!("the server's references left out {missed} file(s) that import it"));
        }
        add(&mut files, importing);
    }
    // The includers of a header are its users where the server cannot name them all (its
    // macros, a cold index); a module's importers where the server could not answer, the
    // file is gone, or what changed could not be told.
    let header_users_unknown =
        crate::scan::is_header(path) && (!unreferenced.is_empty() || impact.names.is_empty());
    if deleted || impact.undetermined.is_some() || !impact.server_answered || header_users_unknown {
        let importers = importers(server, path).await;
        if !importers.is_empty() {
            impact.searched.push("its include and import lines".into());
            // They are checked: the change is no longer undetermined for them.
            impact.undetermined = None;
        }
        add(&mut files, importers);
    }
    impact.files = files;
    impact
}

/// Whether the lines that differ between `old` and `new` hold anything but blanks and
/// comments.
fn has_code(old: &str, new: &str) -> bool {
    let old_lines: std::collections::HashSet<&str> = old.lines().collect();
    let new_lines: std::collections::HashSet<&str> = new.lines().collect();
    old_lines.symmetric_difference(&new_lines).any(|line| {
        let t = line.trim();
        !t.is_empty() && !["//", "#", "/*", "*", "--"].iter().any(|c| t.starts_with(c))
    })
}

/// Adds the files of `more` not yet in `files`, in `more`'s order.
fn add(files: &mut Vec<(PathBuf, usize)>, more: Vec<(PathBuf, usize)>) {
    for (file, count) in more {
        if !files.iter().any(|(f, _)| *f == file) {
            files.push((file, count));
        }
    }
}

/// `3-5, 9` (1-based) for hunks of 0-based old lines.
fn line_list(hunks: &[std::ops::Range<u32>]) -> String {
    let shown: Vec<String> = hunks
        .iter()
        .take(4)
        .map(|h| match h.end.saturating_sub(h.start) {
            0 | 1 => format!("{}", h.start + 1),
            _ => format!("{}-{}", h.start + 1, h.end),
        })
        .collect();
    shown.join(", ")
}

/// The outline of `path` as the server has it (the old text); empty, with the reason in
/// `impact.scanned_because`, when it cannot be had.
async fn ask_outline(
    server: &Server,
    path: &Path,
    deadline: Instant,
    cancel: &CancellationToken,
    impact: &mut Impact,
) -> Vec<Declaration> {
    let Some(uri) = uri_from_path(path) else { return Vec::new() };
    if !server.offers(Feature::DocumentSymbols) {
        impact.scanned_because = Some("the server has no outline".into());
        return Vec::new();
    }
    let params = lsp_types::DocumentSymbolParams {
        text_document: lsp_types::TextDocumentIdentifier { uri },
        work_done_progress_params: Default::default(),
        partial_result_params: Default::default(),
    };
    match server.call_until::<DocumentSymbolRequest>(params, deadline, cancel).await {
        Ok(answer) => {
            impact.server_answered = true;
            answer.as_ref().map(outline).unwrap_or_default()
        }
        Err(e) => {
            impact.scanned_because = Some(format!("the outline failed: {e}"));
            Vec::new()
        }
    }
}

/// The files that reference `declarations` (of the old text of `path`), with how many
/// references each; why the answer may be incomplete goes to `impact.scanned_because`.
async fn ask_references(
    server: &Server,
    path: &Path,
    declarations: &[Declaration],
    deadline: Instant,
    cancel: &CancellationToken,
    impact: &mut Impact,
) -> BTreeMap<PathBuf, usize> {
    let mut referenced: BTreeMap<PathBuf, usize> = BTreeMap::new();
    let Some(uri) = uri_from_path(path) else { return referenced };
    if declarations.is_empty() {
        return referenced;
    }
    if !server.offers(Feature::References) {
        impact.server_answered = false;
        impact.scanned_because = Some("the server offers no references".into());
        return referenced;
    }
    let document = lsp_types::TextDocumentIdentifier { uri };
    let busy_before = server.busy();
    let answers = futures_util::future::join_all(declarations.iter().map(|d| {
        let params = lsp_types::ReferenceParams {
            text_document_position: lsp_types::TextDocumentPositionParams {
                text_document: document.clone(),
                position: lsp_types::Position { line: d.at.0, character: d.at.1 },
            },
            work_done_progress_params: Default::default(),
            partial_result_params: Default::default(),
            // A definition in another file (C's prototype and body) is affected too.
            context: lsp_types::ReferenceContext { include_declaration: true },
        };
        server.call_until::<References>(params, deadline, cancel)
    }))
    .await;
    let mut failure = None;
    for answer in answers {
        match answer {
            Ok(locations) => {
                for location in locations.into_iter().flatten() {
                    if let Some(file) = path_from_uri(&location.uri).filter(|f| f != path) {
                        *referenced.entry(file).or_default() += 1;
                    }
                }
            }
            Err(e) => failure = Some(format!("references failed: {e}")),
        }
    }
    impact.searched.push("the server's references".into());
    let busy = busy_before.or_else(|| server.busy());
    if failure.is_some() || busy.is_some() {
        impact.server_answered = false;
    }
    impact.scanned_because = impact
        .scanned_because
        .take()
        .or(failure)
        .or(busy.map(|b| format!("the server is {b}, so its references may miss files")));
    // A cold server (tsserver before its project loads) answers "no references" for a
    // declaration it cannot see used yet: the scan decides then.
    if referenced.is_empty() && impact.scanned_because.is_none() {
        impact.scanned_because = Some("the server found no uses of it".into());
    }
    referenced
}

/// [`crate::scan::mentions`] of `names` under the server's root, off the async threads;
/// `skip` is the written file itself.
async fn scan(server: &Server, names: Vec<String>, skip: &Path) -> Vec<(PathBuf, usize)> {
    let (root, def, skip) = (server.root.clone(), server.def.clone(), skip.to_path_buf());
    tokio::task::spawn_blocking(move || crate::scan::mentions(&root, &def, &names, &skip))
        .await
        .unwrap_or_default()
}

/// [`crate::scan::importers_naming`] of `path` under the server's root, off the async threads.
async fn importers_naming(
    server: &Server,
    path: &Path,
    names: Vec<String>,
) -> Option<Vec<(PathBuf, usize)>> {
    let (root, def, path) = (server.root.clone(), server.def.clone(), path.to_path_buf());
    tokio::task::spawn_blocking(move || crate::scan::importers_naming(&root, &def, &path, &names))
        .await
        .unwrap_or_default()
}

/// [`crate::scan::importers`] of `path` under the server's root, off the async threads, nearest
/// first.
async fn importers(server: &Server, path: &Path) -> Vec<(PathBuf, usize)> {
    let (root, def, path) = (server.root.clone(), server.def.clone(), path.to_path_buf());
    let mut found = tokio::task::spawn_blocking(move || crate::scan::importers(&root, &def, &path))
        .await
        .unwrap_or_default();
    found.sort_by(|a, b| a.1.cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
    found
}
