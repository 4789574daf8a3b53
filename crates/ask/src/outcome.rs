//! Outcomes of a card and their model-facing text: answered, skipped, timed out, no operator.
//!
//! Nothing here invents an answer: every outcome other than `answered` tells the model to go on
//! under an assumption it states, or to stop, and never names a choice for it.

use std::time::Duration;

use serde::Serialize;

use crate::{card::Chosen, reply::SkipKind};

/// What became of a card.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Outcome {
    /// The operator chose options and/or typed text.
    Answered {
        selected: Vec<Chosen>,
        #[serde(skip_serializing_if = "Option::is_none")]
        free_text: Option<String>,
        answered_by: String,
    },
    /// The operator declined or dismissed the card. A success for a question; a denial for an
    /// approval.
    Skipped { how: SkipKind, by: String },
    /// Nobody answered within the timeout.
    TimedOut { after_ms: u64 },
    /// Nobody can answer in this run; no card was shown.
    NoOperator { reason: String },
    /// Every answer given was invalid, several times over.
    Unanswered { rejections: Vec<String> },
}

impl Outcome {
    /// The machine-readable status: `answered`, `skipped`, `timed_out`, `no_operator`, `unanswered`.
    pub fn status(&self) -> &'static str {
        match self {
            Outcome::Answered { .. } => "answered",
            Outcome::Skipped { .. } => "skipped",
            Outcome::TimedOut { .. } => "timed_out",
            Outcome::NoOperator { .. } => "no_operator",
            Outcome::Unanswered { .. } => "unanswered",
        }
    }
}

/// The result of one `ask_user` call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct AskResponse {
    /// The card's number; `None` when no card could be shown (no operator).
    pub card: Option<u32>,
    pub question: String,
    #[serde(flatten)]
    pub outcome: Outcome,
    /// True when this question was asked before in the run and the earlier outcome was returned
    /// without showing a new card.
    pub repeated: bool,
    /// What to do now when no answer came, so that a client that shows the model only this
    /// payload (not the text) carries the instruction too.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
}

const GO_ON: &str = "Continue on a stated assumption: pick what you judge best, say in your \
                     next message which assumption you made and why, and do not ask this \
                     question again.";

/// What the model does after an outcome without an answer: go on under a stated assumption, or
/// (with nobody to answer) that or stop.
pub(crate) fn next_step(outcome: &Outcome) -> Option<String> {
    match outcome {
        Outcome::Answered { .. } => None,
        Outcome::NoOperator { .. } => Some(NO_OPERATOR.to_string()),
        _ => Some(GO_ON.to_string()),
    }
}

const NO_OPERATOR: &str = "Do not wait for one: continue on a stated assumption and report it, \
                           or stop if you cannot go on safely.";

impl AskResponse {
    /// Timed out, no operator and unanswered are errors; answered and skipped are not.
    pub fn is_error(&self) -> bool {
        matches!(
            self.outcome,
            Outcome::TimedOut { .. } | Outcome::NoOperator { .. } | Outcome::Unanswered { .. }
        )
    }

    /// The model-facing text.
    pub fn render(&self) -> String {
        let card = self.card.map_or_else(|| "The question".to_string(), |n| format!("Card {n}"));
        let mut out = String::new();
        if self.repeated {
            out.push_str(&format!(
                "You asked this before in this run ({}); the earlier outcome stands and no new card \
                 was shown.\n",
                self.card.map_or_else(|| "no card was shown".to_string(), |n| format!("card {n}"))
            ));
        }
        match &self.outcome {
            Outcome::Answered { selected, free_text, answered_by } => {
                out.push_str(&format!("{card} answered by {answered_by}."));
                if !selected.is_empty() {
                    let chosen: Vec<String> =
                        selected.iter().map(|c| format!("{}. {}", c.number, c.label)).collect();
                    let noun = if selected.len() == 1 { "Chosen" } else { "Chosen options" };
                    out.push_str(&format!("\n{noun}: {}", chosen.join(", ")));
                }
                if let Some(text) = free_text {
                    out.push_str(&format!("\nTyped answer: {text}"));
                }
            }
            Outcome::Skipped { how: SkipKind::Declined, by } => {
                out.push_str(&format!(
                    "{card} declined: {by} declined to answer. This is not an error and not a \
                     choice. {GO_ON}"
                ));
            }
            Outcome::Skipped { how: SkipKind::Dismissed, by } => {
                out.push_str(&format!(
                    "{card} dismissed: {by} cancelled it (closed the card without answering). \
                     This is not an error and not a choice. {GO_ON}"
                ));
            }
            Outcome::TimedOut { after_ms } => {
                out.push_str(&format!(
                    "{card} timed out: no answer within {}. Nothing was chosen and no answer was \
                     assumed for you. {GO_ON}",
                    human_duration(Duration::from_millis(*after_ms))
                ));
            }
            Outcome::NoOperator { reason } => {
                out.push_str(&format!(
                    "No operator can answer in this run ({reason}). No card was shown and no \
                     answer was invented. {NO_OPERATOR}"
                ));
            }
            Outcome::Unanswered { rejections } => {
                out.push_str(&format!(
                    "{card} got no valid answer: the operator's answers were rejected {} times \
                     (last: {}). Nothing was chosen. {GO_ON}",
                    rejections.len(),
                    rejections.last().map_or("", String::as_str)
                ));
            }
        }
        out
    }
}

/// What to ask permission for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ApprovalRequest {
    /// One line: what will happen, for example "`write` (write tier) on src/main.rs".
    pub action: String,
    /// The details the operator judges by: the arguments, where the call came from.
    pub details: Option<String>,
}

/// The decision on an approval card. Only an explicit "Allow" approves.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ApprovalResponse {
    pub card: Option<u32>,
    pub approved: bool,
    #[serde(flatten)]
    pub outcome: Outcome,
    /// A note the operator typed, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl ApprovalResponse {
    /// Why the call was denied, or that it was approved, in one sentence.
    pub fn reason(&self) -> String {
        let card =
            self.card.map_or_else(|| "the approval".to_string(), |n| format!("approval card {n}"));
        let mut out = match &self.outcome {
            Outcome::Answered { selected, answered_by, .. } => {
                if self.approved {
                    format!("{answered_by} allowed it ({card})")
                } else if selected.is_empty() {
                    format!(
                        "{answered_by} wrote a note on {card} but did not choose Allow, so it is denied"
                    )
                } else {
                    format!("{answered_by} denied it ({card})")
                }
            }
            Outcome::Skipped { how: SkipKind::Declined, by } => {
                format!("{by} declined {card}; a declined approval denies")
            }
            Outcome::Skipped { how: SkipKind::Dismissed, by } => {
                format!("{by} cancelled {card}; a cancelled approval denies")
            }
            Outcome::TimedOut { after_ms } => format!(
                "{card} timed out after {}; silence never approves",
                human_duration(Duration::from_millis(*after_ms))
            ),
            Outcome::NoOperator { reason } => {
                format!("nobody can approve it in this run ({reason}); approvals fail closed")
            }
            Outcome::Unanswered { .. } => format!("{card} got no valid answer; that denies"),
        };
        if let Some(note) = &self.note {
            out.push_str(&format!(". The operator's note: {note}"));
        }
        out
    }
}

/// `15 min`, `90 s`, `1 h 5 min`: the one wording of durations.
pub use agent_tools_support::duration::human as human_duration;
