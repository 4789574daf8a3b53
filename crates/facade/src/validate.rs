//! Validation of call arguments against a tool's JSON Schema, before the tool runs.
//!
//! Covers the subset schemars emits: `type`, `properties`, `required`,
//! `additionalProperties`, `items`, `enum`, `const`, `anyOf`/`oneOf`/`allOf`,
//! `$ref` into `$defs`, and numeric `minimum`/`maximum`.

use serde_json::{Map, Value};

/// Drops top-level arguments that are `null` where the schema does not require them: models
/// and clients send `null` for "not given", and the lean schemas write optional fields without
/// a null type.
pub(crate) fn drop_null_optionals(schema: &Value, args: &mut Value) {
    let required: Vec<&str> = match schema.get("required") {
        Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if let Value::Object(map) = args {
        map.retain(|key, value| !value.is_null() || required.contains(&key.as_str()));
    }
}

/// Writes whole numbers as integers where the schema asks for an integer: JSON has one number
/// type, and models and clients send `3.0` or `1e3` for 3 and 1000 (serde would refuse them
/// as floats). A fraction stays as it is, for the validator to refuse by name.
pub(crate) fn whole_numbers_as_integers(schema: &Value, args: &mut Value) {
    integral(schema, schema, args, 0);
}

fn wants_integer(schema: &Map<String, Value>) -> bool {
    match schema.get("type") {
        Some(Value::String(ty)) => ty == "integer",
        Some(Value::Array(types)) => {
            types.iter().any(|t| t == "integer") && !types.iter().any(|t| t == "number")
        }
        _ => false,
    }
}

fn integral(root: &Value, schema: &Value, value: &mut Value, depth: usize) {
    let Some(obj) = schema.as_object() else { return };
    if depth > 64 {
        return;
    }
    if let Some(Value::String(reference)) = obj.get("$ref")
        && let Some(target) = reference
            .strip_prefix("#/")
            .and_then(|p| p.split('/').try_fold(root, |node, key| node.get(key)))
    {
        integral(root, target, value, depth + 1);
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = obj.get(key) {
            for branch in branches {
                integral(root, branch, value, depth + 1);
            }
        }
    }
    match value {
        Value::Number(n) if wants_integer(obj) && n.as_i64().is_none() && n.as_u64().is_none() => {
            if let Some(f) = n.as_f64().filter(|f| f.fract() == 0.0) {
                // Within ±2^63 (i64) or below 2^64 (u64): otherwise not a whole number serde
                // could take anyway, and the validator names it.
                if (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&f) {
                    *value = Value::from(f as i64);
                } else if (0.0..1.844_674_407_370_955_2e19).contains(&f) {
                    *value = Value::from(f as u64);
                }
            }
        }
        Value::Object(map) => {
            if let Some(Value::Object(properties)) = obj.get("properties") {
                for (key, child) in map.iter_mut() {
                    if let Some(child_schema) = properties.get(key) {
                        integral(root, child_schema, child, depth + 1);
                    }
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = obj.get("items") {
                for item in items {
                    integral(root, item_schema, item, depth + 1);
                }
            }
        }
        _ => {}
    }
}

/// Checks `args` against `schema`; the error names the argument and says what would work.
pub fn validate_args(schema: &Value, args: &Value) -> Result<(), String> {
    let mut checker = Checker { root: schema, depth: 0, optional: false };
    checker.check(schema, args, "")
}

struct Checker<'a> {
    root: &'a Value,
    depth: usize,
    /// The value being checked is an optional property: errors say it may be left out.
    optional: bool,
}

fn describe(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("boolean {b}"),
        Value::Number(n) => format!("number {n}"),
        Value::String(s) => {
            let short: String = s.chars().take(40).collect();
            if short.len() < s.len() {
                format!("string \"{short}…\"")
            } else {
                format!("string \"{s}\"")
            }
        }
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
    }
}

fn type_matches(ty: &str, value: &Value) -> bool {
    match ty {
        "null" => value.is_null(),
        "boolean" => value.is_boolean(),
        "string" => value.is_string(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        "number" => value.is_number(),
        "integer" => value.as_i64().is_some() || value.as_u64().is_some(),
        _ => true,
    }
}

fn field_name(path: &str) -> String {
    if path.is_empty() { "arguments".into() } else { format!("argument `{path}`") }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() { key.to_string() } else { format!("{path}.{key}") }
}

impl Checker<'_> {
    fn check(&mut self, schema: &Value, value: &Value, path: &str) -> Result<(), String> {
        self.depth += 1;
        if self.depth > 64 {
            self.depth -= 1;
            return Ok(());
        }
        let result = self.check_inner(schema, value, path);
        self.depth -= 1;
        result
    }

    fn check_inner(&mut self, schema: &Value, value: &Value, path: &str) -> Result<(), String> {
        let Some(obj) = schema.as_object() else {
            return Ok(()); // `true` schema or unknown shape: accept.
        };
        if let Some(Value::String(reference)) = obj.get("$ref") {
            let root = self.root;
            let target = reference
                .strip_prefix("#/")
                .and_then(|p| p.split('/').try_fold(root, |node, key| node.get(key)));
            if let Some(target) = target {
                self.check(target, value, path)?;
            }
        }
        if let Some(Value::Array(all)) = obj.get("allOf") {
            for sub in all {
                self.check(sub, value, path)?;
            }
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(Value::Array(branches)) = obj.get(key) {
                let mut first_error = None;
                let mut matched = false;
                for sub in branches {
                    match self.check(sub, value, path) {
                        Ok(()) => {
                            matched = true;
                            break;
                        }
                        Err(e) => {
                            first_error.get_or_insert(e);
                        }
                    }
                }
                if !matched {
                    let allowed: Vec<String> = branches.iter().filter_map(allowed_value).collect();
                    if !allowed.is_empty() && allowed.len() == branches.len() {
                        return Err(format!(
                            "{}: {} is not allowed; use one of {}",
                            field_name(path),
                            describe(value),
                            allowed.join(", ")
                        ));
                    }
                    return Err(first_error.unwrap_or_else(|| {
                        format!("{}: {} matches no allowed form", field_name(path), describe(value))
                    }));
                }
            }
        }
        if let Some(ty) = obj.get("type") {
            let types: Vec<&str> = match ty {
                Value::String(s) => vec![s.as_str()],
                Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
                _ => vec![],
            };
            if !types.is_empty() && !types.iter().any(|t| type_matches(t, value)) {
                let wanted: Vec<&str> = types.iter().copied().filter(|t| *t != "null").collect();
                let optional = if types.contains(&"null") || self.optional {
                    " (or leave it out)"
                } else {
                    ""
                };
                return Err(format!(
                    "{}: expected {}{optional}, got {}",
                    field_name(path),
                    wanted.join(" or "),
                    describe(value)
                ));
            }
        }
        if let Some(Value::Array(options)) = obj.get("enum")
            && !options.contains(value)
        {
            let list: Vec<String> = options.iter().map(|v| v.to_string()).collect();
            return Err(format!(
                "{}: {} is not allowed; use one of {}",
                field_name(path),
                describe(value),
                list.join(", ")
            ));
        }
        if let Some(expected) = obj.get("const")
            && expected != value
        {
            return Err(format!(
                "{}: expected {expected}, got {}",
                field_name(path),
                describe(value)
            ));
        }
        if let Some(n) = value.as_f64() {
            if let Some(min) = obj.get("minimum").and_then(Value::as_f64)
                && n < min
            {
                return Err(format!("{}: {n} is below the minimum {min}", field_name(path)));
            }
            if let Some(max) = obj.get("maximum").and_then(Value::as_f64)
                && n > max
            {
                return Err(format!("{}: {n} is above the maximum {max}", field_name(path)));
            }
        }
        if let Value::Object(map) = value {
            self.check_object(obj, map, path)?;
        }
        if let (Value::Array(items), Some(item_schema)) = (value, obj.get("items")) {
            for (i, item) in items.iter().enumerate() {
                self.check(item_schema, item, &format!("{path}[{i}]"))?;
            }
        }
        Ok(())
    }

    fn check_object(
        &mut self,
        schema: &Map<String, Value>,
        map: &Map<String, Value>,
        path: &str,
    ) -> Result<(), String> {
        let properties = schema.get("properties").and_then(Value::as_object);
        if let Some(Value::Array(required)) = schema.get("required") {
            for name in required.iter().filter_map(Value::as_str) {
                if !map.contains_key(name) {
                    let hint = properties
                        .and_then(|p| p.get(name))
                        .and_then(|p| p.get("description"))
                        .and_then(Value::as_str)
                        .map(|d| format!(" ({d})"))
                        .unwrap_or_default();
                    return Err(format!(
                        "missing required {}{hint}",
                        field_name(&join(path, name))
                    ));
                }
            }
        }
        let required: Vec<&str> = match schema.get("required") {
            Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        for (key, value) in map {
            match properties.and_then(|p| p.get(key)) {
                Some(sub) => {
                    let outer =
                        std::mem::replace(&mut self.optional, !required.contains(&key.as_str()));
                    let checked = self.check(sub, value, &join(path, key));
                    self.optional = outer;
                    checked?
                }
                None => {
                    if schema.get("additionalProperties") == Some(&Value::Bool(false)) {
                        let known: Vec<&str> = properties
                            .map(|p| p.keys().map(String::as_str).collect())
                            .unwrap_or_default();
                        return Err(format!(
                            "unknown {}; known arguments: {}",
                            field_name(&join(path, key)),
                            if known.is_empty() { "none".to_string() } else { known.join(", ") }
                        ));
                    }
                    if let Some(extra) =
                        schema.get("additionalProperties").filter(|v| v.is_object())
                    {
                        self.check(extra, value, &join(path, key))?;
                    }
                }
            }
        }
        Ok(())
    }
}

/// The single value a branch allows (`const` or a one-item `enum`), for "use one of" hints.
fn allowed_value(branch: &Value) -> Option<String> {
    if let Some(c) = branch.get("const") {
        return Some(c.to_string());
    }
    match branch.get("enum") {
        Some(Value::Array(items)) if items.len() == 1 => Some(items[0].to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{validate_args, whole_numbers_as_integers};

    #[test]
    fn whole_floats_become_integers_where_an_integer_is_asked_for() {
        let schema = json!({"type": "object", "properties": {
            "line": {"type": "integer", "minimum": 1},
            "ratio": {"type": "number"},
            "lines": {"type": "array", "items": {"$ref": "#/$defs/Line"}},
            "at": {"anyOf": [{"$ref": "#/$defs/Line"}, {"type": "string"}]}
        }, "$defs": {"Line": {"type": "integer"}}});
        let mut args = json!({"line": 3.0, "ratio": 2.0, "lines": [1e3, 2], "at": 7.0});
        whole_numbers_as_integers(&schema, &mut args);
        assert_eq!(args, json!({"line": 3, "ratio": 2.0, "lines": [1000, 2], "at": 7}));
        assert!(args["line"].is_u64() && args["ratio"].is_f64());
        let mut fraction = json!({"line": 2.5});
        whole_numbers_as_integers(&schema, &mut fraction);
        let refused = validate_args(&schema, &fraction).unwrap_err();
        assert!(refused.contains("`line`"), "{refused}");
    }
}
