//! Behaviour of the facade as a harness sees it: surfaces, dispatch, validation, file tools.
// Tests, examples and test programs start and signal programs directly, on purpose.
#![allow(clippy::disallowed_methods)]

mod config;
mod file_tools;
mod previews;
mod shutdown;
mod surfaces;
mod symbols;

use agent_tools::{RegistryBuilder, RunInfo, SurfaceKind, ToolResult};
use serde_json::Value;

/// A temporary run root with `files`, removed on drop.
pub(crate) struct Project {
    pub(crate) dir: tempfile::TempDir,
}

impl Project {
    pub(crate) fn new(files: &[(&str, &str)]) -> Project {
        let dir = tempfile::tempdir().expect("temp dir");
        for (path, contents) in files {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(path, contents).expect("write");
        }
        Project { dir }
    }

    pub(crate) fn read(&self, path: &str) -> String {
        std::fs::read_to_string(self.dir.path().join(path)).expect("read back")
    }

    /// Calls `tool` with `args` on the given surface of a fresh run over this project.
    pub(crate) fn call(&self, kind: SurfaceKind, tool: &str, args: Value) -> ToolResult {
        let registry = RegistryBuilder::new().with_reference_file_tools().build();
        let surface = registry.surface(kind);
        let run = RunInfo::new(self.dir.path());
        let ctx = surface.context(&run, None);
        let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
        runtime.block_on(surface.call(&ctx, tool, args))
    }
}
