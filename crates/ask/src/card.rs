//! What the model asks (`AskRequest`) and what the operator sees (`Card`): numbered options,
//! request validation, answer validation and the normalised form used for deduplication.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::reply::Answer;

/// Most options one card may carry: a card is read by a person, not scrolled.
pub const MAX_OPTIONS: usize = 10;

/// Arguments of `ask_user`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AskRequest {
    /// The question, in a sentence or two.
    pub question: String,
    /// Optional: why you ask, what depends on the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// The choices, numbered in this order (at most 10); the recommended one first, saying so.
    #[serde(default)]
    #[schemars(length(max = 10))]
    pub options: Vec<OptionSpec>,
    /// Accept a typed answer, besides or instead of the options.
    #[serde(default)]
    pub allow_free_text: bool,
    /// Several options may be chosen.
    #[serde(default)]
    pub multi_select: bool,
}

/// One choice of a question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OptionSpec {
    /// 1–5 words.
    pub label: String,
    /// Optional: what choosing it means.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

impl OptionSpec {
    pub fn new(label: impl Into<String>) -> Self {
        OptionSpec { label: label.into(), description: None }
    }

    pub fn described(label: impl Into<String>, description: impl Into<String>) -> Self {
        OptionSpec { label: label.into(), description: Some(description.into()) }
    }
}

impl AskRequest {
    /// A question with `options` and neither free text nor multi-select.
    pub fn new(question: impl Into<String>, options: Vec<OptionSpec>) -> Self {
        AskRequest {
            question: question.into(),
            context: None,
            options,
            allow_free_text: false,
            multi_select: false,
        }
    }

    pub fn with_context(mut self, context: impl Into<String>) -> Self {
        self.context = Some(context.into());
        self
    }

    pub fn with_free_text(mut self) -> Self {
        self.allow_free_text = true;
        self
    }

    pub fn with_multi_select(mut self) -> Self {
        self.multi_select = true;
        self
    }

    /// Checks that the request can become a card; the error says what to change.
    pub fn validate(&self) -> Result<(), String> {
        if self.question.trim().is_empty() {
            return Err("`question` is empty; ask one concrete question".into());
        }
        if self.options.is_empty() && !self.allow_free_text {
            return Err("the card would have no options and no free text, so nobody could \
                 answer it; give `options` or set `allow_free_text: true`"
                .into());
        }
        if self.options.len() > MAX_OPTIONS {
            return Err(format!(
                "{} options is too many for one card (at most {MAX_OPTIONS}); keep the \
                 distinct choices, or set `allow_free_text: true` for the rest",
                self.options.len()
            ));
        }
        let mut seen: Vec<(String, usize)> = Vec::new();
        for (i, option) in self.options.iter().enumerate() {
            let key = normalise(&option.label);
            if key.is_empty() {
                return Err(format!(
                    "option {} has an empty label; give every option a label",
                    i + 1
                ));
            }
            if let Some((_, first)) = seen.iter().find(|(k, _)| *k == key) {
                return Err(format!(
                    "duplicate option label \"{}\" (options {} and {}); every option needs a \
                     distinct label",
                    option.label.trim(),
                    first + 1,
                    i + 1
                ));
            }
            seen.push((key, i));
        }
        if self.multi_select && self.options.len() < 2 {
            return Err("`multi_select` needs at least two options".into());
        }
        Ok(())
    }

    /// The normalised question and options: equal keys are the same question.
    pub(crate) fn dedup_key(&self) -> String {
        let mut labels: Vec<String> = self.options.iter().map(|o| normalise(&o.label)).collect();
        labels.sort();
        format!("{}\u{1f}{}", normalise(&self.question), labels.join("\u{1f}"))
    }
}

/// Lowercase, whitespace collapsed, trailing punctuation removed.
pub(crate) fn normalise(text: &str) -> String {
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase();
    collapsed.trim_end_matches(['?', '.', '!', ':', ' ']).to_string()
}

/// Whether a card asks a question or asks permission for an action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CardKind {
    Question,
    Approval,
}

impl CardKind {
    pub fn as_str(self) -> &'static str {
        match self {
            CardKind::Question => "question",
            CardKind::Approval => "approval",
        }
    }
}

/// One numbered option of a card.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CardOption {
    /// 1-based.
    pub number: u32,
    pub label: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

impl CardOption {
    /// `2. SQLite`: how the option is shown and chosen.
    pub fn numbered_label(&self) -> String {
        format!("{}. {}", self.number, self.label)
    }
}

/// What the operator sees: a numbered card.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Card {
    /// 1, 2, 3 … per run, shared by questions and approvals.
    pub number: u32,
    pub kind: CardKind,
    pub question: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    pub options: Vec<CardOption>,
    pub allow_free_text: bool,
    pub multi_select: bool,
}

/// `text` trimmed, or `None` when nothing is left.
fn trimmed(text: Option<&str>) -> Option<String> {
    text.map(str::trim).filter(|t| !t.is_empty()).map(str::to_string)
}

impl Card {
    /// The card for a validated request.
    pub fn from_request(number: u32, kind: CardKind, request: &AskRequest) -> Card {
        Card {
            number,
            kind,
            question: request.question.trim().to_string(),
            context: trimmed(request.context.as_deref()),
            options: request
                .options
                .iter()
                .zip(1u32..)
                .map(|(o, number)| CardOption {
                    number,
                    label: o.label.trim().to_string(),
                    description: trimmed(o.description.as_deref()),
                })
                .collect(),
            allow_free_text: request.allow_free_text,
            multi_select: request.multi_select,
        }
    }

    pub fn option(&self, number: u32) -> Option<&CardOption> {
        self.options.iter().find(|o| o.number == number)
    }

    /// Reads one choice leniently: `2`, `2.`, `2. SQLite`, `SQLite` (any case).
    pub fn decode_choice(&self, text: &str) -> Option<u32> {
        let text = text.trim();
        let digits: String = text.chars().take_while(char::is_ascii_digit).collect();
        if !digits.is_empty() {
            let rest = text[digits.len()..].trim_start_matches(['.', ')', ':']).trim();
            if let Ok(number) = digits.parse::<u32>() {
                let label_matches = self
                    .option(number)
                    .is_some_and(|o| rest.is_empty() || normalise(rest) == normalise(&o.label));
                if label_matches || rest.is_empty() {
                    return Some(number);
                }
            }
        }
        let wanted = normalise(text);
        self.options.iter().find(|o| normalise(&o.label) == wanted).map(|o| o.number)
    }

    /// The card as plain text, for a terminal or a form's message.
    pub fn render(&self) -> String {
        let mut out = match self.kind {
            CardKind::Question => format!("Card {} · question\n{}\n", self.number, self.question),
            CardKind::Approval => format!("Card {} · approval\n{}\n", self.number, self.question),
        };
        if let Some(context) = &self.context {
            out.push_str(&format!("\n{context}\n"));
        }
        if !self.options.is_empty() {
            out.push('\n');
            for option in &self.options {
                out.push_str(&format!("  {}", option.numbered_label()));
                if let Some(description) = &option.description {
                    out.push_str(&format!(" — {description}"));
                }
                out.push('\n');
            }
        }
        let how = match (self.options.is_empty(), self.multi_select, self.allow_free_text) {
            (true, _, _) => "Type your answer.".to_string(),
            (false, true, true) => "Choose one or more numbers, or type an answer.".to_string(),
            (false, true, false) => "Choose one or more numbers.".to_string(),
            (false, false, true) => "Choose one number, or type an answer.".to_string(),
            (false, false, false) => "Choose one number.".to_string(),
        };
        out.push_str(&format!("\n{how}\n"));
        out
    }

    /// Checks an answer against the card: the chosen options, or why it is rejected.
    pub fn check(&self, answer: &Answer) -> Result<Checked, String> {
        if let Some(unknown) = answer.unrecognised.first() {
            return Err(format!(
                "\"{unknown}\" is not one of the options; choose by number ({})",
                self.number_range()
            ));
        }
        let mut selected: Vec<u32> = Vec::new();
        for &number in &answer.selected {
            if self.option(number).is_none() {
                return Err(if self.options.is_empty() {
                    format!(
                        "option {number} does not exist: this card has no options; type an answer"
                    )
                } else {
                    format!("option {number} does not exist; choose {}", self.number_range())
                });
            }
            if !selected.contains(&number) {
                selected.push(number);
            }
        }
        if selected.len() > 1 && !self.multi_select {
            return Err(format!(
                "{} options were chosen, but this card takes exactly one; choose one of {}",
                selected.len(),
                self.number_range()
            ));
        }
        let free_text = answer
            .free_text
            .as_deref()
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_string);
        if free_text.is_some() && !self.allow_free_text {
            return Err(format!(
                "this card takes no typed answer; choose {}",
                if self.multi_select { "one or more numbers" } else { "one number" }
            ));
        }
        if selected.is_empty() && free_text.is_none() {
            return Err(if self.options.is_empty() {
                "the answer is empty; type an answer".to_string()
            } else {
                format!("the answer chose no option; choose {}", self.number_range())
            });
        }
        Ok(Checked {
            selected: selected
                .into_iter()
                .filter_map(|n| self.option(n))
                .map(|o| Chosen { number: o.number, label: o.label.clone() })
                .collect(),
            free_text,
        })
    }

    fn number_range(&self) -> String {
        match self.options.len() {
            0 => "nothing (no options)".into(),
            1 => "1".into(),
            n => format!("1–{n}"),
        }
    }
}

/// A chosen option, by number and label.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Chosen {
    pub number: u32,
    pub label: String,
}

/// A valid answer: the chosen options and the typed text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checked {
    pub selected: Vec<Chosen>,
    pub free_text: Option<String>,
}
