//! The Python kernel: the resolved interpreter running the stdlib-only runner shipped here.

use std::{
    ffi::OsString,
    path::{Path, PathBuf},
};

use crate::child::{InterruptBy, KernelProgram};

/// The stdlib-only runner, sent to the interpreter over the command pipe at start: the runner
/// itself (`runner.py` and the files of one concern each joined after it, in this order, which is
/// the order the runner needs), then its parts compiled at their first use, each after a NUL
/// (which no Python source holds) and a line with its name.
pub(crate) const RUNNER: &str = concat!(
    include_str!("runner.py"),
    include_str!("frames.py"),
    include_str!("reader.py"),
    include_str!("tool.py"),
    include_str!("display.py"),
    include_str!("adapters.py"),
    include_str!("needs_ipython.py"),
    include_str!("cells.py"),
    include_str!("main.py"),
    "\0magics\n",
    include_str!("magics.py"),
    "\0ipython\n",
    include_str!("ipython.py"),
);

/// Reads the runner from fd 3 and runs it: keeps the command line short and needs no temp file,
/// so it works the same inside a capsule. Only the runner is compiled here; its parts are handed
/// to it as text.
const BOOTSTRAP: &str = "import os,_struct\n\
f=int(os.environ.get('AGENT_TOOLS_KERNEL_CMD_FD','3'))\n\
def r(n):\n b=b''\n while len(b)<n:\n  c=os.read(f,n-len(b))\n  if not c: raise SystemExit(0)\n  b+=c\n return b\n\
n=_struct.unpack('>I',r(4))[0]\n\
s=r(n).decode('utf-8').split('\\0')\n\
exec(compile(s[0],'<agent-tools-runner>','exec'),{'__name__':'__agent_tools_runner__','__agent_tools_parts__':s[1:]})\n";

/// How to start `python` as a kernel; `ipython: false` keeps IPython out even when importable.
pub(crate) fn program(python: &Path, ipython: bool) -> KernelProgram {
    let mut env = vec![
        ("PYTHONUNBUFFERED".to_string(), "1".to_string()),
        ("MPLBACKEND".to_string(), "Agg".to_string()),
    ];
    if !ipython {
        env.push(("AGENT_TOOLS_NO_IPYTHON".to_string(), "1".to_string()));
    }
    KernelProgram {
        program: python.to_path_buf(),
        args: ["-u", "-X", "utf8", "-c", BOOTSTRAP].iter().map(OsString::from).collect(),
        runner: RUNNER,
        env,
        interrupt: InterruptBy::SignalElseFrame,
    }
}

/// Runs `python -c` in `capsule` to learn its version, for `status`.
pub(crate) fn probe_version(
    capsule: &dyn agent_tools_support::capsule::Capsule,
    python: &Path,
) -> Result<String, String> {
    let args = [OsString::from("-c"), OsString::from("import sys; print(sys.version.split()[0])")];
    let out = crate::launcher::output_of(capsule.command(python.as_os_str(), &args))
        .map_err(|e| format!("cannot run {}: {e}", python.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{} failed: {}",
            python.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The interpreter a kernel for `root` would use.
pub(crate) fn resolve(
    capsule: &dyn agent_tools_support::capsule::Capsule,
    root: &Path,
    configured: Option<&Path>,
) -> Result<PathBuf, String> {
    crate::launcher::resolve_python(capsule, root, configured)
}
