//! How a family attaches to a registry: one trait, [`AttachFamily`], whose `attach` registers
//! what the family brings (tools, run resources, an approver, wrappers around the file tools)
//! on an [`Attachment`], under the name its crate's descriptor gives.
//!
//! The facade's own families implement it (`agent_tools::families`), and so can a harness's.
//! Wrappers are applied when the registry is built, so the order in which families and file
//! tools are registered does not change what gets wrapped.

use std::sync::Arc;

use crate::{RegistryBuilder, RunResource, approval::Approver, tool::DynTool};

pub use agent_tools_support::family::{FamilyDescriptor, ToolDescriptor};

/// A tool family as a registry attaches it.
pub trait AttachFamily {
    /// The family's name and tools, as its crate declares them (`agent_tools_x::family::FAMILY`).
    fn descriptor(&self) -> &'static FamilyDescriptor;

    /// Registers what the family brings on `to`.
    fn attach(self: Box<Self>, to: &mut Attachment<'_>);
}

/// What replaces a file tool: the tool it wraps goes in, the wrapped tool comes out.
pub(crate) type FileToolWrapper = Box<dyn Fn(DynTool) -> DynTool + Send + Sync>;

/// The registry builder as one family sees it while it attaches: what it registers here is
/// listed under the family's name.
pub struct Attachment<'a> {
    pub(crate) builder: &'a mut RegistryBuilder,
    pub(crate) family: &'static str,
}

impl Attachment<'_> {
    /// Registers one of the family's tools.
    pub fn tool(&mut self, tool: DynTool) -> &mut Self {
        self.builder.add_tool(self.family, tool, Role::Tool);
        self
    }

    /// Registers one of the family's tools that writes files (astgrep's `resolve`): the
    /// wrappers around file tools wrap it too, so its result carries what its change broke.
    pub fn writer_tool(&mut self, tool: DynTool) -> &mut Self {
        self.builder.add_tool(self.family, tool, Role::FileTool);
        self
    }

    /// Keeps `resource` alive for the run and shuts it down when the run ends.
    pub fn resource(&mut self, resource: Arc<dyn RunResource>) -> &mut Self {
        self.builder.resources.push(resource);
        self
    }

    /// Makes `approver` decide the approval gate's cards.
    pub fn approver(&mut self, approver: Arc<dyn Approver>) -> &mut Self {
        self.builder.approval.approver = Some(approver);
        self
    }

    /// Wraps every file tool of the run, registered before or after this family, when the
    /// registry is built (the lsp family's diagnostics on write).
    pub fn wrap_file_tools(
        &mut self,
        wrap: impl Fn(DynTool) -> DynTool + Send + Sync + 'static,
    ) -> &mut Self {
        self.builder.wrappers.push(Box::new(wrap));
        self
    }
}

/// What a registered tool is to the wrappers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// Left as it is.
    Tool,
    /// Writes files: every file-tool wrapper wraps it.
    FileTool,
}

/// What a run attaches beyond its configuration, known only once the client is known.
#[derive(Clone, Default)]
pub struct Attach {
    /// `--vibe`: vibe mode for this run (`[vibe] enabled = true` turns it on as well).
    pub vibe: bool,
    /// Where question and approval cards go, when someone can answer them.
    #[cfg(feature = "ask")]
    pub questions:
        Option<(std::sync::Arc<dyn agent_tools_ask::QuestionPort>, agent_tools_ask::Target)>,
    /// Language servers shared with the other runs of this host (HTTP); `None`: the run's own.
    #[cfg(feature = "lsp")]
    pub lsp_pool: Option<agent_tools_lsp::ServerPool>,
}

impl Attach {
    pub fn with_vibe(mut self, vibe: bool) -> Self {
        self.vibe = vibe;
        self
    }

    /// The run's language servers come from `pool`, shared with the other runs given it.
    #[cfg(feature = "lsp")]
    pub fn with_lsp_pool(mut self, pool: agent_tools_lsp::ServerPool) -> Self {
        self.lsp_pool = Some(pool);
        self
    }

    /// Cards go to `target` through `port`: `ask_user` is registered and approvals can be asked.
    #[cfg(feature = "ask")]
    pub fn with_questions(
        mut self,
        port: std::sync::Arc<dyn agent_tools_ask::QuestionPort>,
        target: agent_tools_ask::Target,
    ) -> Self {
        self.questions = Some((port, target));
        self
    }
}
