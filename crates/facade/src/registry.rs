//! The registry: tools registered only when the resource behind them is attached.
//!
//! Built by a pure function of what is attached (`RegistryBuilder`: families through one
//! trait, `AttachFamily`), frozen and sorted by name once built, so every surface's tool list
//! is byte-stable.

use std::{collections::BTreeMap, path::Path, sync::Arc};

use async_trait::async_trait;

use crate::{
    attach::{AttachFamily, Attachment, FileToolWrapper, Role},
    files,
    surface::{Surface, SurfaceKind},
    tool::DynTool,
};

/// Something bound to a run that must be released when the run ends
/// (a language server, a debug adapter, a kernel, a worker).
#[async_trait]
pub trait RunResource: Send + Sync {
    /// Stops every process the resource started; bounded in time.
    async fn shutdown(&self);

    /// The family this resource serves (`"lsp"`), when `agent-tools status` should ask it.
    fn family(&self) -> Option<&str> {
        None
    }

    /// What `agent-tools status` says about the resource as this run set it up (what resolves,
    /// what is missing and how to get it), for the run's `root`; nothing starts.
    fn status(&self, root: &Path) -> Vec<String> {
        let _ = root;
        Vec::new()
    }

    /// What the resource finished in the background since it was last asked (the check of
    /// the files over a write's bound), for the head of the run's next result.
    fn take_notices(&self) -> Vec<Notice> {
        Vec::new()
    }
}

/// Something a run's resource finished in the background: put at the head of the run's next
/// result, as text and, where the result has structured content, as data under `notices`.
#[derive(Debug, Clone, PartialEq)]
pub struct Notice {
    pub text: String,
    pub data: serde_json::Value,
}

/// One tool family as the registry knows it: its name and the tools it registered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Family {
    pub name: String,
    pub tools: Vec<String>,
}

/// Collects tools from attached families; `build` freezes them, and only then wraps the file
/// tools, so what is wrapped does not depend on the order things were registered in.
#[derive(Default)]
pub struct RegistryBuilder {
    tools: BTreeMap<String, DynTool>,
    families: BTreeMap<String, Vec<String>>,
    file_tool_roles: Vec<String>,
    pub(crate) wrappers: Vec<FileToolWrapper>,
    pub(crate) resources: Vec<Arc<dyn RunResource>>,
    pub(crate) approval: crate::approval::ApprovalSetup,
}

impl RegistryBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Attaches `family`: its tools under its descriptor's name, its run resources, its
    /// approver and its wrappers around the file tools.
    pub fn with_family(self, family: impl AttachFamily) -> Self {
        self.with_boxed_family(Box::new(family))
    }

    /// [`RegistryBuilder::with_family`] for a family chosen at run time.
    pub fn with_boxed_family(mut self, family: Box<dyn AttachFamily + '_>) -> Self {
        let name = family.descriptor().name;
        family.attach(&mut Attachment { builder: &mut self, family: name });
        self
    }

    /// Registers one tool of `family`. A later tool with the same name replaces an earlier one,
    /// so a harness can bring its own `read` or `write`.
    pub fn with_tool(mut self, family: &str, tool: DynTool) -> Self {
        self.add_tool(family, tool, Role::Tool);
        self
    }

    /// Registers a tool in the role of a harness file tool (`write`, `edit`, `apply_patch`):
    /// the tools that wrappers such as diagnostics on write wrap.
    pub fn with_file_tool(mut self, tool: DynTool) -> Self {
        self.add_tool(files::FAMILY.name, tool, Role::FileTool);
        self
    }

    /// The reference file tools: `read`, `write`, `edit`, `apply_patch`, confined to the run's root.
    pub fn with_reference_file_tools(self) -> Self {
        self.with_family(files::ReferenceFileTools)
    }

    /// Requires approval for calls as `policy` says. With a policy but no approver (no operator
    /// in this run), every such call is denied.
    pub fn with_approval_policy(mut self, policy: crate::approval::ApprovalPolicy) -> Self {
        self.approval.policy = policy;
        self
    }

    /// Who decides on approvals (the ask family registers its question desk as one).
    pub fn with_approver(mut self, approver: Arc<dyn crate::approval::Approver>) -> Self {
        self.approval.approver = Some(approver);
        self
    }

    /// Keeps `resource` alive for the run and shuts it down when the run ends.
    pub fn with_resource(mut self, resource: Arc<dyn RunResource>) -> Self {
        self.resources.push(resource);
        self
    }

    /// Replaces each file tool by `wrap(tool)` when the registry is built: how wrappers such
    /// as diagnostics on write are layered, tower-style, over whatever file tools the harness
    /// brought, before or after this call. The first wrapper given is the innermost.
    pub fn wrap_file_tools(
        mut self,
        wrap: impl Fn(DynTool) -> DynTool + Send + Sync + 'static,
    ) -> Self {
        self.wrappers.push(Box::new(wrap));
        self
    }

    pub(crate) fn add_tool(&mut self, family: &str, tool: DynTool, role: Role) {
        let name = tool.spec().name.clone();
        for tools in self.families.values_mut() {
            tools.retain(|t| t != &name);
        }
        self.families.entry(family.to_string()).or_default().push(name.clone());
        if role == Role::FileTool && !self.file_tool_roles.contains(&name) {
            self.file_tool_roles.push(name.clone());
        }
        self.tools.insert(name, tool);
    }

    pub fn build(self) -> Registry {
        let mut tools = self.tools;
        for wrap in &self.wrappers {
            for name in &self.file_tool_roles {
                if let Some(tool) = tools.remove(name) {
                    tools.insert(name.clone(), wrap(tool));
                }
            }
        }
        Registry {
            tools: tools.into_values().collect(),
            families: self
                .families
                .into_iter()
                .map(|(name, mut tools)| {
                    tools.sort();
                    Family { name, tools }
                })
                .collect(),
            resources: self.resources,
            approval: self.approval.into_gate(),
        }
    }
}

/// Every tool of one run, sorted by name.
pub struct Registry {
    tools: Vec<DynTool>,
    families: Vec<Family>,
    resources: Vec<Arc<dyn RunResource>>,
    approval: Option<Arc<crate::approval::ApprovalGate>>,
}

impl Registry {
    /// All tools, sorted by name.
    pub fn tools(&self) -> &[DynTool] {
        &self.tools
    }

    /// The attached families, sorted by name.
    pub fn families(&self) -> &[Family] {
        &self.families
    }

    /// The frozen view for one ceiling.
    pub fn surface(&self, kind: SurfaceKind) -> Surface {
        Surface::new(kind, &self.tools)
            .with_approval_gate(self.approval.clone())
            .with_notices_from(self.resources.clone().into())
    }

    /// What the resource attached for `family` says about itself (see [`RunResource::status`]);
    /// None when no attached resource serves it.
    pub fn status_of(&self, family: &str, root: &Path) -> Option<Vec<String>> {
        let resource = self.resources.iter().find(|r| r.family() == Some(family))?;
        Some(resource.status(root))
    }

    /// Ends every run-bound resource; after this no process started for the run remains.
    pub async fn shutdown(&self) {
        // All at once: a resource slow to stop (a kernel that ignores SIGTERM, a server that
        // does not answer `shutdown`) must not hold up the others' teardown.
        let mut stopping = tokio::task::JoinSet::new();
        for resource in &self.resources {
            let resource = resource.clone();
            stopping.spawn(async move { resource.shutdown().await });
        }
        while stopping.join_next().await.is_some() {}
    }
}
