//! The `requestState` of a 2026-07-28 multi round-trip: a token the client carries back with
//! its answer, integrity-protected by an HMAC under a secret of this process.
//!
//! The token says which run issued it, which tool call it belongs to (a digest of the tool's
//! name and arguments), when it expires, and which parked call it names (a nonce). A token
//! that was altered, made up, or issued by another process fails the tag; one issued to another
//! run, for another call, or past its expiry is refused for that reason. That a token is used
//! once is checked by the caller, which removes the parked call on its first retry.

use std::{
    sync::OnceLock,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD as B64};
use hmac::{Hmac, KeyInit, Mac};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The version prefix of the token format.
const PREFIX: &str = "rs1";

/// The secret the tags are made with.
#[derive(Clone)]
pub(super) struct StateKey([u8; 32]);

impl StateKey {
    /// This process's key, drawn from the OS's random source once: tokens die with the process,
    /// as the parked calls they name do.
    pub(super) fn process() -> &'static StateKey {
        static KEY: OnceLock<StateKey> = OnceLock::new();
        KEY.get_or_init(StateKey::random)
    }

    pub(super) fn random() -> StateKey {
        let mut secret = [0u8; 32];
        secret[..16].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
        secret[16..].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
        StateKey(secret)
    }

    fn tag(&self, payload: &[u8]) -> Hmac<Sha256> {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.0)
            .expect("HMAC takes a key of any length");
        mac.update(payload);
        mac
    }
}

/// What a token binds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Claims {
    /// The run that issued it.
    pub(super) run: String,
    /// A digest of the tool call: name and arguments (see [`call_digest`]).
    pub(super) call: String,
    /// Seconds since the Unix epoch after which it is refused.
    pub(super) expires: u64,
    /// Names the parked call.
    pub(super) nonce: String,
}

impl Claims {
    pub(super) fn new(run: &str, tool: &str, args: &Value, ttl: Duration) -> Claims {
        Claims {
            run: run.to_string(),
            call: call_digest(tool, args),
            expires: unix_now().saturating_add(ttl.as_secs()),
            nonce: uuid::Uuid::new_v4().simple().to_string(),
        }
    }
}

/// Why a token is refused; the text completes "requestState refused: …".
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Refusal {
    /// Not a token of this format at all.
    Malformed,
    /// The tag does not match: altered, made up, or from another server process.
    Forged,
    OtherRun,
    Expired,
    OtherCall,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Refusal::Malformed => "it is not a requestState of this server (malformed)",
            Refusal::Forged => {
                "its integrity check failed: it was altered, or issued by another server process"
            }
            Refusal::OtherRun => "it was issued to another session",
            Refusal::Expired => "it expired",
            Refusal::OtherCall => {
                "it belongs to another tool call (name and arguments must be the same)"
            }
        })
    }
}

/// The token for `claims`: `rs1.<payload>.<tag>`, both base64url.
pub(super) fn issue(key: &StateKey, claims: &Claims) -> String {
    let payload = B64.encode(serde_json::to_vec(claims).unwrap_or_default());
    let tag = B64.encode(key.tag(payload.as_bytes()).finalize().into_bytes());
    format!("{PREFIX}.{payload}.{tag}")
}

/// The claims of `token` if its tag is right and it was issued to `run` for this call and has
/// not expired at `now` (seconds since the epoch).
pub(super) fn verify(
    key: &StateKey,
    token: &str,
    run: &str,
    tool: &str,
    args: &Value,
    now: u64,
) -> Result<Claims, Refusal> {
    let mut parts = token.split('.');
    let (Some(PREFIX), Some(payload), Some(tag), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(Refusal::Malformed);
    };
    let tag = B64.decode(tag).map_err(|_| Refusal::Malformed)?;
    // Constant-time comparison of the tag, before anything of the payload is believed.
    key.tag(payload.as_bytes()).verify_slice(&tag).map_err(|_| Refusal::Forged)?;
    let claims: Claims = B64
        .decode(payload)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .ok_or(Refusal::Malformed)?;
    if claims.run != run {
        return Err(Refusal::OtherRun);
    }
    if claims.expires <= now {
        return Err(Refusal::Expired);
    }
    if claims.call != call_digest(tool, args) {
        return Err(Refusal::OtherCall);
    }
    Ok(claims)
}

pub(super) fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// SHA-256 of the tool's name and its arguments in canonical JSON (object keys sorted), so a
/// client that sends the same arguments in another key order is the same call.
fn call_digest(tool: &str, args: &Value) -> String {
    let mut hasher = Sha256::new();
    hasher.update(tool.as_bytes());
    hasher.update([0]);
    hasher.update(canonical(args).to_string().as_bytes());
    B64.encode(hasher.finalize())
}

fn canonical(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let mut sorted = serde_json::Map::new();
            for key in keys {
                sorted.insert(key.clone(), canonical(&map[key]));
            }
            Value::Object(sorted)
        }
        Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const TTL: Duration = Duration::from_secs(900);

    fn token(key: &StateKey) -> (String, Claims) {
        let claims = Claims::new("run-a", "write", &json!({"path": "a.txt", "content": "x"}), TTL);
        (issue(key, &claims), claims)
    }

    fn check(key: &StateKey, token: &str) -> Result<Claims, Refusal> {
        let args = json!({"content": "x", "path": "a.txt"});
        verify(key, token, "run-a", "write", &args, unix_now())
    }

    #[test]
    fn a_token_comes_back_to_the_same_call_in_any_key_order() {
        let key = StateKey::random();
        let (token, claims) = token(&key);
        assert_eq!(check(&key, &token), Ok(claims));
    }

    #[test]
    fn an_altered_payload_or_tag_is_refused_as_forged() {
        let key = StateKey::random();
        let (token, mut claims) = token(&key);
        // A later expiry, signed with nothing: the payload changes, the tag does not.
        claims.expires += 3600;
        let payload = B64.encode(serde_json::to_vec(&claims).unwrap());
        let tag = token.rsplit('.').next().unwrap();
        assert_eq!(check(&key, &format!("rs1.{payload}.{tag}")), Err(Refusal::Forged));
        // A character inside the tag: the last one may carry only padding bits, which decode
        // to the same tag whatever they are.
        let mut flipped = token.clone().into_bytes();
        let inside = flipped.len() - 3;
        flipped[inside] = if flipped[inside] == b'A' { b'B' } else { b'A' };
        assert_eq!(check(&key, &String::from_utf8(flipped).unwrap()), Err(Refusal::Forged));
    }

    #[test]
    fn a_token_of_another_server_process_is_refused_as_forged() {
        let (token, _) = token(&StateKey::random());
        assert_eq!(check(&StateKey::random(), &token), Err(Refusal::Forged));
    }

    #[test]
    fn a_token_of_another_run_another_call_or_past_its_expiry_is_refused_for_that() {
        let key = StateKey::random();
        let (token, claims) = token(&key);
        let args = json!({"path": "a.txt", "content": "x"});
        let now = unix_now();
        assert_eq!(verify(&key, &token, "run-b", "write", &args, now), Err(Refusal::OtherRun));
        assert_eq!(
            verify(&key, &token, "run-a", "write", &json!({"path": "b.txt"}), now),
            Err(Refusal::OtherCall)
        );
        assert_eq!(verify(&key, &token, "run-a", "edit", &args, now), Err(Refusal::OtherCall));
        assert_eq!(
            verify(&key, &token, "run-a", "write", &args, claims.expires),
            Err(Refusal::Expired)
        );
    }

    #[test]
    fn garbage_is_refused_as_malformed() {
        let key = StateKey::random();
        for garbage in ["", "rs_0123", "rs1.x", "rs1.a.b.c", "rs2.e30.AAAA", "rs1.e30.!!"] {
            assert_eq!(check(&key, garbage), Err(Refusal::Malformed), "{garbage:?}");
        }
    }
}
