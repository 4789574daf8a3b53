//! The harness's card handler as the run's question port: with one, `ask_user` is offered and
//! approval cards are shown to it; without one, `ask_user` is absent and approval cards are
//! declined. A handler that raises or returns something unreadable is "no operator" (the card
//! fails closed, a question as an error naming the cause, an approval as a denial), never an
//! answer made up for it.

use std::sync::Arc;

use agent_tools_ask::{Card, QuestionPort, Rejection, Reply, Target};
use async_trait::async_trait;
use pyo3::prelude::*;
use serde_json::json;

/// Shows cards to a Python callable `present(card_json, rejected_json) -> reply_json`
/// (`agent_tools._run` turns it into the harness's `on_card(card)`).
pub(crate) struct HandlerPort {
    present: Arc<Py<PyAny>>,
}

impl HandlerPort {
    pub(crate) fn new(present: Py<PyAny>) -> Self {
        HandlerPort { present: Arc::new(present) }
    }

    /// Who answers, as results name them (`answered_by`).
    pub(crate) fn target() -> Target {
        Target::new("the harness's card handler")
    }
}

#[async_trait]
impl QuestionPort for HandlerPort {
    async fn present(&self, _target: &Target, card: &Card, rejected: Option<&Rejection>) -> Reply {
        let card_json = json!({"card": card, "text": card.render()}).to_string();
        let rejected_json = rejected.map(|r| json!(r).to_string());
        let present = self.present.clone();
        // The handler may wait minutes for a person: on a blocking thread, never a runtime one.
        let replied = tokio::task::spawn_blocking(move || {
            Python::attach(|py| {
                present.call1(py, (card_json, rejected_json))?.extract::<String>(py)
            })
        })
        .await;
        match replied {
            Ok(Ok(text)) => serde_json::from_str(&text).unwrap_or_else(|e| Reply::NoOperator {
                reason: format!("the card handler's reply could not be read ({e}): {text}"),
            }),
            Ok(Err(e)) => Reply::NoOperator { reason: format!("the card handler failed: {e}") },
            Err(e) => Reply::NoOperator { reason: format!("the card handler did not return: {e}") },
        }
    }
}
