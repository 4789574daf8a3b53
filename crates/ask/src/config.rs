//! The `[ask]` section of `agent-tools.toml`.

use std::time::Duration;

use serde::{Deserialize, Deserializer};

use crate::session::DEFAULT_TIMEOUT;

/// `[ask]`: how long a card waits for the operator.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AskConfig {
    /// Seconds a card waits for an answer before it times out (default 900, 15 minutes).
    #[serde(deserialize_with = "positive")]
    pub timeout_seconds: u64,
}

impl Default for AskConfig {
    fn default() -> Self {
        AskConfig { timeout_seconds: DEFAULT_TIMEOUT.as_secs() }
    }
}

impl AskConfig {
    pub fn timeout(&self) -> Duration {
        Duration::from_secs(self.timeout_seconds)
    }
}

fn positive<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
    let value = u64::deserialize(deserializer)?;
    if value == 0 {
        return Err(serde::de::Error::custom(
            "timeout_seconds must be at least 1; a card that cannot wait cannot be answered",
        ));
    }
    Ok(value)
}
