//! The `agent-tools` host, built inside the e2e package so tests can find its path.

fn main() -> std::process::ExitCode {
    agent_tools_host::main()
}
