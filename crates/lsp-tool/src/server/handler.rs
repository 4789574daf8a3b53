//! What the reader task does with a server's own messages: notifications (diagnostics pushed,
//! `$/progress`, status, log messages) update the shared state, and every server request is
//! answered (configuration, dynamic registrations, workspace folders; edits are declined).

use std::{collections::HashMap, path::PathBuf};

use parking_lot::Mutex;
use serde_json::Value;
use tokio::sync::Notify;

use super::{
    WorkDone,
    messages::{ServerNotification, ServerRequest},
    watched,
};
use crate::{
    paths::{path_from_uri, uri_from_path},
    transport::Handler,
};

/// The diagnostics a server last pushed for a file.
#[derive(Debug, Clone)]
pub(super) struct PushEntry {
    pub(super) version: Option<i32>,
    pub(super) items: Vec<lsp_types::Diagnostic>,
    pub(super) seq: u64,
}

/// What the server's messages told so far.
#[derive(Default)]
pub(super) struct SharedState {
    /// Active progress by token (begun, not ended).
    pub(super) progress: HashMap<String, WorkDone>,
    /// Whether the server signalled that its project is loaded or loading (progress began, or
    /// it logged its ready message).
    pub(super) warmed_up: bool,
    /// rust-analyzer's `experimental/serverStatus`.
    pub(super) quiescent: Option<bool>,
    pub(super) push: HashMap<PathBuf, PushEntry>,
    /// Incremented on every publishDiagnostics.
    pub(super) push_seq: u64,
    /// Dynamic registrations of `textDocument/diagnostic`: registration id → identifier.
    pub(super) pull_registrations: Vec<(String, Option<String>)>,
    /// The files the server asked to hear about (`workspace/didChangeWatchedFiles`).
    pub(super) file_watchers: Vec<watched::WatchedPattern>,
}

/// The part of a server the reader task touches.
pub(super) struct Shared {
    pub(super) name: String,
    pub(super) root: PathBuf,
    pub(super) settings: Value,
    pub(super) ready_message: Option<String>,
    pub(super) state: Mutex<SharedState>,
    pub(super) changed: Notify,
    /// The pool's activity counter, bumped when this server's progress changes.
    pub(super) activity: tokio::sync::watch::Sender<u64>,
}

/// Looks up a dotted section (`python.analysis`) in the settings.
fn lookup_section(settings: &Value, section: Option<&str>) -> Value {
    let Some(section) = section.filter(|s| !s.is_empty()) else { return settings.clone() };
    let mut current = settings;
    for part in section.split('.') {
        match current.get(part) {
            Some(next) => current = next,
            None => return Value::Null,
        }
    }
    current.clone()
}

impl Handler for Shared {
    fn notification(&self, method: &str, params: Value) {
        tracing::trace!(server = %self.name, "<- {method} {params}");
        let message = match ServerNotification::parse(method, params) {
            Ok(message) => message,
            Err(e) => {
                tracing::debug!(server = %self.name, "ignored a malformed notification: {e}");
                return;
            }
        };
        let busy_changed = matches!(
            message,
            ServerNotification::Progress(_)
                | ServerNotification::ServerStatus(_)
                | ServerNotification::AnalyzerStatus(_)
        );
        match message {
            ServerNotification::PublishDiagnostics(p) => {
                let Some(path) = path_from_uri(&p.uri) else { return };
                let mut state = self.state.lock();
                state.push_seq += 1;
                let seq = state.push_seq;
                state
                    .push
                    .insert(path, PushEntry { version: p.version, items: p.diagnostics, seq });
            }
            ServerNotification::Progress(p) => {
                let token = match p.token {
                    lsp_types::NumberOrString::Number(n) => n.to_string(),
                    lsp_types::NumberOrString::String(s) => s,
                };
                let lsp_types::ProgressParamsValue::WorkDone(value) = p.value;
                let mut state = self.state.lock();
                match value {
                    lsp_types::WorkDoneProgress::Begin(begin) => {
                        state.warmed_up = true;
                        state.progress.insert(
                            token,
                            WorkDone {
                                title: begin.title,
                                message: begin.message,
                                percentage: begin.percentage,
                            },
                        );
                    }
                    lsp_types::WorkDoneProgress::Report(report) => {
                        if let Some(p) = state.progress.get_mut(&token) {
                            if report.message.is_some() {
                                p.message = report.message;
                            }
                            if report.percentage.is_some() {
                                p.percentage = report.percentage;
                            }
                        }
                    }
                    lsp_types::WorkDoneProgress::End(_) => {
                        state.progress.remove(&token);
                    }
                }
            }
            ServerNotification::ServerStatus(status) => {
                self.state.lock().quiescent = status.quiescent;
            }
            ServerNotification::AnalyzerStatus(status) => {
                let mut state = self.state.lock();
                if status.is_analyzing {
                    state.progress.insert(
                        "$/analyzerStatus".into(),
                        WorkDone { title: "analyzing".into(), ..Default::default() },
                    );
                } else {
                    state.progress.remove("$/analyzerStatus");
                }
            }
            ServerNotification::Message(message) => {
                tracing::debug!(server = %self.name, "{method}: {message}");
                match &self.ready_message {
                    Some(ready) if message.contains(ready.as_str()) => {
                        self.state.lock().warmed_up = true;
                    }
                    _ => return,
                }
            }
            ServerNotification::Other => {
                tracing::trace!(server = %self.name, "notification {method}");
                return;
            }
        }
        if busy_changed {
            // After the state changed, so a woken call reads the new state.
            self.activity.send_modify(|n| *n += 1);
        }
        self.changed.notify_waiters();
    }

    fn request(&self, method: &str, params: Value) -> Result<Value, (i64, String)> {
        tracing::trace!(server = %self.name, "<- request {method} {params}");
        let request = ServerRequest::parse(method, params).map_err(|e| (-32602, e))?;
        let reply = match request {
            ServerRequest::Configuration(p) => Ok(Value::Array(
                p.items
                    .iter()
                    .map(|item| lookup_section(&self.settings, item.section.as_deref()))
                    .collect(),
            )),
            ServerRequest::RegisterCapability(p) => {
                let mut state = self.state.lock();
                for reg in p.registrations {
                    state.register(&self.root, reg);
                }
                Ok(Value::Null)
            }
            ServerRequest::UnregisterCapability(p) => {
                let mut state = self.state.lock();
                for reg in p.unregisterations {
                    state.pull_registrations.retain(|(r, _)| *r != reg.id);
                    state.file_watchers.retain(|w| w.registration != reg.id);
                }
                Ok(Value::Null)
            }
            ServerRequest::Acknowledge => Ok(Value::Null),
            ServerRequest::ShowDocument => {
                Ok(to_value(lsp_types::ShowDocumentResult { success: false }))
            }
            ServerRequest::WorkspaceFolders => Ok(to_value(workspace_folders(&self.root))),
            ServerRequest::ApplyEdit => Ok(to_value(lsp_types::ApplyWorkspaceEditResponse {
                applied: false,
                failure_reason: Some(
                    "this client applies edits only through its lsp_rename tool".into(),
                ),
                failed_change: None,
            })),
            ServerRequest::Unsupported => {
                Err((-32601, format!("method not supported by this client: {method}")))
            }
        };
        self.changed.notify_waiters();
        reply
    }
}

impl SharedState {
    /// Takes note of a dynamic registration the client acts on: pull diagnostics and watched
    /// files.
    fn register(&mut self, root: &std::path::Path, reg: lsp_types::Registration) {
        let options = reg.register_options.unwrap_or(Value::Null);
        if reg.method == <lsp_types::request::DocumentDiagnosticRequest as lsp_types::request::Request>::METHOD {
            // Only the identifier counts; servers leave out fields lsp-types requires.
            #[derive(serde::Deserialize)]
            struct Identifier {
                identifier: Option<String>,
            }
            let identifier =
                serde_json::from_value::<Identifier>(options).ok().and_then(|o| o.identifier);
            self.pull_registrations.push((reg.id, identifier));
        } else if reg.method == <lsp_types::notification::DidChangeWatchedFiles as lsp_types::notification::Notification>::METHOD {
            match serde_json::from_value::<lsp_types::DidChangeWatchedFilesRegistrationOptions>(options) {
                Ok(o) => self.file_watchers.extend(watched::patterns(root, &reg.id, &o.watchers)),
                Err(e) => tracing::debug!("ignored a malformed file watcher registration: {e}"),
            }
        }
    }
}

/// The one workspace folder of a server: its project root.
pub(crate) fn workspace_folders(root: &std::path::Path) -> Vec<lsp_types::WorkspaceFolder> {
    let name = root.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
    uri_from_path(root).map(|uri| lsp_types::WorkspaceFolder { uri, name }).into_iter().collect()
}

/// A typed answer as the JSON the transport sends (these types always serialize).
fn to_value(answer: impl serde::Serialize) -> Value {
    serde_json::to_value(answer).unwrap_or(Value::Null)
}
