//! agent-tools: the facade that composes the tool families into one registry.
//!
//! It owns what only a harness needs: the object-safe [`Tool`] trait, [`Tier`], the
//! [`RegistryBuilder`] that registers a family only when its resource is attached,
//! [`Surface`]s filtered by tier, the reference harness file tools, and run assembly
//! ([`run`]), which the `agent-tools` host (crate `agent-tools-host`) and the Python bindings
//! start their runs with.
//!
//! ```
//! use agent_tools::{RegistryBuilder, Surface, Tier};
//!
//! let registry = RegistryBuilder::new().with_reference_file_tools().build();
//! let plan = Surface::plan(&registry);
//! assert_eq!(plan.names(), ["read"]);
//! assert!(plan.specs().iter().all(|s| s.tier == Tier::Read));
//! ```

mod approval;
pub mod capsule;
mod config;
mod error;
mod families;
pub mod files;
mod registry;
pub mod run;
mod surface;
mod tool;
mod validate;

pub use crate::{
    approval::{ApprovalConfig, ApprovalDecision, ApprovalPolicy, ApprovalRequest, Approver},
    config::{
        CONFIG_FILE_NAME, Config, McpConfig, OutputConfig, TrustConfig, UNTRUSTED_PROJECT_KEYS,
    },
    error::{Error, Result, Unavailable},
    families::status_details,
    registry::{Family, Registry, RegistryBuilder, RunResource},
    surface::{DEFAULT_MAX_OUTPUT_CHARS, RunInfo, Surface, SurfaceKind},
    tool::{
        Annotations, Before, CALL_SCOPE, CallContext, ChangedFile, Dispatched, DynTool, Effects,
        Image, MAX_CALL_DEPTH, Progress, ProgressSink, SurfaceInfo, Tier, Tool, ToolResult,
        ToolSpec, TypedTool, fit_prefix, output_schema_for, parse_args, schema_for,
    },
    validate::validate_args,
};
