//! What every file tool does first: open the run's root by handle and its write journal, read
//! text, and commit changes all or nothing.

use agent_tools_support::{
    fs::{RelPath, Root},
    journal::{Change, Committed, Journal},
};

use crate::{ToolResult, tool::CallContext};

/// The root and journal of one call.
pub(crate) struct Access {
    pub(crate) root: Root,
    journal: Journal,
}

impl Access {
    /// Opens the call's root and its journal (which recovers any group a killed host left).
    pub(crate) fn open(ctx: &CallContext, tool: &str) -> Result<Access, ToolResult> {
        let fail = |e: agent_tools_support::Error| ToolResult::error(format!("{tool}: {e}"));
        let root = Root::open(&ctx.root).map_err(fail)?;
        let journal = Journal::for_root(&root).map_err(fail)?;
        Ok(Access { root, journal })
    }

    pub(crate) fn confine(&self, arg: &str, arg_name: &str) -> Result<RelPath, String> {
        self.root.confine(arg, arg_name).map_err(|e| e.to_string())
    }

    /// Reads a text file, refusing binary content, with an error that names `arg`.
    pub(crate) fn read_text(&self, rel: &RelPath, arg: &str) -> Result<String, String> {
        let bytes = self.root.read(rel, arg).map_err(|e| e.to_string())?;
        if bytes.iter().take(8192).any(|&b| b == 0) {
            return Err(format!(
                "argument `{arg}`: {rel} is a binary file ({} bytes); these tools handle text only",
                bytes.len()
            ));
        }
        String::from_utf8(bytes).map_err(|e| {
            format!(
                "argument `{arg}`: {rel} is not valid UTF-8 (first bad byte at offset {}); these tools handle text only",
                e.utf8_error().valid_up_to()
            )
        })
    }

    /// Applies every change or none, crash-atomically.
    pub(crate) fn commit(&self, changes: &[Change], arg: &str) -> Result<Vec<Committed>, String> {
        self.journal.commit_named(&self.root, changes, arg).map_err(|e| e.to_string())
    }

    /// The absolute path of `rel`, for wrappers that look at changed files.
    pub(crate) fn absolute(&self, rel: &RelPath) -> std::path::PathBuf {
        self.root.join(rel)
    }
}
