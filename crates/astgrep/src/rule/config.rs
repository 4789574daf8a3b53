//! A rule config (`rule`, `constraints`, `utils`, `transform`, `fix`, `rewriters`, `files`,
//! `ignores`) compiled into a `RuleSet`: the keys around the rule object, and what the traversal
//! needs from it (the kinds to try, the literal pre-filter).

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use super::{
    Rule, RuleSet, Transform,
    parse::{Parser, err, parse_strictness},
};
use crate::{error::AstError, lang::Lang, strictness::Strictness};

const CONFIG_KEYS: &str = "rule, constraints, utils, transform, fix, rewriters, files, ignores, \
                           language, strictness (and id, message, severity, note, url, metadata, \
                           labels, which only describe a report)";

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
    let (strictness, util_values) = match config {
        Some(config) => read_head(config, upper)?,
        None => (Strictness::Smart, Vec::new()),
    };
    let util_values = with_upper_utils(util_values, upper);
    let util_names: HashSet<String> = util_values.iter().map(|(k, _)| k.clone()).collect();
    let mut p = Parser { lang, data, strictness, util_names: &util_names, vars: Vec::new() };
    let rule = p.rule("rule", rule_value)?;
    let mut utils = HashMap::new();
    for (name, v) in util_values {
        let compiled = p.rule(&format!("utils.{name}"), v)?;
        utils.insert(name, compiled);
    }
    check_util_cycles(&utils)?;
    let tail = match config {
        Some(config) => read_tail(&mut p, config, upper, rewriters)?,
        None => Tail::default(),
    };
    let kinds = rule_kinds(&rule, &utils, upper)?;
    let mut literals = Vec::new();
    required_literals(&rule, &utils, &mut literals, 0);
    literals.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    literals.dedup();
    check_constraints_bound(&tail.constraints, &p.vars)?;
    check_fixes(lang, &tail, &p.vars, upper)?;
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
        constraints: tail.constraints,
        utils,
        vars: p.vars,
        transforms: tail.transforms,
        fix: tail.fix,
        rewriters: Vec::new(),
        kinds,
        literals,
        source: serde_json::to_string(value).unwrap_or_default(),
        globs,
    })
}

/// The keys of a rule config checked (`files`, `ignores` and `rewriters` only at the top),
/// its `strictness` and its `utils`.
fn read_head<'v>(
    config: &'v Map<String, Value>,
    upper: Option<Upper<'_>>,
) -> Result<(Strictness, Vec<(String, &'v Value)>), AstError> {
    for key in config.keys() {
        match key.as_str() {
            "rule" | "constraints" | "utils" | "transform" | "fix" | "language" | "id"
            | "message" | "severity" | "note" | "url" | "metadata" | "labels" | "strictness" => {}
            "rewriters" | "files" | "ignores" if upper.is_none() => {}
            "rewriters" | "files" | "ignores" => {
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
    let strictness = match config.get("strictness") {
        Some(s) => parse_strictness("strictness", s)?,
        None => Strictness::Smart,
    };
    let mut util_values = Vec::new();
    if let Some(utils) = config.get("utils") {
        let utils = utils.as_object().ok_or_else(|| {
            err("utils", "must map names to rules, e.g. {\"is-fn\": {\"kind\": \"function_item\"}}")
        })?;
        util_values = utils.iter().map(|(k, v)| (k.clone(), v)).collect();
    }
    Ok((strictness, util_values))
}

/// A rewriter may use the utility rules of the config around it (its own of the same name win).
fn with_upper_utils<'v>(
    mut util_values: Vec<(String, &'v Value)>,
    upper: Option<Upper<'v>>,
) -> Vec<(String, &'v Value)> {
    for (name, v) in upper.map(|u| u.utils).unwrap_or_default() {
        if !util_values.iter().any(|(n, _)| n == name) {
            util_values.push((name.clone(), v));
        }
    }
    util_values
}

/// What a rule config says after its rule and utilities: constraints, transforms and fixes.
#[derive(Default)]
struct Tail {
    constraints: Vec<(String, Rule)>,
    transforms: Vec<(String, Transform)>,
    fix: Option<super::Fix>,
    other_fixes: Vec<String>,
}

/// `constraints`, `labels`, `transform` and `fix`, compiled with the metavariables the rule
/// binds (and, in a rewriter, those of the rule around it).
fn read_tail(
    p: &mut Parser<'_>,
    config: &Map<String, Value>,
    upper: Option<Upper<'_>>,
    rewriters: &[String],
) -> Result<Tail, AstError> {
    let mut tail = Tail::default();
    if let Some(c) = config.get("constraints") {
        let c = c.as_object().ok_or_else(|| {
            err(
                "constraints",
                "must map metavariable names to rules, e.g. {\"A\": {\"regex\": \"^[a-z]+$\"}}",
            )
        })?;
        for (name, v) in c {
            let bare = bare_key("constraints", name)?;
            tail.constraints.push((bare, p.rule(&format!("constraints.{name}"), v)?));
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
            tail.transforms.push((bare_key("transform", name)?, compiled));
        }
        tail.transforms = super::transform::order(tail.transforms, &p.vars)?;
        super::transform::check_rewrites(&tail.transforms, &p.vars, rewriters)?;
    }
    if let Some(f) = config.get("fix") {
        let (first, others) = p.fixes(f)?;
        tail.fix = Some(first);
        tail.other_fixes = others;
    }
    Ok(tail)
}

/// The kinds a rule's matches can have, sorted; a rewriter is tried at every node of the
/// capture it rewrites, so it needs none.
fn rule_kinds(
    rule: &Rule,
    utils: &HashMap<String, Rule>,
    upper: Option<Upper<'_>>,
) -> Result<Option<Vec<u16>>, AstError> {
    let mut seen = HashSet::new();
    match potential_kinds(rule, utils, &mut seen, 0) {
        Some(mut kinds) => {
            kinds.sort_unstable();
            kinds.dedup();
            Ok(Some(kinds))
        }
        None if upper.is_some() => Ok(None),
        None => Err(err(
            "rule",
            "needs a positive `kind`, or a `pattern` other than a lone `$X` (directly, in `all`, in \
             every branch of `any`, or through `matches`) so it knows which nodes to try, as \
             ast-grep requires; add for example `\"kind\": \"call_expression\"` beside the other keys",
        )),
    }
}

/// Every constraint names a metavariable the rule binds.
fn check_constraints_bound(
    constraints: &[(String, Rule)],
    vars: &[String],
) -> Result<(), AstError> {
    let names: Vec<&str> = vars.iter().map(|v| v.trim_start_matches('$')).collect();
    for (name, _) in constraints {
        if !names.contains(&name.as_str()) {
            return Err(err(
                &format!("constraints.{name}"),
                format!(
                    "`${name}` is not bound by any pattern of the rule (bound: {})",
                    vars.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// Every fix uses only what it can read: the rule's captures and its own transforms (a
/// rewriter's fix not the transforms of the config around it).
fn check_fixes(
    lang: Lang,
    tail: &Tail,
    vars: &[String],
    upper: Option<Upper<'_>>,
) -> Result<(), AstError> {
    let upper_transforms = upper.map(|u| u.transforms).unwrap_or_default();
    for template in tail.fix.iter().map(|f| &f.template).chain(&tail.other_fixes) {
        super::fixer::check_fix(lang, template, vars, &tail.transforms).map_err(|e| match e {
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
    Ok(())
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
