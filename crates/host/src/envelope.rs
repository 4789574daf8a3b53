//! What makes a JSON-RPC message acceptable, for stdio and HTTP alike: the 2.0 envelope, an
//! id MCP can echo, a method, and the params of `tools/call` that rmcp would misreport.

use serde_json::Value;

/// What kind of JSON value `value` is, for error messages ("got an array").
fn describe(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Why the params of a request with a known shape are wrong, for requests rmcp would otherwise
/// misreport (a `tools/call` it cannot decode becomes "method not found").
pub(crate) fn bad_params(message: &Value) -> Option<String> {
    let method = message.get("method")?.as_str()?;
    let params = message.get("params");
    if method != "tools/call" {
        return None;
    }
    let Some(Value::Object(params)) = params else {
        return Some(format!(
            "tools/call needs params {{\"name\": TOOL, \"arguments\": {{...}}}}, got {}",
            params.map_or("none", describe)
        ));
    };
    match params.get("name") {
        Some(Value::String(_)) => {}
        None => {
            return Some(
                "tools/call: missing `name`, the tool to call (tools/list gives the names)".into(),
            );
        }
        Some(other) => {
            return Some(format!(
                "tools/call: `name` must be the tool's name as a string, got {}",
                describe(other)
            ));
        }
    }
    if let Some(other) = params.get("arguments").filter(|a| !a.is_null() && !a.is_object()) {
        return Some(format!(
            "tools/call: `arguments` must be a JSON object of the tool's arguments, got {}",
            describe(other)
        ));
    }
    // rmcp would take a `requestState` it cannot decode for an unknown method (-32601).
    match params.get("requestState") {
        None | Some(Value::Null) | Some(Value::String(_)) => None,
        Some(other) => Some(format!(
            "tools/call: `requestState` must be a string, the one the server sent with its \
             input_required result, got {}; send it back unchanged, or call without it",
            describe(other)
        )),
    }
}

/// Why `message` is not a JSON-RPC 2.0 message at all (-32600, invalid request), checked
/// before its method: a wrong or missing `jsonrpc` version, or something other than an object.
pub(crate) fn invalid_envelope(message: &Value) -> Option<String> {
    let Value::Object(fields) = message else {
        return Some(format!(
            "invalid request: a JSON-RPC 2.0 message is an object, got {}",
            describe(message)
        ));
    };
    match fields.get("jsonrpc") {
        Some(Value::String(version)) if version == "2.0" => None,
        Some(other) => Some(format!(
            "invalid request: `jsonrpc` must be \"2.0\", got {other}; this server speaks JSON-RPC 2.0"
        )),
        None => Some("invalid request: missing `jsonrpc: \"2.0\"`".to_string()),
    }
}

/// Why a message with a valid envelope is still no request, notification or reply (-32600),
/// with the id to answer with: an id that is no string or integer (MCP allows no null; it
/// cannot be echoed back), or neither a method nor a result.
pub(crate) fn invalid_id_or_method(message: &Value) -> Option<(Value, String)> {
    if let Some(bad) = message.get("id").filter(|id| !valid_id(id)) {
        let got = if bad.is_number() {
            "a number that is not an integer in range"
        } else {
            describe(bad)
        };
        return Some((
            Value::Null,
            format!("invalid request: `id` must be a string or an integer, got {got}"),
        ));
    }
    let has_method = message.get("method").is_some_and(Value::is_string);
    let is_reply = message.get("result").is_some() || message.get("error").is_some();
    (!has_method && !is_reply).then(|| {
        (
            message.get("id").cloned().unwrap_or(Value::Null),
            "invalid request: missing `method` (a request or notification names its method)"
                .to_string(),
        )
    })
}

/// A JSON-RPC id MCP accepts: a string, or an integer that fits 64 bits.
fn valid_id(id: &Value) -> bool {
    id.is_string() || id.is_i64() || id.is_u64()
}
