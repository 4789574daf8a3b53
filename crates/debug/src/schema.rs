//! The schema transforms that keep the `debug` tool's argument schema lean and portable: enums
//! of unit variants as plain string enums, every optional field with one type, references
//! inlined.

use schemars::Schema;
use serde_json::{Map, Value};

/// An enum of unit variants as a plain `enum` of strings (no per-variant descriptions).
pub(crate) fn bare_enum(schema: &mut Schema) {
    let Some(map) = schema.as_object_mut() else { return };
    let mut values = Vec::new();
    for key in ["oneOf", "anyOf"] {
        if let Some(Value::Array(branches)) = map.remove(key) {
            for branch in branches {
                match (branch.get("const"), branch.get("enum")) {
                    (Some(c), _) => values.push(c.clone()),
                    (None, Some(Value::Array(e))) => values.extend(e.iter().cloned()),
                    _ => {}
                }
            }
        }
    }
    if !values.is_empty() {
        map.insert("enum".into(), Value::Array(values));
    }
    map.insert("type".into(), "string".into());
    map.remove("description");
}

/// The argument object as a lean, portable schema: every optional field has one type (no
/// `null`), references to enums are inlined, no non-standard formats and no boilerplate root.
pub(crate) fn lean_object(schema: &mut Schema) {
    let Some(map) = schema.as_object_mut() else { return };
    let defs = map.remove("$defs").and_then(|d| d.as_object().cloned()).unwrap_or_default();
    map.remove("description");
    if let Some(Value::Object(properties)) = map.get_mut("properties") {
        for property in properties.values_mut() {
            if let Value::Object(field) = property {
                lean_field(field, &defs);
            }
        }
    }
}

fn lean_field(field: &mut Map<String, Value>, defs: &Map<String, Value>) {
    if let Some(Value::Array(branches)) = field.remove("anyOf") {
        let kept: Vec<Value> =
            branches.into_iter().filter(|b| b.get("type") != Some(&"null".into())).collect();
        if let [only] = kept.as_slice() {
            let mut inlined = only.clone();
            if let Some(name) = only["$ref"].as_str().and_then(|r| r.strip_prefix("#/$defs/")) {
                inlined = defs.get(name).cloned().unwrap_or(Value::Null);
            }
            if let Value::Object(inner) = inlined {
                for (k, v) in inner {
                    if k != "description" {
                        field.insert(k, v);
                    }
                }
            }
        } else {
            field.insert("anyOf".into(), Value::Array(kept));
        }
    }
    if let Some(Value::String(name)) =
        field.get("$ref").and_then(Value::as_str).map(|r| r.to_string()).map(Value::String)
        && let Some(Value::Object(inner)) =
            name.strip_prefix("#/$defs/").and_then(|n| defs.get(n)).cloned()
    {
        field.remove("$ref");
        for (k, v) in inner {
            if k != "description" {
                field.insert(k, v);
            }
        }
    }
    if let Some(Value::Array(values)) = field.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    if let Some(Value::Array(types)) = field.get("type") {
        let kept: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
        if let [one] = kept.as_slice() {
            field.insert("type".into(), one.clone());
        }
    }
    field.remove("format");
    if let Some(Value::Object(items)) = field.get_mut("items") {
        items.remove("format");
        items.remove("minimum");
    }
    // `minimum: 0` on an unsigned integer says nothing a model needs.
    if field.get("minimum") == Some(&Value::from(0)) {
        field.remove("minimum");
    }
}
