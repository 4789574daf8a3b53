//! The events adapters send, parsed once by name into [`Event`].

use serde::{Deserialize, de::DeserializeOwned};
use serde_json::Value;

use super::model::{Breakpoint, Capabilities};

/// An event from the adapter.
#[derive(Debug, Clone)]
pub enum Event {
    /// The adapter is ready for configuration requests.
    Initialized,
    Stopped(StoppedBody),
    Continued(ContinuedBody),
    Exited(ExitedBody),
    Terminated,
    Output(OutputBody),
    Thread(ThreadBody),
    Breakpoint(BreakpointBody),
    Module(ModuleBody),
    Process(ProcessBody),
    Capabilities(CapabilitiesBody),
    /// An event this client does not read (`loadedSource`, `progressStart`, …), or one whose
    /// body did not have the protocol's shape.
    Other {
        event: String,
        body: Value,
    },
}

impl Event {
    /// Reads the event `event` from its raw `body`.
    pub fn parse(event: &str, body: Value) -> Event {
        fn typed<T: DeserializeOwned>(
            event: &str,
            body: Value,
            wrap: impl FnOnce(T) -> Event,
        ) -> Event {
            // A missing body reads as an empty one: every field of these bodies is optional.
            let raw = if body.is_null() { Value::Object(Default::default()) } else { body };
            match serde_json::from_value::<T>(raw.clone()) {
                Ok(parsed) => wrap(parsed),
                Err(e) => {
                    tracing::debug!(event, error = %e, "dap event with an unexpected body");
                    Event::Other { event: event.to_string(), body: raw }
                }
            }
        }
        match event {
            "initialized" => Event::Initialized,
            "terminated" => Event::Terminated,
            "stopped" => typed(event, body, Event::Stopped),
            "continued" => typed(event, body, Event::Continued),
            "exited" => typed(event, body, Event::Exited),
            "output" => typed(event, body, Event::Output),
            "thread" => typed(event, body, Event::Thread),
            "breakpoint" => typed(event, body, Event::Breakpoint),
            "module" => typed(event, body, Event::Module),
            "process" => typed(event, body, Event::Process),
            "capabilities" => typed(event, body, Event::Capabilities),
            _ => Event::Other { event: event.to_string(), body },
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct StoppedBody {
    pub reason: Option<String>,
    pub description: Option<String>,
    pub thread_id: Option<i64>,
    pub text: Option<String>,
    pub all_threads_stopped: Option<bool>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ContinuedBody {
    pub thread_id: Option<i64>,
    pub all_threads_continued: Option<bool>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ExitedBody {
    pub exit_code: Option<i64>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct OutputBody {
    pub category: Option<String>,
    pub output: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ThreadBody {
    pub reason: Option<String>,
    pub thread_id: Option<i64>,
}

/// A breakpoint changed (verified later, moved) or was removed.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct BreakpointBody {
    pub reason: Option<String>,
    pub breakpoint: Breakpoint,
}

/// A module loaded, changed or unloaded; its description stays raw.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ModuleBody {
    pub reason: Option<String>,
    pub module: Value,
}

/// The debuggee's process, as the adapter sees it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ProcessBody {
    pub name: Option<String>,
    /// In the adapter's PID namespace.
    pub system_process_id: Option<i64>,
    pub start_method: Option<String>,
}

/// Capabilities that changed after `initialize`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct CapabilitiesBody {
    pub capabilities: Capabilities,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn events_are_read_by_name_and_a_body_of_the_wrong_shape_is_kept_raw() {
        let Event::Stopped(stop) =
            Event::parse("stopped", json!({"reason": "breakpoint", "threadId": 3}))
        else {
            panic!("not a stop");
        };
        assert_eq!((stop.reason.as_deref(), stop.thread_id), (Some("breakpoint"), Some(3)));
        // No body at all: every field of an exit is optional.
        assert!(matches!(
            Event::parse("exited", Value::Null),
            Event::Exited(ExitedBody { exit_code: None })
        ));
        let Event::Breakpoint(changed) = Event::parse(
            "breakpoint",
            json!({"reason": "changed", "breakpoint": {"id": 4, "verified": true}}),
        ) else {
            panic!("not a breakpoint event");
        };
        assert_eq!((changed.breakpoint.id, changed.breakpoint.verified), (Some(4), Some(true)));
        assert!(matches!(
            Event::parse("output", json!({"output": 7})),
            Event::Other { event, .. } if event == "output"
        ));
        assert!(matches!(Event::parse("progressStart", json!({})), Event::Other { .. }));
    }
}
