//! The Node.js kernel: the project's or PATH's `node` running the runner shipped here.
//!
//! Same framed protocol and cell contract as Python's; the runner evaluates cells through the
//! in-process inspector's REPL mode (completion value, top-level await, re-declarable
//! bindings) and stops a busy cell with `Runtime.terminateExecution` from a reader thread.

use std::{
    ffi::OsString,
    path::{Path, PathBuf},
};

use crate::child::{InterruptBy, KernelProgram};

/// The runner, sent to `node` over the command pipe at start: `runner.js` and the files of one
/// concern each joined after it, in this order, which is the order the runner needs.
pub(crate) const RUNNER: &str = concat!(
    include_str!("runner.js"),
    include_str!("frames.js"),
    include_str!("reader.js"),
    include_str!("source.js"),
    include_str!("stopping.js"),
    include_str!("evaluate.js"),
    include_str!("display.js"),
    include_str!("tool.js"),
    include_str!("errors.js"),
    include_str!("cells.js"),
    include_str!("main.js"),
);

/// Reads the runner from fd 3 and runs it as a CommonJS module of its own; everything in a
/// function, so no name of it is a global a cell could collide with.
const BOOTSTRAP: &str = "(()=>{const fs=require('fs');const f=Number(process.env.AGENT_TOOLS_KERNEL_CMD_FD||3);\
function r(n){const b=Buffer.alloc(n);let o=0;while(o<n){let g=0;try{g=fs.readSync(f,b,o,n-o,null)}\
catch(e){if(e.code==='EAGAIN')continue;throw e}if(g===0)process.exit(0);o+=g}return b}\
const n=r(4).readUInt32BE(0);process.on('SIGINT',()=>{});globalThis.__agentToolsDynamicImport=(s)=>import(s);\
require('vm').runInThisContext(require('module').wrap(r(n).toString('utf8')),{filename:'agent-tools-runner.js'})\
(exports,require,module,'agent-tools-runner.js','.')})();";

/// How to start `node` as a kernel; `typescript`: cells are TypeScript (types stripped).
pub(crate) fn program(node: &Path, typescript: bool) -> KernelProgram {
    let mut env = Vec::new();
    if typescript {
        env.push(("AGENT_TOOLS_TYPESCRIPT".to_string(), "1".to_string()));
    }
    KernelProgram {
        program: node.to_path_buf(),
        args: ["--no-warnings", "-e", BOOTSTRAP].iter().map(OsString::from).collect(),
        runner: RUNNER,
        env,
        interrupt: InterruptBy::SignalAndFrame,
    }
}

/// Whether a `node --version` (`v23.2.0`) has `module.stripTypeScriptTypes`.
pub(crate) fn strips_types(version: &str) -> bool {
    let mut parts =
        version.trim_start_matches('v').split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (major, minor) >= (23, 2)
}

/// What a TypeScript cell says when the resolved `node` cannot strip types.
pub(crate) fn typescript_missing(node: &Path, version: &str) -> String {
    format!(
        "TypeScript cells need Node.js 23.2 or newer (module.stripTypeScriptTypes); the resolved \
         node is {version} ({}). Write the cell as JavaScript (language: \"javascript\"), or \
         install a newer Node.js (or set [eval] node)",
        node.display()
    )
}

/// `configured` if given (a path, or a name looked up on PATH), else `node` on PATH.
pub(crate) fn resolve(configured: Option<&Path>) -> Result<PathBuf, String> {
    let wanted = configured.unwrap_or(Path::new("node"));
    if wanted.components().count() > 1 {
        return if wanted.exists() {
            Ok(wanted.to_path_buf())
        } else {
            Err(format!("the configured node {} does not exist", wanted.display()))
        };
    }
    crate::launcher::which(&wanted.to_string_lossy()).ok_or_else(|| {
        format!(
            "`{}` is not on PATH; install Node.js, set [eval] node in agent-tools.toml, or set \
             [eval] javascript = \"quickjs\" for the embedded engine",
            wanted.display()
        )
    })
}

/// `node --version` in `capsule`, for `status` (for example `v20.20.2`).
pub(crate) fn probe_version(
    capsule: &dyn agent_tools_support::capsule::Capsule,
    node: &Path,
) -> Result<String, String> {
    let out = crate::launcher::output_of(
        capsule.command(node.as_os_str(), &[OsString::from("--version")]),
    )
    .map_err(|e| format!("cannot run {}: {e}", node.display()))?;
    if !out.status.success() {
        return Err(format!("{} --version failed", node.display()));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}
