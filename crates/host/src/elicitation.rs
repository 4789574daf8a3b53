//! Cards as MCP elicitation requests (form mode).

use std::collections::BTreeMap;

use agent_tools_ask::{Answer, Card, CardKind, QuestionPort, Rejection, Reply, SkipKind, Target};
use async_trait::async_trait;
use rmcp::{
    Peer, RoleServer,
    model::{
        ElicitRequestParams, ElicitationAction, ElicitationSchema, EnumSchema,
        PrimitiveSchemaDefinition, StringSchema,
    },
};
use serde_json::Value;

/// The form field holding the chosen option(s): the numbered labels.
pub(super) const CHOICE: &str = "choice";
/// The form field holding typed text.
pub(super) const TEXT: &str = "text";

pub(crate) struct ElicitationPort {
    peer: Peer<RoleServer>,
}

impl ElicitationPort {
    pub(crate) fn new(peer: Peer<RoleServer>) -> Self {
        ElicitationPort { peer }
    }
}

/// The card's text for the form's message; options with their descriptions.
pub(crate) fn message(card: &Card, rejected: Option<&Rejection>) -> String {
    let mut text = String::new();
    if let Some(rejection) = rejected {
        text.push_str(&format!("Your last answer was not accepted: {}.\n\n", rejection.reason));
    }
    text.push_str(&card.render());
    text
}

/// The form: a choice field of the numbered labels (several when multi-select), and a text
/// field when typed answers are allowed.
pub(crate) fn schema(card: &Card) -> ElicitationSchema {
    let mut properties = BTreeMap::new();
    let mut required = Vec::new();
    if !card.options.is_empty() {
        let labels: Vec<String> = card.options.iter().map(|o| o.numbered_label()).collect();
        let choice = if card.multi_select {
            let multi =
                || EnumSchema::builder(labels.clone()).multiselect().title("Choose one or more");
            match multi().min_items(1) {
                // Free text may stand in for a choice; otherwise at least one is needed.
                Ok(at_least_one) if !card.allow_free_text => at_least_one.build(),
                _ => multi().build(),
            }
        } else {
            EnumSchema::builder(labels).title("Choose one").build()
        };
        properties.insert(CHOICE.to_string(), PrimitiveSchemaDefinition::Enum(choice));
        if !card.allow_free_text {
            required.push(CHOICE.to_string());
        }
    }
    if card.allow_free_text {
        let title = match (card.kind, card.options.is_empty()) {
            (CardKind::Approval, _) => "Note (optional)",
            (CardKind::Question, true) => "Your answer",
            (CardKind::Question, false) => "Or type an answer",
        };
        properties.insert(
            TEXT.to_string(),
            PrimitiveSchemaDefinition::String(StringSchema::new().title(title)),
        );
        if card.options.is_empty() {
            required.push(TEXT.to_string());
        }
    }
    let schema = ElicitationSchema::new(properties).with_title(format!("Card {}", card.number));
    if required.is_empty() { schema } else { schema.with_required(required) }
}

/// Reads the accepted form leniently: a choice may come as `2. Label`, `2`, `Label` or a
/// number, alone or in a list.
pub(crate) fn decode(card: &Card, content: Option<&Value>) -> Answer {
    let mut answer = Answer::default();
    let Some(Value::Object(fields)) = content else { return answer };
    let mut choices: Vec<&Value> = Vec::new();
    match fields.get(CHOICE) {
        Some(Value::Array(items)) => choices.extend(items),
        Some(Value::Null) | None => {}
        Some(other) => choices.push(other),
    }
    for choice in choices {
        let decoded = match choice {
            Value::String(s) => card.decode_choice(s).ok_or_else(|| s.clone()),
            Value::Number(n) => {
                n.as_u64().and_then(|n| u32::try_from(n).ok()).ok_or_else(|| n.to_string())
            }
            other => Err(other.to_string()),
        };
        match decoded {
            Ok(number) => answer.selected.push(number),
            Err(unknown) => answer.unrecognised.push(unknown),
        }
    }
    if let Some(Value::String(text)) = fields.get(TEXT)
        && !text.trim().is_empty()
    {
        answer.free_text = Some(text.clone());
    }
    answer
}

#[async_trait]
impl QuestionPort for ElicitationPort {
    async fn present(&self, _target: &Target, card: &Card, rejected: Option<&Rejection>) -> Reply {
        let params = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: message(card, rejected),
            requested_schema: schema(card),
        };
        match self.peer.create_elicitation(params).await {
            Ok(result) => match result.action {
                ElicitationAction::Accept => Reply::Answered(decode(card, result.content.as_ref())),
                ElicitationAction::Decline => Reply::Skipped { how: SkipKind::Declined },
                ElicitationAction::Cancel => Reply::Skipped { how: SkipKind::Dismissed },
                _ => Reply::Skipped { how: SkipKind::Dismissed },
            },
            Err(e) => {
                Reply::NoOperator { reason: format!("the MCP client did not show the card: {e}") }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use agent_tools_ask::{AskRequest, Card, CardKind, OptionSpec};
    use serde_json::json;

    use super::{decode, schema};

    fn card(request: &AskRequest) -> Card {
        Card::from_request(3, CardKind::Question, request)
    }

    #[test]
    fn a_card_becomes_a_form_with_numbered_choices_and_a_text_field() {
        let request = AskRequest::new(
            "Which?",
            vec![OptionSpec::new("Alpha"), OptionSpec::described("Beta", "the safe one")],
        )
        .with_free_text();
        let wire = serde_json::to_string_pretty(&schema(&card(&request))).unwrap();
        insta::assert_snapshot!("elicitation_form_single_choice", wire);
    }

    #[test]
    fn a_multi_select_card_without_free_text_needs_at_least_one_choice() {
        let request = AskRequest::new("Which?", vec![OptionSpec::new("A"), OptionSpec::new("B")])
            .with_multi_select();
        let wire = serde_json::to_string_pretty(&schema(&card(&request))).unwrap();
        insta::assert_snapshot!("elicitation_form_multi_select", wire);
    }

    #[test]
    fn accepted_forms_are_decoded_leniently() {
        let request = AskRequest::new(
            "Which?",
            vec![OptionSpec::new("Alpha"), OptionSpec::new("Beta"), OptionSpec::new("Gamma")],
        );
        let card = card(&request);
        assert_eq!(decode(&card, Some(&json!({"choice": "2. Beta"}))).selected, [2]);
        assert_eq!(decode(&card, Some(&json!({"choice": "gamma"}))).selected, [3]);
        assert_eq!(decode(&card, Some(&json!({"choice": 1}))).selected, [1]);
        assert_eq!(decode(&card, Some(&json!({"choice": ["1", "3. Gamma"]}))).selected, [1, 3]);
        let unknown = decode(&card, Some(&json!({"choice": "Delta"})));
        assert_eq!(unknown.unrecognised, ["Delta"]);
        let text = decode(&card, Some(&json!({"text": " my own "})));
        assert_eq!(text.free_text.as_deref(), Some(" my own "));
        assert!(decode(&card, None).selected.is_empty());
    }
}
