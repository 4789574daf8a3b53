//! Name paths resolved over a file's outline, by agent-tools-support's `name_path`.

use agent_tools_support::name_path::{self, Entry};
pub use agent_tools_support::name_path::{Candidate, Unresolved};

use super::{Outline, Symbol};

impl Outline {
    /// The one declaration `path` names: names from the outermost declaration inwards joined
    /// by `/`, matching at any depth unless it starts with `/`, `[n]` picking the n-th match.
    pub fn resolve(&self, path: &str) -> Result<&Symbol, Unresolved> {
        let rows = self.flatten();
        let entries = entries(&rows);
        name_path::resolve(&entries, path, &self.error_lines).map(|i| rows[i].symbol)
    }

    /// `symbol` listed with a name path that resolves to it alone.
    pub fn candidate(&self, symbol: &Symbol) -> Candidate {
        let rows = self.flatten();
        let at = rows.iter().position(|r| std::ptr::eq(r.symbol, symbol)).unwrap_or(0);
        name_path::candidate(&entries(&rows), at)
    }
}

fn entries<'a>(rows: &[super::Row<'a>]) -> Vec<Entry<'a>> {
    rows.iter()
        .map(|r| Entry {
            name_path: &r.symbol.name_path,
            name: &r.symbol.name,
            kind: r.symbol.kind.as_str(),
            start_line: r.symbol.start_line,
            end_line: r.symbol.end_line,
        })
        .collect()
}
