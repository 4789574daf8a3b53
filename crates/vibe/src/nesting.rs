//! How deep workers nest across hosts. A worker is often an agent with this server of its own;
//! the environment its command starts with says how deep it is and how deep workers may go, so
//! the nested `agent-tools` refuses `vibe_spawn` past the limit, whatever its own config says.

/// The depth of the agent a worker command runs (1 for the run's own workers).
pub const ENV_WORKER_DEPTH: &str = "AGENT_TOOLS_WORKER_DEPTH";
/// The deepest worker allowed, carried down so a nested config cannot raise it.
pub const ENV_WORKER_MAX_DEPTH: &str = "AGENT_TOOLS_WORKER_MAX_DEPTH";

/// Where this host's agent sits among nested workers, and the limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nesting {
    /// 0 for an agent no worker started; a worker's own host is at 1, its workers' at 2 …
    pub depth: u32,
    /// The deepest a worker may be: 1 lets only the top agent start workers.
    pub max_depth: u32,
    /// The environment held a value that is not a depth: spawning is refused, saying so.
    pub garbled: Option<String>,
}

impl Nesting {
    /// An agent no worker started, under `max_depth` (`[vibe] max_depth`).
    pub fn top(max_depth: u32) -> Self {
        Nesting { depth: 0, max_depth, garbled: None }
    }

    /// This process's place, from its environment and `[vibe] max_depth`: the lower limit wins.
    pub fn from_env(configured_max: u32) -> Self {
        let depth = std::env::var(ENV_WORKER_DEPTH).ok();
        let max = std::env::var(ENV_WORKER_MAX_DEPTH).ok();
        Nesting::from_values(depth.as_deref(), max.as_deref(), configured_max)
    }

    /// As [`Nesting::from_env`], from the two values.
    pub fn from_values(depth: Option<&str>, max: Option<&str>, configured_max: u32) -> Self {
        let mut nesting = Nesting::top(configured_max);
        let mut garbled = Vec::new();
        if let Some(value) = depth {
            match value.trim().parse::<u32>() {
                Ok(depth) => nesting.depth = depth,
                Err(_) => garbled.push(format!("{ENV_WORKER_DEPTH}={value:?}")),
            }
        }
        if let Some(value) = max {
            match value.trim().parse::<u32>() {
                Ok(max) => nesting.max_depth = nesting.max_depth.min(max),
                Err(_) => garbled.push(format!("{ENV_WORKER_MAX_DEPTH}={value:?}")),
            }
        }
        if !garbled.is_empty() {
            nesting.garbled = Some(garbled.join(", "));
        }
        nesting
    }

    /// Why this agent may not start a worker, when it may not.
    pub fn refusal(&self) -> Option<String> {
        if let Some(garbled) = &self.garbled {
            return Some(format!(
                "this agent's environment has {garbled}, which is not a worker depth, so how \
                 deep it runs among nested workers is unknown; no worker is started. Unset it \
                 (an agent no worker started) or give a number"
            ));
        }
        if self.depth < self.max_depth {
            return None;
        }
        let limit = match self.max_depth {
            0 => "no agent may start workers".to_string(),
            1 => "only the top agent may start workers: a worker cannot start workers of its \
                  own"
            .to_string(),
            n => format!("workers may nest {n} deep"),
        };
        Some(format!(
            "this agent runs as a worker at depth {} ({ENV_WORKER_DEPTH}={}), and {limit} \
             (max depth {}: [vibe] max_depth of the top agent's agent-tools.toml, carried in \
             {ENV_WORKER_MAX_DEPTH}). Do the work yourself, or report back to the agent that \
             started you",
            self.depth, self.depth, self.max_depth
        ))
    }

    /// The environment of a worker this agent starts: one level deeper, the same limit.
    pub fn worker_env(&self) -> [(&'static str, String); 2] {
        [
            (ENV_WORKER_DEPTH, self.depth.saturating_add(1).to_string()),
            (ENV_WORKER_MAX_DEPTH, self.max_depth.to_string()),
        ]
    }
}

impl Default for Nesting {
    fn default() -> Self {
        Nesting::top(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_top_agent_may_start_workers_and_a_worker_may_not_by_default() {
        assert_eq!(Nesting::from_values(None, None, 1).refusal(), None);
        let worker = Nesting::from_values(Some("1"), Some("1"), 1);
        let why = worker.refusal().expect("refused");
        assert!(why.contains("at depth 1 (AGENT_TOOLS_WORKER_DEPTH=1)"), "{why}");
        assert!(why.contains("a worker cannot start workers of its own"), "{why}");
        assert_eq!(worker.worker_env()[0], (ENV_WORKER_DEPTH, "2".to_string()));
    }

    #[test]
    fn a_nested_config_cannot_raise_the_inherited_limit_and_garbage_refuses() {
        let nested = Nesting::from_values(Some("1"), Some("1"), 5);
        assert_eq!(nested.max_depth, 1);
        assert!(nested.refusal().is_some());
        assert_eq!(Nesting::from_values(Some("1"), Some("3"), 3).refusal(), None);
        let garbled = Nesting::from_values(Some("deep"), None, 3).refusal().expect("refused");
        assert!(garbled.contains("AGENT_TOOLS_WORKER_DEPTH=\"deep\""), "{garbled}");
    }
}
