//! What `agent-tools mcp --http` serves with: the address, the bearer token read from its
//! file, and the `[mcp]` limits with their defaults.

use std::{net::SocketAddr, path::Path, time::Duration};

use super::limits;

/// A session idle this long ends (`[mcp] session_idle_seconds`).
const DEFAULT_SESSION_IDLE: Duration = Duration::from_secs(30 * 60);
/// A session whose client left without deleting it ends this long after
/// (`[mcp] session_detached_seconds`).
const DEFAULT_SESSION_DETACHED: Duration = Duration::from_secs(120);
/// The largest request body accepted (`[mcp] max_body_bytes`).
const DEFAULT_MAX_BODY_BYTES: usize = crate::MAX_MESSAGE_BYTES;

/// What `agent-tools mcp --http` was asked to serve.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    pub addr: SocketAddr,
    /// The bearer token every request must carry, if any.
    pub token: Option<String>,
    pub session_idle: Duration,
    /// A session whose client dropped its connection without deleting it ends this long after.
    pub session_detached: Duration,
    pub max_body_bytes: usize,
    /// A connection must send a request's headers within this.
    pub header_timeout: Duration,
    /// A request must send its whole body within this.
    pub body_timeout: Duration,
    /// Connections held at once, all peers together.
    pub max_connections: usize,
    /// Connections that have sent a request held at once for one peer address.
    pub max_connections_per_peer: usize,
}

impl HttpOptions {
    /// Options for `addr` from the command line and `[mcp]`: the token from `token_file`, else
    /// from `[mcp] http_token_file`. A non-loopback address without a token is refused.
    pub fn resolve(
        addr: &str,
        token_file: Option<&Path>,
        config: &agent_tools::McpConfig,
    ) -> Result<HttpOptions, String> {
        let addr = listen_address(addr)?;
        let token_file = token_file.or(config.http_token_file.as_deref());
        let token = match token_file {
            Some(file) => Some(read_token(file)?),
            None => None,
        };
        if !addr.ip().is_loopback() && token.is_none() {
            return Err(format!(
                "--http {addr} is not a loopback address, so anyone who can reach it could run \
                 tools: give a bearer token with --token-file FILE (or [mcp] http_token_file), \
                 or serve on 127.0.0.1"
            ));
        }
        if config.session_idle_seconds == Some(0)
            || config.session_detached_seconds == Some(0)
            || config.max_body_bytes == Some(0)
            || config.header_timeout_seconds == Some(0)
            || config.body_timeout_seconds == Some(0)
            || config.max_connections == Some(0)
            || config.max_connections_per_peer == Some(0)
        {
            return Err("[mcp] session_idle_seconds, session_detached_seconds, max_body_bytes, \
                        header_timeout_seconds, body_timeout_seconds, max_connections and \
                        max_connections_per_peer must be at least 1"
                .into());
        }
        Ok(HttpOptions {
            addr,
            token,
            session_idle: config
                .session_idle_seconds
                .map_or(DEFAULT_SESSION_IDLE, Duration::from_secs),
            session_detached: config
                .session_detached_seconds
                .map_or(DEFAULT_SESSION_DETACHED, Duration::from_secs),
            max_body_bytes: config.max_body_bytes.unwrap_or(DEFAULT_MAX_BODY_BYTES),
            header_timeout: config
                .header_timeout_seconds
                .map_or(limits::DEFAULT_HEADER_TIMEOUT, Duration::from_secs),
            body_timeout: config
                .body_timeout_seconds
                .map_or(limits::DEFAULT_BODY_TIMEOUT, Duration::from_secs),
            max_connections: config.max_connections.unwrap_or(limits::DEFAULT_MAX_CONNECTIONS),
            max_connections_per_peer: config
                .max_connections_per_peer
                .unwrap_or(limits::DEFAULT_MAX_PER_PEER),
        })
    }
}

fn read_token(file: &Path) -> Result<String, String> {
    let home =
        file.strip_prefix("~").ok().zip(dirs::home_dir()).map(|(rest, home)| home.join(rest));
    let file = home.as_deref().unwrap_or(file);
    let text = std::fs::read_to_string(file).map_err(|e| {
        format!("token file {}: {e}; give a readable file holding the token", file.display())
    })?;
    let token = text.trim().to_string();
    if token.is_empty() {
        return Err(format!("token file {} is empty; write the token in it", file.display()));
    }
    Ok(token)
}

/// `addr` as an address to listen on: an IP address and port, or a host name and port
/// (`localhost:8765`), whose first address is taken (IPv4 first, as `localhost` means there).
pub(super) fn listen_address(addr: &str) -> Result<SocketAddr, String> {
    if let Ok(parsed) = addr.parse::<SocketAddr>() {
        return Ok(parsed);
    }
    let usage = "give an address and port such as 127.0.0.1:8765 or localhost:8765";
    let found: Vec<SocketAddr> = std::net::ToSocketAddrs::to_socket_addrs(addr)
        .map_err(|e| format!("--http {addr}: {e}; {usage}"))?
        .collect();
    found
        .iter()
        .find(|a| a.is_ipv4())
        .or(found.first())
        .copied()
        .ok_or_else(|| format!("--http {addr}: the name has no address; {usage}"))
}
