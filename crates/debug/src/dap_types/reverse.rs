//! The requests adapters make of us: `runInTerminal` (start the debuggee) and
//! `startDebugging` (a child session, which this client refuses).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{ReverseRequest, messages::RequestMessage};

/// The adapter asks us to start the debuggee.
#[derive(Debug, Clone, Copy)]
pub enum RunInTerminal {}

impl ReverseRequest for RunInTerminal {
    const COMMAND: &'static str = "runInTerminal";
    type Arguments = RunInTerminalArguments;
    type Body = RunInTerminalBody;
}

/// The adapter asks us to start a child debug session.
#[derive(Debug, Clone, Copy)]
pub enum StartDebugging {}

impl ReverseRequest for StartDebugging {
    const COMMAND: &'static str = "startDebugging";
    type Arguments = StartDebuggingArguments;
    type Body = Value;
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct RunInTerminalArguments {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    pub args: Vec<String>,
    /// A variable set to `null` is removed from the environment.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub env: Option<BTreeMap<String, Option<String>>>,
}

#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunInTerminalBody {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub process_id: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shell_process_id: Option<i64>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct StartDebuggingArguments {
    pub configuration: Value,
    pub request: String,
}

/// A reverse request, read by its command.
#[derive(Debug, Clone)]
pub enum Reverse {
    RunInTerminal(RunInTerminalArguments),
    StartDebugging(StartDebuggingArguments),
    /// A command we do not know, or known arguments of the wrong shape (`why` says which).
    Unsupported {
        command: String,
        why: String,
    },
}

/// A reverse request: its sequence number (our answer's `request_seq`) and what it asks.
#[derive(Debug, Clone)]
pub struct IncomingRequest {
    pub seq: i64,
    pub request: Reverse,
}

impl IncomingRequest {
    pub fn parse(message: RequestMessage) -> IncomingRequest {
        fn typed<R: ReverseRequest>(
            arguments: Value,
            wrap: impl FnOnce(R::Arguments) -> Reverse,
        ) -> Reverse {
            let raw =
                if arguments.is_null() { Value::Object(Default::default()) } else { arguments };
            match serde_json::from_value::<R::Arguments>(raw) {
                Ok(parsed) => wrap(parsed),
                Err(e) => Reverse::Unsupported {
                    command: R::COMMAND.to_string(),
                    why: format!("its arguments are not the protocol's: {e}"),
                },
            }
        }
        let request = match message.command.as_str() {
            RunInTerminal::COMMAND => {
                typed::<RunInTerminal>(message.arguments, Reverse::RunInTerminal)
            }
            StartDebugging::COMMAND => {
                typed::<StartDebugging>(message.arguments, Reverse::StartDebugging)
            }
            other => Reverse::Unsupported {
                command: other.to_string(),
                why: format!("unknown request `{other}`: this client does not support it"),
            },
        };
        IncomingRequest { seq: message.seq, request }
    }

    /// The command's name, for our answer.
    pub fn command(&self) -> &str {
        match &self.request {
            Reverse::RunInTerminal(_) => RunInTerminal::COMMAND,
            Reverse::StartDebugging(_) => StartDebugging::COMMAND,
            Reverse::Unsupported { command, .. } => command,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn parse(command: &str, arguments: Value) -> IncomingRequest {
        IncomingRequest::parse(RequestMessage { seq: 4, command: command.into(), arguments })
    }

    #[test]
    fn reverse_requests_are_read_by_command_and_anything_else_is_refused_with_a_reason() {
        let run = parse(
            "runInTerminal",
            json!({"kind": "integrated", "args": ["/bin/prog", "-v"], "env": {"A": "1", "B": null}}),
        );
        assert_eq!((run.seq, run.command()), (4, "runInTerminal"));
        let Reverse::RunInTerminal(arguments) = run.request else { panic!("not runInTerminal") };
        assert_eq!(arguments.args, ["/bin/prog", "-v"]);
        let env = arguments.env.unwrap();
        assert_eq!((env["A"].as_deref(), env["B"].as_deref()), (Some("1"), None));
        let Reverse::Unsupported { why, .. } = parse("runInTerminal", json!({"args": [1]})).request
        else {
            panic!("malformed arguments were accepted");
        };
        assert!(why.contains("not the protocol's"), "{why}");
        let unknown = parse("handshake", Value::Null);
        assert_eq!(unknown.command(), "handshake");
        assert!(
            matches!(unknown.request, Reverse::Unsupported { why, .. } if why.contains("unknown request `handshake`"))
        );
        assert!(matches!(parse("startDebugging", Value::Null).request, Reverse::StartDebugging(_)));
    }
}
