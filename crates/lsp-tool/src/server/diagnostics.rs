//! The diagnostics of exactly one document version: pulled where the server offers it (for
//! typescript-language-server, tsserver's synchronous diagnostics), else the push carrying
//! that version, or, from versionless servers, the pushes after the change once they go quiet.

use std::{path::Path, time::Instant};

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::{DiagnosticMode, DiagnosticsWait, Server, SyncedDoc, VERSIONLESS_SETTLE};
use crate::{paths::uri_from_path, transport::RequestError};

impl Server {
    /// Pull when a static or dynamic `textDocument/diagnostic` provider exists (or the server
    /// is typescript-language-server, which answers tsserver's synchronous diagnostics).
    pub(crate) fn diagnostic_mode(&self) -> DiagnosticMode {
        if self.pull_identifiers().is_empty() && !self.tsserver_pull() {
            DiagnosticMode::Push
        } else {
            DiagnosticMode::Pull
        }
    }

    /// Whether the server is one that puts the document version on every push for an open
    /// document (so a versionless push is about the disk, not about our text).
    fn versions_pushes(&self) -> bool {
        let name = self.server_name.as_deref().unwrap_or("").to_ascii_lowercase();
        ["gopls", "clangd", "pyright", "rust-analyzer"].iter().any(|n| name.contains(n))
    }

    /// typescript-language-server publishes without versions and in phases (syntax, semantics,
    /// suggestions), so a push cannot be tied to a version; its `typescript.tsserverRequest`
    /// command runs tsserver's synchronous diagnostics for the content it has.
    fn tsserver_pull(&self) -> bool {
        self.capabilities.runs_command("typescript.tsserverRequest")
    }

    async fn tsserver_diagnostics(
        &self,
        doc: &SyncedDoc,
        deadline: Instant,
        cancel: &CancellationToken,
    ) -> Result<Vec<lsp_types::Diagnostic>, RequestError> {
        use lsp_types::{DiagnosticSeverity, DiagnosticTag, NumberOrString, Position, Range};
        let uri = uri_from_path(&doc.path).map(|u| u.as_str().to_string());
        let mut items = Vec::new();
        for command in ["syntacticDiagnosticsSync", "semanticDiagnosticsSync"] {
            // tsserver's own protocol travels inside the command's arguments.
            let params = lsp_types::ExecuteCommandParams {
                command: "typescript.tsserverRequest".into(),
                arguments: vec![
                    Value::from(command),
                    json!({"file": uri, "includeLinePosition": false}),
                ],
                work_done_progress_params: Default::default(),
            };
            let params = serde_json::to_value(params).unwrap_or_default();
            let answer =
                self.request_until("workspace/executeCommand", params, deadline, cancel).await?;
            let body = answer.get("body").unwrap_or(&answer);
            for d in body.as_array().into_iter().flatten() {
                // tsserver counts lines and offsets from 1.
                let pos = |k: &str| {
                    let n = |f: &str| {
                        let n = d.pointer(&format!("/{k}/{f}")).and_then(Value::as_u64);
                        u32::try_from(n.unwrap_or(1).saturating_sub(1)).unwrap_or(u32::MAX)
                    };
                    Position::new(n("line"), n("offset"))
                };
                let severity = match d.get("category").and_then(Value::as_str) {
                    Some("warning") => DiagnosticSeverity::WARNING,
                    Some("suggestion") => DiagnosticSeverity::HINT,
                    Some("message") => DiagnosticSeverity::INFORMATION,
                    _ => DiagnosticSeverity::ERROR,
                };
                let code = d.get("code").and_then(Value::as_i64).map(|code| {
                    i32::try_from(code).map_or_else(
                        |_| NumberOrString::String(code.to_string()),
                        NumberOrString::Number,
                    )
                });
                let unnecessary = d
                    .get("reportsUnnecessary")
                    .is_some_and(|v| !v.is_null() && v != &Value::Bool(false));
                items.push(lsp_types::Diagnostic {
                    range: Range::new(pos("start"), pos("end")),
                    severity: Some(severity),
                    code,
                    source: Some("typescript".into()),
                    message: d.get("text").and_then(Value::as_str).unwrap_or("").to_string(),
                    tags: unnecessary.then(|| vec![DiagnosticTag::UNNECESSARY]),
                    ..Default::default()
                });
            }
        }
        Ok(items)
    }

    fn pull_identifiers(&self) -> Vec<Option<String>> {
        let mut ids = Vec::new();
        if let Some(identifier) = self.capabilities.pull_diagnostics() {
            ids.push(identifier);
        }
        for (_, identifier) in &self.shared.state.lock().pull_registrations {
            if !ids.contains(identifier) {
                ids.push(identifier.clone());
            }
        }
        ids
    }

    /// The diagnostics of exactly `doc`'s version: pulled where the server offers it, else the
    /// push for that version (or, from servers that send no version, the first push after our
    /// change), at most until `deadline`.
    pub(crate) async fn diagnostics(
        &self,
        doc: &SyncedDoc,
        deadline: Instant,
        cancel: &CancellationToken,
    ) -> Result<Vec<lsp_types::Diagnostic>, DiagnosticsWait> {
        let started = Instant::now();
        let timeout = |server: &Server| DiagnosticsWait::Timeout {
            waited: started.elapsed(),
            indexing: server.busy(),
        };
        loop {
            if self.is_dead() {
                return Err(DiagnosticsWait::Closed);
            }
            let notified = self.shared.changed.notified();
            let identifiers = self.pull_identifiers();
            if identifiers.is_empty() && self.tsserver_pull() {
                return self.tsserver_diagnostics(doc, deadline, cancel).await.map_err(
                    |e| match e {
                        RequestError::Timeout(_) => timeout(self),
                        RequestError::Cancelled => DiagnosticsWait::Cancelled,
                        RequestError::Closed => DiagnosticsWait::Closed,
                        other => DiagnosticsWait::Failed(other.to_string()),
                    },
                );
            }
            if !identifiers.is_empty() {
                return self.pull(doc, identifiers, deadline, cancel).await.map_err(|e| match e {
                    RequestError::Timeout(_) => timeout(self),
                    RequestError::Cancelled => DiagnosticsWait::Cancelled,
                    RequestError::Closed => DiagnosticsWait::Closed,
                    other => DiagnosticsWait::Failed(other.to_string()),
                });
            }
            let fresh = {
                let state = self.shared.state.lock();
                state.push.get(&doc.path).and_then(|entry| match entry.version {
                    // A newer version is another sync (this run's or one sharing the server)
                    // that overtook ours; its diagnostics are the current truth.
                    Some(v) if v >= doc.version && entry.seq > doc.min_seq => {
                        Some((entry.items.clone(), true))
                    }
                    // A server that versions its pushes for open documents publishes without
                    // a version for files it has not opened (gopls, from the disk): for a file
                    // opened only to be checked, such a push can overtake our didOpen and say
                    // what the disk's other files make of it, not the text we sent.
                    None if entry.seq > doc.sent_seq
                        && !(doc.versioned_only && self.versions_pushes()) =>
                    {
                        Some((entry.items.clone(), false))
                    }
                    _ => None,
                })
            };
            if let Some((items, versioned)) = fresh {
                if versioned && !doc.settle {
                    return Ok(items);
                }
                return Ok(self.settle_versionless(&doc.path, items, deadline, cancel).await);
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(timeout(self));
            }
            tokio::select! {
                _ = notified => {}
                _ = tokio::time::sleep(deadline - now) => {}
                _ = cancel.cancelled() => return Err(DiagnosticsWait::Cancelled),
                _ = self.exited.cancelled() => return Err(DiagnosticsWait::Closed),
            }
        }
    }

    /// A server that sends no version publishes in phases (tsserver: syntax, then semantics,
    /// then suggestions, each a push). Waits until the pushes for `path` go quiet: 150 ms after
    /// a non-empty push, 600 ms after an empty one (the semantic phase may still be running),
    /// never past `deadline`.
    async fn settle_versionless(
        &self,
        path: &Path,
        mut items: Vec<lsp_types::Diagnostic>,
        deadline: Instant,
        cancel: &CancellationToken,
    ) -> Vec<lsp_types::Diagnostic> {
        let mut seq = self.shared.state.lock().push.get(path).map_or(0, |e| e.seq);
        loop {
            let notified = self.shared.changed.notified();
            let quiet = if items.is_empty() { VERSIONLESS_SETTLE * 4 } else { VERSIONLESS_SETTLE };
            let until = (Instant::now() + quiet).min(deadline);
            tokio::select! {
                _ = notified => {}
                _ = tokio::time::sleep(until.saturating_duration_since(Instant::now())) => return items,
                _ = cancel.cancelled() => return items,
            }
            let state = self.shared.state.lock();
            if let Some(entry) = state.push.get(path)
                && entry.seq != seq
            {
                seq = entry.seq;
                items = entry.items.clone();
            }
        }
    }

    async fn pull(
        &self,
        doc: &SyncedDoc,
        identifiers: Vec<Option<String>>,
        deadline: Instant,
        cancel: &CancellationToken,
    ) -> Result<Vec<lsp_types::Diagnostic>, RequestError> {
        use lsp_types::{
            DocumentDiagnosticReport as Report, DocumentDiagnosticReportResult as Answer,
            request::DocumentDiagnosticRequest,
        };
        let Some(uri) = uri_from_path(&doc.path) else {
            return Err(RequestError::Shape {
                method: "textDocument/diagnostic",
                detail: format!("{} has no file URI", doc.path.display()),
            });
        };
        let requests = identifiers.into_iter().map(|identifier| {
            let params = lsp_types::DocumentDiagnosticParams {
                text_document: lsp_types::TextDocumentIdentifier { uri: uri.clone() },
                identifier,
                previous_result_id: None,
                work_done_progress_params: Default::default(),
                partial_result_params: Default::default(),
            };
            self.call_until::<DocumentDiagnosticRequest>(params, deadline, cancel)
        });
        let mut items = Vec::new();
        for result in futures_util::future::join_all(requests).await {
            // No previous result id is sent, so every answer is a full report.
            if let Answer::Report(Report::Full(full)) = result? {
                items.extend(full.full_document_diagnostic_report.items);
            }
        }
        // A server that also pushes (rust-analyzer's flycheck) adds what it pushed for this version.
        let state = self.shared.state.lock();
        if let Some(entry) = state.push.get(&doc.path)
            && entry.version.is_some_and(|v| v >= doc.version)
        {
            for d in &entry.items {
                if !items.contains(d) {
                    items.push(d.clone());
                }
            }
        }
        Ok(items)
    }
}
