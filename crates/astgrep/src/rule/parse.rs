//! A rule object (`pattern`, `kind`, `has`, `all`, …) parsed into a `Rule`, with errors that name
//! the key (`rule.has.stopBy`) and say what would work.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::{Fix, NthChild, Relation, Rule, StopBy};
use crate::{
    error::AstError,
    lang::{Lang, LangData},
    pattern::Pattern,
    strictness::Strictness,
};

const RULE_KEYS: &str = "pattern, kind, regex, nthChild, range, inside, has, follows, precedes, \
                         all, any, not, matches";

pub(super) fn err(path: &str, what: impl std::fmt::Display) -> AstError {
    AstError::Rule(format!("`{path}`: {what}"))
}

pub(super) struct Parser<'a> {
    pub(super) lang: Lang,
    pub(super) data: &'static LangData,
    pub(super) strictness: Strictness,
    pub(super) util_names: &'a HashSet<String>,
    pub(super) vars: Vec<String>,
}

pub(super) fn parse_strictness(path: &str, v: &Value) -> Result<Strictness, AstError> {
    v.as_str()
        .and_then(Strictness::from_id)
        .ok_or_else(|| err(path, "must be one of cst, smart, ast, relaxed, signature"))
}

fn as_u64(path: &str, v: Option<&Value>) -> Result<usize, AstError> {
    v.and_then(Value::as_u64)
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| err(path, "must be a non-negative integer"))
}

impl Parser<'_> {
    pub(super) fn rule(&mut self, path: &str, v: &Value) -> Result<Rule, AstError> {
        let Some(obj) = v.as_object() else {
            return Err(err(path, format!("must be a rule object with any of {RULE_KEYS}")));
        };
        if obj.is_empty() {
            return Err(err(path, format!("is empty; give at least one of {RULE_KEYS}")));
        }
        for key in obj.keys() {
            if !RULE_KEYS.split(", ").any(|k| k == key) && key != "stopBy" && key != "field" {
                let hint = if key == "rule" {
                    " (a nested `rule` key belongs only at the top of a rule config)".to_string()
                } else {
                    String::new()
                };
                return Err(err(
                    &format!("{path}.{key}"),
                    format!("unknown rule key{hint}; a rule has {RULE_KEYS}"),
                ));
            }
        }
        let mut parts = Vec::new();
        // Atomic rules first, then composite, then relational (ast-grep's order), so later
        // parts see the bindings of earlier ones.
        if let Some(p) = obj.get("pattern") {
            parts.push(self.pattern(&format!("{path}.pattern"), p)?);
        }
        if let Some(k) = obj.get("kind") {
            parts.push(self.kind(&format!("{path}.kind"), k)?);
        }
        if let Some(r) = obj.get("regex") {
            let at = format!("{path}.regex");
            let s = r.as_str().ok_or_else(|| err(&at, "must be a string (a Rust regex)"))?;
            parts.push(Rule::Regex(
                regex::Regex::new(s).map_err(|e| err(&at, format!("invalid regex: {e}")))?,
            ));
        }
        if let Some(n) = obj.get("nthChild") {
            parts.push(self.nth_child(&format!("{path}.nthChild"), n)?);
        }
        if let Some(r) = obj.get("range") {
            parts.push(range(&format!("{path}.range"), r)?);
        }
        for key in ["all", "any"] {
            if let Some(list) = obj.get(key) {
                let at = format!("{path}.{key}");
                let items = list.as_array().ok_or_else(|| err(&at, "must be a list of rules"))?;
                let rules = items
                    .iter()
                    .enumerate()
                    .map(|(i, r)| self.rule(&format!("{at}[{i}]"), r))
                    .collect::<Result<Vec<_>, _>>()?;
                parts.push(if key == "all" { Rule::All(rules) } else { Rule::Any(rules) });
            }
        }
        if let Some(r) = obj.get("not") {
            parts.push(Rule::Not(Box::new(self.rule(&format!("{path}.not"), r)?)));
        }
        if let Some(m) = obj.get("matches") {
            parts.push(self.matches(&format!("{path}.matches"), m)?);
        }
        // Relational parts last, as ast-grep orders them: they see what the node's own
        // parts bound.
        for key in ["inside", "has", "precedes", "follows"] {
            if let Some(r) = obj.get(key) {
                let at = format!("{path}.{key}");
                let relation = Box::new(self.relation(&at, r, matches!(key, "inside" | "has"))?);
                parts.push(match key {
                    "inside" => Rule::Inside(relation),
                    "has" => Rule::Has(relation),
                    "follows" => Rule::Follows(relation),
                    _ => Rule::Precedes(relation),
                });
            }
        }
        if parts.is_empty() {
            return Err(err(
                path,
                format!(
                    "`stopBy` and `field` belong to a relational rule; give one of {RULE_KEYS}"
                ),
            ));
        }
        Ok(if parts.len() == 1 { parts.remove(0) } else { Rule::All(parts) })
    }

    /// `matches`: the name of a utility rule of the config.
    fn matches(&self, at: &str, m: &Value) -> Result<Rule, AstError> {
        let name = m.as_str().ok_or_else(|| err(at, "must be the name of a rule in `utils`"))?;
        if !self.util_names.contains(name) {
            let known: Vec<&str> = self.util_names.iter().map(String::as_str).collect();
            return Err(err(
                at,
                format!(
                    "no utility rule `{name}`; define it under `utils` of the rule config{}",
                    if known.is_empty() {
                        String::new()
                    } else {
                        format!(" (defined: {})", known.join(", "))
                    }
                ),
            ));
        }
        Ok(Rule::Matches(name.to_string()))
    }

    fn pattern(&mut self, path: &str, v: &Value) -> Result<Rule, AstError> {
        let pattern = match v {
            Value::String(s) => match Pattern::lone_metavariable(self.lang, s) {
                Ok(Some(p)) => p,
                Ok(None) => Pattern::compile(self.lang, s, None).map_err(|e| err(path, e))?,
                Err(e) => return Err(err(path, e)),
            }
            .with_strictness(self.strictness),
            Value::Object(obj) => {
                for key in obj.keys() {
                    if !["context", "selector", "strictness"].contains(&key.as_str()) {
                        return Err(err(
                            &format!("{path}.{key}"),
                            "unknown key; a pattern object has context, selector, strictness",
                        ));
                    }
                }
                let context = obj.get("context").and_then(Value::as_str).ok_or_else(|| {
                    err(
                        &format!("{path}.context"),
                        "is required: code around the part to match, as a string",
                    )
                })?;
                let compiled = match obj.get("selector") {
                    Some(s) => {
                        let selector = s.as_str().ok_or_else(|| {
                            err(&format!("{path}.selector"), "must be a node kind, as a string")
                        })?;
                        Pattern::contextual(self.lang, context, selector)
                    }
                    None => Pattern::compile(self.lang, context, None),
                }
                .map_err(|e| err(path, e))?;
                let strictness = match obj.get("strictness") {
                    Some(s) => parse_strictness(&format!("{path}.strictness"), s)?,
                    None => self.strictness,
                };
                compiled.with_strictness(strictness)
            }
            _ => {
                return Err(err(
                    path,
                    "must be a string, or an object with `context` (and `selector`, `strictness`)",
                ));
            }
        };
        if pattern.is_sequence() {
            return Err(err(
                path,
                "a pattern of several statements cannot be one rule node; match one and use `follows`/`precedes` for its neighbours",
            ));
        }
        for v in pattern.metavariables() {
            if !self.vars.contains(&v) {
                self.vars.push(v);
            }
        }
        Ok(Rule::Pattern(Box::new(pattern)))
    }

    /// `kind`: a node kind's name, or a selector over kinds (`call_expression > identifier`).
    fn kind(&self, path: &str, v: &Value) -> Result<Rule, AstError> {
        let text = v.as_str().ok_or_else(|| err(path, "must be a node kind name, as a string"))?;
        if !super::selector::is_selector(text) {
            return self.kind_name(path, text.trim());
        }
        super::selector::parse(path, text, &mut |name| self.kind_name(path, name))
    }

    fn kind_name(&self, path: &str, name: &str) -> Result<Rule, AstError> {
        let id = self.data.language.id_for_node_kind(name, true);
        if id == 0 {
            let language = &self.data.language;
            let mut close: Vec<&str> = (0..language.node_kind_count())
                .filter_map(|i| u16::try_from(i).ok())
                .filter(|i| language.node_kind_is_named(*i) && language.node_kind_is_visible(*i))
                .filter_map(|i| language.node_kind_for_id(i))
                .filter(|k| {
                    let (a, b) = (k.to_ascii_lowercase(), name.to_ascii_lowercase());
                    a.contains(&b)
                        || b.contains(&a)
                        || a.split('_').any(|w| w.len() > 2 && b.contains(w))
                })
                .collect();
            close.sort_unstable();
            close.dedup();
            close.truncate(8);
            return Err(err(
                path,
                format!(
                    "`{name}` is not a node kind of {}{}; the shape an `ast_grep` pattern prints shows kinds",
                    self.lang,
                    if close.is_empty() {
                        String::new()
                    } else {
                        format!(" (similar: {})", close.join(", "))
                    }
                ),
            ));
        }
        Ok(Rule::Kind(self.data.canon(id)))
    }

    fn nth_child(&mut self, path: &str, v: &Value) -> Result<Rule, AstError> {
        let formula = |path: &str, v: &Value| -> Result<(i64, i64), AstError> {
            match v {
                Value::Number(n) => n
                    .as_i64()
                    .filter(|n| *n >= 1)
                    .map(|n| (0, n))
                    .ok_or_else(|| err(path, "a position is 1 or more")),
                Value::String(s) => NthChild::parse_formula(s).ok_or_else(|| {
                    err(
                        path,
                        format!("`{s}` is not a position: write a number or `An+B` such as `2n+1`"),
                    )
                }),
                _ => Err(err(
                    path,
                    "must be a number, an `An+B` string, or an object with `position`",
                )),
            }
        };
        let nth = match v {
            Value::Object(obj) => {
                for key in obj.keys() {
                    if !["position", "reverse", "ofRule"].contains(&key.as_str()) {
                        return Err(err(
                            &format!("{path}.{key}"),
                            "unknown key; nthChild has position, reverse, ofRule",
                        ));
                    }
                }
                let position = obj
                    .get("position")
                    .ok_or_else(|| err(&format!("{path}.position"), "is required"))?;
                let (a, b) = formula(&format!("{path}.position"), position)?;
                let reverse = obj.get("reverse").and_then(Value::as_bool).unwrap_or(false);
                let of = match obj.get("ofRule") {
                    Some(r) => Some(self.rule(&format!("{path}.ofRule"), r)?),
                    None => None,
                };
                NthChild { a, b, reverse, of }
            }
            other => {
                let (a, b) = formula(path, other)?;
                NthChild { a, b, reverse: false, of: None }
            }
        };
        Ok(Rule::NthChild(Box::new(nth)))
    }

    /// A relational rule at `path`; `field` is allowed only where it means something (`has`,
    /// `inside`), as in ast-grep.
    fn relation(&mut self, path: &str, v: &Value, with_field: bool) -> Result<Relation, AstError> {
        let obj: &Map<String, Value> = v
            .as_object()
            .ok_or_else(|| err(path, format!("must be a rule object with any of {RULE_KEYS}")))?;
        let rule = self.rule(path, v)?;
        let stop_by = match obj.get("stopBy") {
            None => StopBy::Neighbor,
            Some(Value::String(s)) if s == "neighbor" => StopBy::Neighbor,
            Some(Value::String(s)) if s == "end" => StopBy::End,
            Some(r @ Value::Object(_)) => StopBy::Rule(self.rule(&format!("{path}.stopBy"), r)?),
            Some(_) => {
                return Err(err(
                    &format!("{path}.stopBy"),
                    "must be `neighbor` (the default), `end`, or a rule",
                ));
            }
        };
        let field = match obj.get("field") {
            None => None,
            Some(_) if !with_field => {
                return Err(err(
                    &format!("{path}.field"),
                    "is only supported in `has` and `inside`: it names the field the related node \
                     sits in below or above; for siblings, describe the sibling with a rule",
                ));
            }
            Some(f) => {
                let at = format!("{path}.field");
                let name =
                    f.as_str().ok_or_else(|| err(&at, "must be a field name, as a string"))?;
                let id = self.data.language.field_id_for_name(name).ok_or_else(|| {
                    err(&at, format!("`{name}` is not a field of the {} grammar (fields are names such as `body`, `name`, `return_type`)", self.lang))
                })?;
                Some(id)
            }
        };
        Ok(Relation { rule, stop_by, field })
    }

    /// `fix`: one template or object, or (as ast-grep) a list of objects with a `title`
    /// each, of which `ast_edit` applies the first, as the ast-grep CLI does; the others'
    /// templates are returned to be checked.
    pub(super) fn fixes(&mut self, v: &Value) -> Result<(Fix, Vec<String>), AstError> {
        let Value::Array(items) = v else { return Ok((self.fix(v)?, Vec::new())) };
        let mut fixes = Vec::new();
        for (i, item) in items.iter().enumerate() {
            if item.get("title").and_then(Value::as_str).is_none() {
                return Err(err(
                    &format!("fix[{i}].title"),
                    "is required in a list of fixes: a short name for each choice",
                ));
            }
            fixes.push(self.fix(item)?);
        }
        let mut fixes = fixes.into_iter();
        let first = fixes.next().ok_or_else(|| {
            err("fix", "is an empty list; give a template string or objects with `template`")
        })?;
        Ok((first, fixes.map(|f| f.template).collect()))
    }

    fn fix(&mut self, v: &Value) -> Result<Fix, AstError> {
        match v {
            Value::String(s) => {
                Ok(Fix { template: s.clone(), expand_start: None, expand_end: None })
            }
            Value::Object(obj) => {
                for key in obj.keys() {
                    if !["template", "expandStart", "expandEnd", "title"].contains(&key.as_str()) {
                        return Err(err(
                            &format!("fix.{key}"),
                            "unknown key; fix has template, expandStart, expandEnd, title",
                        ));
                    }
                }
                let template = obj
                    .get("template")
                    .and_then(Value::as_str)
                    .ok_or_else(|| {
                        err("fix.template", "is required: the replacement text, as a string")
                    })?
                    .to_string();
                // ast-grep accepts a `field` here and ignores it; so does this crate.
                let expand_start = match obj.get("expandStart") {
                    Some(r) => Some(self.relation("fix.expandStart", r, true)?),
                    None => None,
                };
                let expand_end = match obj.get("expandEnd") {
                    Some(r) => Some(self.relation("fix.expandEnd", r, true)?),
                    None => None,
                };
                Ok(Fix { template, expand_start, expand_end })
            }
            _ => Err(err("fix", "must be a template string or an object with `template`")),
        }
    }
}

fn range(path: &str, v: &Value) -> Result<Rule, AstError> {
    let point = |key: &str| -> Result<(usize, Option<usize>), AstError> {
        let at = format!("{path}.{key}");
        let p = v.get(key).ok_or_else(|| {
            err(&at, "is required: {\"line\": L, \"column\": C}, 0-based (`column` optional)")
        })?;
        let column = match p.get("column") {
            None | Some(Value::Null) => None,
            c => Some(as_u64(&format!("{at}.column"), c)?),
        };
        Ok((as_u64(&format!("{at}.line"), p.get("line"))?, column))
    };
    let (start, end) = (point("start")?, point("end")?);
    // As ast-grep compares them: a missing column sorts before every column, so on one line a
    // start column with no end column is refused too.
    let after = start.0 > end.0 || (start.0 == end.0 && start.1 > end.1);
    if after {
        let show = |(line, column): (usize, Option<usize>)| match column {
            Some(c) => format!("{line}:{c}"),
            None => format!("line {line}"),
        };
        return Err(err(
            path,
            format!(
                "`start` ({}) is after `end` ({}), so no node could match; give the start \
                 first (lines and columns are 0-based, columns in characters)",
                show(start),
                show(end)
            ),
        ));
    }
    Ok(Rule::Range { start, end })
}
