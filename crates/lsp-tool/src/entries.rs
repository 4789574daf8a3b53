//! The supervisor's public calls, one per tool and one per write check. Each takes the
//! caller's [`CallScope`]: its token stops the call, and the servers' own progress (starting,
//! indexing) reaches the scope while the call waits. The work itself is free functions over the
//! supervisor in `actions`, `rename`, `code_action` and `on_write`.

use agent_tools_support::progress::CallScope;

use crate::{
    actions::{self, LspArgs, LspOutput},
    code_action::{self, CodeActionArgs},
    error::LspError,
    on_write::{self, ProposedFile, WrittenFile, report::WriteDiagnostics},
    rename::{self, RenameArgs},
    supervisor::Supervisor,
};

impl Supervisor {
    /// Runs one `lsp` call; the structured data is an [`crate::LspResult`], the text its
    /// rendering.
    pub async fn call(&self, args: LspArgs, scope: &CallScope) -> Result<LspOutput, LspError> {
        let what = args.action.as_str();
        self.reporting(scope, what, actions::call(self, args, scope.token())).await
    }

    /// Runs one `lsp_rename` call: the symbol located in what the server has, the server's
    /// checks (prepareRename, a name the scope already declares), its edit as long as it
    /// matches the files, then written all or nothing with the diagnostics it introduced.
    pub async fn rename(&self, args: RenameArgs, scope: &CallScope) -> Result<LspOutput, LspError> {
        self.reporting(scope, "rename", rename::rename(self, args, scope.token())).await
    }

    /// Runs one `lsp_code_action` call: lists the actions at the position again (so the edit
    /// matches the current content), takes the `index`-th and writes its edit.
    pub async fn apply_code_action(
        &self,
        args: CodeActionArgs,
        scope: &CallScope,
    ) -> Result<LspOutput, LspError> {
        let applying = code_action::apply_code_action(self, args, scope.token());
        self.reporting(scope, "code action", applying).await
    }

    /// Syncs every written file, finds and checks the files that use what they changed, and
    /// reports what is new against the run's ledger; `None` when no server covers any of the
    /// written files.
    pub async fn diagnostics_after_write(
        &self,
        files: &[WrittenFile],
        scope: &CallScope,
    ) -> Option<WriteDiagnostics> {
        let checking = on_write::diagnostics_after_write(self, files, scope.token());
        self.reporting(scope, "diagnostics on write", checking).await
    }

    /// The same check for a change that is not written (a dry run): the proposed text goes to
    /// the servers, the ledger is compared with but not updated, and each server has the
    /// disk's content again afterwards.
    pub async fn diagnostics_of_proposal(
        &self,
        files: &[ProposedFile],
        scope: &CallScope,
    ) -> Option<WriteDiagnostics> {
        let checking = on_write::diagnostics_of_proposal(self, files, scope.token());
        self.reporting(scope, "diagnostics of the proposal", checking).await
    }
}
