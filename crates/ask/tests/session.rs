//! The question desk with a scripted port: each outcome, validation, rejection back to the port,
//! deduplication, the timeout, numbering across cards, approvals, and the provided ports.

use std::{collections::VecDeque, sync::Arc, time::Duration};

use agent_tools_ask::{
    Answer, ApprovalRequest, AskError, AskRequest, AskResponse, AskSession, Card, CardKind,
    NoOperatorPort, OptionSpec, Outcome, QuestionPort, Rejection, Reply, SkipKind, Target,
    ports::{channel::channel_port, terminal::TerminalPort},
};
use async_trait::async_trait;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

/// Replies from a script, in order; when the script runs out, the operator stays silent.
#[derive(Default)]
struct ScriptedPort {
    replies: Mutex<VecDeque<Reply>>,
    seen: Mutex<Vec<(Card, Option<Rejection>)>>,
}

impl ScriptedPort {
    fn new(replies: impl IntoIterator<Item = Reply>) -> Arc<Self> {
        Arc::new(ScriptedPort {
            replies: Mutex::new(replies.into_iter().collect()),
            seen: Mutex::default(),
        })
    }

    fn cards(&self) -> Vec<Card> {
        self.seen.lock().iter().map(|(c, _)| c.clone()).collect()
    }

    fn rejections(&self) -> Vec<String> {
        self.seen.lock().iter().filter_map(|(_, r)| r.as_ref().map(|r| r.reason.clone())).collect()
    }
}

#[async_trait]
impl QuestionPort for ScriptedPort {
    async fn present(&self, _target: &Target, card: &Card, rejected: Option<&Rejection>) -> Reply {
        self.seen.lock().push((card.clone(), rejected.cloned()));
        let next = self.replies.lock().pop_front();
        match next {
            Some(reply) => reply,
            None => std::future::pending().await,
        }
    }
}

fn session(port: Arc<ScriptedPort>) -> AskSession {
    AskSession::new(port, Target::new("the operator"))
}

fn db_question() -> AskRequest {
    AskRequest::new(
        "Which database should the cache use?",
        vec![
            OptionSpec::described("Redis", "recommended: already deployed"),
            OptionSpec::new("SQLite"),
            OptionSpec::new("Postgres"),
        ],
    )
    .with_context("The cache layer is the next step; the schema depends on it.")
}

fn answered(n: u32) -> Reply {
    Reply::Answered(Answer::options([n]))
}

/// Runs `request` on `session` and returns the response.
async fn check(session: &AskSession, request: &AskRequest) -> AskResponse {
    session.ask(request, &CancellationToken::new()).await.expect("an outcome")
}

#[tokio::test]
async fn an_answer_names_the_option_by_number_and_label() {
    let port = ScriptedPort::new([answered(2)]);
    let desk = session(port.clone());
    let response = check(&desk, &db_question()).await;
    assert!(!response.is_error());
    assert_eq!(response.card, Some(1));
    insta::assert_snapshot!(response.render(), @r"
    Card 1 answered by the operator.
    Chosen: 2. SQLite
    ");
    insta::assert_json_snapshot!(response, @r#"
    {
      "card": 1,
      "question": "Which database should the cache use?",
      "status": "answered",
      "selected": [
        {
          "number": 2,
          "label": "SQLite"
        }
      ],
      "answered_by": "the operator",
      "repeated": false
    }
    "#);
    let cards = port.cards();
    assert_eq!(cards.len(), 1);
    assert_eq!(cards[0].kind, CardKind::Question);
    insta::assert_snapshot!(cards[0].render(), @r"
    Card 1 · question
    Which database should the cache use?

    The cache layer is the next step; the schema depends on it.

      1. Redis — recommended: already deployed
      2. SQLite
      3. Postgres

    Choose one number.
    ");
}

#[tokio::test]
async fn free_text_and_several_options_come_back_together() {
    let port =
        ScriptedPort::new([Reply::Answered(Answer::options([3, 1]).with_text("both, for now"))]);
    let desk = session(port);
    let request = db_question().with_multi_select().with_free_text();
    let response = check(&desk, &request).await;
    insta::assert_snapshot!(response.render(), @r"
    Card 1 answered by the operator.
    Chosen options: 3. Postgres, 1. Redis
    Typed answer: both, for now
    ");
}

#[tokio::test]
async fn a_skip_is_a_success_that_says_to_go_on_and_not_ask_again() {
    let port = ScriptedPort::new([Reply::Skipped { how: SkipKind::Declined }]);
    let response = check(&session(port), &db_question()).await;
    assert!(!response.is_error());
    assert_eq!(response.outcome.status(), "skipped");
    insta::assert_snapshot!(response.render(), @"Card 1 declined: the operator declined to answer. This is not an error and not a choice. Continue on a stated assumption: pick what you judge best, say in your next message which assumption you made and why, and do not ask this question again.");
}

#[tokio::test]
async fn a_dismissed_card_is_a_skip_and_says_it_was_cancelled() {
    let port = ScriptedPort::new([Reply::Skipped { how: SkipKind::Dismissed }]);
    let response = check(&session(port), &db_question()).await;
    assert!(!response.is_error());
    assert!(response.render().contains("cancelled it"), "{}", response.render());
}

#[tokio::test(start_paused = true)]
async fn silence_times_out_as_an_error_with_the_same_instruction() {
    let port = ScriptedPort::new([]);
    let desk = session(port).with_timeout(Duration::from_secs(300));
    let response = check(&desk, &db_question()).await;
    assert!(response.is_error());
    assert_eq!(response.outcome, Outcome::TimedOut { after_ms: 300_000 });
    insta::assert_snapshot!(response.render(), @"Card 1 timed out: no answer within 5 min. Nothing was chosen and no answer was assumed for you. Continue on a stated assumption: pick what you judge best, say in your next message which assumption you made and why, and do not ask this question again.");
}

#[tokio::test(start_paused = true)]
async fn the_default_timeout_is_fifteen_minutes() {
    let desk = session(ScriptedPort::new([]));
    assert_eq!(desk.timeout(), Duration::from_secs(15 * 60));
    let response = check(&desk, &db_question()).await;
    assert!(response.render().contains("no answer within 15 min"), "{}", response.render());
}

#[tokio::test]
async fn no_operator_fails_at_once_without_a_card_or_an_invented_answer() {
    let desk =
        AskSession::new(Arc::new(NoOperatorPort::new("headless run")), Target::new("nobody"));
    let response = check(&desk, &db_question()).await;
    assert!(response.is_error());
    assert_eq!(response.card, None);
    insta::assert_snapshot!(response.render(), @"No operator can answer in this run (headless run). No card was shown and no answer was invented. Do not wait for one: continue on a stated assumption and report it, or stop if you cannot go on safely.");
}

#[tokio::test]
async fn a_card_with_no_options_and_no_free_text_is_refused_before_it_is_shown() {
    let port = ScriptedPort::new([]);
    let desk = session(port.clone());
    let err = desk
        .ask(&AskRequest::new("Proceed?", vec![]), &CancellationToken::new())
        .await
        .unwrap_err();
    insta::assert_snapshot!(err.to_string(), @"the card would have no options and no free text, so nobody could answer it; give `options` or set `allow_free_text: true`");
    assert!(port.cards().is_empty());
}

#[tokio::test]
async fn duplicate_labels_are_refused_naming_the_label() {
    let port = ScriptedPort::new([]);
    let desk = session(port.clone());
    let request = AskRequest::new(
        "Which?",
        vec![OptionSpec::new("Keep it"), OptionSpec::new("Drop"), OptionSpec::new("keep  IT")],
    );
    let err = desk.ask(&request, &CancellationToken::new()).await.unwrap_err();
    insta::assert_snapshot!(err.to_string(), @r#"duplicate option label "keep  IT" (options 1 and 3); every option needs a distinct label"#);
    assert!(port.cards().is_empty());
}

#[tokio::test]
async fn an_out_of_range_option_goes_back_to_the_port_not_to_the_model() {
    let port = ScriptedPort::new([answered(7), answered(3)]);
    let desk = session(port.clone());
    let response = check(&desk, &db_question()).await;
    assert!(response.render().contains("Chosen: 3. Postgres"), "{}", response.render());
    assert!(!response.render().contains('7'));
    assert_eq!(port.rejections(), ["option 7 does not exist; choose 1–3"]);
    let cards = port.cards();
    assert_eq!(cards.len(), 2);
    assert_eq!(cards[0], cards[1], "the same card is shown again");
}

#[tokio::test]
async fn several_options_on_a_single_choice_card_are_rejected_back_to_the_port() {
    let port = ScriptedPort::new([Reply::Answered(Answer::options([1, 2])), answered(1)]);
    let desk = session(port.clone());
    let response = check(&desk, &db_question()).await;
    assert!(response.render().contains("Chosen: 1. Redis"));
    assert_eq!(
        port.rejections(),
        ["2 options were chosen, but this card takes exactly one; choose one of 1–3"]
    );
}

#[tokio::test]
async fn text_on_a_card_without_free_text_is_rejected_back_to_the_port() {
    let port = ScriptedPort::new([Reply::Answered(Answer::text("whatever")), answered(2)]);
    let desk = session(port.clone());
    check(&desk, &db_question()).await;
    assert_eq!(port.rejections(), ["this card takes no typed answer; choose one number"]);
}

#[tokio::test]
async fn answers_that_stay_invalid_end_the_card_without_an_answer() {
    let port = ScriptedPort::new([answered(9), answered(0), Reply::Answered(Answer::default())]);
    let desk = session(port.clone());
    let response = check(&desk, &db_question()).await;
    assert!(response.is_error());
    assert_eq!(response.outcome.status(), "unanswered");
    assert_eq!(port.cards().len(), 3);
    assert!(response.render().contains("rejected 3 times"), "{}", response.render());
}

#[tokio::test]
async fn the_same_question_again_returns_the_earlier_outcome_without_a_new_card() {
    let port = ScriptedPort::new([answered(2)]);
    let desk = session(port.clone());
    let first = check(&desk, &db_question()).await;
    let mut again = AskRequest::new(
        "  which DATABASE should the cache use ",
        vec![OptionSpec::new("postgres"), OptionSpec::new("Redis"), OptionSpec::new("SQLITE")],
    );
    again.context = Some("asked differently".into());
    let second = check(&desk, &again).await;
    assert_eq!(port.cards().len(), 1, "no second card");
    assert!(!first.repeated);
    assert!(second.repeated);
    assert_eq!(second.card, Some(1));
    insta::assert_snapshot!(second.render(), @r"
    You asked this before in this run (card 1); the earlier outcome stands and no new card was shown.
    Card 1 answered by the operator.
    Chosen: 2. SQLite
    ");
}

#[tokio::test]
async fn a_skipped_question_stays_skipped_when_asked_again() {
    let port = ScriptedPort::new([Reply::Skipped { how: SkipKind::Declined }, answered(1)]);
    let desk = session(port.clone());
    check(&desk, &db_question()).await;
    let again = check(&desk, &db_question()).await;
    assert_eq!(again.outcome.status(), "skipped");
    assert!(again.repeated);
    assert_eq!(port.cards().len(), 1);
}

#[tokio::test]
async fn cards_are_numbered_across_questions_and_approvals() {
    let port = ScriptedPort::new([
        answered(1),
        Reply::Skipped { how: SkipKind::Declined },
        answered(1),
        answered(2),
    ]);
    let desk = session(port.clone());
    let cancel = CancellationToken::new();
    let a = check(&desk, &db_question()).await;
    let b = desk
        .approve(&ApprovalRequest { action: "`write` on a.txt".into(), details: None }, &cancel)
        .await
        .unwrap();
    let c = check(
        &desk,
        &AskRequest::new(
            "Tabs or spaces?",
            vec![OptionSpec::new("Tabs"), OptionSpec::new("Spaces")],
        ),
    )
    .await;
    let d = desk
        .approve(&ApprovalRequest { action: "`write` on a.txt".into(), details: None }, &cancel)
        .await
        .unwrap();
    assert_eq!([a.card, b.card, c.card, d.card], [Some(1), Some(2), Some(3), Some(4)]);
    let kinds: Vec<CardKind> = port.cards().iter().map(|c| c.kind).collect();
    assert_eq!(
        kinds,
        [CardKind::Question, CardKind::Approval, CardKind::Question, CardKind::Approval]
    );
}

#[tokio::test]
async fn an_approval_is_denied_by_a_skip() {
    let port = ScriptedPort::new([Reply::Skipped { how: SkipKind::Declined }]);
    let desk = session(port.clone());
    let request = ApprovalRequest {
        action: "`write` (write tier)".into(),
        details: Some("path: src/main.rs".into()),
    };
    let decision = desk.approve(&request, &CancellationToken::new()).await.unwrap();
    assert!(!decision.approved);
    insta::assert_snapshot!(decision.reason(), @"the operator declined approval card 1; a declined approval denies");
    insta::assert_snapshot!(port.cards()[0].render(), @r"
    Card 1 · approval
    Allow `write` (write tier)?

    path: src/main.rs

      1. Allow — run it, this once
      2. Deny — do not run it

    Choose one number, or type an answer.
    ");
}

#[tokio::test]
async fn only_an_explicit_allow_approves() {
    let cancel = CancellationToken::new();
    let request = ApprovalRequest { action: "`eval`".into(), details: None };
    let cases = [
        (answered(1), true),
        (answered(2), false),
        (Reply::Answered(Answer::text("looks fine")), false),
        (Reply::Skipped { how: SkipKind::Dismissed }, false),
    ];
    for (reply, approved) in cases {
        let desk = session(ScriptedPort::new([reply.clone()]));
        let decision = desk.approve(&request, &cancel).await.unwrap();
        assert_eq!(decision.approved, approved, "{reply:?}: {}", decision.reason());
    }
}

#[tokio::test(start_paused = true)]
async fn an_approval_that_times_out_is_denied() {
    let desk = session(ScriptedPort::new([])).with_timeout(Duration::from_secs(60));
    let request = ApprovalRequest { action: "`eval`".into(), details: None };
    let decision = desk.approve(&request, &CancellationToken::new()).await.unwrap();
    assert!(!decision.approved);
    insta::assert_snapshot!(decision.reason(), @"approval card 1 timed out after 60 s; silence never approves");
}

#[tokio::test]
async fn a_cancelled_call_leaves_no_outcome_behind() {
    let port = ScriptedPort::new([]);
    let desk = session(port.clone());
    let cancel = CancellationToken::new();
    cancel.cancel();
    let err = desk.ask(&db_question(), &cancel).await.unwrap_err();
    assert_eq!(err, AskError::Cancelled);
    port.replies.lock().push_back(answered(1));
    let response = check(&desk, &db_question()).await;
    assert!(!response.repeated, "a cancelled card is not an outcome to repeat");
    assert_eq!(response.outcome.status(), "answered");
}

#[tokio::test]
async fn the_channel_port_carries_cards_to_a_harness_and_back() {
    let (port, mut inbox) = channel_port(4);
    let desk = AskSession::new(Arc::new(port), Target::new("the harness"));
    let harness = tokio::spawn(async move {
        let first = inbox.recv().await.expect("a card");
        assert_eq!(first.card.number, 1);
        assert!(first.rejected.is_none());
        first.reply(answered(4));
        let again = inbox.recv().await.expect("the card again");
        assert!(again.rejected.is_some());
        again.reply(answered(1));
        // The harness goes away: later cards have no operator.
    });
    let response = check(&desk, &db_question()).await;
    assert!(response.render().contains("Chosen: 1. Redis"), "{}", response.render());
    harness.await.unwrap();
    let later =
        check(&desk, &AskRequest::new("Next?", vec![OptionSpec::new("A"), OptionSpec::new("B")]))
            .await;
    assert_eq!(later.outcome.status(), "no_operator");
}

fn terminal(input: &str) -> (TerminalPort, tokio::io::DuplexStream) {
    let (screen, far) = tokio::io::duplex(64 * 1024);
    let port = TerminalPort::new(std::io::Cursor::new(input.as_bytes().to_vec()), screen);
    (port, far)
}

async fn screen_text(mut far: tokio::io::DuplexStream) -> String {
    use tokio::io::AsyncReadExt;
    let mut text = String::new();
    far.read_to_string(&mut text).await.unwrap();
    text.lines().map(str::trim_end).collect::<Vec<_>>().join("\n")
}

#[tokio::test]
async fn the_terminal_port_reads_numbers_and_shows_rejections() {
    let (port, far) = terminal("\n5\n2\n");
    let desk = AskSession::new(Arc::new(port), Target::new("the terminal"));
    let response = check(&desk, &db_question()).await;
    assert!(response.render().contains("Chosen: 2. SQLite"), "{}", response.render());
    drop(desk);
    insta::assert_snapshot!(screen_text(far).await, @r"
    Card 1 · question
    Which database should the cache use?

    The cache layer is the next step; the schema depends on it.

      1. Redis — recommended: already deployed
      2. SQLite
      3. Postgres

    Choose one number.
    card 1 (a number; `skip` to skip)> card 1 (a number; `skip` to skip)> Not accepted: option 5 does not exist; choose 1–3
    card 1 (a number; `skip` to skip)>
    ");
}

#[tokio::test]
async fn the_terminal_port_reads_several_numbers_labels_text_and_skip() {
    let request = db_question().with_multi_select().with_free_text();
    let cases = [
        ("1, 3\n", "Chosen options: 1. Redis, 3. Postgres"),
        ("sqlite\n", "Chosen: 2. SQLite"),
        ("use whatever is cheapest\n", "Typed answer: use whatever is cheapest"),
        ("skip\n", "declined to answer"),
    ];
    for (input, expected) in cases {
        let (port, _far) = terminal(input);
        let desk = AskSession::new(Arc::new(port), Target::new("the terminal"));
        let response = check(&desk, &request).await;
        assert!(response.render().contains(expected), "{input:?}: {}", response.render());
    }
}

#[tokio::test]
async fn a_closed_terminal_means_no_operator() {
    let (port, _far) = terminal("");
    let desk = AskSession::new(Arc::new(port), Target::new("the terminal"));
    let response = check(&desk, &db_question()).await;
    assert_eq!(
        response.outcome,
        Outcome::NoOperator { reason: "the terminal closed (end of input)".into() }
    );
}

#[test]
fn the_request_schema_is_stable() {
    let schema = schemars::schema_for!(AskRequest);
    insta::assert_json_snapshot!("ask_request_schema", schema);
}
