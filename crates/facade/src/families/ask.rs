//! The ask family in the registry: `ask_user` over an `agent_tools_ask::AskSession`, and the same
//! session as the approver of the approval gate, so approval cards share the numbering and the
//! port with questions.

use std::{path::Path, sync::Arc};

use agent_tools_ask::{
    AskError, AskRequest, AskSession, QuestionPort, Target,
    family::{self, FAMILY},
    human_duration,
};
use async_trait::async_trait;
use serde_json::{Value, json};

use super::{BuiltFamily, RunParts};
use crate::{
    ApprovalDecision, ApprovalRequest, Approver, AttachFamily, Attachment, CallContext, Config,
    FamilyDescriptor, Tier, ToolResult, ToolSpec, TypedTool,
};

/// The ask family over one question desk: `ask_user`, and the desk as the approver of the
/// approval gate, so approval cards share the numbering and the port with questions.
pub struct AskFamily {
    session: Arc<AskSession>,
}

impl AskFamily {
    /// Questions go to `target` through `port`, each waiting the default 15 minutes.
    pub fn new(port: Arc<dyn QuestionPort>, target: Target) -> Self {
        AskFamily::over(Arc::new(AskSession::new(port, target)))
    }

    /// Questions go through `session` (for a configured timeout).
    pub fn over(session: Arc<AskSession>) -> Self {
        AskFamily { session }
    }
}

impl AttachFamily for AskFamily {
    fn descriptor(&self) -> &'static FamilyDescriptor {
        &FAMILY
    }

    fn attach(self: Box<Self>, to: &mut Attachment<'_>) {
        let tool = AskTool {
            spec: ToolSpec::declared::<AskRequest>(&family::ASK_USER)
                .with_title("Ask the operator")
                .with_effects(crate::Effects::of(Tier::Read).idempotent(false).open_world(true))
                .with_output_schema::<agent_tools_ask::AskResponse>(),
            session: self.session.clone(),
        };
        to.tool(Arc::new(tool)).approver(Arc::new(SessionApprover(self.session)));
    }
}

/// The table entry: attached when someone can answer, with the configured timeout.
pub(super) const ENTRY: BuiltFamily =
    BuiltFamily { descriptor: &FAMILY, for_run, details: status_details };

fn for_run(run: &RunParts<'_>) -> Option<Box<dyn AttachFamily>> {
    let (port, target) = run.attach.questions.clone()?;
    let session = AskSession::new(port, target).with_timeout(run.config.ask.timeout());
    Some(Box::new(AskFamily::over(Arc::new(session))))
}

struct AskTool {
    spec: ToolSpec,
    session: Arc<AskSession>,
}

#[async_trait]
impl TypedTool for AskTool {
    type Args = AskRequest;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn run(&self, ctx: &CallContext, request: AskRequest) -> ToolResult {
        match self.session.ask_through(call_port(ctx), &request, &ctx.cancel).await {
            Ok(response) => {
                let structured = serde_json::to_value(&response).unwrap_or(Value::Null);
                let text = response.render();
                let result = if response.is_error() {
                    ToolResult::error(text)
                } else {
                    ToolResult::text(text)
                };
                result.with_structured(structured)
            }
            Err(AskError::Invalid(message)) => ToolResult::error(format!("ask_user: {message}")),
            Err(AskError::Cancelled) => ToolResult::error(
                "ask_user: the call was cancelled before the operator answered; nothing was chosen",
            ),
        }
    }
}

/// Shows the approval gate's cards through the run's question desk.
struct SessionApprover(Arc<AskSession>);

#[async_trait]
impl Approver for SessionApprover {
    async fn decide(
        &self,
        request: &ApprovalRequest,
        call: &CallContext,
    ) -> Option<ApprovalDecision> {
        let ask = agent_tools_ask::ApprovalRequest {
            action: request.action(),
            details: Some(request.details()),
        };
        match self.0.approve_through(call_port(call), &ask, &call.cancel).await {
            Ok(response) => Some(ApprovalDecision {
                approved: response.approved,
                reason: response.reason(),
                details: serde_json::to_value(&response).unwrap_or(Value::Null),
            }),
            Err(AskError::Cancelled) => None,
            Err(AskError::Invalid(message)) => Some(ApprovalDecision {
                approved: false,
                reason: format!("the approval card could not be shown ({message})"),
                details: json!({"status": "invalid"}),
            }),
        }
    }
}

/// The call's own card port, when its host answers cards per call.
fn call_port(call: &CallContext) -> Option<&dyn QuestionPort> {
    call.cards.as_ref().map(|cards| &*cards.0)
}

/// What `agent-tools status` says about questions and approvals here.
fn status_details(root: &Path, config: &Config) -> Vec<String> {
    let _ = root;
    vec![
        "ask_user is registered when someone can answer: an MCP client that declares the \
         elicitation capability, or `agent-tools call` run from a terminal"
            .to_string(),
        format!(
            "a card waits {} for an answer ([ask] timeout_seconds = {})",
            human_duration(config.ask.timeout()),
            config.ask.timeout_seconds
        ),
        format!(
            "approval policy: {} ([approval] policy; none, before_write or before_exec)",
            config.approval.policy.as_str()
        ),
    ]
}

#[cfg(test)]
mod tests {
    use agent_tools_ask::{Answer, Reply, SkipKind, ports::channel::channel_port};
    use serde_json::json;

    use super::*;
    use crate::{ApprovalPolicy, RegistryBuilder, RunInfo, SurfaceKind, run::Attach};

    #[test]
    fn ask_user_is_attached_only_when_someone_can_answer() {
        let (port, _inbox) = channel_port(1);
        let config = Config::default();
        let capsule: Arc<dyn agent_tools_support::capsule::Capsule> =
            Arc::new(agent_tools_support::capsule::OnHost);
        let names = |attach: &Attach| -> Vec<String> {
            let run = RunParts { root: Path::new("/"), config: &config, attach, capsule: &capsule };
            let builder = for_run(&run)
                .into_iter()
                .fold(RegistryBuilder::new(), |builder, family| builder.with_boxed_family(family));
            builder.build().tools().iter().map(|t| t.spec().name.clone()).collect()
        };
        assert!(names(&Attach::default()).is_empty());
        let asks = Attach::default().with_questions(Arc::new(port), Target::new("x"));
        assert_eq!(names(&asks), ["ask_user"]);
    }

    #[tokio::test]
    async fn questions_and_approvals_share_the_port_and_the_numbering() {
        let dir = tempfile::tempdir().unwrap();
        let (port, mut inbox) = channel_port(4);
        let registry = RegistryBuilder::new()
            .with_reference_file_tools()
            .with_family(AskFamily::new(Arc::new(port), Target::new("the harness")))
            .with_approval_policy(ApprovalPolicy::BeforeWrite)
            .build();
        let operator = tokio::spawn(async move {
            let question = inbox.recv().await.expect("question card");
            assert_eq!(question.card.number, 1);
            question.reply(Reply::Answered(Answer::options([2])));
            let approval = inbox.recv().await.expect("approval card");
            assert_eq!(approval.card.number, 2);
            assert_eq!(approval.card.kind, agent_tools_ask::CardKind::Approval);
            approval.reply(Reply::Skipped { how: SkipKind::Declined });
        });
        let surface = registry.surface(SurfaceKind::Build);
        let ctx = surface.context(&RunInfo::new(dir.path()), None);
        let asked = surface
            .call(
                &ctx,
                "ask_user",
                json!({"question": "Which?", "options": [{"label": "A"}, {"label": "B"}]}),
            )
            .await;
        assert!(!asked.is_error, "{}", asked.text);
        assert_eq!(asked.text, "Card 1 answered by the harness.\nChosen: 2. B");
        assert_eq!(asked.structured.as_ref().unwrap()["status"], "answered");
        let write = surface.call(&ctx, "write", json!({"path": "a.txt", "content": "x"})).await;
        assert!(write.is_error);
        assert!(
            write.text.contains("the harness declined approval card 2; a declined approval denies"),
            "{}",
            write.text
        );
        assert!(!dir.path().join("a.txt").exists());
        operator.await.unwrap();
    }

    #[tokio::test]
    async fn an_invalid_request_is_an_error_for_the_model() {
        let (port, _inbox) = channel_port(1);
        let registry = RegistryBuilder::new()
            .with_family(AskFamily::new(Arc::new(port), Target::new("x")))
            .build();
        let surface = registry.surface(SurfaceKind::Plan);
        let ctx = surface.context(&RunInfo::new("/"), None);
        let result = surface.call(&ctx, "ask_user", json!({"question": "Proceed?"})).await;
        assert!(result.is_error);
        assert!(
            result.text.starts_with("ask_user: the card would have no options"),
            "{}",
            result.text
        );
    }
}
