//! The `agent-tools` command line: `mcp`, `call` and `status`, parsed and run to their end.

use std::{io::IsTerminal, path::PathBuf, process::ExitCode};

use agent_tools::{
    SurfaceKind,
    run::{Attach, prepare_run_trusting},
};
use clap::{Parser, Subcommand};

use crate::{HttpOptions, serve_http, serve_stdio, status_report};

#[derive(Debug, Parser)]
#[command(
    name = "agent-tools",
    version,
    about = "Built-in agent tools, served over MCP or run one at a time"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, clap::Args)]
struct RunArgs {
    /// The run's root: every path is confined to it (default: the current directory).
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
    /// Which surface to expose: `build` (up to exec) or `plan` (read-only).
    #[arg(long, value_name = "build|plan")]
    surface: Option<SurfaceKind>,
    /// Vibe mode: register the vibe_* background-worker tools (also `[vibe] enabled = true`).
    #[arg(long)]
    vibe: bool,
    /// Trust the project's own agent-tools.toml in full (commands, binary folders, policies);
    /// without it, that file may set only limits and timeouts.
    #[arg(long)]
    trust_project: bool,
    /// The sandbox the run's kernels, debuggers and workers start in: `auto` (the default:
    /// bubblewrap, else Landlock, else none of them start), `bwrap` (bubblewrap), `landlock`
    /// (Landlock and seccomp), `prefix` (`[capsule] prefix`) or `none` (unconfined; also
    /// `[capsule] kind`).
    #[arg(long, value_name = "auto|bwrap|landlock|prefix|none")]
    capsule: Option<agent_tools::capsule::CapsuleKind>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the tools to an MCP client over stdio (one connection is one run), or over
    /// Streamable HTTP with `--http` (one session is one run).
    Mcp {
        #[command(flatten)]
        run: RunArgs,
        /// Serve MCP over Streamable HTTP at http://ADDR/mcp instead of stdio, for example
        /// 127.0.0.1:8765; an address that is not loopback needs a bearer token.
        #[arg(long, value_name = "ADDR")]
        http: Option<String>,
        /// A file holding the bearer token HTTP clients must send (also `[mcp] http_token_file`).
        #[arg(long, value_name = "FILE", requires = "http")]
        token_file: Option<PathBuf>,
    },
    /// Run one tool in a fresh run and print its result (exit 0 ok, 1 tool error, 2 usage error,
    /// 3 the result could not be written).
    Call {
        /// Tool name, for example `read`.
        tool: String,
        /// Arguments as a JSON object, for example '{"path": "README.md"}'.
        #[arg(default_value = "{}")]
        args: String,
        #[command(flatten)]
        run: RunArgs,
        /// Print the whole structured result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Say which families a run with these options attaches, which tools its surface shows
    /// and hides, and what is usable on this machine; starts nothing.
    Status {
        #[command(flatten)]
        run: RunArgs,
        #[arg(long)]
        json: bool,
    },
}

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .try_init();
}

/// Writes to stdout; the host's commands print their results there by design. A closed
/// stdout (`agent-tools call ... | head -1`) is not an error: the reader has what it wanted.
/// Any other failure (a full disk, `> /dev/full`) is, since the result is lost.
fn print_out(text: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match writeln!(out, "{text}").and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

/// Exit code of a command whose output could not be written.
const EXIT_UNWRITTEN: u8 = 3;

/// Prints `text` for `command`; on failure says why and gives the exit code for it.
fn print_result(command: &str, text: &str) -> Result<(), ExitCode> {
    print_out(text).map_err(|e| {
        print_err(&format!("agent-tools {command}: cannot write the result to stdout: {e}"));
        ExitCode::from(EXIT_UNWRITTEN)
    })
}

#[allow(clippy::print_stderr)]
pub(crate) fn print_err(text: &str) {
    eprintln!("{text}");
}

/// The command line `argv` (the program name first) run to its end: see [`main_with_args`].
pub(crate) fn run_command_line(argv: Vec<std::ffi::OsString>) -> ExitCode {
    let cli = match Cli::try_parse_from(argv) {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    init_tracing();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            print_err(&format!("agent-tools: cannot start the async runtime: {e}"));
            return ExitCode::from(2);
        }
    };
    let code = runtime.block_on(async move {
        match cli.command {
            Command::Mcp { run: args, http, token_file } => {
                let setup = match prepare_run_trusting(args.root, args.surface, args.trust_project)
                    .and_then(|setup| setup.with_capsule(args.capsule))
                {
                    Ok(r) => r,
                    Err(e) => {
                        print_err(&format!("agent-tools mcp: {e}"));
                        return ExitCode::from(2);
                    }
                };
                let attach = Attach::default().with_vibe(args.vibe);
                let served = match http {
                    Some(addr) => {
                        match HttpOptions::resolve(&addr, token_file.as_deref(), &setup.config.mcp)
                        {
                            Ok(options) => serve_http(setup, attach, options).await,
                            Err(e) => {
                                print_err(&format!("agent-tools mcp: {e}"));
                                return ExitCode::from(2);
                            }
                        }
                    }
                    None => serve_stdio(setup, attach).await,
                };
                match served {
                    Ok(()) => ExitCode::SUCCESS,
                    Err(e) => {
                        print_err(&format!("agent-tools mcp: {e:#}"));
                        ExitCode::from(1)
                    }
                }
            }
            Command::Call { tool, args, run, json } => call(tool, args, run, json).await,
            Command::Status { run, json } => {
                let mut setup = match prepare_run_trusting(run.root, run.surface, run.trust_project)
                {
                    Ok(setup) => setup,
                    Err(e) => {
                        print_err(&format!("agent-tools status: {e}"));
                        return ExitCode::from(2);
                    }
                };
                if let Some(kind) = run.capsule {
                    setup.config.capsule.kind = kind;
                }
                let report = status_report(&setup, &Attach::default().with_vibe(run.vibe));
                let text = if json {
                    serde_json::to_string_pretty(&report).unwrap_or_default()
                } else {
                    report.render()
                };
                match print_result("status", &text) {
                    Ok(()) => ExitCode::SUCCESS,
                    Err(code) => code,
                }
            }
        }
    });
    // A terminal read left pending by an unanswered card must not hold the process open.
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    code
}

async fn call(tool: String, args: String, run: RunArgs, json: bool) -> ExitCode {
    let args: serde_json::Value = match serde_json::from_str(&args) {
        Ok(v @ serde_json::Value::Object(_)) => v,
        Ok(other) => {
            print_err(&format!(
                "agent-tools call: ARGS must be a JSON object, got {other}; for example '{{\"path\": \"README.md\"}}'"
            ));
            return ExitCode::from(2);
        }
        Err(e) => {
            print_err(&format!(
                "agent-tools call: ARGS is not valid JSON ({e}); for example '{{\"path\": \"README.md\"}}'"
            ));
            return ExitCode::from(2);
        }
    };
    let setup = match prepare_run_trusting(run.root, run.surface, run.trust_project)
        .and_then(|setup| setup.with_capsule(run.capsule))
    {
        Ok(r) => r,
        Err(e) => {
            print_err(&format!("agent-tools call: {e}"));
            return ExitCode::from(2);
        }
    };
    let attach = Attach::default().with_vibe(run.vibe);
    // From a terminal, cards are shown on stderr and answered on stdin; otherwise nobody can
    // answer, so `ask_user` is not registered and approvals fail closed.
    #[cfg(feature = "ask")]
    let attach = if std::io::stdin().is_terminal() {
        attach.with_questions(
            std::sync::Arc::new(agent_tools_ask::ports::terminal::TerminalPort::stdio()),
            agent_tools_ask::Target::new("the operator at the terminal"),
        )
    } else {
        attach
    };
    let run = setup.assemble(&attach);
    let surface = run.surface();
    if surface.get(&tool).is_none() {
        print_err(&format!("agent-tools call: {}", surface.refusal(&tool).unwrap_or_default()));
        run.registry.shutdown().await;
        return ExitCode::from(2);
    }
    let ctx = surface.context(&run.info, None);
    let result = surface.call(&ctx, &tool, args).await;
    run.info.cancel.cancel();
    run.registry.shutdown().await;
    let printed = if json {
        print_result("call", &serde_json::to_string_pretty(&result).unwrap_or_default())
    } else if result.is_error {
        print_err(&result.text);
        Ok(())
    } else {
        print_result("call", result.text.trim_end())
    };
    if let Err(code) = printed {
        return code;
    }
    if result.is_error { ExitCode::from(1) } else { ExitCode::SUCCESS }
}
