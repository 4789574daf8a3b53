//! Fewer items of an answer, for a host's cap on one result: the first `n` locations,
//! symbols or diagnostics (or characters of a hover), with the totals kept, so that the text and
//! the data of the cut answer both say where it stops and how to see the rest.

use super::result::{DiagnosticsAnswer, LspResult, SymbolsAnswer};

impl LspResult {
    /// How many items the answer shows that [`LspResult::first`] can cut: locations, symbols,
    /// diagnostics, the characters of a hover; 1 for answers that are not cut (code actions,
    /// status, reload), which a host's backstop handles.
    pub fn shown(&self) -> usize {
        match self {
            LspResult::Definition(l)
            | LspResult::TypeDefinition(l)
            | LspResult::Implementation(l)
            | LspResult::References(l) => l.locations.len(),
            LspResult::IncomingCalls(c) | LspResult::OutgoingCalls(c) => c.calls.len(),
            LspResult::Hover(h) => h.hover.as_ref().map_or(1, |text| text.chars().count()),
            LspResult::Symbols(SymbolsAnswer::Workspace(w)) => w.symbols.len(),
            LspResult::Symbols(SymbolsAnswer::Outline(o)) => o.symbols.len(),
            LspResult::Diagnostics(DiagnosticsAnswer::File(f)) => f.diagnostics.len(),
            LspResult::Diagnostics(DiagnosticsAnswer::Project(p)) => p.diagnostics.len(),
            LspResult::CodeActions(_) | LspResult::Status(_) | LspResult::Reload(_) => 1,
        }
        .max(1)
    }

    /// The answer with only its first `n` items (of [`LspResult::shown`]). Totals and offsets
    /// stay, so the renderings say "showing 1–n of total; call again with offset=n" (locations,
    /// symbols) or "+k more not shown" (diagnostics); a cut hover says where it was cut.
    pub fn first(&self, n: usize) -> LspResult {
        let mut cut = self.clone();
        match &mut cut {
            LspResult::Definition(l)
            | LspResult::TypeDefinition(l)
            | LspResult::Implementation(l)
            | LspResult::References(l) => l.locations.truncate(n),
            LspResult::IncomingCalls(c) | LspResult::OutgoingCalls(c) => c.calls.truncate(n),
            LspResult::Hover(h) => {
                if let Some(text) = h.hover.as_mut() {
                    let total = text.chars().count();
                    if n < total {
                        let at = text.char_indices().nth(n).map_or(text.len(), |(i, _)| i);
                        text.truncate(at);
                        text.push_str(&format!(
                            "\n[hover cut by the output cap: showed {n} of {total} characters]"
                        ));
                    }
                }
            }
            LspResult::Symbols(SymbolsAnswer::Workspace(w)) => w.symbols.truncate(n),
            LspResult::Symbols(SymbolsAnswer::Outline(o)) => o.symbols.truncate(n),
            LspResult::Diagnostics(DiagnosticsAnswer::File(f)) => f.diagnostics.truncate(n),
            LspResult::Diagnostics(DiagnosticsAnswer::Project(p)) => p.diagnostics.truncate(n),
            LspResult::CodeActions(_) | LspResult::Status(_) | LspResult::Reload(_) => {}
        }
        cut
    }
}
