//! The Debug Adapter Protocol's messages as types: one [`Request`] per command this client
//! sends (its arguments and its response body), the events adapters send parsed once into
//! [`Event`], and the reverse requests adapters make of us ([`ReverseRequest`]).
//!
//! Fields an adapter may leave out are optional or defaulted, so a response that omits one
//! reads as before rather than failing: adapters differ in what they send.

mod events;
mod messages;
mod model;
mod requests;
mod reverse;

use serde::{Serialize, de::DeserializeOwned};

pub use self::{events::*, messages::*, model::*, requests::*, reverse::*};

/// A command this client sends: its name on the wire, its arguments and its response body.
pub trait Request {
    const COMMAND: &'static str;
    type Arguments: Serialize;
    type Body: DeserializeOwned;
}

/// A request the adapter sends us (`runInTerminal`, `startDebugging`): its name, its
/// arguments and the body of our answer.
pub trait ReverseRequest {
    const COMMAND: &'static str;
    type Arguments: DeserializeOwned;
    type Body: Serialize;
}
