//! The approval gate: before a write- or exec-tier call runs, an operator approves it.
//!
//! The policy comes from `[approval]` in `agent-tools.toml` (`none`, `before_write`,
//! `before_exec`). The gate sits in [`crate::Surface::call`], after argument validation and
//! before the tool runs, so it applies the same to a model's call and to a nested call from an
//! `eval` cell's `tool()` bridge. An [`Approver`] decides; the ask family provides one that shows
//! an approval card through the run's question port. Only an explicit "allow" runs the call: a
//! skip, a cancel, a timeout, or a run with nobody to ask denies it (fail-closed).

mod card;

use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::tool::{CallContext, Tier, ToolResult, ToolSpec};

/// Which calls need an operator's approval.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalPolicy {
    /// No approvals (the default).
    #[default]
    None,
    /// Ask before every write-tier and exec-tier call.
    #[serde(alias = "before-write", alias = "write")]
    BeforeWrite,
    /// Ask before every exec-tier call.
    #[serde(alias = "before-exec", alias = "exec")]
    BeforeExec,
}

impl ApprovalPolicy {
    /// Whether a call of `tier` needs approval under this policy.
    pub fn requires(self, tier: Tier) -> bool {
        match self {
            ApprovalPolicy::None => false,
            ApprovalPolicy::BeforeWrite => tier >= Tier::Write,
            ApprovalPolicy::BeforeExec => tier >= Tier::Exec,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalPolicy::None => "none",
            ApprovalPolicy::BeforeWrite => "before_write",
            ApprovalPolicy::BeforeExec => "before_exec",
        }
    }
}

/// `[approval]` in `agent-tools.toml`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ApprovalConfig {
    /// `none` (default), `before_write` (write- and exec-tier calls) or `before_exec`.
    pub policy: ApprovalPolicy,
}

/// One call waiting for approval.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ApprovalRequest {
    pub tool: String,
    pub tier: Tier,
    /// The surface the call came through.
    pub surface: String,
    pub arguments: Value,
    /// Set for a nested call (for example from an `eval` cell).
    pub parent_call_id: Option<String>,
}

/// An operator's decision on one call.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalDecision {
    pub approved: bool,
    /// Why, in one sentence (who allowed or denied it, or why nobody could).
    pub reason: String,
    /// Details for the structured result (card number, status).
    pub details: Value,
}

/// Decides on approvals, typically by asking the operator.
#[async_trait]
pub trait Approver: Send + Sync {
    /// The decision on `request`, made for the call `call` (its `cancel`, and its own card port
    /// when the host gave it one). `None` when the call was abandoned before a decision.
    async fn decide(
        &self,
        request: &ApprovalRequest,
        call: &CallContext,
    ) -> Option<ApprovalDecision>;
}

/// What the builder collects: the policy and who approves.
#[derive(Clone, Default)]
pub(crate) struct ApprovalSetup {
    pub(crate) policy: ApprovalPolicy,
    pub(crate) approver: Option<Arc<dyn Approver>>,
}

impl ApprovalSetup {
    /// The gate, when the policy asks for one.
    pub(crate) fn into_gate(self) -> Option<Arc<ApprovalGate>> {
        (self.policy != ApprovalPolicy::None)
            .then(|| Arc::new(ApprovalGate { policy: self.policy, approver: self.approver }))
    }
}

/// Applied by [`crate::Surface::call`] to every call.
pub(crate) struct ApprovalGate {
    policy: ApprovalPolicy,
    approver: Option<Arc<dyn Approver>>,
}

impl ApprovalGate {
    /// `None` when the call may run; otherwise the result that replaces it.
    pub(crate) async fn check(
        &self,
        ctx: &CallContext,
        spec: &ToolSpec,
        args: &Value,
    ) -> Option<ToolResult> {
        if !self.policy.requires(spec.tier) {
            return None;
        }
        let request = ApprovalRequest {
            tool: spec.name.clone(),
            tier: spec.tier,
            surface: ctx.surface.kind.clone(),
            arguments: args.clone(),
            parent_call_id: ctx.parent_call_id.clone(),
        };
        let decision = match &self.approver {
            Some(approver) => match approver.decide(&request, ctx).await {
                Some(decision) => decision,
                None => {
                    return Some(ToolResult::error(format!(
                        "{}: did not run; the call was cancelled while waiting for approval",
                        spec.name
                    )));
                }
            },
            None => ApprovalDecision {
                approved: false,
                reason: format!(
                    "the approval policy `{}` ([approval] in agent-tools.toml) needs an operator's \
                     approval for {}-tier calls, but nobody can be asked in this run (no question \
                     port: the MCP client did not declare elicitation, or `agent-tools call` is \
                     not running in a terminal); approvals fail closed",
                    self.policy.as_str(),
                    spec.tier
                ),
                details: json!({"status": "no_operator"}),
            },
        };
        if decision.approved {
            return None;
        }
        let structured = json!({
            "approval": {
                "approved": false,
                "policy": self.policy.as_str(),
                "tool": spec.name,
                "reason": decision.reason,
                "details": decision.details,
            }
        });
        Some(
            ToolResult::error(format!(
                "{}: did not run, approval denied: {}. Do not retry the same call unchanged; \
                 take another approach, or explain in your reply what you need and why.",
                spec.name, decision.reason
            ))
            .with_structured(structured),
        )
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use serde_json::json;

    use super::*;
    use crate::{RegistryBuilder, RunInfo, SurfaceKind, Tool};

    /// Decides by a fixed answer and records what it was asked.
    struct FixedApprover {
        approve: fn(&ApprovalRequest) -> bool,
        seen: Mutex<Vec<ApprovalRequest>>,
    }

    #[async_trait]
    impl Approver for FixedApprover {
        async fn decide(
            &self,
            request: &ApprovalRequest,
            _call: &CallContext,
        ) -> Option<ApprovalDecision> {
            self.seen.lock().unwrap_or_else(|e| e.into_inner()).push(request.clone());
            let approved = (self.approve)(request);
            Some(ApprovalDecision {
                approved,
                reason: if approved { "allowed".into() } else { "the operator denied it".into() },
                details: json!({}),
            })
        }
    }

    /// An exec-tier tool that writes through a nested call, as an `eval` cell's `tool()` does.
    struct Nest {
        spec: ToolSpec,
    }

    #[derive(schemars::JsonSchema, serde::Deserialize)]
    #[allow(dead_code, reason = "only the schema is used")]
    struct NoArgs {}

    #[async_trait]
    impl Tool for Nest {
        fn spec(&self) -> &ToolSpec {
            &self.spec
        }

        async fn call(&self, ctx: &CallContext, _args: Value) -> ToolResult {
            ctx.call_nested("write", json!({"path": "nested.txt", "content": "x\n"}), Tier::Exec)
                .await
        }
    }

    fn approver(approve: fn(&ApprovalRequest) -> bool) -> Arc<FixedApprover> {
        Arc::new(FixedApprover { approve, seen: Mutex::default() })
    }

    async fn call(
        policy: ApprovalPolicy,
        approver: Option<Arc<FixedApprover>>,
        dir: &std::path::Path,
        tool: &str,
        args: Value,
    ) -> ToolResult {
        let mut builder = RegistryBuilder::new()
            .with_reference_file_tools()
            .with_tool(
                "test",
                Arc::new(Nest { spec: ToolSpec::new::<NoArgs>("nest", "nests", Tier::Exec) }),
            )
            .with_approval_policy(policy);
        if let Some(approver) = approver {
            builder = builder.with_approver(approver);
        }
        let registry = builder.build();
        let surface = registry.surface(SurfaceKind::Build);
        let ctx = surface.context(&RunInfo::new(dir), None);
        surface.call(&ctx, tool, args).await
    }

    #[tokio::test]
    async fn a_denied_write_does_not_run_and_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let decider = approver(|_| false);
        let result = call(
            ApprovalPolicy::BeforeWrite,
            Some(decider.clone()),
            dir.path(),
            "write",
            json!({"path": "a.txt", "content": "x\n"}),
        )
        .await;
        assert!(result.is_error);
        assert_eq!(
            result.text,
            "write: did not run, approval denied: the operator denied it. Do not retry the same \
             call unchanged; take another approach, or explain in your reply what you need and why."
        );
        assert!(!dir.path().join("a.txt").exists());
        let seen = decider.seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 1);
        assert_eq!(
            seen[0].action(),
            "`write` (write-tier) on a.txt: creates or replaces a.txt with 2 characters (1 line)"
        );
        assert!(seen[0].details().contains("path: a.txt"), "{}", seen[0].details());
    }

    #[tokio::test]
    async fn an_approved_write_runs_and_reads_are_never_asked() {
        let dir = tempfile::tempdir().unwrap();
        let decider = approver(|_| true);
        let args = json!({"path": "a.txt", "content": "x\n"});
        let result =
            call(ApprovalPolicy::BeforeWrite, Some(decider.clone()), dir.path(), "write", args)
                .await;
        assert!(!result.is_error, "{}", result.text);
        let read = call(
            ApprovalPolicy::BeforeWrite,
            Some(decider.clone()),
            dir.path(),
            "read",
            json!({"path": "a.txt"}),
        )
        .await;
        assert!(!read.is_error, "{}", read.text);
        assert_eq!(decider.seen.lock().unwrap().len(), 1, "only the write was asked about");
    }

    #[tokio::test]
    async fn before_exec_lets_writes_through() {
        let dir = tempfile::tempdir().unwrap();
        let decider = approver(|_| false);
        let args = json!({"path": "a.txt", "content": "x\n"});
        let result =
            call(ApprovalPolicy::BeforeExec, Some(decider.clone()), dir.path(), "write", args)
                .await;
        assert!(!result.is_error, "{}", result.text);
        assert!(decider.seen.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn without_anyone_to_ask_an_approval_fails_closed() {
        let dir = tempfile::tempdir().unwrap();
        let args = json!({"path": "a.txt", "content": "x\n"});
        let result = call(ApprovalPolicy::BeforeWrite, None, dir.path(), "write", args).await;
        assert!(result.is_error);
        assert!(
            result
                .text
                .contains("the approval policy `before_write` ([approval] in agent-tools.toml)"),
            "{}",
            result.text
        );
        assert!(!dir.path().join("a.txt").exists());
    }

    #[tokio::test]
    async fn the_gate_applies_to_nested_calls_too() {
        let dir = tempfile::tempdir().unwrap();
        // The outer exec call is allowed; the write it makes from inside is not.
        let decider = approver(|request| request.tool == "nest");
        let result =
            call(ApprovalPolicy::BeforeWrite, Some(decider.clone()), dir.path(), "nest", json!({}))
                .await;
        assert!(result.is_error);
        assert!(result.text.starts_with("write: did not run, approval denied"), "{}", result.text);
        assert!(!dir.path().join("nested.txt").exists());
        let seen = decider.seen.lock().unwrap().clone();
        let tools: Vec<&str> = seen.iter().map(|r| r.tool.as_str()).collect();
        assert_eq!(tools, ["nest", "write"]);
        assert!(seen[1].parent_call_id.is_some(), "the nested call names its parent");
        assert!(
            seen[1].details().starts_with("a nested call from inside call call_"),
            "{}",
            seen[1].details()
        );
    }

    #[test]
    fn the_policy_reads_from_the_config_file() {
        let config: ApprovalConfig = toml::from_str("policy = \"before_write\"\n").unwrap();
        assert_eq!(config.policy, ApprovalPolicy::BeforeWrite);
        assert!(config.policy.requires(Tier::Exec));
        assert!(!config.policy.requires(Tier::Read));
        let err = toml::from_str::<ApprovalConfig>("policy = \"sometimes\"\n").unwrap_err();
        assert!(err.to_string().contains("unknown variant `sometimes`"), "{err}");
    }
}
