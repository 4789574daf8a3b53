//! ask_user: question cards through a question port.
#![doc = include_str!("../README.md")]

mod card;
mod config;
pub mod family;
mod outcome;
mod port;
pub mod ports;
mod reply;
mod session;

pub use crate::{
    card::{AskRequest, Card, CardKind, CardOption, Checked, Chosen, MAX_OPTIONS, OptionSpec},
    config::AskConfig,
    outcome::{ApprovalRequest, ApprovalResponse, AskResponse, Outcome, human_duration},
    port::{NoOperatorPort, QuestionPort, Target},
    reply::{Answer, Rejection, Reply, SkipKind},
    session::{ALLOW, AskError, AskSession, DEFAULT_TIMEOUT, DENY, MAX_REJECTIONS},
};

/// The tool's name.
pub const TOOL_NAME: &str = "ask_user";

/// The tool's description, as the model reads it.
pub const TOOL_DESCRIPTION: &str = "Ask the operator one question on a numbered card and wait \
for the answer: only for a decision you cannot make or find out that changes what you do next; \
else decide, go on, and say what you assumed. Give 2–6 options (recommended first) and/or \
allow_free_text. A skip is a success: go on under a stated assumption, do not ask again. A \
timeout or no operator is an error; nothing is answered for you. The same question twice returns \
the first outcome.";
