//! The `agent-tools` command line as a function: the binary and the Python package's command
//! (which runs it from its extension module, so that a wheel carries one copy of the toolset)
//! enter the host here.

use std::{ffi::OsString, process::ExitCode};

/// Entry point of the `agent-tools` binary: the process's own arguments.
pub fn main() -> ExitCode {
    main_with_args(std::env::args_os())
}

/// Runs the command line `argv` (`argv[0]` is the program name, as a process gets it: usage
/// and errors are worded with its file name) and returns the command's exit code, after the
/// command has ended and its runtime is shut down.
pub fn main_with_args<I, T>(argv: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<OsString>,
{
    crate::cli::run_command_line(argv.into_iter().map(Into::into).collect())
}

/// The number behind `code` (0 to 255), for a caller that hands it on as an integer (Python's
/// `SystemExit`). Std offers no stable way to read it, and `ExitCode` only compares.
pub fn exit_status(code: ExitCode) -> u8 {
    (0..=u8::MAX).find(|&n| ExitCode::from(n) == code).unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_status_reads_back_every_code() {
        assert_eq!(exit_status(ExitCode::SUCCESS), 0);
        assert_eq!(exit_status(ExitCode::FAILURE), 1);
        for n in [2, 3, 255] {
            assert_eq!(exit_status(ExitCode::from(n)), n);
        }
    }

    #[test]
    fn main_with_args_runs_the_command_line_it_is_given() {
        assert_eq!(main_with_args(["agent-tools", "--version"]), ExitCode::SUCCESS);
        // A usage error (ARGS no JSON object) is exit 2, as from the binary.
        let code = main_with_args(["agent-tools", "call", "read", "[1]"]);
        assert_eq!(exit_status(code), 2);
        assert_eq!(exit_status(main_with_args(["agent-tools", "no-such-command"])), 2);
    }
}
