//! Diagnostics on write: after a file tool (or `lsp_rename`) changed files, the diagnostics
//! the change introduced, in the written files and in the files that use what they changed,
//! so that a harness using this crate alone gets the headline feature.
//!
//! Read [`Supervisor::diagnostics_after_write`] top-down; each step is a method of
//! [`WriteCheck`] in its own file:
//!
//! 1. [`written`]: the written files' servers (a start-up is waited for separately);
//! 2. [`old_world`]: while the servers still have the old content, what changed outside the
//!    tools, then every written file's old text, and the impact set ([`impact`]): the
//!    declarations the change touches and the files that reference them;
//! 3. [`baseline`]: what the run's ledger does not know yet gets its baseline (the written
//!    files' old version, the impact files as they are), all in one wait;
//! 4. [`new_world`]: the new content goes out (`didChange`, `didSave`, a watched-file event),
//!    every impact file is sent again as a new version so its answer is computed against the
//!    change, and one wait takes the diagnostics of exactly those versions;
//! 5. [`tally`]: what is new is decided by the [`crate::Ledger`] (locked only to read or
//!    update it), files opened only for the check are closed, and [`report`] renders it.
//!
//! The deadline of each file starts once its server has the new content and adapts to the
//! server's measured time.
//!
//! A preview ([`Supervisor::diagnostics_of_proposal`], a dry run) makes the same checks with
//! the proposed text sent in place of the disk's: the ledger is only compared with, never
//! updated, and every written file goes back to what the disk holds at the end.

mod baseline;
mod declarations;
pub(crate) mod impact;
mod new_world;
mod old_world;
pub(crate) mod report;
pub(crate) mod settle;
mod tally;
mod written;

pub(crate) use settle::settle_later;

use agent_tools_support::Before;
use std::{
    path::{Path, PathBuf},
    sync::Arc,
    time::{Duration, Instant},
};

use tokio_util::sync::CancellationToken;

use crate::{
    config::OnWriteConfig,
    diagnostics::Diagnostic,
    server::{DiagnosticsWait, RunId, Server},
    supervisor::{DocHandle, Supervisor},
};
use report::{Mode, WriteDiagnostics};

/// One file a write changed.
#[derive(Debug, Clone, PartialEq)]
pub struct WrittenFile {
    /// Absolute path.
    pub path: PathBuf,
    pub before: Before,
}

/// One file a change would write (a dry run): nothing is on disk yet.
#[derive(Debug, Clone, PartialEq)]
pub struct ProposedFile {
    /// Absolute path.
    pub path: PathBuf,
    /// What it holds now.
    pub before: Before,
    /// What it would hold; `None` deletes it.
    pub after: Option<String>,
}

/// Where a written file's new content is.
#[derive(Debug, Clone, PartialEq)]
enum NewText {
    /// On disk: the write happened.
    Disk,
    /// Proposed only (`None`: the file would be deleted).
    Proposed(Option<String>),
}

/// One file of a change, written or proposed.
struct Change<'a> {
    path: &'a Path,
    before: &'a Before,
    new: NewText,
}

/// A written file and the server that covers it.
struct Written {
    path: PathBuf,
    server: Arc<Server>,
    language: String,
    /// The old text, where the writer knew it and it is text.
    old: Option<String>,
    /// Created by the write: its baseline is empty.
    created: bool,
    /// Deleted by the write: the server is told, and the files that used it are checked.
    deleted: bool,
    /// Where its new content is.
    new: NewText,
}

impl Written {
    /// The new text, from the disk or the proposal; `None` for a deletion or unreadable file.
    fn new_text(&self) -> Option<String> {
        match &self.new {
            _ if self.deleted => None,
            NewText::Disk => crate::paths::read_source(&self.path).ok(),
            NewText::Proposed(text) => text.clone(),
        }
    }
}

/// A file that uses what the write changed (the impact set), and the server that checks it.
struct User {
    path: PathBuf,
    server: Arc<Server>,
}

/// A file the check opened only for itself: closed again at the end.
struct Opened {
    path: PathBuf,
    server: Arc<Server>,
}

/// One write's check: the supervisor, its options, the run, and the report so far.
struct WriteCheck<'a> {
    sup: &'a Supervisor,
    mode: Mode,
    options: OnWriteConfig,
    run: RunId,
    started: Instant,
    cancel: &'a CancellationToken,
    report: WriteDiagnostics,
    /// Files opened for the check, closed at the end.
    opened: Vec<Opened>,
    /// Files whose baseline could not be had: they are not checked after the change.
    unverified: Vec<PathBuf>,
    /// Files that use the change over the bound of `max_files`: checked after the result.
    overflow: Vec<User>,
}

/// Syncs every written file, finds and checks the files that use what they changed, and
/// reports what is new against the run's ledger; `None` when no server covers any of the
/// written files.
pub(crate) async fn diagnostics_after_write(
    sup: &Supervisor,
    files: &[WrittenFile],
    cancel: &CancellationToken,
) -> Option<WriteDiagnostics> {
    let changes =
        files.iter().map(|f| Change { path: &f.path, before: &f.before, new: NewText::Disk });
    check_change(sup, changes.collect(), Mode::Applied, cancel).await
}

/// The same check for a change that is not written (a dry run): the proposed text goes to
/// the servers, the ledger is compared with but not updated, and each server has the
/// disk's content again afterwards.
pub(crate) async fn diagnostics_of_proposal(
    sup: &Supervisor,
    files: &[ProposedFile],
    cancel: &CancellationToken,
) -> Option<WriteDiagnostics> {
    let changes = files.iter().map(|f| Change {
        path: &f.path,
        before: &f.before,
        new: NewText::Proposed(f.after.clone()),
    });
    check_change(sup, changes.collect(), Mode::Preview, cancel).await
}

async fn check_change(
    sup: &Supervisor,
    changes: Vec<Change<'_>>,
    mode: Mode,
    cancel: &CancellationToken,
) -> Option<WriteDiagnostics> {
    // A running background check is about the state before this change.
    if let Some(settling) = sup.replace_settling(None) {
        settling.cancel();
    }
    let mut check = WriteCheck::new(sup, mode, cancel);
    let written = check.written_files(changes).await?;
    check.note_deleted_before_start(&written);
    check.old_world(&written).await;
    let users = check.impact(&written).await;
    check.baselines(&written, &users).await;
    let marks = sup.push_marks();
    let mut pending = check.new_world(&written, &users).await;
    let mut results = check.wait_all(&pending, Measure::Counts).await;
    let others = check.other_open_files(&written, &users, &marks).await;
    results.extend(check.wait_all(&others, Measure::Ignored).await);
    pending.extend(others);
    check.tally(pending, results);
    check.close(&written).await;
    Some(check.finish(&written))
}

/// Whether the time a wait took counts for the next deadlines (a check after a change, not a
/// baseline of what was).
#[derive(Clone, Copy, PartialEq)]
enum Measure {
    Counts,
    Ignored,
}

impl<'a> WriteCheck<'a> {
    fn new(sup: &'a Supervisor, mode: Mode, cancel: &'a CancellationToken) -> Self {
        let options = sup.config().on_write.clone();
        let report = WriteDiagnostics {
            max_shown: options.max_shown,
            max_files: options.max_files,
            mode,
            ..Default::default()
        };
        WriteCheck {
            sup,
            mode,
            options,
            run: sup.run_id(),
            started: Instant::now(),
            cancel,
            report,
            opened: Vec::new(),
            unverified: Vec::new(),
            overflow: Vec::new(),
        }
    }

    fn finish(mut self, written: &[Written]) -> WriteDiagnostics {
        self.report.count_files();
        // A preview settles nothing: what it would show past the bound is named as not checked.
        if !self.overflow.is_empty() && self.mode == Mode::Applied {
            settle_later(
                self.sup,
                settle::Settle {
                    users: std::mem::take(&mut self.overflow),
                    names: self.report.changed.clone(),
                    edited: written.iter().map(|w| self.shown(&w.path)).collect(),
                    at: clock_now(),
                },
            );
        }
        self.report.waited_ms = self.started.elapsed().as_millis() as u64;
        self.report
    }

    /// `path` relative to the project root, as results show it.
    fn shown(&self, path: &Path) -> String {
        crate::paths::display_relative(self.sup.root(), path)
    }

    /// The deadline for one file of `server`: the configured one, or twice the file's or the
    /// server's measured time when longer; a server that has not answered in this run yet gets
    /// the start-up wait (its first analysis loads the project).
    fn deadline(&self, server: &Server, path: &Path) -> Duration {
        let options = &self.options;
        let base = Duration::from_millis(options.deadline_ms);
        let cap = Duration::from_millis(options.startup_wait_ms.max(options.deadline_ms));
        let by_server = match self.sup.measured_server(server.pid) {
            Some(typical) => typical * 2,
            None => cap,
        };
        let by_file = self.sup.measured(path).map_or(Duration::ZERO, |m| m * 2);
        base.max(by_server).max(by_file).min(cap)
    }

    /// The diagnostics of `handle`'s version within `deadline`.
    async fn wait_for(
        &self,
        handle: &DocHandle,
        deadline: Duration,
        measure: Measure,
    ) -> Result<Vec<Diagnostic>, DiagnosticsWait> {
        let t = Instant::now();
        let result = self.sup.document_diagnostics(handle, t + deadline, self.cancel).await;
        // A file that ran out of time gets twice as long next time (up to the start-up wait).
        if measure == Measure::Counts
            && matches!(result, Ok(_) | Err(DiagnosticsWait::Timeout { .. }))
        {
            self.sup.record_measured(handle.path(), handle.server.pid, t.elapsed());
        }
        result.map(|diags| diags.into_iter().filter(|d| d.is_shown(false)).collect())
    }
}

/// Why a file's diagnostics were not had; `deadline` is the bound that applied to it.
fn unverified_reason(wait: &DiagnosticsWait, deadline: Duration) -> String {
    match wait {
        DiagnosticsWait::Timeout { indexing: Some(what), .. } => {
            format!("server {what}; no diagnostics within {} ms", deadline.as_millis())
        }
        DiagnosticsWait::Timeout { .. } => {
            format!("no diagnostics for the new version within {} ms", deadline.as_millis())
        }
        DiagnosticsWait::Closed => "server exited".into(),
        DiagnosticsWait::Cancelled => "cancelled".into(),
        DiagnosticsWait::Failed(e) => e.clone(),
    }
}

/// The time of day in UTC, `HH:MM:SS`.
fn clock_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    format!("{:02}:{:02}:{:02} UTC", secs / 3600 % 24, secs / 60 % 60, secs % 60)
}

/// The language id `server` gives `file`.
fn language_of(server: &Server, file: &Path) -> String {
    let ext = file.extension().and_then(|e| e.to_str()).unwrap_or("");
    server.def.language_of(ext).unwrap_or("plaintext").to_string()
}
