//! `transform`: new variables computed from captures (substring, regex replace, case
//! conversion), usable in `fix` and `rewrite`.

use serde_json::Value;

use crate::error::AstError;

#[derive(Debug)]
pub(crate) enum Transform {
    Substring {
        source: String,
        start: Option<i64>,
        end: Option<i64>,
    },
    Replace {
        source: String,
        regex: regex::Regex,
        by: String,
    },
    Convert {
        source: String,
        to: Case,
        separators: Option<Vec<Separator>>,
    },
    /// The captured node(s) with every descendant a rule of `rewriters` matches replaced by
    /// that rewriter's fix (computed while matching, where the nodes are at hand).
    Rewrite {
        source: String,
        rewriters: Vec<String>,
        join_by: Option<String>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Case {
    Lower,
    Upper,
    Capitalize,
    Camel,
    Snake,
    Kebab,
    Pascal,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Separator {
    Dash,
    Dot,
    Slash,
    Space,
    Underscore,
    CaseChange,
}

fn err(path: &str, what: impl std::fmt::Display) -> AstError {
    AstError::Rule(format!("`{path}`: {what}"))
}

const KINDS: &str = "substring {source, startChar, endChar}, replace {source, replace, by}, \
                     convert {source, toCase, separatedBy}, rewrite {source, rewriters, joinBy}";

/// `replace {source, replace, by}`: a regex and its replacement.
fn parse_replace(at: &str, body: &Value, source: String) -> Result<Transform, AstError> {
    let pattern = body
        .get("replace")
        .and_then(Value::as_str)
        .ok_or_else(|| err(&format!("{at}.replace"), "is required: a regex, as a string"))?;
    let regex = regex::Regex::new(pattern)
        .map_err(|e| err(&format!("{at}.replace"), format!("invalid regex: {e}")))?;
    let by = body
        .get("by")
        .and_then(Value::as_str)
        .ok_or_else(|| err(&format!("{at}.by"), "is required: the replacement, as a string"))?
        .to_string();
    Ok(Transform::Replace { source, regex, by })
}

/// `convert {source, toCase, separatedBy}`: a case, and the separators that split words.
fn parse_convert(at: &str, body: &Value, source: String) -> Result<Transform, AstError> {
    let to = match body.get("toCase").and_then(Value::as_str) {
        Some("lowerCase") => Case::Lower,
        Some("upperCase") => Case::Upper,
        Some("capitalize") => Case::Capitalize,
        Some("camelCase") => Case::Camel,
        Some("snakeCase") => Case::Snake,
        Some("kebabCase") => Case::Kebab,
        Some("pascalCase") => Case::Pascal,
        _ => {
            return Err(err(
                &format!("{at}.toCase"),
                "must be one of lowerCase, upperCase, capitalize, camelCase, snakeCase, kebabCase, pascalCase",
            ));
        }
    };
    let separators = match body.get("separatedBy") {
        None => None,
        Some(list) => {
            let items = list
                .as_array()
                .ok_or_else(|| err(&format!("{at}.separatedBy"), "must be a list"))?;
            let mut out = Vec::new();
            for item in items {
                out.push(match item.as_str() {
                    Some("dash") => Separator::Dash,
                    Some("dot") => Separator::Dot,
                    Some("slash") => Separator::Slash,
                    Some("space") => Separator::Space,
                    Some("underscore") => Separator::Underscore,
                    Some("caseChange") => Separator::CaseChange,
                    _ => {
                        return Err(err(
                            &format!("{at}.separatedBy"),
                            "items are dash, dot, slash, space, underscore, caseChange",
                        ));
                    }
                });
            }
            Some(out)
        }
    };
    Ok(Transform::Convert { source, to, separators })
}

/// `rewrite {source, rewriters, joinBy}`: the config's rewriters to run over the capture.
fn parse_rewrite(at: &str, body: &Value, source: String) -> Result<Transform, AstError> {
    let rewriters = body
        .get("rewriters")
        .and_then(Value::as_array)
        .and_then(|l| l.iter().map(|i| i.as_str().map(str::to_string)).collect())
        .ok_or_else(|| {
            err(
                &format!("{at}.rewriters"),
                "is required: a list of ids of the config's `rewriters`",
            )
        })?;
    let join_by = match body.get("joinBy") {
        None => None,
        Some(j) => Some(
            j.as_str().ok_or_else(|| err(&format!("{at}.joinBy"), "must be a string"))?.to_string(),
        ),
    };
    Ok(Transform::Rewrite { source, rewriters, join_by })
}

impl Transform {
    pub(crate) fn parse(path: &str, v: &Value) -> Result<Transform, AstError> {
        if let Value::String(text) = v {
            return Transform::parse(path, &from_call(path, text)?);
        }
        let obj = v
            .as_object()
            .filter(|o| o.len() == 1)
            .ok_or_else(|| err(path, format!("must be an object with exactly one of {KINDS}")))?;
        let (kind, body) = obj.iter().next().ok_or_else(|| err(path, "is empty"))?;
        let at = format!("{path}.{kind}");
        let source = body
            .get("source")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                err(
                    &format!("{at}.source"),
                    "is required: the metavariable to transform, such as \"$A\"",
                )
            })?
            .to_string();
        check_source(&format!("{at}.source"), &source)?;
        let int = |key: &str| -> Result<Option<i64>, AstError> {
            match body.get(key) {
                None => Ok(None),
                Some(v) => v.as_i64().map(Some).ok_or_else(|| {
                    err(&format!("{at}.{key}"), "must be an integer (negative counts from the end)")
                }),
            }
        };
        match kind.as_str() {
            "substring" => {
                Ok(Transform::Substring { source, start: int("startChar")?, end: int("endChar")? })
            }
            "replace" => parse_replace(&at, body, source),
            "convert" => parse_convert(&at, body, source),
            "rewrite" => parse_rewrite(&at, body, source),
            other => Err(err(
                &format!("{path}.{other}"),
                format!("unknown transformation; use one of {KINDS}"),
            )),
        }
    }

    /// The metavariable (without `$`) this transformation reads.
    pub(crate) fn source_name(&self) -> &str {
        let s = match self {
            Transform::Substring { source, .. }
            | Transform::Replace { source, .. }
            | Transform::Convert { source, .. }
            | Transform::Rewrite { source, .. } => source,
        };
        s.trim_start_matches('$')
    }

    pub(crate) fn apply(&self, text: &str) -> String {
        match self {
            Transform::Substring { start, end, .. } => {
                let chars: Vec<char> = text.chars().collect();
                let len = i64::try_from(chars.len()).unwrap_or(i64::MAX);
                let clamp = |i: i64| -> usize {
                    let i = if i < 0 { len + i } else { i };
                    usize::try_from(i.clamp(0, len)).unwrap_or(0)
                };
                let s = start.map_or(0, clamp);
                let e = end.map_or(chars.len(), clamp);
                if s >= e { String::new() } else { chars[s..e].iter().collect() }
            }
            Transform::Replace { regex, by, .. } => {
                regex.replace_all(text, by.as_str()).into_owned()
            }
            Transform::Convert { to, separators, .. } => convert(text, *to, separators.as_deref()),
            // Computed from the nodes while matching (`Evaluator::rewrite`), never from text.
            Transform::Rewrite { .. } => text.to_string(),
        }
    }
}

/// ast-grep's string form, `substring($A, startChar=1, endChar=-1)` or
/// `convert($A, toCase=snakeCase, separatedBy=[dash, underscore])`, as the object form.
fn from_call(path: &str, text: &str) -> Result<Value, AstError> {
    let syntax = || {
        err(
            path,
            format!(
                "`{text}` is not a transformation: write `KIND($SOURCE, key=value, …)` such as \
                 `convert($A, toCase=snakeCase)`, or an object with one of {KINDS}"
            ),
        )
    };
    let (kind, rest) = text.trim().split_once('(').ok_or_else(syntax)?;
    let rest = rest.trim_end().strip_suffix(')').ok_or_else(syntax)?;
    let (source, mut rest) = rest.split_once(',').unwrap_or((rest, ""));
    let mut body = serde_json::Map::new();
    body.insert("source".into(), Value::String(source.trim().to_string()));
    loop {
        rest = rest.trim_start();
        if rest.is_empty() {
            break;
        }
        let (key, after) = rest.split_once('=').ok_or_else(syntax)?;
        let after = after.trim_start();
        let (value, next) = match after.chars().next() {
            Some(q @ ('\'' | '"')) => {
                let end = after[1..].find(q).ok_or_else(syntax)? + 1;
                (Value::String(after[1..end].to_string()), &after[end + 1..])
            }
            Some('[') => {
                let end = after.find(']').ok_or_else(syntax)?;
                let items = after[1..end]
                    .split(',')
                    .map(|i| i.trim().trim_matches(['\'', '"']))
                    .filter(|i| !i.is_empty())
                    .map(|i| Value::String(i.to_string()))
                    .collect();
                (Value::Array(items), &after[end + 1..])
            }
            _ => {
                let end = after.find(',').unwrap_or(after.len());
                let word = after[..end].trim();
                let value = word
                    .parse::<i64>()
                    .map(Value::from)
                    .unwrap_or_else(|_| Value::String(word.to_string()));
                (value, &after[end..])
            }
        };
        body.insert(key.trim().to_string(), value);
        rest = next.trim_start();
        rest = rest.strip_prefix(',').unwrap_or(rest);
    }
    Ok(serde_json::json!({ kind.trim(): body }))
}

/// A transformation's `source` is one metavariable: `$A`, `$$A` or `$$$A` with an uppercase
/// name (ast-grep refuses anything else, which would otherwise read nothing and write "").
fn check_source(path: &str, source: &str) -> Result<(), AstError> {
    let name = source.trim_start_matches('$');
    let dollars = source.len() - name.len();
    let well_formed = (1..=3).contains(&dollars)
        && !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name != "_"
        && name.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
    if well_formed {
        return Ok(());
    }
    let hint = if dollars == 0 && !name.is_empty() {
        format!(" (write `${}`)", name.to_ascii_uppercase())
    } else {
        String::new()
    };
    Err(err(
        path,
        format!(
            "`{source}` is not a metavariable{hint}: the source is a capture of the rule or \
             another transform's name, `$`-prefixed and uppercase, such as \"$A\""
        ),
    ))
}

/// Orders `transforms` so each comes after the transform it reads, and refuses any that reads
/// a metavariable neither the rule (`vars`, with `$`) nor another transform defines, one that
/// reuses a capture's name, and cycles (`A` reading `A`, `A` reading `B` reading `A`).
/// Each of these would otherwise make the fix write an empty string.
pub(crate) fn order(
    transforms: Vec<(String, Transform)>,
    vars: &[String],
) -> Result<Vec<(String, Transform)>, AstError> {
    let captures: Vec<&str> = vars.iter().map(|v| v.trim_start_matches('$')).collect();
    let names: Vec<&str> = transforms.iter().map(|(n, _)| n.as_str()).collect();
    for (name, t) in &transforms {
        if captures.contains(&name.as_str()) {
            return Err(err(
                &format!("transform.{name}"),
                format!(
                    "`${name}` is already a metavariable of the rule; give the transformed value \
                     another name, such as `{name}_NEW`"
                ),
            ));
        }
        let source = t.source_name();
        if !captures.contains(&source) && !names.contains(&source) {
            let bound = if vars.is_empty() { "none".to_string() } else { vars.join(", ") };
            let defined = if names.is_empty() {
                String::new()
            } else {
                format!(
                    "; transforms: {}",
                    names.iter().map(|n| format!("${n}")).collect::<Vec<_>>().join(", ")
                )
            };
            return Err(err(
                &format!("transform.{name}"),
                format!(
                    "reads `${source}`, which no pattern of the rule binds and no transform \
                     defines (bound: {bound}{defined}); read one of those instead"
                ),
            ));
        }
    }
    // Depth-first: `state` is 0 unvisited, 1 on the current path, 2 placed.
    let mut state = vec![0u8; transforms.len()];
    let mut placed: Vec<usize> = Vec::with_capacity(transforms.len());
    for start in 0..transforms.len() {
        let mut path: Vec<usize> = Vec::new();
        let mut at = Some(start);
        while let Some(i) = at {
            match state[i] {
                2 => break,
                1 => {
                    let from = path.iter().position(|p| *p == i).unwrap_or(0);
                    let cycle: Vec<String> = path[from..]
                        .iter()
                        .chain([&i])
                        .map(|j| format!("${}", names[*j]))
                        .collect();
                    let what = if path.len() - from == 1 {
                        format!("reads `${}`, its own result", names[i])
                    } else {
                        format!("is part of the cycle {}", cycle.join(" → "))
                    };
                    return Err(err(
                        &format!("transform.{}", names[i]),
                        format!(
                            "{what}; a transform must read a capture of the rule (bound: {}) or \
                             a transform that does not read it back",
                            if vars.is_empty() { "none".to_string() } else { vars.join(", ") }
                        ),
                    ));
                }
                _ => {}
            }
            state[i] = 1;
            path.push(i);
            let source = transforms[i].1.source_name();
            at = if captures.contains(&source) {
                None
            } else {
                names.iter().position(|n| *n == source)
            };
        }
        for i in path.into_iter().rev() {
            state[i] = 2;
            placed.push(i);
        }
    }
    let mut slots: Vec<Option<(String, Transform)>> = transforms.into_iter().map(Some).collect();
    Ok(placed.into_iter().filter_map(|i| slots[i].take()).collect())
}

/// Refuses a `rewrite` that names a rewriter the config does not define, or whose source is
/// not a capture of the rule (a rewrite works on nodes, which a transform's text has not).
pub(crate) fn check_rewrites(
    transforms: &[(String, Transform)],
    vars: &[String],
    defined: &[String],
) -> Result<(), AstError> {
    for (name, t) in transforms {
        let Transform::Rewrite { rewriters, .. } = t else { continue };
        let at = format!("transform.{name}.rewrite");
        if let Some(missing) = rewriters.iter().find(|r| !defined.contains(r)) {
            return Err(err(
                &format!("{at}.rewriters"),
                format!(
                    "no rewriter `{missing}`; define it under `rewriters` of the rule config \
                     (defined: {})",
                    if defined.is_empty() { "none".to_string() } else { defined.join(", ") }
                ),
            ));
        }
        let source = t.source_name();
        if !vars.iter().any(|v| v.trim_start_matches('$') == source) {
            return Err(err(
                &format!("{at}.source"),
                format!(
                    "`${source}` is a transform's text; a rewrite works on the nodes of a capture of the rule ({})",
                    vars.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

fn convert(text: &str, to: Case, separators: Option<&[Separator]>) -> String {
    match to {
        Case::Lower => return text.to_lowercase(),
        Case::Upper => return text.to_uppercase(),
        Case::Capitalize => {
            let mut chars = text.chars();
            return chars
                .next()
                .map(|c| c.to_uppercase().chain(chars).collect())
                .unwrap_or_default();
        }
        _ => {}
    }
    let all = [
        Separator::Dash,
        Separator::Dot,
        Separator::Slash,
        Separator::Space,
        Separator::Underscore,
        Separator::CaseChange,
    ];
    let seps = separators.unwrap_or(&all);
    let is_sep = |c: char| {
        (c == '-' && seps.contains(&Separator::Dash))
            || (c == '.' && seps.contains(&Separator::Dot))
            || (c == '/' && seps.contains(&Separator::Slash))
            || (c == ' ' && seps.contains(&Separator::Space))
            || (c == '_' && seps.contains(&Separator::Underscore))
    };
    let case_change = seps.contains(&Separator::CaseChange);
    let mut words: Vec<String> = Vec::new();
    let mut current = String::new();
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if is_sep(c) {
            if !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
            continue;
        }
        if case_change && c.is_uppercase() && !current.is_empty() {
            let prev_lower = chars
                .get(i.wrapping_sub(1))
                .is_some_and(|p| p.is_lowercase() || p.is_ascii_digit());
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            let prev_upper = chars.get(i.wrapping_sub(1)).is_some_and(|p| p.is_uppercase());
            if prev_lower || (prev_upper && next_lower) {
                words.push(std::mem::take(&mut current));
            }
        }
        current.push(c);
    }
    if !current.is_empty() {
        words.push(current);
    }
    let lower: Vec<String> = words.iter().map(|w| w.to_lowercase()).collect();
    let cap = |w: &str| -> String {
        let mut chars = w.chars();
        chars.next().map(|c| c.to_uppercase().chain(chars).collect()).unwrap_or_default()
    };
    match to {
        Case::Snake => lower.join("_"),
        Case::Kebab => lower.join("-"),
        Case::Pascal => lower.iter().map(|w| cap(w)).collect(),
        Case::Camel => {
            lower.iter().enumerate().map(|(i, w)| if i == 0 { w.clone() } else { cap(w) }).collect()
        }
        Case::Lower | Case::Upper | Case::Capitalize => unreachable_case(text),
    }
}

/// Handled before splitting; kept total without a panic.
fn unreachable_case(text: &str) -> String {
    text.to_string()
}
