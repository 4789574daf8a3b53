//! The `agent-tools` host binary: `mcp`, `call` and `status`.

fn main() -> std::process::ExitCode {
    agent_tools_host::main()
}
