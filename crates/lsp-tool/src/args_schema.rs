//! The tools' argument schemas, written by hand: each tool's description explains its arguments
//! once, and the schema only types them (the tool list has a token budget). The position fields
//! the three tools share (file, line, symbol, occurrence) are written once, here.

use serde_json::{Map, Value, json};

/// `file`, `line`, `symbol` and `occurrence`: where a symbol stands.
fn position_fields() -> Map<String, Value> {
    let fields = json!({
        "file": {"type": "string"},
        "line": {"type": "integer", "minimum": 1},
        "symbol": {"type": "string"},
        "occurrence": {"type": "integer", "minimum": 1}
    });
    match fields {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// An object schema: `before` (fields ahead of the position), the position fields, then
/// `after`; no other property allowed.
pub(crate) fn with_position(before: Value, after: Value, required: &[&str]) -> schemars::Schema {
    let mut properties = Map::new();
    for part in [before, Value::Object(position_fields()), after] {
        if let Value::Object(fields) = part {
            properties.extend(fields);
        }
    }
    schemars::json_schema!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false
    })
}
