//! Diagnostics on write: after a file tool (or `lsp_rename`) changed files, the diagnostics
//! the change introduced, in the written files and in the files that use what they changed,
//! so that a harness using this crate alone gets the headline feature.
//!
//! In two phases. While the server still has the old content: the written files' old text is
//! sent, the declarations the change touches and their references give the impact set
//! ([`crate::impact`]), and what the run's ledger does not know yet gets its baseline (the
//! written files' old version, the impact files as they are), all in one wait. Then the new
//! content goes out (`didChange`, `didSave`, a watched-file event), every impact file is sent
//! again as a new version so its answer is computed against the change, and one wait takes
//! the diagnostics of exactly those versions. The deadline of each file starts once its server
//! has the new content (a start-up is waited for separately) and adapts to the server's
//! measured time. Files opened only for the check are closed afterwards. What is new is
//! decided by the [`crate::Ledger`], locked only to read or update it.

use agent_tools_support::Before;
use std::{
    path::{Path, PathBuf},
    sync::Arc,
    time::{Duration, Instant},
};

use tokio_util::sync::CancellationToken;

use crate::{
    diagnostics::Diagnostic,
    impact::{Impact, impact_of},
    paths::display_relative,
    server::{DiagnosticMode, DiagnosticsWait, Server, join_all},
    supervisor::{DocHandle, Supervisor},
    write_report::WriteDiagnostics,
};

/// One file a write changed.
#[derive(Debug, Clone, PartialEq)]
pub struct WrittenFile {
    /// Absolute path.
    pub path: PathBuf,
    pub before: Before,
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

/// How long other open files get to re-publish after the written files answered.
const CROSS_FILE_WINDOW: Duration = Duration::from_millis(300);

/// The language id `server` gives `file`.
fn language_of(server: &Server, file: &Path) -> String {
    let ext = file.extension().and_then(|e| e.to_str()).unwrap_or("");
    server.def.language_of(ext).unwrap_or("plaintext").to_string()
}

fn shown(diags: Vec<Diagnostic>) -> Vec<Diagnostic> {
    diags.into_iter().filter(|d| d.is_shown(false)).collect()
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
}

/// Why a file is checked.
#[derive(Clone, Copy, PartialEq)]
enum Role {
    Written,
    /// Uses what the write changed (the impact set).
    User,
    /// Open in the run and known to the ledger: re-checked in a short window, best effort.
    Open,
}

/// A file waiting for its diagnostics.
struct Pending {
    handle: DocHandle,
    role: Role,
    baseline_unknown: bool,
    /// Fixed when the wait starts, so the text names the bound that applied.
    deadline: Duration,
}

impl Supervisor {
    /// The deadline for one file of `server`: the configured one, or twice the file's or the
    /// server's measured time when longer; a server that has not answered in this run yet gets
    /// the start-up wait (its first analysis loads the project).
    fn write_deadline(&self, server: &Server, path: &Path) -> Duration {
        let options = &self.config().on_write;
        let base = Duration::from_millis(options.deadline_ms);
        let cap = Duration::from_millis(options.startup_wait_ms.max(options.deadline_ms));
        let by_server = match self.measured_server(server.pid) {
            Some(typical) => typical * 2,
            None => cap,
        };
        let by_file = self.measured(path).map_or(Duration::ZERO, |m| m * 2);
        base.max(by_server).max(by_file).min(cap)
    }

    /// The diagnostics of `handle`'s version within `deadline`; `measure`: the time taken
    /// counts for the next deadlines (a check after a change, not a baseline of what was).
    async fn wait_for(
        &self,
        handle: &DocHandle,
        deadline: Duration,
        measure: bool,
        cancel: &CancellationToken,
    ) -> Result<Vec<Diagnostic>, DiagnosticsWait> {
        let t = Instant::now();
        let result = self.document_diagnostics(handle, t + deadline, cancel).await;
        // A file that ran out of time gets twice as long next time (up to the start-up wait).
        if measure && matches!(result, Ok(_) | Err(DiagnosticsWait::Timeout { .. })) {
            self.record_measured(handle.path(), handle.server.pid, t.elapsed());
        }
        result.map(shown)
    }

    /// The written files' servers, each waited for at most the start-up wait.
    async fn written_files(
        &self,
        files: &[WrittenFile],
        report: &mut WriteDiagnostics,
        cancel: &CancellationToken,
    ) -> Option<Vec<Written>> {
        let startup = Duration::from_millis(self.config().on_write.startup_wait_ms);
        let mut covered = false;
        let mut out = Vec::new();
        for file in files {
            let path = &file.path;
            let deleted = !path.exists();
            if !deleted && !path.is_file() {
                continue;
            }
            let Ok(target) = self.target_for(path) else { continue };
            covered = true;
            match self.server_within(&target, startup, cancel).await {
                Ok(server) => out.push(Written {
                    path: path.clone(),
                    server,
                    language: target.language_id.clone(),
                    old: match &file.before {
                        Before::Contents(bytes) => String::from_utf8(bytes.to_vec()).ok(),
                        _ => None,
                    },
                    created: file.before == Before::Absent,
                    deleted,
                }),
                Err(reason) => report
                    .not_verified
                    .push(format!("{} ({reason})", display_relative(self.root(), path))),
            }
        }
        covered.then_some(out)
    }

    /// The files that use what the writes change, asked while the servers have the old text.
    async fn impact_of_writes(
        &self,
        written: &[Written],
        cancel: &CancellationToken,
    ) -> Vec<(Impact, Arc<Server>)> {
        let budget = Duration::from_millis(self.config().request_timeout_ms);
        join_all(written.iter().filter_map(|w| {
            let old = w.old.as_ref()?;
            let new = match w.deleted {
                true => None,
                false => Some(crate::paths::read_source(&w.path).ok()?),
            };
            let deadline = Instant::now() + self.write_deadline(&w.server, &w.path).min(budget);
            Some(async move {
                let impact =
                    impact_of(&w.server, &w.path, old, new.as_deref(), deadline, cancel).await;
                (impact, w.server.clone())
            })
        }))
        .await
    }

    /// Syncs every written file, finds and checks the files that use what they changed, and
    /// reports what is new against the run's ledger; `None` when no server covers any of the
    /// written files.
    pub async fn diagnostics_after_write(
        &self,
        files: &[WrittenFile],
        cancel: &CancellationToken,
    ) -> Option<WriteDiagnostics> {
        let options = self.config().on_write.clone();
        let started = Instant::now();
        let run = self.run_id();
        let mut report = WriteDiagnostics { max_shown: options.max_shown, ..Default::default() };
        let written = self.written_files(files, &mut report, cancel).await?;
        let written_paths: Vec<PathBuf> = written.iter().map(|w| w.path.clone()).collect();
        // A server that started after a file was deleted never saw it: what the files that
        // used it had before cannot be known, so their errors now are not called new or old.
        for w in written.iter().filter(|w| w.deleted && w.server.started >= started) {
            report.not_verified.push(format!(
                "the files that used {} (the {} server started after it was deleted, so their errors before are unknown; lsp diagnostics on them shows their errors now)",
                display_relative(self.root(), &w.path),
                w.server.def.display_languages()
            ));
        }

        // Phase 1, the old world: what changed outside the tools first, then every written
        // file's old text, so that no answer comes from a mix of old and new files.
        let mut servers: Vec<&Arc<Server>> = Vec::new();
        for w in &written {
            if !servers.iter().any(|s| Arc::ptr_eq(s, &w.server)) {
                servers.push(&w.server);
            }
        }
        for server in servers {
            server.resync_open_except(&written_paths).await;
        }
        for w in &written {
            if let Some(old) = &w.old {
                let _ = w.server.sync_text(&w.path, &w.language, old.clone(), false, run).await;
            }
        }
        let mut users: Vec<(PathBuf, Arc<Server>)> = Vec::new();
        let mut more: Vec<String> = Vec::new();
        for (impact, server) in self.impact_of_writes(&written, cancel).await {
            for name in &impact.names {
                if !report.changed.contains(name) {
                    report.changed.push(name.clone());
                }
            }
            if impact.scanned_because.is_some() && !impact.files.is_empty() {
                report.found_by_scan = impact.scanned_because.clone();
            }
            for (file, _) in impact.files {
                if written_paths.contains(&file) || users.iter().any(|(f, _)| *f == file) {
                    continue;
                }
                // Only files the same server covers: another root's server sees the change
                // through the disk, not through this write.
                let same = self
                    .target_for(&file)
                    .is_ok_and(|t| t.def.id == server.def.id && t.root.root == server.root);
                if !same {
                    continue;
                }
                if users.len() < options.max_files {
                    users.push((file, server.clone()));
                } else {
                    more.push(display_relative(self.root(), &file));
                }
            }
        }
        if !more.is_empty() {
            report.not_checked.push(format!(
                "{} more file(s) that use it, over the bound of {} per write ([lsp.on_write] max_files): {}",
                more.len(),
                options.max_files,
                more.join(", ")
            ));
        }
        // Baselines, in one wait: the written files' old versions and the users as they are.
        let mut opened: Vec<(PathBuf, Arc<Server>)> = Vec::new();
        let mut baselines: Vec<DocHandle> = Vec::new();
        for w in written.iter().filter(|w| !w.deleted) {
            if let Some(old) = &w.old
                && !self.ledger().lock().knows(&w.path)
                && let Ok(doc) =
                    w.server.current(&w.path, &w.language, Some(old.clone()), run).await
            {
                baselines.push(DocHandle { server: w.server.clone(), doc });
            }
        }
        // A user the ledger knows needs no baseline, and is opened only after the change
        // (opening and closing files in quick succession stalls clangd's preamble builds).
        for (file, server) in &users {
            if self.ledger().lock().knows(file) {
                continue;
            }
            if !server.holders(file).await.is_some_and(|h| h.contains(&run)) {
                opened.push((file.clone(), server.clone()));
            }
            if let Ok(mut doc) = server.current(file, &language_of(server, file), None, run).await {
                doc.versioned_only = true;
                baselines.push(DocHandle { server: server.clone(), doc });
            }
        }
        let results = join_all(baselines.iter().map(|handle| {
            let deadline = self.write_deadline(&handle.server, handle.path());
            async move { (self.wait_for(handle, deadline, false, cancel).await, deadline) }
        }))
        .await;
        let mut unverified: Vec<PathBuf> = Vec::new();
        for (handle, (result, deadline)) in baselines.iter().zip(results) {
            let path = handle.path().to_path_buf();
            match result {
                Ok(diags) => {
                    let mut ledger = self.ledger().lock();
                    if !ledger.knows(&path) {
                        ledger.baseline(&path, &diags);
                    }
                }
                Err(wait) => {
                    let why = match wait {
                        DiagnosticsWait::Timeout { .. } => format!(
                            "no diagnostics of its content before the write within {} ms{}",
                            deadline.as_millis(),
                            handle
                                .server
                                .busy()
                                .map(|b| format!(" (server {b})"))
                                .unwrap_or_default()
                        ),
                        other => unverified_reason(&other, deadline),
                    };
                    report.not_verified.push(format!(
                        "{} ({}, {why})",
                        display_relative(self.root(), &path),
                        handle.server_label()
                    ));
                    unverified.push(path);
                }
            }
        }
        for w in &written {
            if w.created {
                let mut ledger = self.ledger().lock();
                if !ledger.knows(&w.path) {
                    ledger.baseline(&w.path, &[]);
                }
            }
        }

        // Phase 2, the new world: every written file's new content, then the users again.
        let marks = self.push_marks();
        let mut pending: Vec<Pending> = Vec::new();
        // A deleted file is first emptied in the server: a watched-file deletion is applied
        // by some servers later (pyright), so users checked now would still see it. It is
        // closed, and its deletion sent, once they answered.
        for w in written.iter().filter(|w| w.deleted) {
            let _ = w.server.sync_text(&w.path, &w.language, String::new(), false, run).await;
        }
        for w in &written {
            if unverified.contains(&w.path) || w.deleted {
                continue;
            }
            let baseline_unknown = !self.ledger().lock().knows(&w.path);
            match w.server.sync(&w.path, &w.language, true, run).await {
                Ok(doc) => pending.push(Pending {
                    handle: DocHandle { server: w.server.clone(), doc },
                    role: Role::Written,
                    baseline_unknown,
                    deadline: Duration::ZERO,
                }),
                Err(e) => report
                    .not_verified
                    .push(format!("{} ({e})", display_relative(self.root(), &w.path))),
            }
        }
        for w in written.iter().filter(|w| !w.deleted) {
            w.server.files_changed(&[(w.path.clone(), if w.created { 1 } else { 2 })]).await;
        }
        for (file, server) in &users {
            if unverified.contains(file) {
                continue;
            }
            let open = server.holders(file).await.is_some_and(|h| h.contains(&run));
            let doc = if open {
                server.touch(file, run).await
            } else {
                // Opened after the change: its first answer is about the new content.
                opened.push((file.clone(), server.clone()));
                server.sync(file, &language_of(server, file), false, run).await.ok().map(|mut d| {
                    d.versioned_only = true;
                    d
                })
            };
            if let Some(doc) = doc {
                pending.push(Pending {
                    handle: DocHandle { server: server.clone(), doc },
                    role: Role::User,
                    baseline_unknown: false,
                    deadline: Duration::ZERO,
                });
            }
        }
        for p in &mut pending {
            p.deadline = self.write_deadline(&p.handle.server, p.handle.path());
        }
        let mut results =
            join_all(pending.iter().map(|p| self.wait_for(&p.handle, p.deadline, true, cancel)))
                .await;
        // Other open files the ledger knows, best effort: their diagnostics come with (or
        // just after) those of the written files. A pull server answers for the current
        // state (the write's deadline); a push server re-publishes within a short window.
        let mut skip = written_paths.clone();
        skip.extend(users.iter().map(|(f, _)| f.clone()));
        let others: Vec<Pending> = self
            .other_open_documents(&skip, &marks)
            .await
            .into_iter()
            .filter(|(path, _)| self.ledger().lock().knows(path))
            .map(|(_, handle)| Pending {
                deadline: match handle.diagnostic_mode() {
                    DiagnosticMode::Pull => self.write_deadline(&handle.server, handle.path()),
                    DiagnosticMode::Push => CROSS_FILE_WINDOW,
                },
                handle,
                role: Role::Open,
                baseline_unknown: false,
            })
            .collect();
        results.extend(
            join_all(others.iter().map(|p| self.wait_for(&p.handle, p.deadline, false, cancel)))
                .await,
        );
        pending.extend(others);

        let mut elsewhere = Vec::new();
        for (p, result) in pending.into_iter().zip(results) {
            let server = p.handle.server_label();
            let path = p.handle.path().to_path_buf();
            let shown_path = display_relative(self.root(), &path);
            report.deadline_ms = report.deadline_ms.max(p.deadline.as_millis() as u64);
            match result {
                Ok(diags) => {
                    if !report.servers.contains(&server) {
                        report.servers.push(server);
                    }
                    let mut ledger = self.ledger().lock();
                    if p.baseline_unknown && !ledger.knows(&path) {
                        ledger.baseline(&path, &diags);
                        report.known += diags.len();
                        report.baseline_unknown.push(shown_path);
                        continue;
                    }
                    let delta = ledger.update(&path, &diags);
                    drop(ledger);
                    if delta.resolved > 0 {
                        report.fixed += delta.resolved;
                        report.fixed_in.push(shown_path.clone());
                    }
                    match p.role {
                        // Only the written files' known diagnostics are counted: a re-checked
                        // file reports what is new in it, nothing else.
                        Role::Written => {
                            report.known += delta.known;
                            report.new.extend(delta.new)
                        }
                        Role::User => {
                            report.checked.push(shown_path);
                            elsewhere.extend(delta.new)
                        }
                        Role::Open => elsewhere.extend(delta.new),
                    }
                }
                // An open file that was only re-checked and did not answer in time is no
                // failure of this write: it is not in the impact set.
                Err(_) if p.role == Role::Open => {}
                Err(wait) => report.not_verified.push(format!(
                    "{shown_path} ({server}, {})",
                    unverified_reason(&wait, p.deadline)
                )),
            }
        }
        report.new.extend(elsewhere);
        for w in written.iter().filter(|w| w.deleted) {
            w.server.close(&w.path).await;
            w.server.files_changed(&[(w.path.clone(), 3)]).await;
        }
        for (file, server) in opened {
            server.release_document(&file, run).await;
        }
        report.waited_ms = started.elapsed().as_millis() as u64;
        Some(report)
    }
}
