//! `transform`: new variables computed from captures (substring, regex replace, case
//! conversion), usable in `fix` and `rewrite`.

use serde_json::Value;

use crate::error::AstError;

#[derive(Debug)]
pub(crate) enum Transform {
    Substring { source: String, start: Option<i64>, end: Option<i64> },
    Replace { source: String, regex: regex::Regex, by: String },
    Convert { source: String, to: Case, separators: Option<Vec<Separator>> },
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
                     convert {source, toCase, separatedBy}";

impl Transform {
    pub(crate) fn parse(path: &str, v: &Value) -> Result<Transform, AstError> {
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
            "replace" => {
                let pattern = body.get("replace").and_then(Value::as_str).ok_or_else(|| {
                    err(&format!("{at}.replace"), "is required: a regex, as a string")
                })?;
                let regex = regex::Regex::new(pattern)
                    .map_err(|e| err(&format!("{at}.replace"), format!("invalid regex: {e}")))?;
                let by = body
                    .get("by")
                    .and_then(Value::as_str)
                    .ok_or_else(|| {
                        err(&format!("{at}.by"), "is required: the replacement, as a string")
                    })?
                    .to_string();
                Ok(Transform::Replace { source, regex, by })
            }
            "convert" => {
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
            | Transform::Convert { source, .. } => source,
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
        }
    }
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
