//! The `lsp` tool's arguments: the fields, their hand-written schema, and constructors for a
//! harness that calls the supervisor directly.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Action;

/// Arguments of the `lsp` tool. The schema is written by hand: the tool's description explains
/// every action once, and the schema only types the fields (the build surface's token budget).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LspArgs {
    /// The action: diagnostics, definition, type_definition, implementation, references, hover,
    /// symbols, code_actions, incoming_calls, outgoing_calls, status, reload.
    pub action: Action,
    /// File relative to the workspace root. Required for navigation actions and per-file
    /// diagnostics; `"*"` with `diagnostics` runs the project's checker; with `symbols` it lists
    /// the file's outline; with `reload` it picks the server to restart.
    #[serde(default)]
    pub file: Option<String>,
    /// 1-based line of the symbol (navigation actions and code_actions).
    #[serde(default)]
    pub line: Option<u32>,
    /// Text on that line that marks the symbol, for example a function name. Required for
    /// navigation actions; a whole-word match is preferred over a substring. Without `line`, a
    /// name path (`Class/method`) found in the server's document symbols.
    #[serde(default)]
    pub symbol: Option<String>,
    /// Which occurrence of `symbol` on the line, 1-based (default 1).
    #[serde(default)]
    pub occurrence: Option<u32>,
    /// Search text for `symbols`: across the workspace, or with `file` a filter on its outline.
    #[serde(default)]
    pub query: Option<String>,
    /// Skip this many results of references or symbols (paging; default 0).
    #[serde(default)]
    pub offset: Option<u32>,
    /// Also show hints and "unnecessary code" diagnostics (default false).
    #[serde(default)]
    pub include_hints: bool,
}

impl JsonSchema for LspArgs {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "LspArgs".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        crate::args_schema::with_position(
            serde_json::json!({
                "action": {"enum": ["diagnostics", "definition", "type_definition", "implementation",
                    "references", "hover", "symbols", "code_actions", "incoming_calls",
                    "outgoing_calls", "status", "reload"]},
            }),
            serde_json::json!({
                "query": {"type": "string"},
                "offset": {"type": "integer", "minimum": 0},
                "include_hints": {"type": "boolean"}
            }),
            &["action"],
        )
    }
}

impl LspArgs {
    /// `action` alone: `status`, `reload` of every server, `diagnostics` needs a file.
    pub fn new(action: Action) -> LspArgs {
        LspArgs {
            action,
            file: None,
            line: None,
            symbol: None,
            occurrence: None,
            query: None,
            offset: None,
            include_hints: false,
        }
    }

    /// `action` on `symbol`, text on 1-based `line` of `file` (definition, references, hover…).
    pub fn at(
        action: Action,
        file: impl Into<String>,
        line: u32,
        symbol: impl Into<String>,
    ) -> Self {
        LspArgs {
            file: Some(file.into()),
            line: Some(line),
            symbol: Some(symbol.into()),
            ..LspArgs::new(action)
        }
    }

    /// `action` on a name path (`Class/method`) in `file`, found in the server's outline.
    pub fn by_name_path(
        action: Action,
        file: impl Into<String>,
        name_path: impl Into<String>,
    ) -> Self {
        LspArgs { file: Some(file.into()), symbol: Some(name_path.into()), ..LspArgs::new(action) }
    }

    /// `diagnostics` of `file` (`"*"`: the project's checker).
    pub fn diagnostics(file: impl Into<String>) -> LspArgs {
        LspArgs { file: Some(file.into()), ..LspArgs::new(Action::Diagnostics) }
    }

    /// `symbols` matching `query` across the workspace.
    pub fn symbols(query: impl Into<String>) -> LspArgs {
        LspArgs { query: Some(query.into()), ..LspArgs::new(Action::Symbols) }
    }

    /// The outline of `file` (`symbols` with a file).
    pub fn outline(file: impl Into<String>) -> LspArgs {
        LspArgs { file: Some(file.into()), ..LspArgs::new(Action::Symbols) }
    }

    /// The same call, the `occurrence`-th match of the symbol on its line (1-based).
    pub fn occurrence(self, occurrence: u32) -> LspArgs {
        LspArgs { occurrence: Some(occurrence), ..self }
    }

    /// The same call, skipping `offset` results (paging of references and symbols).
    pub fn offset(self, offset: u32) -> LspArgs {
        LspArgs { offset: Some(offset), ..self }
    }
}
