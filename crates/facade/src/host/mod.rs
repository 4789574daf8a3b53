//! The host binary's library side: command line, run assembly, and the three commands.

mod mcp;
mod status;

use std::{
    io::IsTerminal,
    path::{Path, PathBuf},
    process::ExitCode,
};

use clap::{Parser, Subcommand};

use crate::{Config, Registry, RegistryBuilder, RunInfo, SurfaceKind};

pub use self::{mcp::serve_stdio, status::status_report};

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
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the tools to an MCP client over stdio; one connection is one run.
    Mcp {
        #[command(flatten)]
        run: RunArgs,
    },
    /// Run one tool in a fresh run and print its result (exit 0 ok, 1 tool error, 2 usage error).
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
    /// Say which families are attached and what is usable on this machine.
    Status {
        #[arg(long, value_name = "DIR")]
        root: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
}

/// Everything one run needs: its identity, its registry and the surface it serves.
pub struct HostRun {
    pub info: RunInfo,
    pub registry: Registry,
    pub config: Config,
    pub surface_kind: SurfaceKind,
}

impl HostRun {
    pub fn surface(&self) -> crate::Surface {
        self.registry.surface(self.surface_kind).with_max_output_chars(self.config.output.max_chars)
    }
}

/// Builds the registry of a run from what this host can attach.
///
/// Each family adds one attach step here, behind its feature.
pub fn assemble(root: &Path, config: &Config) -> Registry {
    let _ = (root, config);
    let builder = RegistryBuilder::new().with_reference_file_tools();
    builder.build()
}

fn resolve_root(root: Option<PathBuf>) -> Result<PathBuf, String> {
    let root = match root {
        Some(r) => r,
        None => std::env::current_dir()
            .map_err(|e| format!("cannot read the current directory: {e}"))?,
    };
    let canonical = std::fs::canonicalize(&root)
        .map_err(|e| format!("--root {}: {e}; give an existing directory", root.display()))?;
    if !canonical.is_dir() {
        return Err(format!("--root {}: not a directory", root.display()));
    }
    Ok(canonical)
}

/// Starts a run for `args`: root, configuration, registry.
pub fn start_run(root: Option<PathBuf>, surface: Option<SurfaceKind>) -> Result<HostRun, String> {
    let root = resolve_root(root)?;
    let config = Config::load(&root).map_err(|e| e.to_string())?;
    let surface_kind = match surface {
        Some(s) => s,
        None => match &config.mcp.surface {
            Some(s) => s.parse().map_err(|e| format!("config mcp.surface: {e}"))?,
            None => SurfaceKind::Build,
        },
    };
    let registry = assemble(&root, &config);
    Ok(HostRun { info: RunInfo::new(root), registry, config, surface_kind })
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

/// Writes to stdout; the host's commands print their results there by design.
#[allow(clippy::print_stdout)]
fn print_out(text: &str) {
    println!("{text}");
}

#[allow(clippy::print_stderr)]
fn print_err(text: &str) {
    eprintln!("{text}");
}

/// Entry point of the `agent-tools` binary.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
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
    runtime.block_on(async move {
        match cli.command {
            Command::Mcp { run } => {
                let run = match start_run(run.root, run.surface) {
                    Ok(r) => r,
                    Err(e) => {
                        print_err(&format!("agent-tools mcp: {e}"));
                        return ExitCode::from(2);
                    }
                };
                match serve_stdio(run).await {
                    Ok(()) => ExitCode::SUCCESS,
                    Err(e) => {
                        print_err(&format!("agent-tools mcp: {e:#}"));
                        ExitCode::from(1)
                    }
                }
            }
            Command::Call { tool, args, run, json } => call(tool, args, run, json).await,
            Command::Status { root, json } => {
                let root = match resolve_root(root) {
                    Ok(r) => r,
                    Err(e) => {
                        print_err(&format!("agent-tools status: {e}"));
                        return ExitCode::from(2);
                    }
                };
                match status_report(&root) {
                    Ok(report) => {
                        if json {
                            print_out(&serde_json::to_string_pretty(&report).unwrap_or_default());
                        } else {
                            print_out(&report.render());
                        }
                        ExitCode::SUCCESS
                    }
                    Err(e) => {
                        print_err(&format!("agent-tools status: {e}"));
                        ExitCode::from(2)
                    }
                }
            }
        }
    })
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
    let run = match start_run(run.root, run.surface) {
        Ok(r) => r,
        Err(e) => {
            print_err(&format!("agent-tools call: {e}"));
            return ExitCode::from(2);
        }
    };
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
    if json {
        print_out(&serde_json::to_string_pretty(&result).unwrap_or_default());
    } else if result.is_error {
        print_err(&result.text);
    } else {
        print_out(result.text.trim_end());
    }
    if result.is_error { ExitCode::from(1) } else { ExitCode::SUCCESS }
}
