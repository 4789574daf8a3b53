//! How strictly a pattern is compared with code: ast-grep's `strictness` levels.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Which differences between pattern and code are ignored.
///
/// In every level the pattern accounts for every named child of what it matches (unless a
/// `$$$` stands for the rest): a deliberate difference from ast-grep, whose `smart` level
/// ignores trailing children of the code.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Strictness {
    /// Every token and comment of the code must be in the pattern.
    Cst,
    /// Unnamed tokens of the code (a trailing comma, an optional `;`) and comments may be
    /// skipped; the pattern's tokens must all be there. The default.
    #[default]
    Smart,
    /// Unnamed tokens are ignored on both sides; comments count.
    Ast,
    /// Unnamed tokens and comments are ignored on both sides.
    Relaxed,
    /// As `relaxed`, and leaves compare by kind only, not text.
    Signature,
}

impl Strictness {
    pub const ALL: [Strictness; 5] = [
        Strictness::Cst,
        Strictness::Smart,
        Strictness::Ast,
        Strictness::Relaxed,
        Strictness::Signature,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Strictness::Cst => "cst",
            Strictness::Smart => "smart",
            Strictness::Ast => "ast",
            Strictness::Relaxed => "relaxed",
            Strictness::Signature => "signature",
        }
    }

    pub fn from_id(id: &str) -> Option<Strictness> {
        Strictness::ALL.into_iter().find(|s| s.as_str() == id)
    }

    /// Comments and other extras of the code are skipped.
    pub(crate) fn skips_extras(self) -> bool {
        !matches!(self, Strictness::Cst | Strictness::Ast)
    }

    /// Unnamed tokens of the code may be skipped.
    pub(crate) fn skips_code_tokens(self) -> bool {
        self != Strictness::Cst
    }

    /// Unnamed tokens of the pattern are ignored.
    pub(crate) fn ignores_pattern_tokens(self) -> bool {
        matches!(self, Strictness::Ast | Strictness::Relaxed | Strictness::Signature)
    }

    /// Leaves compare by text (not only by kind).
    pub(crate) fn compares_text(self) -> bool {
        self != Strictness::Signature
    }
}
