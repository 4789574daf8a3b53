//! What an operator gives back for a card: an answer (options and text), a skip, no operator
//! at all, and an earlier answer that was not accepted.

use serde::{Deserialize, Serialize};

/// What the operator gave back, before it is checked against the card.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Answer {
    /// Chosen options by number (1-based).
    #[serde(default)]
    pub selected: Vec<u32>,
    /// Typed text, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub free_text: Option<String>,
    /// Choices the port could not map to an option (for example a label that does not exist).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unrecognised: Vec<String>,
}

impl Answer {
    /// Options chosen by number.
    pub fn options(numbers: impl IntoIterator<Item = u32>) -> Self {
        Answer { selected: numbers.into_iter().collect(), ..Default::default() }
    }

    /// A typed answer.
    pub fn text(text: impl Into<String>) -> Self {
        Answer { free_text: Some(text.into()), ..Default::default() }
    }

    pub fn with_text(mut self, text: impl Into<String>) -> Self {
        self.free_text = Some(text.into());
        self
    }
}

/// How an operator skipped a card.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SkipKind {
    /// Explicitly declined to answer (MCP `decline`, a "skip" button).
    Declined,
    /// Closed the card without choosing (MCP `cancel`, Escape).
    Dismissed,
}

/// The port's reply to one presentation of a card.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "reply", rename_all = "snake_case")]
pub enum Reply {
    Answered(Answer),
    Skipped {
        how: SkipKind,
    },
    /// Nobody can answer (no human connected, the terminal closed, the client went away).
    /// Ports return this at once instead of waiting.
    NoOperator {
        reason: String,
    },
}

/// The previous answer to this card and why it was not accepted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rejection {
    pub answer: Answer,
    pub reason: String,
}
