//! The narrow port to whoever answers cards: `QuestionPort`, its `Target`, and what it replies.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::card::Card;

/// Who a card is shown to: a conversation's operator, a terminal, an MCP client's user.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Target {
    /// Names the operator's side in results, for example `the terminal` or
    /// `the MCP client claude-code 1.2`.
    pub name: String,
}

impl Target {
    pub fn new(name: impl Into<String>) -> Self {
        Target { name: name.into() }
    }
}

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

/// Presents cards to a target and returns what the operator did.
///
/// A port never invents an answer: if no human can answer, it returns
/// [`Reply::NoOperator`] at once. The session owns numbering, validation, deduplication and
/// the timeout; a port only shows and reads. When an answer was rejected, the session presents
/// the same card again with `rejected` set, and the port should show the reason.
#[async_trait]
pub trait QuestionPort: Send + Sync {
    async fn present(&self, target: &Target, card: &Card, rejected: Option<&Rejection>) -> Reply;
}

/// A port for runs without an operator: every card fails closed at once.
#[derive(Debug, Clone)]
pub struct NoOperatorPort {
    reason: String,
}

impl NoOperatorPort {
    pub fn new(reason: impl Into<String>) -> Self {
        NoOperatorPort { reason: reason.into() }
    }
}

#[async_trait]
impl QuestionPort for NoOperatorPort {
    async fn present(
        &self,
        _target: &Target,
        _card: &Card,
        _rejected: Option<&Rejection>,
    ) -> Reply {
        Reply::NoOperator { reason: self.reason.clone() }
    }
}
