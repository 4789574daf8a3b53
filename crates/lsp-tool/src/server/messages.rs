//! Messages a server sends to the client, parsed once into typed variants (lsp-types where the
//! protocol defines them), so that handling matches on variants, not on method strings and
//! JSON fields.

use lsp_types::{
    ConfigurationParams, ProgressParams, PublishDiagnosticsParams, RegistrationParams,
    UnregistrationParams,
    notification::{self, Notification},
    request::{self, Request},
};
use serde::Deserialize;
use serde_json::Value;

/// A notification from the server.
#[derive(Debug)]
pub(super) enum ServerNotification {
    PublishDiagnostics(PublishDiagnosticsParams),
    Progress(ProgressParams),
    /// rust-analyzer's `experimental/serverStatus`.
    ServerStatus(ServerStatus),
    /// Dart's `$/analyzerStatus`.
    AnalyzerStatus(AnalyzerStatus),
    /// `window/logMessage` or `window/showMessage`.
    Message(String),
    /// Anything else (logged, not handled).
    Other,
}

#[derive(Debug, Deserialize)]
pub(super) struct ServerStatus {
    pub quiescent: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct AnalyzerStatus {
    #[serde(default)]
    pub is_analyzing: bool,
}

#[derive(Debug, Deserialize)]
struct MessageText {
    message: String,
}

fn is<N: Notification>(method: &str) -> bool {
    method == N::METHOD
}

fn is_request<R: Request>(method: &str) -> bool {
    method == R::METHOD
}

impl ServerNotification {
    /// Parses `params` of `method`; a known method whose params do not parse is an error.
    pub(super) fn parse(method: &str, params: Value) -> Result<ServerNotification, String> {
        let typed = |e: serde_json::Error| format!("{method}: {e}");
        Ok(if is::<notification::PublishDiagnostics>(method) {
            ServerNotification::PublishDiagnostics(serde_json::from_value(params).map_err(typed)?)
        } else if is::<notification::Progress>(method) {
            ServerNotification::Progress(serde_json::from_value(params).map_err(typed)?)
        } else if method == "experimental/serverStatus" {
            ServerNotification::ServerStatus(serde_json::from_value(params).map_err(typed)?)
        } else if method == "$/analyzerStatus" {
            ServerNotification::AnalyzerStatus(serde_json::from_value(params).map_err(typed)?)
        } else if is::<notification::LogMessage>(method) || is::<notification::ShowMessage>(method)
        {
            let text: MessageText = serde_json::from_value(params).map_err(typed)?;
            ServerNotification::Message(text.message)
        } else {
            ServerNotification::Other
        })
    }
}

/// A request from the server.
#[derive(Debug)]
pub(super) enum ServerRequest {
    Configuration(ConfigurationParams),
    RegisterCapability(RegistrationParams),
    UnregisterCapability(UnregistrationParams),
    /// Requests answered with `null`: progress creation, refreshes, message prompts.
    Acknowledge,
    ShowDocument,
    WorkspaceFolders,
    ApplyEdit,
    Unsupported,
}

impl ServerRequest {
    /// Parses `params` of `method`; a known method whose params do not parse is an error.
    pub(super) fn parse(method: &str, params: Value) -> Result<ServerRequest, String> {
        let typed = |e: serde_json::Error| format!("{method}: {e}");
        Ok(if is_request::<request::WorkspaceConfiguration>(method) {
            ServerRequest::Configuration(serde_json::from_value(params).map_err(typed)?)
        } else if is_request::<request::RegisterCapability>(method) {
            ServerRequest::RegisterCapability(serde_json::from_value(params).map_err(typed)?)
        } else if is_request::<request::UnregisterCapability>(method) {
            ServerRequest::UnregisterCapability(serde_json::from_value(params).map_err(typed)?)
        } else if is_request::<request::WorkDoneProgressCreate>(method)
            || is_request::<request::WorkspaceDiagnosticRefresh>(method)
            || is_request::<request::SemanticTokensRefresh>(method)
            || is_request::<request::InlayHintRefreshRequest>(method)
            || is_request::<request::InlineValueRefreshRequest>(method)
            || is_request::<request::CodeLensRefresh>(method)
            || method == "workspace/foldingRange/refresh"
            || is_request::<request::ShowMessageRequest>(method)
        {
            ServerRequest::Acknowledge
        } else if is_request::<request::ShowDocument>(method) {
            ServerRequest::ShowDocument
        } else if is_request::<request::WorkspaceFoldersRequest>(method) {
            ServerRequest::WorkspaceFolders
        } else if is_request::<request::ApplyWorkspaceEdit>(method) {
            ServerRequest::ApplyEdit
        } else {
            ServerRequest::Unsupported
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_unregistration_is_read_with_the_protocols_spelling() {
        let params =
            json!({"unregisterations": [{"id": "7", "method": "textDocument/diagnostic"}]});
        let Ok(ServerRequest::UnregisterCapability(p)) =
            ServerRequest::parse("client/unregisterCapability", params)
        else {
            panic!("not parsed");
        };
        assert_eq!(p.unregisterations[0].id, "7");
    }

    #[test]
    fn a_known_method_with_bad_params_is_an_error_that_names_it() {
        let err = ServerNotification::parse("$/progress", json!({"token": 1})).expect_err("bad");
        assert!(err.starts_with("$/progress: "), "{err}");
        assert!(matches!(
            ServerNotification::parse("$/unknown", json!(null)),
            Ok(ServerNotification::Other)
        ));
    }

    #[test]
    fn progress_begin_report_and_end_parse() {
        for value in [
            json!({"kind": "begin", "title": "indexing", "percentage": 10}),
            json!({"kind": "report", "message": "3/40"}),
            json!({"kind": "end"}),
        ] {
            let parsed =
                ServerNotification::parse("$/progress", json!({"token": "t", "value": value}));
            assert!(matches!(parsed, Ok(ServerNotification::Progress(_))), "{parsed:?}");
        }
    }
}
