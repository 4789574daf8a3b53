//! Settling past the bound: the files of an impact set over `max_files` are checked after the
//! write's result returned, in the run's background (bounded, cancelled by the next write and
//! by the run's end), and what they show waits for the head of the run's next result.
//!
//! Their state before the write was never taken (that is what the bound saves), so a file the
//! ledger does not know reports its errors on lines that use a changed name, said as such, and
//! the rest of its diagnostics become its baseline; a file the ledger knows is compared as in
//! the write's own check.

use std::{path::Path, sync::Arc, time::Duration};

use tokio_util::sync::CancellationToken;

use super::{User, language_of};
use crate::{
    diagnostics::Diagnostic,
    paths::display_relative,
    server::{Save, Server},
    settled::SettledReport,
    supervisor::{DocHandle, Supervisor},
};

/// The files over the bound of one write, to check in the background.
pub(crate) struct Settle {
    pub(super) users: Vec<User>,
    /// The changed names (a diagnostic on a line that uses one is the change's).
    pub(super) names: Vec<String>,
    /// The written files, as the report names them.
    pub(super) edited: Vec<String>,
    /// When the write was checked, `HH:MM:SS` UTC.
    pub(super) at: String,
}

/// Checks `settle`'s files in the background; a later write or the run's end cancels it.
/// The report waits in [`Supervisor::take_settled`].
pub(crate) fn settle_later(sup: &Supervisor, settle: Settle) {
    let token = sup.closing_token().child_token();
    if let Some(previous) = sup.replace_settling(Some(token.clone())) {
        previous.cancel();
    }
    let sup = sup.clone();
    let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
    runtime.spawn(async move {
        let report = settle_all(&sup, settle, &token).await;
        tracing::info!(target: "agent_tools::on_write", "settled: {}", report.render());
        sup.push_settled(report);
    });
}

/// Checks every file of `settle` against the run's ledger, a batch of `max_files` at a
/// time, until done or `cancel`.
async fn settle_all(sup: &Supervisor, settle: Settle, cancel: &CancellationToken) -> SettledReport {
    let mut report = SettledReport {
        edited: settle.edited.clone(),
        at: settle.at.clone(),
        files: settle.users.len(),
        ..Default::default()
    };
    let batch = sup.config().on_write.max_files.max(1);
    let deadline = Duration::from_millis(
        sup.config().on_write.startup_wait_ms.max(sup.config().on_write.deadline_ms),
    );
    let mut answered = 0;
    for users in settle.users.chunks(batch) {
        if cancel.is_cancelled() {
            break;
        }
        let found = futures_util::future::join_all(
            users.iter().map(|u| settle_one(sup, u, deadline, cancel)),
        )
        .await;
        for (user, result) in users.iter().zip(found) {
            let shown = display_relative(sup.root(), &user.path);
            match result {
                Ok(diags) => {
                    answered += 1;
                    let new = settled_new(sup, &user.path, diags, &settle.names);
                    if new.is_empty() {
                        report.clean.push(shown);
                    }
                    report.new.extend(new);
                }
                // What was found before a stop stands; the rest is said once, below.
                Err(_) if cancel.is_cancelled() => {}
                Err(why) => {
                    answered += 1;
                    report.not_verified.push(format!("{shown} ({why})"))
                }
            }
        }
    }
    if answered < settle.users.len() {
        report.interrupted = Some(format!(
            "{} file(s) not checked (a later write or the run's end)",
            settle.users.len() - answered
        ));
    }
    report
}

/// The diagnostics of `user` as its server has it now, opened for the check and closed.
async fn settle_one(
    sup: &Supervisor,
    user: &User,
    deadline: Duration,
    cancel: &CancellationToken,
) -> Result<Vec<Diagnostic>, String> {
    let server: &Arc<Server> = &user.server;
    let run = sup.run_id();
    let held = server.holders(&user.path).await.is_some_and(|h| h.contains(&run));
    let language = language_of(server, &user.path);
    let mut doc = match held {
        true => server.touch(&user.path, run).await.ok_or("not open any more")?,
        false => server.sync(&user.path, &language, Save::Skip, run).await?,
    };
    doc.versioned_only = !held;
    let handle = DocHandle { server: server.clone(), doc };
    let started = std::time::Instant::now();
    let result = sup.document_diagnostics(&handle, started + deadline, cancel).await;
    if !held {
        server.release_document(&user.path, run).await;
    }
    result
        .map(|diags| diags.into_iter().filter(|d| d.is_shown(false)).collect())
        .map_err(|wait| super::unverified_reason(&wait, deadline))
}

/// What is new in `path`: exact against the ledger where it knows the file, else the
/// diagnostics on lines that use one of `names` (the rest become its baseline).
fn settled_new(
    sup: &Supervisor,
    path: &Path,
    diags: Vec<Diagnostic>,
    names: &[String],
) -> Vec<Diagnostic> {
    let mut ledger = sup.ledger().lock();
    if ledger.knows(path) {
        return ledger.update(path, &diags).new;
    }
    ledger.baseline(path, &diags);
    diags
        .into_iter()
        .filter(|d| {
            d.source_line
                .as_deref()
                .is_some_and(|line| names.iter().any(|n| crate::scan::has_word(line.as_bytes(), n)))
        })
        .collect()
}
