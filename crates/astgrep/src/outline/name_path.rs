//! Name paths resolved to one declaration: `Parser/parse`, a bare name at any depth, a leading
//! `/` anchoring at the top level, `[n]` picking the n-th of several matches; ambiguous and
//! missing ones answered with the candidates or the nearest names.

use std::fmt;

use super::{Outline, Symbol};

/// A declaration a name path could mean, as an answer lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// A name path that resolves to exactly this declaration.
    pub name_path: String,
    pub kind: &'static str,
    pub start_line: usize,
    pub end_line: usize,
}

/// Why a name path did not resolve to one declaration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unresolved {
    /// The name path is malformed.
    Invalid(String),
    /// Several declarations match; each candidate's name path picks one.
    Ambiguous { query: String, candidates: Vec<Candidate> },
    /// None matches (or `[n]` is past the matches); the nearest names of the file.
    Missing { query: String, nearest: Vec<Candidate>, error_lines: Vec<usize> },
}

/// Most candidates or nearest names an answer lists.
const MAX_LISTED: usize = 10;

impl fmt::Display for Candidate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({} {}-{})", self.name_path, self.kind, self.start_line, self.end_line)
    }
}

impl fmt::Display for Unresolved {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list =
            |c: &[Candidate]| c.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ");
        match self {
            Unresolved::Invalid(message) => f.write_str(message),
            Unresolved::Ambiguous { query, candidates } => write!(
                f,
                "`{query}` matches {} declarations: {}; give one of these name paths",
                candidates.len(),
                list(candidates)
            ),
            Unresolved::Missing { query, nearest, error_lines } => {
                write!(f, "no declaration is named `{query}`")?;
                if nearest.is_empty() {
                    write!(f, "; the file declares nothing the outline lists")?;
                } else {
                    write!(f, "; nearest names: {}", list(nearest))?;
                }
                if !error_lines.is_empty() {
                    let lines: Vec<String> = error_lines.iter().map(ToString::to_string).collect();
                    write!(
                        f,
                        " (the file does not parse at line {}, which may hide declarations)",
                        lines.join(", ")
                    )?;
                }
                Ok(())
            }
        }
    }
}

/// A parsed name path.
struct Query<'q> {
    names: Vec<&'q str>,
    anchored: bool,
    index: Option<usize>,
}

fn parse(path: &str) -> Result<Query<'_>, Unresolved> {
    let invalid = |why: &str| {
        Unresolved::Invalid(format!(
            "name path `{path}` {why}; write names from the outermost declaration inwards \
             joined by `/` (`Parser/parse`), with `[n]` after the last to pick the n-th match"
        ))
    };
    let trimmed = path.trim();
    let anchored = trimmed.starts_with('/');
    let body = trimmed.trim_start_matches('/');
    let (body, index) = match body.strip_suffix(']').and_then(|b| b.rsplit_once('[')) {
        Some((body, n)) => match n.trim().parse::<usize>() {
            Ok(n) if n >= 1 => (body, Some(n)),
            _ => return Err(invalid("has an index that is not a number from 1")),
        },
        None => (body, None),
    };
    let names: Vec<&str> = body.split('/').map(str::trim).collect();
    if names.iter().any(|n| n.is_empty()) {
        return Err(invalid("has an empty name"));
    }
    if names.iter().any(|n| n.contains('[') || n.contains(']')) {
        return Err(invalid("has `[n]` before its last name"));
    }
    Ok(Query { names, anchored, index })
}

fn matches_query(symbol: &Symbol, query: &Query<'_>) -> bool {
    let names: Vec<&str> = symbol.name_path.split('/').collect();
    if query.anchored { names == query.names } else { names.ends_with(&query.names) }
}

impl Outline {
    /// The one declaration `path` names.
    pub fn resolve(&self, path: &str) -> Result<&Symbol, Unresolved> {
        let query = parse(path)?;
        let all = self.flatten();
        let found: Vec<&Symbol> =
            all.iter().map(|r| r.symbol).filter(|s| matches_query(s, &query)).collect();
        let missing = |query: String, nearest: Vec<Candidate>| Unresolved::Missing {
            query,
            nearest,
            error_lines: self.error_lines.clone(),
        };
        match (query.index, found.len()) {
            (None, 1) => Ok(found[0]),
            (Some(n), count) if n <= count => Ok(found[n - 1]),
            (_, 0) => Err(missing(path.trim().to_string(), self.nearest(&query))),
            (Some(n), _) => {
                let base =
                    format!("{}{}", if query.anchored { "/" } else { "" }, query.names.join("/"));
                Err(missing(
                    format!("{base}[{n}]"),
                    found.iter().take(MAX_LISTED).map(|s| self.candidate(s)).collect(),
                ))
            }
            (None, _) => Err(Unresolved::Ambiguous {
                query: path.trim().to_string(),
                candidates: found.iter().take(MAX_LISTED).map(|s| self.candidate(s)).collect(),
            }),
        }
    }

    /// `symbol` listed with a name path that resolves to it alone.
    pub fn candidate(&self, symbol: &Symbol) -> Candidate {
        let all = self.flatten();
        let same = |anchored: bool| -> Vec<&Symbol> {
            let query =
                Query { names: symbol.name_path.split('/').collect(), anchored, index: None };
            all.iter().map(|r| r.symbol).filter(|s| matches_query(s, &query)).collect()
        };
        let loose = same(false);
        let anchored = same(true);
        let position = |among: &[&Symbol]| {
            among.iter().position(|s| std::ptr::eq(*s, symbol)).unwrap_or(0) + 1
        };
        let name_path = if loose.len() == 1 {
            symbol.name_path.clone()
        } else if anchored.len() == 1 {
            format!("/{}", symbol.name_path)
        } else if anchored.len() < loose.len() {
            format!("/{}[{}]", symbol.name_path, position(&anchored))
        } else {
            format!("{}[{}]", symbol.name_path, position(&loose))
        };
        Candidate {
            name_path,
            kind: symbol.kind.as_str(),
            start_line: symbol.start_line,
            end_line: symbol.end_line,
        }
    }

    /// The declarations whose names are closest to the query's.
    fn nearest(&self, query: &Query<'_>) -> Vec<Candidate> {
        let wanted = query.names.join("/").to_lowercase();
        let last = query.names.last().copied().unwrap_or("").to_lowercase();
        let mut scored: Vec<(usize, &Symbol)> = self
            .flatten()
            .into_iter()
            .map(|r| {
                let name = r.symbol.name.to_lowercase();
                let path = r.symbol.name_path.to_lowercase();
                let mut score = distance(&wanted, &path).min(distance(&last, &name));
                if name.contains(&last) || last.contains(&name) {
                    score = score.min(1);
                }
                (score, r.symbol)
            })
            .filter(|(score, s)| *score <= s.name.chars().count().max(last.chars().count()) / 2 + 1)
            .collect();
        scored.sort_by_key(|(score, _)| *score);
        scored.into_iter().take(5).map(|(_, s)| self.candidate(s)).collect()
    }
}

/// Levenshtein distance, by characters.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1).min(row[j] + 1).min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}
