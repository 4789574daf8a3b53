//! The `launch` and `attach` arguments of each adapter (with its measured quirks) and the
//! exception filters to send.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{AdapterKind, is_elf};
use crate::{dap_types::Capabilities, schema::bare_enum};

/// Which exceptions stop the program: `uncaught` (the default: exceptions, panics and crashes
/// that nothing catches), `all` (every raise, caught or not) or `none`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(inline, transform = bare_enum)]
pub enum ExceptionMode {
    #[default]
    Uncaught,
    All,
    None,
}

/// What a launch needs, whatever the adapter.
#[derive(Debug, Clone, Default)]
pub struct LaunchSpec {
    /// The script, package folder or executable (for a Python module: the working folder).
    pub program: PathBuf,
    /// debugpy: run this module (`python -m`) instead of `program`.
    pub module: Option<String>,
    pub args: Vec<String>,
    pub cwd: PathBuf,
    pub env: BTreeMap<String, String>,
    pub stop_on_entry: bool,
    pub debuggee_python: Option<PathBuf>,
    /// lldb: commands that load the Rust formatters.
    pub init_commands: Vec<String>,
    /// debugpy: skip library code (`justMyCode`).
    pub just_my_code: bool,
    /// delve: build and run the package's tests (`mode: test`).
    pub go_test: bool,
    /// Where the program's stdin comes from.
    pub stdin: StdinSource,
}

/// A debuggee's stdin.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum StdinSource {
    /// End of file at once (lldb: `/dev/null`; debugpy and delve: their own stdin, closed).
    #[default]
    Closed,
    /// debugpy: the program runs in a "terminal" we start (`runInTerminal`), its stdin a pipe.
    Terminal,
    /// lldb: a FIFO we hold open for writing.
    Fifo(PathBuf),
    /// delve: the adapter's own stdin is a pipe the program inherits.
    Inherited,
}

/// The `launch` request's arguments for `kind`.
pub fn launch_arguments(kind: AdapterKind, spec: &LaunchSpec) -> Value {
    let program = spec.program.display().to_string();
    let cwd = spec.cwd.display().to_string();
    match kind {
        AdapterKind::Debugpy => {
            let mut env = spec.env.clone();
            env.entry("PYDEVD_DISABLE_FILE_VALIDATION".into()).or_insert_with(|| "1".into());
            env.entry("PYTHONUNBUFFERED".into()).or_insert_with(|| "1".into());
            let terminal = spec.stdin == StdinSource::Terminal;
            let mut args = json!({
                "type": "python",
                "request": "launch",
                "name": "agent-tools",
                "args": spec.args,
                "cwd": cwd,
                "env": env,
                // A "terminal" is a child we start with a stdin pipe; its output is our pipes.
                "console": if terminal { "integratedTerminal" } else { "internalConsole" },
                "justMyCode": spec.just_my_code,
                // Child processes would arrive as startDebugging requests we do not follow.
                "subProcess": false,
                "stopOnEntry": spec.stop_on_entry,
                "redirectOutput": !terminal,
                "showReturnValue": true,
            });
            match &spec.module {
                Some(module) => args["module"] = json!(module),
                None => args["program"] = json!(program),
            }
            if let Some(python) = &spec.debuggee_python {
                args["python"] = json!([python.display().to_string()]);
            }
            args
        }
        AdapterKind::Lldb => {
            // lldb-dap ignores `env` as an object: it takes a list of K=V.
            let env: Vec<String> = spec.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let input = match &spec.stdin {
                StdinSource::Fifo(path) => path.display().to_string(),
                _ => "/dev/null".into(),
            };
            json!({
                "name": "agent-tools",
                "program": program,
                "args": spec.args,
                "cwd": cwd,
                "env": env,
                "stopOnEntry": spec.stop_on_entry,
                "initCommands": spec.init_commands,
                // Programs that read stdin would otherwise block forever.
                "preRunCommands": [format!("settings set target.input-path {input}")],
            })
        }
        AdapterKind::Delve => {
            // A program built beforehand (by us, beside the adapter's start) runs as is.
            let mode = if is_elf(&spec.program) {
                "exec"
            } else if spec.go_test {
                "test"
            } else {
                "debug"
            };
            json!({
                "name": "agent-tools",
                "mode": mode,
                "program": program,
                "args": spec.args,
                "cwd": cwd,
                "env": spec.env,
                // stopOnEntry leaves delve on a thread without frames (vscode-go#1818).
                "stopOnEntry": false,
                "hideSystemGoroutines": true,
            })
        }
        AdapterKind::Dart => json!({
            "name": "agent-tools",
            "program": program,
            "args": spec.args,
            "cwd": cwd,
            "env": spec.env,
            "stopOnEntry": spec.stop_on_entry,
            "debugSdkLibraries": false,
            "debugExternalPackageLibraries": false,
        }),
    }
}

/// The `attach` request's arguments for `kind` attaching to a debug server on `port`, or (with
/// `pid`) to a running process.
pub fn attach_arguments(
    kind: AdapterKind,
    port: Option<u16>,
    pid: Option<u32>,
    program: Option<&Path>,
    cwd: &Path,
) -> Value {
    let mut args = match kind {
        AdapterKind::Debugpy => json!({
            "type": "python",
            "request": "attach",
            "name": "agent-tools",
            "justMyCode": true,
            "subProcess": false,
            "showReturnValue": true,
        }),
        AdapterKind::Lldb => {
            let mut args = json!({"name": "agent-tools"});
            if let Some(port) = port {
                args["attachCommands"] = json!([format!("gdb-remote 127.0.0.1:{port}")]);
            }
            if let Some(program) = program {
                args["program"] = json!(program.display().to_string());
            }
            args
        }
        AdapterKind::Delve => json!({
            "name": "agent-tools",
            "request": "attach",
            "mode": if pid.is_some() { "local" } else { "remote" },
            "cwd": cwd.display().to_string(),
            "hideSystemGoroutines": true,
        }),
        AdapterKind::Dart => json!({
            "name": "agent-tools",
            "vmServiceUri": format!("ws://127.0.0.1:{}/ws", port.unwrap_or(0)),
            "cwd": cwd.display().to_string(),
        }),
    };
    if let Some(pid) = pid {
        match kind {
            AdapterKind::Lldb => args["pid"] = json!(pid),
            _ => args["processId"] = json!(pid),
        }
    }
    args
}

/// Whether attaching to `port` means talking DAP to the port itself (no adapter process).
pub fn attach_is_direct(kind: AdapterKind) -> bool {
    matches!(kind, AdapterKind::Debugpy | AdapterKind::Delve)
}

/// The exception filters to send for `mode`, restricted to what the adapter offers.
pub fn exception_filters(
    kind: AdapterKind,
    mode: ExceptionMode,
    capabilities: &Capabilities,
) -> Vec<String> {
    let wanted: &[&str] = match (kind, mode) {
        (_, ExceptionMode::None) => &[],
        (AdapterKind::Debugpy, ExceptionMode::Uncaught) => &["uncaught"],
        (AdapterKind::Debugpy, ExceptionMode::All) => &["raised", "uncaught"],
        (AdapterKind::Dart, ExceptionMode::Uncaught) => &["Unhandled"],
        (AdapterKind::Dart, ExceptionMode::All) => &["All"],
        // Crashes (signals) stop lldb without a filter; C++ throws only when asked.
        (AdapterKind::Lldb, ExceptionMode::Uncaught) => &[],
        (AdapterKind::Lldb, ExceptionMode::All) => &["cpp_throw", "objc_throw"],
        // delve stops on panics by itself and offers no filters.
        (AdapterKind::Delve, _) => &[],
    };
    wanted.iter().filter(|w| capabilities.offers_filter(w)).map(|w| w.to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lldb_takes_env_as_a_list_and_reads_stdin_from_dev_null() {
        let spec = LaunchSpec {
            program: "/p/a.out".into(),
            args: vec![],
            cwd: "/p".into(),
            env: [("FOO".to_string(), "bar".to_string())].into(),
            ..Default::default()
        };
        let args = launch_arguments(AdapterKind::Lldb, &spec);
        assert_eq!(args["env"], json!(["FOO=bar"]));
        assert_eq!(args["preRunCommands"], json!(["settings set target.input-path /dev/null"]));
        let py = launch_arguments(
            AdapterKind::Debugpy,
            &LaunchSpec { debuggee_python: Some("/p/.venv/bin/python".into()), ..spec.clone() },
        );
        assert_eq!(py["python"], json!(["/p/.venv/bin/python"]));
        assert_eq!(py["subProcess"], json!(false));
        let go = launch_arguments(AdapterKind::Delve, &LaunchSpec { stop_on_entry: true, ..spec });
        assert_eq!(go["stopOnEntry"], json!(false));
    }

    #[test]
    fn exception_filters_are_limited_to_what_the_adapter_offers() {
        let caps: Capabilities = serde_json::from_value(
            json!({"exceptionBreakpointFilters": [{"filter": "raised"}, {"filter": "uncaught"}]}),
        )
        .unwrap();
        assert_eq!(
            exception_filters(AdapterKind::Debugpy, ExceptionMode::Uncaught, &caps),
            ["uncaught"]
        );
        assert!(exception_filters(AdapterKind::Debugpy, ExceptionMode::None, &caps).is_empty());
        assert!(exception_filters(AdapterKind::Dart, ExceptionMode::Uncaught, &caps).is_empty());
    }
}
