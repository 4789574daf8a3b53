//! `AskSession`: one run's card desk. Numbers cards, validates requests and answers, returns the
//! earlier outcome for a repeated question, and enforces the timeout.

use std::{
    collections::HashMap,
    sync::{
        Arc,
        atomic::{AtomicU32, Ordering},
    },
    time::Duration,
};

use parking_lot::Mutex;
use tokio::sync::OnceCell;
use tokio_util::sync::CancellationToken;

use crate::{
    card::{AskRequest, Card, CardKind, OptionSpec},
    outcome::{ApprovalRequest, ApprovalResponse, AskResponse, Outcome},
    port::{QuestionPort, Target},
    reply::{Rejection, Reply},
};

/// How long a card waits for an answer unless the run says otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(15 * 60);

/// How many invalid answers to one card are sent back before the card gives up.
pub const MAX_REJECTIONS: usize = 3;

/// Why a request produced no outcome.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AskError {
    /// The request cannot become a card; the text says what to change.
    #[error("{0}")]
    Invalid(String),
    /// The call was abandoned (the client cancelled or the run ended) before an outcome.
    #[error("the question was cancelled before it was answered")]
    Cancelled,
}

/// Labels of an approval card's options.
pub const ALLOW: &str = "Allow";
pub const DENY: &str = "Deny";

/// One run's questions: every card of the run goes through here.
pub struct AskSession {
    port: Arc<dyn QuestionPort>,
    target: Target,
    timeout: Duration,
    next_card: AtomicU32,
    asked: Mutex<HashMap<String, Arc<OnceCell<AskResponse>>>>,
}

impl std::fmt::Debug for AskSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AskSession")
            .field("target", &self.target)
            .field("timeout", &self.timeout)
            .field("next_card", &self.next_card)
            .finish_non_exhaustive()
    }
}

impl AskSession {
    /// A session that shows cards to `target` through `port`, with the default 15-minute timeout.
    pub fn new(port: Arc<dyn QuestionPort>, target: Target) -> Self {
        AskSession {
            port,
            target,
            timeout: DEFAULT_TIMEOUT,
            next_card: AtomicU32::new(1),
            asked: Mutex::new(HashMap::new()),
        }
    }

    /// How long each card waits for an answer (at least one millisecond).
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout.max(Duration::from_millis(1));
        self
    }

    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    pub fn target(&self) -> &Target {
        &self.target
    }

    /// Asks the operator: validates the request, shows a numbered card (or returns the earlier
    /// outcome of the same question), and waits for an answer, a skip or the timeout.
    pub async fn ask(
        &self,
        request: &AskRequest,
        cancel: &CancellationToken,
    ) -> Result<AskResponse, AskError> {
        self.ask_through(None, request, cancel).await
    }

    /// [`ask`](Self::ask), with the card shown through `port` when given instead of the
    /// session's own: for a host that answers cards per call (a 2026-07-28 MCP connection
    /// answers a card through the retry of the very `tools/call` that raised it).
    pub async fn ask_through(
        &self,
        port: Option<&dyn QuestionPort>,
        request: &AskRequest,
        cancel: &CancellationToken,
    ) -> Result<AskResponse, AskError> {
        request.validate().map_err(AskError::Invalid)?;
        let cell = {
            let mut asked = self.asked.lock();
            asked.entry(request.dedup_key()).or_default().clone()
        };
        let mut shown_here = false;
        let response = cell
            .get_or_try_init(|| {
                shown_here = true;
                async {
                    let number = self.take_number();
                    let card = Card::from_request(number, CardKind::Question, request);
                    let outcome = self.run_card(port, &card, cancel).await?;
                    Ok::<_, AskError>(self.response(card, outcome))
                }
            })
            .await?;
        let mut response = response.clone();
        response.repeated = !shown_here;
        Ok(response)
    }

    /// Asks permission for an action on an approval card. Only an explicit "Allow" approves;
    /// a skip, a cancel, a timeout or a missing operator denies. Approvals are never deduplicated:
    /// each action gets its own card.
    pub async fn approve(
        &self,
        request: &ApprovalRequest,
        cancel: &CancellationToken,
    ) -> Result<ApprovalResponse, AskError> {
        self.approve_through(None, request, cancel).await
    }

    /// [`approve`](Self::approve), through `port` when given (see [`ask_through`](Self::ask_through)).
    pub async fn approve_through(
        &self,
        port: Option<&dyn QuestionPort>,
        request: &ApprovalRequest,
        cancel: &CancellationToken,
    ) -> Result<ApprovalResponse, AskError> {
        let ask = AskRequest {
            question: format!("Allow {}?", request.action),
            context: request.details.clone(),
            options: vec![
                OptionSpec::described(ALLOW, "run it, this once"),
                OptionSpec::described(DENY, "do not run it"),
            ],
            allow_free_text: true,
            multi_select: false,
        };
        let number = self.take_number();
        let card = Card::from_request(number, CardKind::Approval, &ask);
        let outcome = self.run_card(port, &card, cancel).await?;
        let response = self.response(card, outcome);
        let (approved, note) = match &response.outcome {
            Outcome::Answered { selected, free_text, .. } => {
                (selected.iter().any(|c| c.label == ALLOW), free_text.clone())
            }
            _ => (false, None),
        };
        Ok(ApprovalResponse { card: response.card, approved, outcome: response.outcome, note })
    }

    fn take_number(&self) -> u32 {
        self.next_card.fetch_add(1, Ordering::SeqCst)
    }

    /// Gives back `number` when no card was shown, if no later card took a number meanwhile.
    fn return_number(&self, number: u32) {
        let _ =
            self.next_card.compare_exchange(number + 1, number, Ordering::SeqCst, Ordering::SeqCst);
    }

    fn response(&self, card: Card, outcome: Outcome) -> AskResponse {
        let shown = !matches!(outcome, Outcome::NoOperator { .. });
        if !shown {
            self.return_number(card.number);
        }
        AskResponse {
            card: shown.then_some(card.number),
            question: card.question,
            next: crate::outcome::next_step(&outcome),
            outcome,
            repeated: false,
        }
    }

    /// Shows `card` until it has a valid answer, a skip, no operator, too many invalid answers,
    /// or the timeout.
    async fn run_card(
        &self,
        port: Option<&dyn QuestionPort>,
        card: &Card,
        cancel: &CancellationToken,
    ) -> Result<Outcome, AskError> {
        let port = port.unwrap_or(&*self.port);
        let deadline = tokio::time::Instant::now() + self.timeout;
        let mut rejection: Option<Rejection> = None;
        let mut rejections: Vec<String> = Vec::new();
        loop {
            let presented = port.present(&self.target, card, rejection.as_ref());
            let reply = tokio::select! {
                reply = tokio::time::timeout_at(deadline, presented) => reply,
                () = cancel.cancelled() => return Err(AskError::Cancelled),
            };
            let Ok(reply) = reply else {
                return Ok(Outcome::TimedOut {
                    after_ms: u64::try_from(self.timeout.as_millis()).unwrap_or(u64::MAX),
                });
            };
            match reply {
                Reply::Answered(answer) => match card.check(&answer) {
                    Ok(checked) => {
                        return Ok(Outcome::Answered {
                            selected: checked.selected,
                            free_text: checked.free_text,
                            answered_by: self.target.name.clone(),
                        });
                    }
                    Err(reason) => {
                        rejections.push(reason.clone());
                        if rejections.len() >= MAX_REJECTIONS {
                            return Ok(Outcome::Unanswered { rejections });
                        }
                        rejection = Some(Rejection { answer, reason });
                    }
                },
                Reply::Skipped { how } => {
                    return Ok(Outcome::Skipped { how, by: self.target.name.clone() });
                }
                Reply::NoOperator { reason } => return Ok(Outcome::NoOperator { reason }),
            }
        }
    }
}
