//! `lsp_rename`'s report: the files and edits a rename changed, and what it did to the
//! project's diagnostics.

use schemars::JsonSchema;
use serde::Serialize;

use crate::on_write::report::WriteDiagnostics;

/// One file a rename edited.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct RenamedFile {
    pub path: String,
    pub edits: usize,
}

/// The result of `lsp_rename`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct RenameReport {
    /// `symbol` at `path:line:col`.
    pub at: String,
    pub new_name: String,
    pub edits: usize,
    pub files: Vec<RenamedFile>,
    /// `old → new` for files the edit renamed.
    pub moved: Vec<String>,
    pub created: Vec<String>,
    pub deleted: Vec<String>,
    /// Files that import an edited file and still say the old name, which the server's edit
    /// left out although it was asked again with them open.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unedited: Vec<String>,
    /// The symbol's name before the rename.
    #[serde(skip)]
    pub old_name: String,
    /// The server that answered, for the text.
    #[serde(skip)]
    pub server: String,
    /// Why the server was restarted before its edit was taken (its view was stale).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restarted: Option<String>,
    /// What the rename did to the project's diagnostics.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diagnostics: Option<WriteDiagnostics>,
}

impl RenameReport {
    /// The model-facing text.
    pub fn render(&self) -> String {
        if self.files.is_empty() && self.moved.is_empty() {
            return format!("rename of {} to `{}` changes nothing", self.at, self.new_name);
        }
        let mut lines = vec![format!(
            "renamed {} to `{}`: {} edit(s) in {} file(s)",
            self.at,
            self.new_name,
            self.edits,
            self.files.len()
        )];
        for f in &self.files {
            lines.push(format!("  {}: {} edit(s)", f.path, f.edits));
        }
        if let Some(why) = &self.restarted {
            lines.push(format!("  ({why})"));
        }
        lines.extend(self.moved.iter().map(|m| format!("  renamed file {m}")));
        lines.extend(self.created.iter().map(|p| format!("  created {p}")));
        lines.extend(self.deleted.iter().map(|p| format!("  deleted {p}")));
        if !self.unedited.is_empty() {
            let (import, say) =
                if self.unedited.len() == 1 { ("imports", "says") } else { ("import", "say") };
            lines.push(format!(
                "  not changed: {} ({import} a renamed file and still {say} `{}`): {} left it out of its edit, also when asked again with the file open; check whether each means another `{}`",
                self.unedited.join(", "),
                self.old_name,
                self.server,
                self.old_name
            ));
        }
        if let Some(d) = &self.diagnostics {
            lines.push(String::new());
            lines.push(d.render());
        }
        lines.join("\n")
    }
}
