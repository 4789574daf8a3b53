//! The `agent-tools` command run from the extension module: the console script hands its argv
//! here, so the wheel carries the toolset once (no bundled binary) and any build of the package,
//! a wheel or `pip install` of a checkout, has a working command.

use std::ffi::OsString;

use pyo3::prelude::*;

/// Runs the `agent-tools` command line `argv` (the program name first) to its end and returns
/// its exit code. The GIL is released meanwhile, and Ctrl-C ends the process as it ends the
/// binary: Python's own SIGINT handler only sets a flag that nobody reads while native code
/// runs, so the default action is put back for the command's duration.
#[pyfunction]
pub(crate) fn main(py: Python<'_>, argv: Vec<OsString>) -> u8 {
    let _default_sigint = DefaultSigint::install();
    py.detach(|| agent_tools_host::exit_status(agent_tools_host::main_with_args(argv)))
}

/// SIGINT at its default action until dropped, then the previous disposition again.
struct DefaultSigint {
    previous: libc::sigaction,
}

impl DefaultSigint {
    fn install() -> Option<Self> {
        // SAFETY: sigaction with a zeroed action (SIG_DFL, empty mask, no flags) and a valid
        // out-pointer for the previous one; nothing else is touched.
        unsafe {
            let mut default: libc::sigaction = std::mem::zeroed();
            default.sa_sigaction = libc::SIG_DFL;
            libc::sigemptyset(&mut default.sa_mask);
            let mut previous: libc::sigaction = std::mem::zeroed();
            (libc::sigaction(libc::SIGINT, &default, &mut previous) == 0)
                .then_some(DefaultSigint { previous })
        }
    }
}

impl Drop for DefaultSigint {
    fn drop(&mut self) {
        // SAFETY: restores the disposition read by `install`.
        unsafe {
            libc::sigaction(libc::SIGINT, &self.previous, std::ptr::null_mut());
        }
    }
}
