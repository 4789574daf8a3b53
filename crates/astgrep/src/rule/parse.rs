//! Rule JSON to compiled rules, with errors that name the key (`rule.has.stopBy`) and say what
//! would work.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use super::{Fix, NthChild, Relation, Rule, RuleSet, StopBy, Transform};
use crate::{
    error::AstError,
    lang::{Lang, LangData},
    pattern::Pattern,
    strictness::Strictness,
};

const RULE_KEYS: &str = "pattern, kind, regex, nthChild, range, inside, has, follows, precedes, \
                         all, any, not, matches";
const CONFIG_KEYS: &str = "rule, constraints, utils, transform, fix, rewriters, files, ignores, \
                           language, strictness (and id, message, severity, note, url, metadata, \
                           labels, which only describe a report)";

fn err(path: &str, what: impl std::fmt::Display) -> AstError {
    AstError::Rule(format!("`{path}`: {what}"))
}

struct Parser<'a> {
    lang: Lang,
    data: &'static LangData,
    strictness: Strictness,
    util_names: &'a HashSet<String>,
    vars: Vec<String>,
}

pub(super) fn compile(lang: Lang, value: &Value) -> Result<RuleSet, AstError> {
    let list = match value.get("rule").and(value.get("rewriters")) {
        None => &[][..],
        Some(Value::Array(list)) => list.as_slice(),
        Some(_) => {
            return Err(err(
                "rewriters",
                "must be a list of rules, each with `id`, `rule` and `fix`",
            ));
        }
    };
    let mut ids: Vec<String> = Vec::new();
    for (i, r) in list.iter().enumerate() {
        let id = r.get("id").and_then(Value::as_str).ok_or_else(|| {
            err(&format!("rewriters[{i}].id"), "is required: the name `rewrite` transforms use")
        })?;
        if ids.iter().any(|d| d == id) {
            return Err(err(&format!("rewriters[{i}].id"), format!("`{id}` is defined twice")));
        }
        ids.push(id.to_string());
    }
    let mut set = compile_core(lang, value, None, &ids)?;
    let top_utils: Vec<(String, &Value)> = value
        .get("utils")
        .and_then(Value::as_object)
        .map(|u| u.iter().map(|(k, v)| (k.clone(), v)).collect())
        .unwrap_or_default();
    let transforms: Vec<String> = set.transforms.iter().map(|(n, _)| n.clone()).collect();
    for (r, id) in list.iter().zip(&ids) {
        let in_rewriter = |e: AstError| match e {
            AstError::Rule(m) => AstError::Rule(format!("in rewriter `{id}`: {m}")),
            other => other,
        };
        if r.get("rule").is_none() || r.get("fix").is_none() {
            return Err(err(
                &format!("rewriters.{id}"),
                "needs `rule` and `fix`: what to find inside the captured code and what to write",
            ));
        }
        let upper = Upper { vars: &set.vars, transforms: &transforms, utils: &top_utils };
        let compiled = compile_core(lang, r, Some(upper), &ids).map_err(in_rewriter)?;
        set.rewriters.push((id.clone(), compiled));
    }
    Ok(set)
}

/// What a rewriter sees of the rule config around it: the metavariables its rule binds, the
/// names of its transforms (which a rewriter cannot read: they are computed after it runs) and
/// its utility rules (a rewriter's own `utils` of the same name win).
#[derive(Clone, Copy)]
struct Upper<'a> {
    vars: &'a [String],
    transforms: &'a [String],
    utils: &'a [(String, &'a Value)],
}

/// Report-only keys of a rule config: checked for their type as ast-grep checks them, then
/// ignored.
fn check_report_keys(config: &Map<String, Value>) -> Result<(), AstError> {
    // A number or `true` reads as its text in ast-grep's YAML; a list or a map does not.
    for key in ["id", "message", "note", "url", "language"] {
        if let Some(v) = config.get(key)
            && !(v.is_string() || v.is_number() || v.is_boolean())
        {
            return Err(err(key, "must be a string"));
        }
    }
    if let Some(v) = config.get("severity") {
        let known = ["hint", "info", "warning", "error", "off"];
        if !v.as_str().is_some_and(|s| known.contains(&s)) {
            return Err(err("severity", format!("must be one of {}", known.join(", "))));
        }
    }
    if let Some(v) = config.get("metadata")
        && !v.is_object()
    {
        return Err(err("metadata", "must be an object mapping names to values"));
    }
    Ok(())
}

/// `labels`: each key a metavariable the rule or its constraints bind (`vars`, with `$`), each
/// value `{style: primary|secondary, message?}` (other keys ignored), as ast-grep requires;
/// labels only decorate a report, so they are then ignored.
fn check_labels(labels: &Value, vars: &[String]) -> Result<(), AstError> {
    let labels = labels.as_object().ok_or_else(|| {
        err("labels", "must map metavariable names to {\"style\": \"primary\" or \"secondary\", \"message\": …}")
    })?;
    for (name, label) in labels {
        let at = format!("labels.{name}");
        if !vars.iter().any(|v| v.trim_start_matches('$') == name) {
            return Err(err(
                &at,
                format!(
                    "`{name}` must be a metavariable bound in `rule` or `constraints` (bound: {}); \
                     name it without `$`",
                    if vars.is_empty() { "none".to_string() } else { vars.join(", ") }
                ),
            ));
        }
        let Some(label) = label.as_object() else {
            return Err(err(&at, "must be an object with `style` and optionally `message`"));
        };
        if !label
            .get("style")
            .and_then(Value::as_str)
            .is_some_and(|s| s == "primary" || s == "secondary")
        {
            return Err(err(&format!("{at}.style"), "is required: `primary` or `secondary`"));
        }
        if label.get("message").is_some_and(|m| !m.is_string()) {
            return Err(err(&format!("{at}.message"), "must be a string"));
        }
    }
    Ok(())
}

/// A metavariable name used as a key (`constraints`, `transform`): ast-grep takes it without
/// `$`, and a `$` there names nothing the rule binds.
fn bare_key(section: &str, name: &str) -> Result<String, AstError> {
    if let Some(bare) = name.strip_prefix('$') {
        return Err(err(
            &format!("{section}.{name}"),
            format!(
                "keys of `{section}` are names without `$`: write `{}`",
                bare.trim_start_matches('$')
            ),
        ));
    }
    Ok(name.to_string())
}

/// Compiles one rule config: the top one (`upper` None) or a rewriter, which also sees what
/// the top rule defines (`upper`). `rewriters` are the ids `rewrite` may name.
fn compile_core(
    lang: Lang,
    value: &Value,
    upper: Option<Upper<'_>>,
    rewriters: &[String],
) -> Result<RuleSet, AstError> {
    let data = lang.data()?;
    let Some(obj) = value.as_object() else {
        return Err(err("rule", "must be an object such as {\"pattern\": \"foo($A)\"}"));
    };
    let (rule_value, config) =
        if obj.contains_key("rule") { (&obj["rule"], Some(obj)) } else { (value, None) };
    let mut strictness = Strictness::Smart;
    let mut util_values: Vec<(String, &Value)> = Vec::new();
    if let Some(config) = config {
        for key in config.keys() {
            match key.as_str() {
                "rule" | "constraints" | "utils" | "transform" | "fix" | "language" | "id"
                | "message" | "severity" | "note" | "url" | "metadata" | "labels"
                | "strictness" => {}
                "rewriters" if upper.is_none() => {}
                "rewriters" => {
                    return Err(err(
                        "rewriters",
                        "belong at the top of the rule config, not inside a rewriter",
                    ));
                }
                "files" | "ignores" if upper.is_none() => {}
                "files" | "ignores" => {
                    return Err(err(
                        key,
                        "belong at the top of the rule config, not inside a rewriter",
                    ));
                }
                other => {
                    return Err(err(
                        &format!("rule.{other}"),
                        format!("unknown key; a rule config has {CONFIG_KEYS}"),
                    ));
                }
            }
        }
        check_report_keys(config)?;
        if let Some(s) = config.get("strictness") {
            strictness = parse_strictness("strictness", s)?;
        }
        if let Some(utils) = config.get("utils") {
            let utils = utils.as_object().ok_or_else(|| {
                err(
                    "utils",
                    "must map names to rules, e.g. {\"is-fn\": {\"kind\": \"function_item\"}}",
                )
            })?;
            util_values = utils.iter().map(|(k, v)| (k.clone(), v)).collect();
        }
    }
    // A rewriter may use the utility rules of the config around it.
    for (name, v) in upper.map(|u| u.utils).unwrap_or_default() {
        if !util_values.iter().any(|(n, _)| n == name) {
            util_values.push((name.clone(), v));
        }
    }
    let util_names: HashSet<String> = util_values.iter().map(|(k, _)| k.clone()).collect();
    let mut p = Parser { lang, data, strictness, util_names: &util_names, vars: Vec::new() };
    let rule = p.rule("rule", rule_value)?;
    let mut utils = HashMap::new();
    for (name, v) in util_values {
        let compiled = p.rule(&format!("utils.{name}"), v)?;
        utils.insert(name, compiled);
    }
    check_util_cycles(&utils)?;
    let mut constraints = Vec::new();
    let mut transforms = Vec::new();
    let mut fix = None;
    let mut other_fixes: Vec<String> = Vec::new();
    if let Some(config) = config {
        if let Some(c) = config.get("constraints") {
            let c = c.as_object().ok_or_else(|| {
                err(
                    "constraints",
                    "must map metavariable names to rules, e.g. {\"A\": {\"regex\": \"^[a-z]+$\"}}",
                )
            })?;
            for (name, v) in c {
                let bare = bare_key("constraints", name)?;
                constraints.push((bare, p.rule(&format!("constraints.{name}"), v)?));
            }
        }
        if let Some(labels) = config.get("labels") {
            check_labels(labels, &p.vars)?;
        }
        // A rewriter also sees what the rule around it bound.
        for v in upper.map(|u| u.vars).unwrap_or_default() {
            let bare = v.trim_start_matches('$');
            if !p.vars.iter().any(|o| o.trim_start_matches('$') == bare) {
                p.vars.push(v.clone());
            }
        }
        if let Some(t) = config.get("transform") {
            let t = t.as_object().ok_or_else(|| {
                err("transform", "must map new names to transformations, e.g. {\"B\": {\"convert\": {\"source\": \"$A\", \"toCase\": \"snakeCase\"}}}")
            })?;
            for (name, v) in t {
                let compiled = Transform::parse(&format!("transform.{name}"), v)?;
                transforms.push((bare_key("transform", name)?, compiled));
            }
            transforms = super::transform::order(transforms, &p.vars)?;
            super::transform::check_rewrites(&transforms, &p.vars, rewriters)?;
        }
        if let Some(f) = config.get("fix") {
            let (first, others) = p.fixes(f)?;
            fix = Some(first);
            other_fixes = others;
        }
    }
    let kinds = {
        let mut seen = HashSet::new();
        potential_kinds(&rule, &utils, &mut seen, 0)
    };
    // A rewriter is tried at every node of the capture it rewrites, so it needs no kind.
    let kinds = match kinds {
        Some(mut kinds) => {
            kinds.sort_unstable();
            kinds.dedup();
            Some(kinds)
        }
        None if upper.is_some() => None,
        None => {
            return Err(err(
                "rule",
                "needs a positive `kind`, or a `pattern` other than a lone `$X` (directly, in `all`, in \
             every branch of `any`, or through `matches`) so it knows which nodes to try, as \
             ast-grep requires; add for example `\"kind\": \"call_expression\"` beside the other keys",
            ));
        }
    };
    let mut literals = Vec::new();
    required_literals(&rule, &utils, &mut literals, 0);
    literals.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    literals.dedup();
    let names: Vec<&str> = p.vars.iter().map(|v| v.trim_start_matches('$')).collect();
    for (name, _) in &constraints {
        if !names.contains(&name.as_str()) {
            return Err(err(
                &format!("constraints.{name}"),
                format!(
                    "`${name}` is not bound by any pattern of the rule (bound: {})",
                    p.vars.join(", ")
                ),
            ));
        }
    }
    let upper_transforms = upper.map(|u| u.transforms).unwrap_or_default();
    for template in fix.iter().map(|f| &f.template).chain(&other_fixes) {
        crate::edit::check_fix(lang, template, &p.vars, &transforms).map_err(|e| match e {
            AstError::Rewrite(why) => {
                match upper_transforms.iter().find(|t| why.starts_with(&format!("`${t}` "))) {
                    Some(t) => err(
                        "fix",
                        format!(
                            "`${t}` is a transform of the rule config around this rewriter; a \
                             rewriter runs before those are computed (ast-grep would write \
                             nothing for it), so its fix may use the rule's captures ({}) and \
                             its own transforms",
                            upper.map(|u| u.vars.join(", ")).unwrap_or_default()
                        ),
                    ),
                    None => err("fix", why),
                }
            }
            other => other,
        })?;
    }
    let globs = match config {
        Some(config) if config.contains_key("files") || config.contains_key("ignores") => {
            Some(super::FileGlobs {
                files: config.get("files").map(|v| glob_set("files", v)).transpose()?,
                ignores: config.get("ignores").map(|v| glob_set("ignores", v)).transpose()?,
            })
        }
        _ => None,
    };
    Ok(RuleSet {
        lang,
        data,
        rule,
        constraints,
        utils,
        vars: p.vars,
        transforms,
        fix,
        rewriters: Vec::new(),
        kinds,
        literals,
        source: serde_json::to_string(value).unwrap_or_default(),
        globs,
    })
}

/// `files` or `ignores`: a list of globs, each a string or `{glob, caseInsensitive}`.
fn glob_set(key: &str, v: &Value) -> Result<globset::GlobSet, AstError> {
    let items = v.as_array().ok_or_else(|| {
        err(key, "must be a list of globs such as [\"src/**/*.ts\"], relative to the root")
    })?;
    let mut set = globset::GlobSetBuilder::new();
    for (i, item) in items.iter().enumerate() {
        let at = format!("{key}[{i}]");
        let (glob, case_insensitive) = match item {
            Value::String(g) => (g.as_str(), false),
            Value::Object(o) => {
                let g = o.get("glob").and_then(Value::as_str).ok_or_else(|| {
                    err(&format!("{at}.glob"), "is required: the glob, as a string")
                })?;
                let ci = match o.get("caseInsensitive") {
                    None => false,
                    Some(Value::Bool(b)) => *b,
                    Some(_) => {
                        return Err(err(&format!("{at}.caseInsensitive"), "must be true or false"));
                    }
                };
                (g, ci)
            }
            _ => {
                return Err(err(
                    &at,
                    "must be a glob string or {\"glob\": …, \"caseInsensitive\": …}",
                ));
            }
        };
        let glob = globset::GlobBuilder::new(glob)
            .case_insensitive(case_insensitive)
            .build()
            .map_err(|e| err(&at, format!("invalid glob: {e}")))?;
        set.add(glob);
    }
    set.build().map_err(|e| err(key, format!("invalid globs: {e}")))
}

fn parse_strictness(path: &str, v: &Value) -> Result<Strictness, AstError> {
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
    fn rule(&mut self, path: &str, v: &Value) -> Result<Rule, AstError> {
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
            let at = format!("{path}.matches");
            let name =
                m.as_str().ok_or_else(|| err(&at, "must be the name of a rule in `utils`"))?;
            if !self.util_names.contains(name) {
                let known: Vec<&str> = self.util_names.iter().map(String::as_str).collect();
                return Err(err(
                    &at,
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
            parts.push(Rule::Matches(name.to_string()));
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
                Value::String(s) => parse_formula(s).ok_or_else(|| {
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
    fn fixes(&mut self, v: &Value) -> Result<(Fix, Vec<String>), AstError> {
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

/// `An+B`, `2n`, `-n+3`, `odd`, `even`, or a number.
pub(super) fn parse_formula(s: &str) -> Option<(i64, i64)> {
    let s: String =
        s.chars().filter(|c| !c.is_whitespace()).collect::<String>().to_ascii_lowercase();
    match s.as_str() {
        "odd" => return Some((2, 1)),
        "even" => return Some((2, 0)),
        _ => {}
    }
    let Some(at) = s.find('n') else { return s.parse().ok().filter(|n| *n >= 1).map(|n| (0, n)) };
    let a = match &s[..at] {
        "" | "+" => 1,
        "-" => -1,
        other => other.parse().ok()?,
    };
    let rest = &s[at + 1..];
    let b = if rest.is_empty() { 0 } else { rest.parse().ok()? };
    Some((a, b))
}

/// The utility rules `rule` refers to at the same node (through `all`, `any`, `not` and
/// `matches`, not through a relational rule, which moves to another node).
fn same_node_refs<'r>(rule: &'r Rule, out: &mut Vec<&'r str>) {
    match rule {
        Rule::All(rules) | Rule::Any(rules) => rules.iter().for_each(|r| same_node_refs(r, out)),
        Rule::Not(r) => same_node_refs(r, out),
        Rule::Matches(name) => out.push(name),
        _ => {}
    }
}

/// Refuses utility rules that refer to themselves at the same node (`a: {matches: a}`, or
/// `a` → `b` → `a` through `all`/`any`/`not`), as ast-grep does: such a rule decides nothing.
fn check_util_cycles(utils: &HashMap<String, Rule>) -> Result<(), AstError> {
    fn visit<'r>(
        name: &'r str,
        utils: &'r HashMap<String, Rule>,
        path: &mut Vec<&'r str>,
        done: &mut HashSet<&'r str>,
    ) -> Result<(), AstError> {
        if done.contains(name) {
            return Ok(());
        }
        if let Some(at) = path.iter().position(|p| *p == name) {
            let mut cycle: Vec<&str> = path[at..].to_vec();
            cycle.push(name);
            return Err(err(
                &format!("utils.{name}"),
                format!(
                    "refers to itself at the same node ({}), so it can never be decided; reach \
                     it again only through a relational rule (`has`, `inside`, `follows`, \
                     `precedes`), which moves to another node",
                    cycle.join(" → ")
                ),
            ));
        }
        let Some(rule) = utils.get(name) else { return Ok(()) };
        path.push(name);
        let mut refs = Vec::new();
        same_node_refs(rule, &mut refs);
        for r in refs {
            visit(r, utils, path, done)?;
        }
        path.pop();
        done.insert(name);
        Ok(())
    }
    let mut names: Vec<&str> = utils.keys().map(String::as_str).collect();
    names.sort_unstable();
    let mut done = HashSet::new();
    for name in names {
        visit(name, utils, &mut Vec::new(), &mut done)?;
    }
    Ok(())
}

/// Kinds a node matching `rule` can have; None when any kind can match.
fn potential_kinds(
    rule: &Rule,
    utils: &HashMap<String, Rule>,
    seen: &mut HashSet<String>,
    depth: usize,
) -> Option<Vec<u16>> {
    match rule {
        Rule::Pattern(p) => p.root_kind().map(|k| vec![k]),
        Rule::Kind(k) => Some(vec![*k]),
        // ast-grep: a node counted by `ofRule` is one `ofRule` matches.
        Rule::NthChild(nth) => {
            nth.of.as_ref().and_then(|of| potential_kinds(of, utils, seen, depth + 1))
        }
        Rule::All(rules) => {
            let mut out: Option<Vec<u16>> = None;
            for r in rules {
                if let Some(k) = potential_kinds(r, utils, seen, depth + 1) {
                    out = Some(match out {
                        Some(o) => o.into_iter().filter(|x| k.contains(x)).collect(),
                        None => k,
                    });
                }
            }
            out
        }
        Rule::Any(rules) => {
            let mut out = Vec::new();
            for r in rules {
                out.extend(potential_kinds(r, utils, seen, depth + 1)?);
            }
            Some(out)
        }
        Rule::Matches(name) => {
            if depth > 32 || !seen.insert(name.clone()) {
                return None;
            }
            let kinds = utils.get(name).and_then(|r| potential_kinds(r, utils, seen, depth + 1));
            seen.remove(name);
            kinds
        }
        _ => None,
    }
}

/// Words every file with a match contains: those of patterns that must hold (not under `not`
/// or `any`), including the related nodes of relational rules, which are in the same file.
fn required_literals(
    rule: &Rule,
    utils: &HashMap<String, Rule>,
    out: &mut Vec<String>,
    depth: usize,
) {
    if depth > 32 {
        return;
    }
    match rule {
        Rule::Pattern(p) => out.extend(p.literals().iter().cloned()),
        Rule::All(rules) => rules.iter().for_each(|r| required_literals(r, utils, out, depth + 1)),
        Rule::Inside(r) | Rule::Has(r) | Rule::Follows(r) | Rule::Precedes(r) => {
            required_literals(&r.rule, utils, out, depth + 1);
        }
        Rule::Matches(name) => {
            if let Some(r) = utils.get(name) {
                required_literals(r, utils, out, depth + 1);
            }
        }
        _ => {}
    }
}
