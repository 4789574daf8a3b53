//! agent-tools: the facade that composes the tool families into one registry.
#![doc = include_str!("../README.md")]

mod approval;
mod attach;
pub mod capsule;
mod config;
mod error;
pub mod families;
pub mod files;
mod registry;
pub mod run;
mod surface;
mod tool;
mod validate;

pub use crate::{
    approval::{ApprovalConfig, ApprovalDecision, ApprovalPolicy, ApprovalRequest, Approver},
    attach::{AttachFamily, Attachment, FamilyDescriptor, ToolDescriptor},
    config::{
        CONFIG_FILE_NAME, Config, McpConfig, OutputConfig, TrustConfig, UNTRUSTED_PROJECT_KEYS,
    },
    error::{Error, Result, Unavailable},
    registry::{Family, Notice, Registry, RegistryBuilder, RunResource},
    surface::{DEFAULT_MAX_OUTPUT_CHARS, RunInfo, Surface, SurfaceKind},
    tool::{
        Annotations, Before, CallContext, ChangedFile, Dispatched, DynTool, Effects, Image,
        MAX_CALL_DEPTH, ProgressReport, ProgressSink, ProposedChange, SurfaceInfo, Tier, Tool,
        ToolResult, ToolSpec, TypedTool, fit_prefix, output_schema_for, parse_args, schema_for,
    },
    validate::validate_args,
};

#[cfg(feature = "ask")]
pub use crate::tool::CallCards;
