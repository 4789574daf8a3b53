//! The narrow port to whoever answers cards: `QuestionPort` and its `Target`.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::{
    card::Card,
    reply::{Rejection, Reply},
};

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
