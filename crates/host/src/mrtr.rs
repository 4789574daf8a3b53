//! Multi round-trip requests (SEP-2322) for cards on 2026-07-28 connections, where the server
//! may no longer send requests of its own.
//!
//! A call that needs the operator (`ask_user`, an approval card) keeps running in its own task;
//! its card becomes the answer to the client's `tools/call`: `resultType: "input_required"`
//! with an `elicitation/create` form (the same form as on legacy connections) and a
//! `requestState`. The client retries the call with `inputResponses` and that state; the answer
//! goes to the waiting card and the call goes on, to its result or to the next card.
//!
//! `requestState` is a token tagged with an HMAC under a secret of this process
//! (`request_state`), bound to the run, the tool call's identity (name and arguments) and a
//! short expiry; it names a call parked here and is good for one retry. A forged, replayed,
//! expired or re-targeted state is refused with a message saying why.

use std::{
    collections::{BTreeMap, HashMap},
    sync::Mutex,
    time::{Duration, Instant},
};

use agent_tools_ask::{Card, QuestionPort, Rejection, Reply, SkipKind, Target};
use async_trait::async_trait;
use rmcp::model::{
    ElicitRequest, ElicitRequestParams, ElicitationAction, InputRequest, InputRequiredResult,
};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use super::{
    elicitation,
    request_state::{self, Claims, StateKey},
};
use agent_tools::ToolResult;

/// The key of the one input request a round carries.
const CARD_KEY: &str = "card";

/// What a running call tells the request that waits on it.
enum CallEvent {
    Done(ToolResult),
    NeedsInput { card: Box<Card>, rejected: Option<Rejection>, answer: oneshot::Sender<Reply> },
}

/// The run-wide question port of a 2026-07-28 connection. A card reaches the client only as
/// the answer to the `tools/call` that raised it, through that call's [`CallCardPort`]; a card
/// raised anywhere else fails closed, saying why.
pub(super) struct MrtrPort;

#[async_trait]
impl QuestionPort for MrtrPort {
    async fn present(
        &self,
        _target: &Target,
        _card: &Card,
        _rejected: Option<&Rejection>,
    ) -> Reply {
        Reply::NoOperator {
            reason: "this card was raised outside a client's tools/call, so the 2026-07-28 \
                     client cannot be asked (multi round-trip requests answer only the call \
                     that asked)"
                .into(),
        }
    }
}

/// The question port of one `tools/call` on a 2026-07-28 connection (the call's
/// `CallContext::cards`): a card goes up the call's channel and is answered by the client's
/// retry.
struct CallCardPort(mpsc::Sender<CallEvent>);

#[async_trait]
impl QuestionPort for CallCardPort {
    async fn present(&self, _target: &Target, card: &Card, rejected: Option<&Rejection>) -> Reply {
        let (answer, reply) = oneshot::channel();
        let event = CallEvent::NeedsInput {
            card: Box::new(card.clone()),
            rejected: rejected.cloned(),
            answer,
        };
        if self.0.send(event).await.is_err() {
            return Reply::NoOperator { reason: "the MCP client went away".into() };
        }
        reply.await.unwrap_or(Reply::NoOperator {
            reason: "the MCP client did not retry the call with an answer before the card \
                     expired"
                .into(),
        })
    }
}

/// A call waiting for the client's retry.
struct Parked {
    expires: Instant,
    card: Box<Card>,
    answer: oneshot::Sender<Reply>,
    events: mpsc::Receiver<CallEvent>,
}

/// The parked calls of one run, by the nonce of their `requestState`.
pub(super) struct ParkedCalls {
    /// The run's identity in its tokens.
    run: String,
    parked: Mutex<HashMap<String, Parked>>,
}

impl Default for ParkedCalls {
    fn default() -> Self {
        ParkedCalls { run: uuid::Uuid::new_v4().simple().to_string(), parked: Default::default() }
    }
}

/// How long a card waits for the client's retry.
pub(super) const STATE_TTL: Duration = Duration::from_secs(15 * 60);

/// What the request handler does next.
pub(super) enum Round {
    Complete(ToolResult),
    InputRequired(InputRequiredResult),
}

impl ParkedCalls {
    /// Starts a call in its own task, with a card port of its own (`start` gets it and returns
    /// the call), and answers its first round: its result, or its first card. This module owns
    /// the call's rounds from here on: the card channel, the parked call, each resumption.
    pub(super) async fn begin<F>(
        &self,
        tool: &str,
        args: &Value,
        start: impl FnOnce(agent_tools::CallCards) -> F,
    ) -> Round
    where
        F: std::future::Future<Output = ToolResult> + Send + 'static,
    {
        let (events, rx) = mpsc::channel(4);
        let call = start(agent_tools::CallCards(std::sync::Arc::new(CallCardPort(events.clone()))));
        tokio::spawn(async move {
            let result = call.await;
            let _ = events.send(CallEvent::Done(result)).await;
        });
        self.next(tool, args, rx).await
    }

    /// Waits for the call's next event: its result, or a card (parked under a fresh state).
    async fn next(&self, tool: &str, args: &Value, mut events: mpsc::Receiver<CallEvent>) -> Round {
        match events.recv().await {
            Some(CallEvent::Done(result)) => Round::Complete(result),
            None => Round::Complete(ToolResult::error(format!(
                "{tool}: the call ended without a result"
            ))),
            Some(CallEvent::NeedsInput { card, rejected, answer }) => {
                let form = ElicitRequestParams::FormElicitationParams {
                    meta: None,
                    message: elicitation::message(&card, rejected.as_ref()),
                    requested_schema: elicitation::schema(&card),
                };
                let claims = Claims::new(&self.run, tool, args, STATE_TTL);
                let state = request_state::issue(StateKey::process(), &claims);
                let mut requests = BTreeMap::new();
                requests.insert(
                    CARD_KEY.to_string(),
                    InputRequest::Elicitation(ElicitRequest::new(form)),
                );
                let parked = Parked { expires: Instant::now() + STATE_TTL, card, answer, events };
                let mut table = self.parked.lock().unwrap_or_else(|e| e.into_inner());
                table.retain(|_, p| p.expires > Instant::now());
                table.insert(claims.nonce, parked);
                Round::InputRequired(InputRequiredResult::new(Some(requests), Some(state)))
            }
        }
    }

    /// Resumes the call parked under `state` with the client's answer; an error result says
    /// why a state is refused.
    pub(super) async fn resume(
        &self,
        tool: &str,
        args: &Value,
        state: &str,
        responses: Option<&BTreeMap<String, Value>>,
    ) -> Round {
        let refuse = |why: &dyn std::fmt::Display| {
            Round::Complete(ToolResult::error(format!(
                "{tool}: requestState refused: {why}; call the tool again without requestState"
            )))
        };
        let now = request_state::unix_now();
        let claims =
            match request_state::verify(StateKey::process(), state, &self.run, tool, args, now) {
                Ok(claims) => claims,
                Err(refusal) => return refuse(&refusal),
            };
        let parked = self.parked.lock().unwrap_or_else(|e| e.into_inner()).remove(&claims.nonce);
        let Some(parked) = parked else {
            return refuse(&"it was already used (a requestState is good for one retry)");
        };
        let reply = match responses.and_then(|r| r.get(CARD_KEY)) {
            Some(response) => reply_from(&parked.card, response),
            None => Reply::NoOperator {
                reason: format!("the client's retry carried no `inputResponses.{CARD_KEY}`"),
            },
        };
        let _ = parked.answer.send(reply);
        self.next(tool, args, parked.events).await
    }
}

/// The client's elicitation result as a card reply (the same reading as legacy elicitation).
fn reply_from(card: &Card, response: &Value) -> Reply {
    let action = response.get("action").and_then(Value::as_str);
    match action {
        Some("accept") => Reply::Answered(elicitation::decode(card, response.get("content"))),
        Some("decline") => Reply::Skipped { how: SkipKind::Declined },
        Some("cancel") => Reply::Skipped { how: SkipKind::Dismissed },
        _ => match serde_json::from_value::<rmcp::model::ElicitResult>(response.clone()) {
            Ok(result) if result.action == ElicitationAction::Accept => {
                Reply::Answered(elicitation::decode(card, result.content.as_ref()))
            }
            _ => Reply::Skipped { how: SkipKind::Dismissed },
        },
    }
}
