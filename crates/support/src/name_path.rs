//! Name paths: a declaration addressed by the names from the outermost declaration inwards,
//! joined by `/` (`Parser/parse`), matching at any depth unless it starts with `/`, with `[n]`
//! after the last name to pick the n-th match; resolved over any list of declarations (a
//! tree-sitter outline, a language server's document symbols), ambiguous and missing ones
//! answered with the candidates or the nearest names.

use std::fmt;

/// One declaration of a file, as name paths are resolved over it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry<'a> {
    /// Its name path (`Parser/parse`).
    pub name_path: &'a str,
    /// Its own name (`parse`).
    pub name: &'a str,
    pub kind: &'a str,
    /// 1-based lines.
    pub start_line: usize,
    pub end_line: usize,
}

/// A declaration a name path could mean, as an answer lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// A name path that resolves to exactly this declaration.
    pub name_path: String,
    pub kind: String,
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
    /// None matches (or `[n]` is past the matches); the nearest names of the file, and the
    /// lines where the file does not parse.
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

fn matches_query(entry: &Entry<'_>, query: &Query<'_>) -> bool {
    let names: Vec<&str> = entry.name_path.split('/').collect();
    if query.anchored { names == query.names } else { names.ends_with(&query.names) }
}

/// The index in `entries` of the one declaration `path` names; `error_lines` (where the file
/// does not parse) go into the answer when none matches.
pub fn resolve(
    entries: &[Entry<'_>],
    path: &str,
    error_lines: &[usize],
) -> Result<usize, Unresolved> {
    let query = parse(path)?;
    let found: Vec<usize> =
        (0..entries.len()).filter(|&i| matches_query(&entries[i], &query)).collect();
    let listed = |found: &[usize]| -> Vec<Candidate> {
        found.iter().take(MAX_LISTED).map(|&i| candidate(entries, i)).collect()
    };
    let missing = |query: String, nearest: Vec<Candidate>| Unresolved::Missing {
        query,
        nearest,
        error_lines: error_lines.to_vec(),
    };
    match (query.index, found.len()) {
        (None, 1) => Ok(found[0]),
        (Some(n), count) if n <= count => Ok(found[n - 1]),
        (_, 0) => Err(missing(path.trim().to_string(), nearest(entries, &query))),
        (Some(n), _) => {
            let base =
                format!("{}{}", if query.anchored { "/" } else { "" }, query.names.join("/"));
            Err(missing(format!("{base}[{n}]"), listed(&found)))
        }
        (None, _) => Err(Unresolved::Ambiguous {
            query: path.trim().to_string(),
            candidates: listed(&found),
        }),
    }
}

/// `entries[i]` listed with a name path that resolves to it alone.
pub fn candidate(entries: &[Entry<'_>], i: usize) -> Candidate {
    let entry = &entries[i];
    let same = |anchored: bool| -> Vec<usize> {
        let query = Query { names: entry.name_path.split('/').collect(), anchored, index: None };
        (0..entries.len()).filter(|&j| matches_query(&entries[j], &query)).collect()
    };
    let loose = same(false);
    let anchored = same(true);
    let position = |among: &[usize]| among.iter().position(|&j| j == i).unwrap_or(0) + 1;
    let name_path = if loose.len() == 1 {
        entry.name_path.to_string()
    } else if anchored.len() == 1 {
        format!("/{}", entry.name_path)
    } else if anchored.len() < loose.len() {
        format!("/{}[{}]", entry.name_path, position(&anchored))
    } else {
        format!("{}[{}]", entry.name_path, position(&loose))
    };
    Candidate {
        name_path,
        kind: entry.kind.to_string(),
        start_line: entry.start_line,
        end_line: entry.end_line,
    }
}

/// The declarations whose names are closest to the query's.
fn nearest(entries: &[Entry<'_>], query: &Query<'_>) -> Vec<Candidate> {
    let wanted = query.names.join("/").to_lowercase();
    let last = query.names.last().copied().unwrap_or("").to_lowercase();
    // (how near the name is, how near the whole path is, index)
    let mut scored: Vec<(usize, usize, usize)> = entries
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let name = e.name.to_lowercase();
            let whole = distance(&wanted, &e.name_path.to_lowercase());
            let mut score = whole.min(distance(&last, &name));
            if name.contains(&last) || last.contains(&name) {
                score = score.min(1);
            }
            (score, whole, i)
        })
        .filter(|&(score, _, i)| {
            score <= entries[i].name.chars().count().max(last.chars().count()) / 2 + 1
        })
        .collect();
    scored.sort_unstable();
    scored.into_iter().take(5).map(|(_, _, i)| candidate(entries, i)).collect()
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

#[cfg(test)]
mod tests {
    use super::*;

    fn entry<'a>(name_path: &'a str, start_line: usize) -> Entry<'a> {
        let name = name_path.rsplit('/').next().unwrap_or(name_path);
        Entry { name_path, name, kind: "method", start_line, end_line: start_line + 1 }
    }

    #[test]
    fn a_name_path_matches_at_any_depth_unless_anchored_and_n_picks_in_order() {
        let entries = [entry("parse", 1), entry("Parser/parse", 5), entry("Parser/parse", 9)];
        assert_eq!(resolve(&entries, "/parse", &[]), Ok(0));
        assert_eq!(resolve(&entries, "Parser/parse[2]", &[]), Ok(2));
        let Err(Unresolved::Ambiguous { candidates, .. }) = resolve(&entries, "parse", &[]) else {
            panic!("ambiguous")
        };
        let picks: Vec<&str> = candidates.iter().map(|c| c.name_path.as_str()).collect();
        assert_eq!(picks, ["/parse", "Parser/parse[1]", "Parser/parse[2]"]);
        for (i, pick) in picks.iter().enumerate() {
            assert_eq!(resolve(&entries, pick, &[]), Ok(i), "{pick} picks its candidate alone");
        }
    }

    #[test]
    fn malformed_name_paths_say_what_would_work() {
        let entries = [entry("parse", 1)];
        for bad in ["a//b", "parse[0]", "a[1]/b", ""] {
            let err = resolve(&entries, bad, &[]).unwrap_err();
            assert!(matches!(err, Unresolved::Invalid(_)), "{bad}: {err}");
            assert!(err.to_string().contains("joined by `/`"), "{err}");
        }
    }
}
