//! The `[debug]` section of `agent-tools.toml`: time limits and adapter command overrides.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Settings for debug sessions. Every field has a default.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct DebugConfig {
    /// Hard limit on a session's life, in seconds (default 1800: 30 minutes). When it passes, the
    /// session is ended the same way `terminate` ends it.
    pub ttl_seconds: u64,
    /// How long `launch`, `continue`, the steps and `pause` wait for the program to stop before
    /// saying it is still running (default 20). A call may ask for longer with `wait_seconds`.
    pub stop_wait_seconds: u64,
    /// Bound on starting a session: spawning the adapter, building (delve compiles first), and the
    /// handshake up to `configurationDone` (default 120).
    pub launch_timeout_seconds: u64,
    /// Bound on one request such as `stackTrace` or `evaluate` (default 15).
    pub request_timeout_seconds: u64,
    /// How long `disconnect` may take at teardown before the adapter is killed, in ms (default 2000).
    pub disconnect_timeout_ms: u64,
    /// Commands that replace the built-in adapter lookup, per adapter.
    pub commands: AdapterCommands,
}

/// Per-adapter command overrides: the full command line that starts the adapter.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct AdapterCommands {
    /// For example `["/opt/dart-sdk/bin/dart", "debug_adapter"]`.
    pub dart: Option<Vec<String>>,
    /// For example `["/home/me/.venv/bin/python", "-m", "debugpy.adapter"]`.
    pub debugpy: Option<Vec<String>>,
    /// For example `["/usr/lib/llvm-19/bin/lldb-dap"]`.
    pub lldb: Option<Vec<String>>,
    /// For example `["/home/me/go/bin/dlv"]` (the `dap` subcommand and its flags are added).
    pub delve: Option<Vec<String>>,
}

impl Default for DebugConfig {
    fn default() -> Self {
        DebugConfig {
            ttl_seconds: 30 * 60,
            stop_wait_seconds: 20,
            launch_timeout_seconds: 120,
            request_timeout_seconds: 15,
            disconnect_timeout_ms: 2000,
            commands: AdapterCommands::default(),
        }
    }
}

impl DebugConfig {
    pub fn ttl(&self) -> Duration {
        Duration::from_secs(self.ttl_seconds.max(1))
    }

    pub fn stop_wait(&self) -> Duration {
        Duration::from_secs(self.stop_wait_seconds)
    }

    pub fn launch_timeout(&self) -> Duration {
        Duration::from_secs(self.launch_timeout_seconds.max(1))
    }

    pub fn request_timeout(&self) -> Duration {
        Duration::from_secs(self.request_timeout_seconds.max(1))
    }

    pub fn disconnect_timeout(&self) -> Duration {
        Duration::from_millis(self.disconnect_timeout_ms)
    }
}
