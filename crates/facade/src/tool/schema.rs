//! The one place where generated JSON Schemas become lean, portable tool schemas.
//!
//! Every tool's argument and output schema passes through [`lean`] when its spec is built, so
//! the rules hold for every family without boilerplate in any of them:
//!
//! - no root `description` (the tool's own description is the one place that says what it
//!   does; schemars would copy the argument type's doc comment, "Arguments of `X`.");
//! - standard JSON Schema only: the non-standard integer formats (`uint32`, `int64`, ...) become
//!   `minimum`/`maximum` bounds, which the argument validator enforces and names;
//! - nullable fields are written as optional ones (`"type": "string"`, not
//!   `["string", "null"]`; the `$ref` alone, not `anyOf [$ref, null]`), which strict validators
//!   and single-type dialects accept; serde reads a missing optional field as `None`;
//! - definitions used once are inlined, and `$defs` is dropped when nothing refers to it.

use serde_json::{Map, Value};

/// Which side of a call a schema describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    /// Arguments: nullable fields become optional ones.
    Input,
    /// Structured content: a `null` the tool writes is a real value and stays allowed.
    Output,
}

/// Rewrites `schema` in place by the rules above.
pub(crate) fn lean(schema: &mut Value, side: Side) {
    if let Value::Object(root) = schema {
        root.remove("description");
        root.remove("$schema");
        root.remove("title");
    }
    inline_single_use_definitions(schema);
    tidy(schema, side);
}

/// The bounds of a schemars integer format, as (minimum, maximum).
fn integer_bounds(format: &str) -> Option<(Value, Value)> {
    let bounds = match format {
        "uint8" => (0.into(), u8::MAX.into()),
        "uint16" => (0.into(), u16::MAX.into()),
        "uint32" | "uint" => (0.into(), u32::MAX.into()),
        "uint64" | "uint128" | "usize" => (0.into(), u64::MAX.into()),
        "int8" => (i8::MIN.into(), i8::MAX.into()),
        "int16" => (i16::MIN.into(), i16::MAX.into()),
        "int32" | "int" => (i32::MIN.into(), i32::MAX.into()),
        "int64" | "int128" | "isize" => (i64::MIN.into(), i64::MAX.into()),
        _ => return None,
    };
    Some(bounds)
}

fn is_null_schema(value: &Value) -> bool {
    value.get("type").and_then(Value::as_str) == Some("null")
        || value.get("const").is_some_and(Value::is_null)
}

fn tidy(value: &mut Value, side: Side) {
    match value {
        Value::Array(items) => items.iter_mut().for_each(|v| tidy(v, side)),
        Value::Object(map) => {
            if side == Side::Input {
                drop_null(map);
            }
            tidy_formats(map);
            spell_out_any(map);
            for (key, child) in map.iter_mut() {
                // Literal values, not schemas: leave them alone.
                if !matches!(key.as_str(), "enum" | "const" | "default" | "examples") {
                    tidy(child, side);
                }
            }
        }
        _ => {}
    }
}

/// `true` as a subschema (what schemars writes for a `serde_json::Value` field) becomes `{}`:
/// the same "anything", but strict validators (the Inspector's) refuse a bare boolean there.
fn spell_out_any(map: &mut Map<String, Value>) {
    let any = |v: &mut Value| {
        if *v == Value::Bool(true) {
            *v = Value::Object(Map::new());
        }
    };
    for key in ["properties", "patternProperties", "$defs", "definitions"] {
        if let Some(Value::Object(children)) = map.get_mut(key) {
            children.values_mut().for_each(any);
        }
    }
    for key in ["anyOf", "oneOf", "allOf", "prefixItems"] {
        if let Some(Value::Array(children)) = map.get_mut(key) {
            children.iter_mut().for_each(any);
        }
    }
    for key in ["items", "contains", "not", "if", "then", "else"] {
        if let Some(child) = map.get_mut(key) {
            any(child);
        }
    }
}

fn drop_null(map: &mut Map<String, Value>) {
    // `"type": ["string", "null"]` → `"type": "string"`.
    if let Some(Value::Array(types)) = map.get_mut("type") {
        types.retain(|t| t.as_str() != Some("null"));
        if types.len() == 1 {
            let single = types.remove(0);
            map.insert("type".into(), single);
        }
    }
    // `anyOf`/`oneOf` with a null branch: drop it; one branch left becomes the schema itself.
    for key in ["anyOf", "oneOf"] {
        let Some(Value::Array(branches)) = map.get_mut(key) else { continue };
        let before = branches.len();
        branches.retain(|b| !is_null_schema(b));
        if branches.len() == before {
            continue;
        }
        if branches.len() == 1 {
            let Some(Value::Object(only)) =
                map.remove(key).and_then(|mut v| v.as_array_mut().and_then(|a| a.pop()))
            else {
                continue;
            };
            for (k, v) in only {
                map.entry(k).or_insert(v);
            }
        }
    }
    if let Some(Value::Array(values)) = map.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    if map.get("default").is_some_and(Value::is_null) {
        map.remove("default");
    }
}

fn tidy_formats(map: &mut Map<String, Value>) {
    // Non-standard integer formats → bounds (kept when schemars already wrote tighter ones).
    if let Some(format) = map.get("format").and_then(Value::as_str).map(str::to_string)
        && let Some((min, max)) = integer_bounds(&format)
    {
        map.remove("format");
        map.entry("minimum").or_insert(min);
        map.entry("maximum").or_insert(max);
    }
    if map.get("format").and_then(Value::as_str).is_some_and(|f| matches!(f, "double" | "float")) {
        map.remove("format");
    }
}

/// Replaces each `$ref` to a definition that is referred to exactly once by the definition.
fn inline_single_use_definitions(schema: &mut Value) {
    let Some(Value::Object(defs)) = schema.as_object_mut().and_then(|root| root.remove("$defs"))
    else {
        return;
    };
    let mut counts: std::collections::BTreeMap<String, usize> = Default::default();
    count_refs(schema, &mut counts);
    for def in defs.values() {
        count_refs(def, &mut counts);
    }
    let inline: Map<String, Value> = defs
        .iter()
        .filter(|(name, def)| {
            counts.get(name.as_str()) == Some(&1) && !refers_to(def, name.as_str())
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let mut kept: Map<String, Value> =
        defs.into_iter().filter(|(name, _)| !inline.contains_key(name)).collect();
    // Inlined definitions may themselves sit inside kept ones; resolve a few levels deep.
    for _ in 0..8 {
        let mut changed = substitute(schema, &inline);
        for def in kept.values_mut() {
            changed |= substitute(def, &inline);
        }
        if !changed {
            break;
        }
    }
    if !kept.is_empty()
        && let Value::Object(root) = schema
    {
        kept.sort_keys();
        root.insert("$defs".into(), Value::Object(kept));
    }
}

fn def_name(reference: &str) -> Option<&str> {
    reference.strip_prefix("#/$defs/")
}

fn count_refs(value: &Value, counts: &mut std::collections::BTreeMap<String, usize>) {
    match value {
        Value::Object(map) => {
            if let Some(name) = map.get("$ref").and_then(Value::as_str).and_then(def_name) {
                *counts.entry(name.to_string()).or_default() += 1;
            }
            map.values().for_each(|v| count_refs(v, counts));
        }
        Value::Array(items) => items.iter().for_each(|v| count_refs(v, counts)),
        _ => {}
    }
}

fn refers_to(value: &Value, name: &str) -> bool {
    let mut counts = Default::default();
    count_refs(value, &mut counts);
    counts.contains_key(name)
}

/// Inlines `$ref`s found in `inline`; true when anything changed.
fn substitute(value: &mut Value, inline: &Map<String, Value>) -> bool {
    match value {
        Value::Object(map) => {
            let mut changed = false;
            if let Some(def) = map
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(def_name)
                .and_then(|name| inline.get(name))
                .cloned()
            {
                map.remove("$ref");
                if let Value::Object(def) = def {
                    for (k, v) in def {
                        // The referring site's own keywords (its description) win.
                        map.entry(k).or_insert(v);
                    }
                }
                changed = true;
            }
            for child in map.values_mut() {
                changed |= substitute(child, inline);
            }
            changed
        }
        Value::Array(items) => items.iter_mut().fold(false, |acc, v| substitute(v, inline) | acc),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{Side, lean};

    fn check(mut input: serde_json::Value, expected: serde_json::Value) {
        lean(&mut input, Side::Input);
        assert_eq!(input, expected);
    }

    #[test]
    fn the_root_loses_its_boilerplate_description() {
        check(
            json!({"description": "Arguments of `x`.", "type": "object", "properties": {}}),
            json!({"type": "object", "properties": {}}),
        );
    }

    #[test]
    fn integer_formats_become_bounds() {
        check(
            json!({"type": "object", "properties": {
                "line": {"type": "integer", "format": "uint32", "minimum": 1},
                "pid": {"type": ["integer", "null"], "format": "int64"}
            }}),
            json!({"type": "object", "properties": {
                "line": {"type": "integer", "minimum": 1, "maximum": 4294967295u32},
                "pid": {"type": "integer", "minimum": i64::MIN, "maximum": i64::MAX}
            }}),
        );
    }

    #[test]
    fn nullable_references_and_enums_become_optional_ones() {
        check(
            json!({"type": "object", "properties": {
                "kind": {"anyOf": [{"$ref": "#/$defs/Kind"}, {"type": "null"}], "description": "Which."},
                "mode": {"enum": ["a", "b", null], "type": ["string", "null"], "default": null}
            }, "$defs": {"Kind": {"type": "string", "enum": ["x", "y"], "description": "A kind."}}}),
            json!({"type": "object", "properties": {
                "kind": {"type": "string", "enum": ["x", "y"], "description": "Which."},
                "mode": {"enum": ["a", "b"], "type": "string"}
            }}),
        );
    }

    #[test]
    fn a_bare_true_subschema_is_spelled_as_an_empty_one() {
        let mut schema = json!({"type": "object", "additionalProperties": true, "properties": {
            "data": true,
            "list": {"type": "array", "items": true},
            "either": {"anyOf": [true, {"type": "string"}]}
        }});
        lean(&mut schema, Side::Output);
        assert_eq!(
            schema,
            json!({"type": "object", "additionalProperties": true, "properties": {
                "data": {},
                "list": {"type": "array", "items": {}},
                "either": {"anyOf": [{}, {"type": "string"}]}
            }})
        );
    }

    #[test]
    fn output_schemas_keep_the_nulls_a_tool_writes() {
        let mut schema = json!({"type": "object", "properties": {
            "value": {"type": ["string", "null"], "format": "uint64"}
        }});
        lean(&mut schema, Side::Output);
        assert_eq!(schema["properties"]["value"]["type"], json!(["string", "null"]));
        assert!(schema["properties"]["value"].get("format").is_none());
    }

    #[test]
    fn definitions_used_twice_stay_shared() {
        check(
            json!({"type": "object", "properties": {
                "a": {"$ref": "#/$defs/P"}, "b": {"$ref": "#/$defs/P"}
            }, "$defs": {"P": {"type": "string"}}}),
            json!({"type": "object", "properties": {
                "a": {"$ref": "#/$defs/P"}, "b": {"$ref": "#/$defs/P"}
            }, "$defs": {"P": {"type": "string"}}}),
        );
    }
}
