//! Building a Go program for delve while delve starts: the `go build` (or `go test -c`) delve
//! would run, with its flags, into the session's temp folder, started beside the adapter so
//! that dlv's start, `initialize` and its cgroup join overlap the build instead of following
//! it; `launch` then runs the binary (delve's `exec` mode).

use std::{
    path::{Path, PathBuf},
    sync::Arc,
    time::Duration,
};

use tokio::{io::AsyncReadExt, task::JoinHandle, time::Instant};

use super::connect::{AdapterProcess, private_temp, start_adapter};
use crate::{
    adapters::{LaunchSpec, is_elf},
    error::DebugError,
    process::describe_end,
};
use agent_tools_support::{capsule::Capsule, progress::CallScope};

/// The most of the build's output an error quotes.
const QUOTED_OUTPUT: usize = 4000;

/// A build under way.
pub(super) struct GoBuild {
    /// Dropping it kills the build's tree (a session torn down mid-build leaves nothing).
    process: AdapterProcess,
    capsule: Arc<dyn Capsule>,
    output: PathBuf,
    command_line: String,
    /// What the build printed (stdout and stderr together, as go prints its errors).
    printed: JoinHandle<String>,
}

/// The build delve would run for `spec` (a package folder or `.go` file; an executable needs
/// none), writing the binary to `output`.
pub(super) fn build_command(spec: &LaunchSpec, output: &Path) -> Option<Vec<String>> {
    if is_elf(&spec.program) {
        return None;
    }
    let mut argv: Vec<String> = if spec.go_test {
        vec!["go".into(), "test".into(), "-c".into()]
    } else {
        vec!["go".into(), "build".into()]
    };
    // delve's own flags: no optimisation and no inlining, so every variable and line is there.
    argv.extend([
        "-o".into(),
        output.display().to_string(),
        "-gcflags".into(),
        "all=-N -l".into(),
        spec.program.display().to_string(),
    ]);
    Some(argv)
}

/// Starts `argv` in `dir` (where dlv runs) in the run's capsule, with the program's `env`
/// applied as delve applies it to its own build.
pub(super) async fn start(
    capsule: Arc<dyn Capsule>,
    argv: Vec<String>,
    dir: &Path,
    temp: &Path,
    spec: &LaunchSpec,
    output: PathBuf,
) -> Result<GoBuild, DebugError> {
    let mut process =
        start_adapter(&*capsule, &argv, &[], dir, std::process::Stdio::null(), |command| {
            private_temp(command, temp);
            command.envs(&spec.env);
        })
        .await
        .map_err(|e| {
            DebugError::adapter(format!(
                "cannot build the Go program: {e}; delve needs Go's `go` command on PATH \
                 (`apt-get install golang-go`)"
            ))
        })?;
    tracing::trace!(pid = process.pid, "go build: started");
    let (stdout, stderr) = (process.child.stdout.take(), process.child.stderr.take());
    let printed = tokio::spawn(async move {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let read_out = async {
            if let Some(mut s) = stdout {
                let _ = s.read_to_end(&mut out).await;
            }
        };
        let read_err = async {
            if let Some(mut s) = stderr {
                let _ = s.read_to_end(&mut err).await;
            }
        };
        tokio::join!(read_out, read_err);
        out.extend(err);
        String::from_utf8_lossy(&out).trim().to_string()
    });
    Ok(GoBuild { process, capsule, output, command_line: argv.join(" "), printed })
}

impl GoBuild {
    /// Waits for the build: the binary, or an error quoting what go printed.
    pub(super) async fn finish(
        mut self,
        deadline: Instant,
        cancel: &CallScope,
    ) -> Result<PathBuf, DebugError> {
        let command = self.command_line.clone();
        let started = Instant::now();
        let mut progress_tick = tokio::time::interval(Duration::from_secs(1));
        let status = loop {
            tokio::select! {
                status = self.process.child.wait() => break status,
                _ = progress_tick.tick() => cancel.report(
                    started.elapsed().as_secs_f64(),
                    &format!("building the program: `{command}`"),
                ),
                _ = tokio::time::sleep_until(deadline) => {
                    return Err(DebugError::adapter(format!(
                        "`{command}` did not finish within the launch time limit; raise \
                         `launch_timeout_seconds` for a first build of a large program"
                    )));
                }
                _ = cancel.cancelled() => {
                    return Err(DebugError::adapter(format!("`{command}` was cancelled")));
                }
            }
        }
        .map_err(|e| DebugError::adapter(format!("waiting for `{command}` failed: {e}")))?;
        let printed = tokio::time::timeout(Duration::from_secs(5), &mut self.printed)
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default();
        tracing::trace!(%status, "go build: done");
        if status.success() && is_elf(&self.output) {
            return Ok(self.output);
        }
        let end = describe_end(self.capsule.ended(status));
        let (quoted, cut) = super::cut(&printed, QUOTED_OUTPUT);
        let more = if cut > 0 { format!("\n… {cut} more characters") } else { String::new() };
        Err(DebugError::adapter(format!(
            "the Go program did not build: `{command}` ended with {end}:\n{quoted}{more}\nFix \
             what it names and launch again."
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(program: &str, go_test: bool) -> LaunchSpec {
        LaunchSpec { program: program.into(), go_test, ..Default::default() }
    }

    #[test]
    fn a_package_is_built_with_delve_s_flags_and_a_test_package_with_go_test_c() {
        let out = Path::new("/t/__debug_bin");
        assert_eq!(
            build_command(&spec("/p/cmd", false), out).unwrap(),
            ["go", "build", "-o", "/t/__debug_bin", "-gcflags", "all=-N -l", "/p/cmd"]
        );
        assert_eq!(
            build_command(&spec("/p/calc", true), out).unwrap(),
            ["go", "test", "-c", "-o", "/t/__debug_bin", "-gcflags", "all=-N -l", "/p/calc"]
        );
    }

    #[test]
    fn an_executable_needs_no_build() {
        assert_eq!(build_command(&spec("/proc/self/exe", false), Path::new("/t/b")), None);
    }
}
