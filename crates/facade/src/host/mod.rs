//! The host binary's library side: command line, run assembly, and the three commands.

mod entry;
mod http;
mod mcp;
#[cfg(feature = "ask")]
mod mrtr;
mod order;
mod progress;
#[cfg(feature = "ask")]
mod request_state;
mod status;
mod tool_list;
mod transport;

use std::{
    io::IsTerminal,
    path::{Path, PathBuf},
    process::ExitCode,
};

use clap::{Parser, Subcommand};

use crate::{Config, Registry, RegistryBuilder, RunInfo, SurfaceKind};

pub use self::{
    entry::{exit_status, main, main_with_args},
    http::{HttpOptions, serve_http},
    mcp::serve_stdio,
    status::status_report,
    tool_list::{listed_chars, listed_tokens},
    transport::MAX_MESSAGE_BYTES,
};

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
    /// The sandbox the run's kernels, debuggers and workers start in: `bwrap` (bubblewrap),
    /// `prefix` (`[capsule] prefix`) or `none` (also `[capsule] kind`).
    #[arg(long, value_name = "bwrap|prefix|none")]
    capsule: Option<crate::capsule::CapsuleKind>,
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

/// What a run attaches beyond its configuration, known only once the client is known.
#[derive(Clone, Default)]
pub struct Attach {
    /// `--vibe`: vibe mode for this run (`[vibe] enabled = true` turns it on as well).
    pub vibe: bool,
    /// Where question and approval cards go, when someone can answer them.
    #[cfg(feature = "ask")]
    pub questions:
        Option<(std::sync::Arc<dyn agent_tools_ask::QuestionPort>, agent_tools_ask::Target)>,
    /// Language servers shared with the other runs of this host (HTTP); `None`: the run's own.
    #[cfg(feature = "lsp")]
    pub lsp_pool: Option<agent_tools_lsp::ServerPool>,
}

impl Attach {
    pub fn with_vibe(mut self, vibe: bool) -> Self {
        self.vibe = vibe;
        self
    }

    /// The run's language servers come from `pool`, shared with the other runs given it.
    #[cfg(feature = "lsp")]
    pub fn with_lsp_pool(mut self, pool: agent_tools_lsp::ServerPool) -> Self {
        self.lsp_pool = Some(pool);
        self
    }

    /// Cards go to `target` through `port`: `ask_user` is registered and approvals can be asked.
    #[cfg(feature = "ask")]
    pub fn with_questions(
        mut self,
        port: std::sync::Arc<dyn agent_tools_ask::QuestionPort>,
        target: agent_tools_ask::Target,
    ) -> Self {
        self.questions = Some((port, target));
        self
    }
}

/// Builds the registry of a run from what this host can attach.
///
/// Each family adds one attach step here, behind its feature. The run's capsule is made here,
/// once, and every exec-tier family starts its processes in it.
pub fn assemble(root: &Path, config: &Config, attach: &Attach) -> Registry {
    assemble_in(root, config, attach, crate::capsule::make_or_refuse(root, &config.capsule))
}

/// [`assemble`] with the run's capsule given.
pub fn assemble_in(
    root: &Path,
    config: &Config,
    attach: &Attach,
    capsule: std::sync::Arc<dyn agent_tools_support::capsule::Capsule>,
) -> Registry {
    let _ = (root, config, attach, &capsule);
    let builder = RegistryBuilder::new().with_reference_file_tools();
    #[cfg(feature = "eval")]
    let builder = builder.with_kernels(std::sync::Arc::new(
        agent_tools_eval::Kernels::new(config.eval.clone()).with_capsule(capsule.clone()),
    ));
    #[cfg(feature = "astgrep")]
    let builder = builder.with_astgrep(config.astgrep.clone());
    #[cfg(feature = "ask")]
    let builder = crate::families::ask::attach(builder, config, attach.questions.clone());
    #[cfg(feature = "vibe")]
    let builder = crate::families::vibe::attach(builder, root, config, attach.vibe, &capsule);
    #[cfg(feature = "debug")]
    let builder = builder.with_debug(agent_tools_debug::DebugSupervisor::in_capsule(
        config.debug.clone(),
        capsule.clone(),
    ));
    #[cfg(feature = "lsp")]
    let builder =
        builder.with_lsp_from(root, config.lsp.clone(), attach.lsp_pool.clone(), capsule.clone());
    let builder = builder.with_approval_policy(config.approval.policy);
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

/// A run before its registry exists: root, configuration and surface. The MCP host builds the
/// registry only after `initialize`, when it knows what the client can do (elicitation).
#[derive(Debug, Clone)]
pub struct RunSetup {
    pub info: RunInfo,
    pub config: Config,
    pub surface_kind: SurfaceKind,
}

impl RunSetup {
    /// The run's capsule is `kind` when given (`--capsule`), else the configuration's; checked
    /// here once, so a sandbox that cannot be made stops the host before any run starts.
    pub fn with_capsule(
        mut self,
        kind: Option<crate::capsule::CapsuleKind>,
    ) -> Result<RunSetup, String> {
        if let Some(kind) = kind {
            self.config.capsule.kind = kind;
        }
        crate::capsule::make(&self.info.root, &self.config.capsule)
            .map_err(|e| format!("--capsule: {e}"))?;
        Ok(self)
    }

    /// The run with its registry, built from what `attach` brings.
    pub fn assemble(self, attach: &Attach) -> HostRun {
        let registry = assemble(&self.info.root, &self.config, attach);
        HostRun { info: self.info, registry, config: self.config, surface_kind: self.surface_kind }
    }
}

/// Prepares a run: root, configuration, surface; no registry yet. The project's own
/// configuration file is not trusted (see [`prepare_run_trusting`]).
pub fn prepare_run(
    root: Option<PathBuf>,
    surface: Option<SurfaceKind>,
) -> Result<RunSetup, String> {
    prepare_run_trusting(root, surface, false)
}

/// [`prepare_run`]; `trust_project` trusts the project's `agent-tools.toml` in full.
pub fn prepare_run_trusting(
    root: Option<PathBuf>,
    surface: Option<SurfaceKind>,
    trust_project: bool,
) -> Result<RunSetup, String> {
    let root = resolve_root(root)?;
    let mut config = Config::load_trusting(&root, trust_project).map_err(|e| e.to_string())?;
    let surface_kind = match surface {
        Some(s) => s,
        None => match &config.mcp.surface {
            Some(s) => s.parse().map_err(|e| format!("config mcp.surface: {e}"))?,
            None => SurfaceKind::Build,
        },
    };
    config.apply_ceiling(surface_kind.ceiling());
    Ok(RunSetup { info: RunInfo::new(root), config, surface_kind })
}

/// Starts a run for `args`: root, configuration, registry (with nothing beyond the configuration
/// attached: no question port, vibe mode only if the configuration turns it on).
pub fn start_run(root: Option<PathBuf>, surface: Option<SurfaceKind>) -> Result<HostRun, String> {
    Ok(prepare_run(root, surface)?.assemble(&Attach::default()))
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
fn print_err(text: &str) {
    eprintln!("{text}");
}

/// The command line `argv` (the program name first) run to its end: see [`main_with_args`].
fn run_command_line(argv: Vec<std::ffi::OsString>) -> ExitCode {
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
                    Err(e) => {
                        print_err(&format!("agent-tools status: {e}"));
                        ExitCode::from(2)
                    }
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
