//! Starting a session: what the call launches or attaches to (program, working folder,
//! adapter, test plan, stdin), the adapter command, and the session started with the
//! conversation's breakpoints and its time limit scheduled.

use std::{
    path::{Path, PathBuf},
    sync::{Arc, atomic::Ordering},
    time::Duration,
};

use tokio::time::Instant;

use super::{DebugSupervisor, Slot, SlotInner};
use agent_tools_support::progress::CallScope;

use crate::{
    adapters::{
        self, AdapterCommand, AdapterKind, ExceptionMode, LaunchSpec, SearchEnv, StdinSource,
    },
    error::DebugError,
    launch::{self, resolve_in_root},
    request::{DebugArgs, Operation},
    response::*,
    session::{AttachTo, Session, StartOptions, Target},
};

impl DebugSupervisor {
    pub(super) async fn start(
        &self,
        slot: &Arc<Slot>,
        inner: &mut SlotInner,
        root: &Path,
        args: &DebugArgs,
        wait: Duration,
        cancel: &CallScope,
    ) -> Result<DebugOutcome, DebugError> {
        if self.closing.load(Ordering::SeqCst) {
            return Err(DebugError::usage("the run is ending; no new session starts"));
        }
        clear_for_new_session(inner).await?;
        let (program, cwd) = program_and_cwd(root, args, &self.env)?;
        let kind = self.adapter_kind(root, args, program.as_deref())?;
        // A trace tells how each call ended, an exception it raised included.
        let exceptions = args.exceptions.unwrap_or(if args.operation == Operation::Trace {
            ExceptionMode::All
        } else {
            ExceptionMode::Uncaught
        });
        let (target, command, rust) = if args.operation != Operation::Attach {
            let library_breakpoint = inner.breakpoints.values().any(|b| b.library);
            self.launch_target(kind, root, args, program, cwd, library_breakpoint).await?
        } else {
            self.attach_target(kind, root, args, program, cwd).await?
        };
        let name = launch_name(args, root, &target);
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (mut session, mut view) = Session::start(StartOptions {
            id,
            root,
            config: &self.config,
            command,
            target,
            name,
            breakpoints: &inner.breakpoints,
            exceptions,
            rust,
            functions: trace_breakpoint(kind, args),
            stdin: args.stdin.clone(),
            wait,
            cancel: cancel.clone(),
            capsule: &self.capsule,
        })
        .await?;
        // The limit counts from when the session is usable: a cold build does not eat into it.
        session.deadline = Instant::now() + self.config.ttl();
        view.session.ttl_seconds_left = self.config.ttl().as_secs();
        *slot.cancel.lock() = Some(session.cancel.clone());
        self.schedule_ttl(slot.clone(), id, session.deadline);
        inner.session = Some(session);
        inner.last_end = None;
        Ok(DebugOutcome::Started(view))
    }

    /// The adapter the call asks for, or the one its program, test or the root's markers say.
    fn adapter_kind(
        &self,
        root: &Path,
        args: &DebugArgs,
        program: Option<&Path>,
    ) -> Result<AdapterKind, DebugError> {
        Ok(match args.adapter {
            Some(kind) => kind,
            None if args.module.is_some() => AdapterKind::Debugpy,
            None => match (
                program.and_then(|p| adapters::adapter_for_program(p, root)),
                args.test.as_deref().and_then(|t| launch::adapter_for_test(t, root)),
            ) {
                (_, Some(kind)) | (Some(kind), None) => kind,
                (None, None) => self.adapter_from_markers(root, program)?,
            },
        })
    }

    /// What a `launch` runs (script, module, test plan, or program) and how: the adapter
    /// command, the Rust formatters for lldb, `justMyCode` (off when a breakpoint is in a
    /// library) and where stdin comes from.
    async fn launch_target(
        &self,
        kind: AdapterKind,
        root: &Path,
        args: &DebugArgs,
        program: Option<PathBuf>,
        cwd: PathBuf,
        library_breakpoint: bool,
    ) -> Result<(Target, AdapterCommand, bool), DebugError> {
        if args.module.is_some() && kind != AdapterKind::Debugpy {
            return Err(DebugError::usage(format!(
                "`module` runs a Python module (`python -m`); the {} adapter has none: pass \
                 `program`",
                kind.id()
            )));
        }
        let user_args = args.args.clone().unwrap_or_default();
        let (program, module, run_args, go_test) = match (&args.test, &args.module) {
            (Some(test), _) => {
                let (env, root_owned, test, program) =
                    (self.env.clone(), root.to_path_buf(), test.clone(), program.clone());
                let capsule = self.capsule.clone();
                let plan = tokio::task::spawn_blocking(move || {
                    launch::plan_test(
                        kind,
                        &test,
                        program.as_deref(),
                        &root_owned,
                        &user_args,
                        &env,
                        &*capsule,
                    )
                })
                .await
                .map_err(|e| DebugError::adapter(format!("planning the test failed: {e}")))??;
                (plan.program.unwrap_or_else(|| cwd.clone()), plan.module, plan.args, plan.go_test)
            }
            (None, Some(module)) => (cwd.clone(), Some(module.clone()), user_args, false),
            (None, None) => {
                let program = program.ok_or_else(|| {
                    DebugError::usage(
                        "launch needs `program` (a .py script, a Go package folder or .go \
                         file, a .dart file, an executable built with debug info, or a \
                         console script of the project's environment), `module` (Python) \
                         or `test`",
                    )
                })?;
                match go_test_package(kind, &program) {
                    // `program` a `_test.go` file: `go test` of its package.
                    Some(package) => (package, None, user_args, true),
                    None => (program, None, user_args, false),
                }
            }
        };
        let command = self.resolve(kind, root).await?;
        let rust = kind == AdapterKind::Lldb && adapters::looks_like_rust(&program, root);
        let init_commands = if rust {
            let (probes, env) = (self.probes.clone(), self.env.clone());
            tokio::task::spawn_blocking(move || adapters::rust_formatter_commands(&probes, &env))
                .await
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        let just_my_code = args.just_my_code.unwrap_or(!library_breakpoint);
        let stdin = match (&args.stdin, kind) {
            (None, _) => StdinSource::Closed,
            (Some(_), AdapterKind::Debugpy) => StdinSource::Terminal,
            // The FIFO's path is chosen in the session's temp folder.
            (Some(_), AdapterKind::Lldb) => StdinSource::Fifo(PathBuf::new()),
            (Some(_), AdapterKind::Delve) => StdinSource::Inherited,
            (Some(_), AdapterKind::Dart) => {
                return Err(DebugError::usage("`stdin` is not supported with the dart adapter"));
            }
        };
        let spec = LaunchSpec {
            program,
            module,
            args: run_args,
            cwd,
            env: args.env.clone().unwrap_or_default(),
            stop_on_entry: args.stop_on_entry.unwrap_or(false),
            debuggee_python: command.debuggee_python.clone(),
            init_commands,
            just_my_code,
            go_test,
            stdin,
        };
        Ok((Target::Launch(spec), command, rust))
    }

    /// What an `attach` reaches (a debug server's port or a process) and the adapter command,
    /// none when the port itself speaks DAP.
    async fn attach_target(
        &self,
        kind: AdapterKind,
        root: &Path,
        args: &DebugArgs,
        program: Option<PathBuf>,
        cwd: PathBuf,
    ) -> Result<(Target, AdapterCommand, bool), DebugError> {
        let how = match (args.port, args.pid) {
            (Some(port), None) => AttachTo::Port(port),
            (None, Some(pid)) => AttachTo::Pid(pid),
            (Some(_), Some(_)) => {
                return Err(DebugError::usage("attach takes `port` or `pid`, not both"));
            }
            (None, None) => {
                return Err(DebugError::usage(format!(
                    "attach needs `port` (the local port of a debug server: {}) or `pid` (a \
                     running process, with lldb or delve)",
                    crate::session::attach_recipe(kind, 5678)
                )));
            }
        };
        let direct = matches!(how, AttachTo::Port(_)) && adapters::attach_is_direct(kind);
        let command = if direct {
            AdapterCommand {
                kind,
                argv: Vec::new(),
                version: None,
                debuggee_python: None,
                notes: Vec::new(),
            }
        } else {
            self.resolve(kind, root).await?
        };
        Ok((Target::Attach { how, program, cwd }, command, false))
    }

    fn adapter_from_markers(
        &self,
        root: &Path,
        program: Option<&Path>,
    ) -> Result<AdapterKind, DebugError> {
        let found: Vec<AdapterKind> = AdapterKind::ALL
            .into_iter()
            .filter(|k| adapters::find_marker(*k, root, root).is_some())
            .collect();
        match found.as_slice() {
            [one] => Ok(*one),
            _ => Err(DebugError::usage(format!(
                "cannot tell which adapter to use{}{}; pass `adapter`: dart, debugpy, lldb \
                 or delve",
                program.map(|p| format!(" for {}", p.display())).unwrap_or_default(),
                if found.is_empty() {
                    " (no project marker in the root)".to_string()
                } else {
                    format!(
                        " (markers of {} in the root)",
                        found.iter().map(|k| k.id()).collect::<Vec<_>>().join(" and ")
                    )
                }
            ))),
        }
    }
}

/// The function breakpoint of a `trace` (delve names functions with their package).
fn trace_breakpoint(kind: AdapterKind, args: &DebugArgs) -> Vec<String> {
    let Some(name) = args.name.as_ref().filter(|_| args.operation == Operation::Trace) else {
        return Vec::new();
    };
    if kind == AdapterKind::Delve && !name.contains('.') {
        return vec![format!("main.{name}")];
    }
    vec![name.clone()]
}

/// The package folder of a Go `_test.go` file launched as `program` (run as `go test`).
fn go_test_package(kind: AdapterKind, program: &Path) -> Option<PathBuf> {
    let name = program.file_name()?.to_str()?;
    (kind == AdapterKind::Delve && name.ends_with("_test.go"))
        .then(|| program.parent().map(Path::to_path_buf))
        .flatten()
}

/// Refuses while a session of the conversation still runs; a finished one is torn down.
async fn clear_for_new_session(inner: &mut SlotInner) -> Result<(), DebugError> {
    if let Some(session) = &inner.session {
        if !session.finished() {
            let view = session.view();
            let (state, stop, _, _) = session.status();
            let at = match stop {
                Some(s) => format!(
                    "stopped at stop {} ({}{})",
                    s.stop,
                    s.reason,
                    s.place.map(|p| format!(" in {p}")).unwrap_or_default()
                ),
                None => state,
            };
            return Err(DebugError::usage(format!(
                "refused: a debug session is already running in this conversation: {} \
                 ({}{}), {at}. End it with {{\"operation\": \"terminate\"}} first, or keep \
                 working with it",
                view.program,
                view.adapter.id(),
                view.debuggee_pid.map(|p| format!(", pid {p}")).unwrap_or_default(),
            )));
        }
        if let Some(mut old) = inner.session.take() {
            old.teardown("replaced by a new session after the program ended").await;
        }
    }
    Ok(())
}

/// The program (resolved in the root, or as a console script of the project's environment for
/// a launch) and the working folder of the call.
fn program_and_cwd(
    root: &Path,
    args: &DebugArgs,
    env: &SearchEnv,
) -> Result<(Option<PathBuf>, PathBuf), DebugError> {
    let program = match &args.program {
        Some(p) if args.operation != Operation::Attach => {
            Some(launch::resolve_program(root, p, env)?)
        }
        Some(p) => Some(resolve_in_root(root, p, "program")?),
        None => None,
    };
    let cwd = match &args.cwd {
        Some(c) => {
            let cwd = resolve_in_root(root, c, "cwd")?;
            if !cwd.is_dir() {
                return Err(DebugError::usage(format!("cwd `{c}` is not a folder")));
            }
            cwd
        }
        None => root.to_path_buf(),
    };
    Ok((program, cwd))
}

/// What a launch is named by when the program's path does not say it: "python -m http.server",
/// "test tests/test_calc.py::test_mean", "the package in the root (calc)".
fn launch_name(args: &DebugArgs, root: &Path, target: &Target) -> Option<String> {
    let Target::Launch(spec) = target else { return None };
    match (&args.test, &args.module) {
        (Some(test), _) => Some(format!("test {test}")),
        (None, Some(module)) => Some(format!("python -m {module}")),
        (None, None) if spec.go_test => {
            Some(format!("go test ({})", args.program.as_deref().unwrap_or_default()))
        }
        (None, None) if spec.program == root => Some(format!(
            "the package in the root ({})",
            root.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use tokio_util::sync::CancellationToken;

    use super::*;
    use crate::config::DebugConfig;

    #[tokio::test]
    async fn a_module_for_an_adapter_without_modules_is_refused_in_one_sentence() {
        let root = tempfile::tempdir().unwrap();
        let debug = DebugSupervisor::new(DebugConfig::default());
        let mut args = DebugArgs::op(Operation::Launch);
        args.module = Some("http.server".into());
        args.adapter = Some(AdapterKind::Lldb);
        let err = debug
            .call("conversation", root.path(), args, &CancellationToken::new())
            .await
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(
                "`module` runs a Python module (`python -m`); the lldb adapter has none: pass \
                 `program`"
            ),
            "{err}"
        );
    }
}
