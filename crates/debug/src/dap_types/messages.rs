//! The envelopes on the wire: what the adapter sends (a response, an event or a reverse
//! request, told apart by `type`), what we send, and the error body of a failed response.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One message from the adapter.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Message {
    Response(ResponseMessage),
    Event(EventMessage),
    Request(RequestMessage),
}

/// A response to one of our requests, correlated by `request_seq`.
#[derive(Debug, Clone, Deserialize)]
pub struct ResponseMessage {
    pub request_seq: i64,
    #[serde(default)]
    pub success: bool,
    /// Some adapters send it empty on errors: never correlate by it.
    #[serde(default)]
    pub command: String,
    #[serde(default)]
    pub message: Option<String>,
    #[serde(default)]
    pub body: Value,
}

/// An event, its body still raw: [`crate::dap_types::Event::parse`] reads it by name.
#[derive(Debug, Clone, Deserialize)]
pub struct EventMessage {
    #[serde(default)]
    pub event: String,
    #[serde(default)]
    pub body: Value,
}

/// A reverse request, its arguments still raw until its command says what they are.
#[derive(Debug, Clone, Deserialize)]
pub struct RequestMessage {
    #[serde(default)]
    pub seq: i64,
    #[serde(default)]
    pub command: String,
    #[serde(default)]
    pub arguments: Value,
}

/// A request as we send it.
#[derive(Debug, Serialize)]
pub struct OutgoingRequest<'a, A> {
    pub seq: i64,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub command: &'a str,
    pub arguments: &'a A,
}

/// Our answer to a reverse request.
#[derive(Debug, Serialize)]
pub struct OutgoingResponse<'a, B> {
    pub seq: i64,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub request_seq: i64,
    pub command: &'a str,
    pub success: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<&'a str>,
    pub body: B,
}

/// The body of a failed response: a message whose `format` names `{variables}`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ErrorBody {
    pub error: Option<ErrorMessage>,
}

/// The structured error of a failed response.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ErrorMessage {
    pub format: Option<String>,
    /// Strings by the protocol; other values are shown as JSON. Sorted by name.
    pub variables: Option<BTreeMap<String, Value>>,
}

impl ErrorMessage {
    /// `format` with its `{variables}` filled in.
    pub fn text(&self) -> Option<String> {
        let mut text = self.format.clone()?;
        for (key, value) in self.variables.iter().flatten() {
            let value = value.as_str().map_or_else(|| value.to_string(), str::to_string);
            text = text.replace(&format!("{{{key}}}"), &value);
        }
        Some(text)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn messages_are_told_apart_by_type_and_an_error_format_is_filled_in() {
        let message: Message = serde_json::from_value(json!({
            "seq": 9, "type": "response", "request_seq": 2, "success": false, "command": "",
            "body": {"error": {"format": "no {what} at {line}", "variables": {"what": "code", "line": 3}}},
        }))
        .unwrap();
        let Message::Response(response) = message else { panic!("not a response") };
        assert_eq!((response.request_seq, response.success), (2, false));
        let error: ErrorBody = serde_json::from_value(response.body).unwrap();
        assert_eq!(error.error.and_then(|e| e.text()).as_deref(), Some("no code at 3"));
        let event: Message =
            serde_json::from_value(json!({"seq": 1, "type": "event", "event": "initialized"}))
                .unwrap();
        assert!(
            matches!(event, Message::Event(EventMessage { event, .. }) if event == "initialized")
        );
        assert!(serde_json::from_value::<Message>(json!({"seq": 1, "type": "response"})).is_err());
    }
}
