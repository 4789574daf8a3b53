//! Diagnostics on write: after a file tool (or `lsp_rename`) changed files, the diagnostics
//! the change introduced, so that a harness using this crate alone gets the headline feature.
//!
//! Every changed file is sent to the language server of its root (`didChange` with the new
//! content and version, then `didSave`), and one wait, for all of them, takes the diagnostics
//! of exactly those versions. Before the first write to a file in a run, what it held before
//! (as the writer reported it) gives the baseline. The run's [`Ledger`], keyed by (source,
//! severity, code, message) with counts and no position, decides what is new. Other files the
//! servers have open are re-checked in the same wait, so that a signature change that breaks
//! a caller elsewhere is reported too. The ledger is locked only to read or update it, never
//! while a server works. What cannot be verified in time is said to be not verified.

use std::{
    path::{Path, PathBuf},
    sync::Arc,
    time::{Duration, Instant},
};

use schemars::JsonSchema;
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::{
    diagnostics::{Diagnostic, count_phrase},
    paths::display_relative,
    server::{DiagnosticMode, DiagnosticsWait, join_all},
    supervisor::{DocHandle, Supervisor, SyncOutcome},
};

/// What a changed file held before the write, as the writer knows it.
#[derive(Debug, Clone, PartialEq)]
pub enum FileBefore {
    /// The writer did not record it: the current diagnostics become the baseline.
    Unknown,
    /// The write created the file.
    Absent,
    Contents(Arc<[u8]>),
}

/// One file a write changed.
#[derive(Debug, Clone, PartialEq)]
pub struct WrittenFile {
    /// Absolute path.
    pub path: PathBuf,
    pub before: FileBefore,
}

/// The diagnostics a write introduced, over every file it changed and the open files it broke.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
pub struct WriteDiagnostics {
    /// New errors and warnings (count went up), written files first, then other files.
    #[schemars(with = "Vec<serde_json::Value>")]
    pub new: Vec<Diagnostic>,
    /// Diagnostics that were there before and are not repeated.
    pub known: usize,
    /// Servers that answered.
    pub servers: Vec<String>,
    /// `path (why)` for each file whose diagnostics could not be had in time.
    pub not_verified: Vec<String>,
    /// Files written for the first time in this run whose earlier content is unknown.
    pub baseline_unknown: Vec<String>,
    /// How long the check waited after the write, in milliseconds.
    pub waited_ms: u64,
    /// How many new diagnostics the text lists.
    #[serde(skip)]
    pub max_shown: usize,
}

impl WriteDiagnostics {
    /// The section appended to a write's text.
    pub fn render(&self) -> String {
        let mut lines = Vec::new();
        let known_note = if self.known > 0 {
            format!(" ({} already known, not repeated)", self.known)
        } else {
            String::new()
        };
        if !self.servers.is_empty() {
            let summary = if self.new.is_empty() {
                format!("no new errors or warnings{known_note}")
            } else {
                format!("{}{known_note}", count_phrase(&self.new, "new"))
            };
            lines.push(format!(
                "The write was applied. Diagnostics ({}): {summary}",
                self.servers.join(", ")
            ));
            for d in self.new.iter().take(self.max_shown) {
                lines.push(d.render());
            }
            if self.new.len() > self.max_shown {
                lines.push(format!(
                    "[+{} more new diagnostics not shown; call lsp diagnostics on the file for all]",
                    self.new.len() - self.max_shown
                ));
            }
            if !self.baseline_unknown.is_empty() {
                lines.push(format!(
                    "(first write to {} in this run and its earlier content is unknown: its current diagnostics were taken as the baseline)",
                    self.baseline_unknown.join(", ")
                ));
            }
        } else {
            lines.push("The write was applied.".into());
        }
        if !self.not_verified.is_empty() {
            lines.push(format!(
                "diagnostics not verified for {} (waited {} ms)",
                self.not_verified.join(", "),
                self.waited_ms
            ));
        }
        lines.join("\n")
    }
}

/// Why a file's diagnostics were not had; `deadline` is the bound that applied to it.
fn unverified_reason(wait: &DiagnosticsWait, deadline: Duration) -> String {
    match wait {
        DiagnosticsWait::Timeout { indexing: Some(what), .. } => format!("server {what}"),
        DiagnosticsWait::Timeout { .. } => {
            format!("no diagnostics for the new version within {} ms", deadline.as_millis())
        }
        DiagnosticsWait::Closed => "server exited".into(),
        DiagnosticsWait::Cancelled => "cancelled".into(),
        DiagnosticsWait::Failed(e) => e.clone(),
    }
}

/// How long other open files get to re-publish after the written files answered.
const CROSS_FILE_WINDOW: Duration = Duration::from_millis(300);

fn shown(diags: Vec<Diagnostic>) -> Vec<Diagnostic> {
    diags.into_iter().filter(|d| d.is_shown(false)).collect()
}

/// A file waiting for its diagnostics.
struct Pending {
    path: PathBuf,
    handle: DocHandle,
    /// Written by this call (else: another open file re-checked for cross-file breakage).
    written: bool,
    baseline_unknown: bool,
}

impl Supervisor {
    /// The deadline for one file: the configured one, or (for a file the server took long on
    /// before) twice its measured time, bounded by the startup wait.
    fn write_deadline(&self, path: &Path) -> Duration {
        let options = &self.config().on_write;
        let base = Duration::from_millis(options.deadline_ms);
        let measured = self.measured(path).map_or(Duration::ZERO, |m| m * 2);
        base.max(measured)
            .min(Duration::from_millis(options.startup_wait_ms.max(options.deadline_ms)))
    }

    async fn baseline_of(
        &self,
        path: &Path,
        old: &[u8],
        startup: Duration,
        cancel: &CancellationToken,
    ) -> Result<Option<Vec<Diagnostic>>, (Option<String>, String)> {
        let Ok(old) = String::from_utf8(old.to_vec()) else { return Ok(Some(Vec::new())) };
        match self.sync_document(path, Some(old), false, startup, cancel).await {
            SyncOutcome::NotCovered => Ok(None),
            SyncOutcome::NotReady(reason) => Err((None, reason)),
            SyncOutcome::Synced(handle) => {
                let deadline = Instant::now() + self.write_deadline(path);
                match self.document_diagnostics(&handle, deadline, cancel).await {
                    Ok(diags) => Ok(Some(shown(diags))),
                    Err(wait) => Err((
                        Some(handle.server_label()),
                        unverified_reason(&wait, self.write_deadline(path)),
                    )),
                }
            }
        }
    }

    /// Syncs every written file, waits once (for them and for the other open files of the
    /// same servers), and reports what is new against the run's ledger; `None` when no server
    /// covers any of the files.
    pub async fn diagnostics_after_write(
        &self,
        files: &[WrittenFile],
        cancel: &CancellationToken,
    ) -> Option<WriteDiagnostics> {
        let options = self.config().on_write.clone();
        let startup = Duration::from_millis(options.startup_wait_ms);
        let started = Instant::now();
        let marks = self.push_marks();
        let mut report = WriteDiagnostics { max_shown: options.max_shown, ..Default::default() };
        let mut covered = false;
        let mut pending: Vec<Pending> = Vec::new();
        for file in files {
            let path = &file.path;
            if !path.is_file() {
                continue;
            }
            let shown_path = display_relative(self.root(), path);
            let mut baseline_unknown = false;
            if !self.ledger().lock().knows(path) {
                let baseline = match &file.before {
                    FileBefore::Absent => Ok(Some(Vec::new())),
                    FileBefore::Contents(old) => self.baseline_of(path, old, startup, cancel).await,
                    FileBefore::Unknown => {
                        baseline_unknown = true;
                        Ok(Some(Vec::new()))
                    }
                };
                match baseline {
                    Ok(None) => continue,
                    Ok(Some(diags)) if !baseline_unknown => {
                        let mut ledger = self.ledger().lock();
                        if !ledger.knows(path) {
                            ledger.baseline(path, &diags);
                        }
                    }
                    Ok(Some(_)) => {}
                    Err((server, reason)) => {
                        covered = true;
                        let by = server.map(|s| format!("{s}, ")).unwrap_or_default();
                        report.not_verified.push(format!("{shown_path} ({by}{reason})"));
                        continue;
                    }
                }
            }
            match self.sync_document(path, None, true, startup, cancel).await {
                SyncOutcome::NotCovered => {}
                SyncOutcome::NotReady(reason) => {
                    covered = true;
                    report.not_verified.push(format!("{shown_path} ({reason})"));
                }
                SyncOutcome::Synced(handle) => {
                    covered = true;
                    pending.push(Pending {
                        path: path.clone(),
                        handle,
                        written: true,
                        baseline_unknown,
                    })
                }
            }
        }
        if !covered {
            return None;
        }
        let waits = pending.iter().map(|p| {
            let deadline = started + self.write_deadline(&p.path);
            async move {
                let t = Instant::now();
                let result = self.document_diagnostics(&p.handle, deadline, cancel).await;
                // A file that ran out of time gets twice as long next time (up to the startup
                // wait), so a large file's diagnostics are verified from its second write on.
                if matches!(result, Ok(_) | Err(DiagnosticsWait::Timeout { .. })) {
                    self.record_measured(&p.path, t.elapsed());
                }
                result
            }
        });
        let mut results = join_all(waits).await;
        // Other open files the ledger knows: a changed signature may have broken them. Their
        // diagnostics come with (or just after) those of the written files, so the window is
        // short.
        let written: Vec<PathBuf> = pending.iter().map(|p| p.path.clone()).collect();
        let others: Vec<Pending> = self
            .other_open_documents(&written, &marks)
            .await
            .into_iter()
            .filter(|(path, _)| self.ledger().lock().knows(path))
            .map(|(path, handle)| Pending { path, handle, written: false, baseline_unknown: false })
            .collect();
        // A pull server answers for the current state (give it the write's deadline); a push
        // server re-publishes with or just after the written files (a short window).
        let now = Instant::now();
        let window = now + CROSS_FILE_WINDOW;
        results.extend(
            join_all(others.iter().map(|p| {
                let until = match p.handle.diagnostic_mode() {
                    DiagnosticMode::Pull => now + self.write_deadline(&p.path),
                    DiagnosticMode::Push => window,
                };
                self.document_diagnostics(&p.handle, until, cancel)
            }))
            .await,
        );
        pending.extend(others);
        let mut others = Vec::new();
        for (p, result) in pending.into_iter().zip(results) {
            let server = p.handle.server_label();
            let shown_path = display_relative(self.root(), &p.path);
            match result {
                Ok(diags) => {
                    let diags = shown(diags);
                    if !report.servers.contains(&server) {
                        report.servers.push(server);
                    }
                    let mut ledger = self.ledger().lock();
                    if p.baseline_unknown && !ledger.knows(&p.path) {
                        ledger.baseline(&p.path, &diags);
                        report.known += diags.len();
                        report.baseline_unknown.push(shown_path);
                    } else {
                        let delta = ledger.update(&p.path, &diags);
                        // Only the written files' known diagnostics are counted: a re-checked
                        // file reports what is new in it, nothing else.
                        if p.written {
                            report.known += delta.known;
                            report.new.extend(delta.new)
                        } else {
                            others.extend(delta.new)
                        }
                    }
                }
                // An open file that was only re-checked and did not answer in time is no
                // failure of this write.
                Err(_) if !p.written => {}
                Err(wait) => report.not_verified.push(format!(
                    "{shown_path} ({server}, {})",
                    unverified_reason(&wait, self.write_deadline(&p.path))
                )),
            }
        }
        report.new.extend(others);
        report.waited_ms = started.elapsed().as_millis() as u64;
        Some(report)
    }
}
