//! What a server offers, read once from its `initialize` answer into lsp-types' typed
//! capabilities and asked by [`Feature`], never by a string key.

use lsp_types::{
    CallHierarchyServerCapability, CodeActionProviderCapability, DiagnosticServerCapabilities,
    HoverProviderCapability, ImplementationProviderCapability, OneOf, ServerCapabilities,
    TextDocumentSyncCapability, TextDocumentSyncSaveOptions, TypeDefinitionProviderCapability,
};
use serde_json::Value;

/// A request the tools make that a server may or may not offer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Feature {
    Definition,
    TypeDefinition,
    Implementation,
    References,
    Hover,
    CodeActions,
    CallHierarchy,
    DocumentSymbols,
    WorkspaceSymbols,
    Rename,
}

impl Feature {
    /// The capability's name in the protocol, for messages.
    pub(crate) fn capability(self) -> &'static str {
        match self {
            Feature::Definition => "definitionProvider",
            Feature::TypeDefinition => "typeDefinitionProvider",
            Feature::Implementation => "implementationProvider",
            Feature::References => "referencesProvider",
            Feature::Hover => "hoverProvider",
            Feature::CodeActions => "codeActionProvider",
            Feature::CallHierarchy => "callHierarchyProvider",
            Feature::DocumentSymbols => "documentSymbolProvider",
            Feature::WorkspaceSymbols => "workspaceSymbolProvider",
            Feature::Rename => "renameProvider",
        }
    }
}

/// A server's capabilities.
#[derive(Debug, Clone, Default)]
pub(crate) struct Capabilities {
    typed: ServerCapabilities,
    /// Top-level entries lsp-types could not read (a server's own extension of a standard
    /// field), left out rather than losing every other capability with them.
    pub(crate) unreadable: Vec<String>,
}

/// Whether a `bool`-or-options capability is offered (options mean yes).
fn offered<T>(entry: &Option<OneOf<bool, T>>) -> bool {
    matches!(entry, Some(OneOf::Left(true) | OneOf::Right(_)))
}

impl Capabilities {
    /// Reads the `capabilities` of an `initialize` answer. An entry lsp-types cannot read is
    /// left out (and named in [`Capabilities::unreadable`]), the rest kept.
    pub(crate) fn read(value: &Value) -> Capabilities {
        if let Ok(typed) = serde_json::from_value::<ServerCapabilities>(value.clone()) {
            return Capabilities { typed, unreadable: Vec::new() };
        }
        let Some(entries) = value.as_object() else { return Capabilities::default() };
        let mut readable = serde_json::Map::new();
        let mut unreadable = Vec::new();
        for (key, entry) in entries {
            let alone = Value::Object([(key.clone(), entry.clone())].into_iter().collect());
            if serde_json::from_value::<ServerCapabilities>(alone).is_ok() {
                readable.insert(key.clone(), entry.clone());
            } else {
                unreadable.push(key.clone());
            }
        }
        let typed = serde_json::from_value(Value::Object(readable)).unwrap_or_default();
        Capabilities { typed, unreadable }
    }

    /// Whether the server offers `feature` (statically, in its `initialize` answer).
    pub(crate) fn offers(&self, feature: Feature) -> bool {
        let c = &self.typed;
        match feature {
            Feature::Definition => offered(&c.definition_provider),
            Feature::TypeDefinition => !matches!(
                c.type_definition_provider,
                None | Some(TypeDefinitionProviderCapability::Simple(false))
            ),
            Feature::Implementation => !matches!(
                c.implementation_provider,
                None | Some(ImplementationProviderCapability::Simple(false))
            ),
            Feature::References => offered(&c.references_provider),
            Feature::Hover => {
                !matches!(c.hover_provider, None | Some(HoverProviderCapability::Simple(false)))
            }
            Feature::CodeActions => !matches!(
                c.code_action_provider,
                None | Some(CodeActionProviderCapability::Simple(false))
            ),
            Feature::CallHierarchy => !matches!(
                c.call_hierarchy_provider,
                None | Some(CallHierarchyServerCapability::Simple(false))
            ),
            Feature::DocumentSymbols => offered(&c.document_symbol_provider),
            Feature::WorkspaceSymbols => offered(&c.workspace_symbol_provider),
            Feature::Rename => offered(&c.rename_provider),
        }
    }

    /// Whether `textDocument/prepareRename` is offered.
    pub(crate) fn prepares_rename(&self) -> bool {
        matches!(&self.typed.rename_provider, Some(OneOf::Right(o)) if o.prepare_provider == Some(true))
    }

    /// Whether a listed code action may come without its edit, to be resolved on demand.
    pub(crate) fn resolves_code_actions(&self) -> bool {
        matches!(&self.typed.code_action_provider,
            Some(CodeActionProviderCapability::Options(o)) if o.resolve_provider == Some(true))
    }

    /// Whether `didSave` carries the text.
    pub(crate) fn save_includes_text(&self) -> bool {
        matches!(&self.typed.text_document_sync,
            Some(TextDocumentSyncCapability::Options(o))
                if matches!(&o.save, Some(TextDocumentSyncSaveOptions::SaveOptions(s)) if s.include_text == Some(true)))
    }

    /// The position encoding the server picked, as the protocol names it.
    pub(crate) fn position_encoding(&self) -> Option<&str> {
        self.typed.position_encoding.as_ref().map(|e| e.as_str())
    }

    /// Whether `workspace/executeCommand` offers `command`.
    pub(crate) fn runs_command(&self, command: &str) -> bool {
        self.typed
            .execute_command_provider
            .as_ref()
            .is_some_and(|p| p.commands.iter().any(|c| c == command))
    }

    /// The identifier of the statically offered pull diagnostics, if they are offered
    /// (`Some(None)`: offered without an identifier).
    pub(crate) fn pull_diagnostics(&self) -> Option<Option<String>> {
        self.typed.diagnostic_provider.as_ref().map(|p| match p {
            DiagnosticServerCapabilities::Options(o) => o.identifier.clone(),
            DiagnosticServerCapabilities::RegistrationOptions(r) => {
                r.diagnostic_options.identifier.clone()
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn offered_features_are_read_from_bools_and_options() {
        let caps = Capabilities::read(&json!({
            "definitionProvider": true,
            "referencesProvider": false,
            "hoverProvider": {"workDoneProgress": true},
            "renameProvider": {"prepareProvider": true},
            "codeActionProvider": {"resolveProvider": true},
            "textDocumentSync": {"openClose": true, "change": 1, "save": {"includeText": true}},
            "diagnosticProvider": {"identifier": "ts", "interFileDependencies": true, "workspaceDiagnostics": false},
            "positionEncoding": "utf-8",
            "executeCommandProvider": {"commands": ["typescript.tsserverRequest"]},
        }));
        assert!(caps.offers(Feature::Definition));
        assert!(!caps.offers(Feature::References));
        assert!(caps.offers(Feature::Hover));
        assert!(caps.offers(Feature::Rename) && caps.prepares_rename());
        assert!(caps.offers(Feature::CodeActions) && caps.resolves_code_actions());
        assert!(!caps.offers(Feature::WorkspaceSymbols));
        assert!(caps.save_includes_text());
        assert_eq!(caps.pull_diagnostics(), Some(Some("ts".to_string())));
        assert_eq!(caps.position_encoding(), Some("utf-8"));
        assert!(caps.runs_command("typescript.tsserverRequest"));
        assert!(caps.unreadable.is_empty());
    }

    #[test]
    fn an_entry_lsp_types_cannot_read_loses_only_itself() {
        let caps = Capabilities::read(&json!({
            "definitionProvider": true,
            "renameProvider": "yes, mostly",
            "documentSymbolProvider": true,
        }));
        assert!(caps.offers(Feature::Definition) && caps.offers(Feature::DocumentSymbols));
        assert!(!caps.offers(Feature::Rename));
        assert_eq!(caps.unreadable, vec!["renameProvider".to_string()]);
    }

    #[test]
    fn no_capabilities_offer_nothing() {
        let caps = Capabilities::read(&Value::Null);
        assert!(!caps.offers(Feature::Definition));
        assert_eq!(caps.pull_diagnostics(), None);
        assert!(!caps.save_includes_text());
    }
}
