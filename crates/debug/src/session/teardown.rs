//! Ending a session, the one path for `terminate`, the time limit, a failed start and the end
//! of the run: `disconnect` (terminateDebuggee) with a short timeout → close the adapter's stdin
//! → SIGTERM to its process group → SIGKILL → kill the remembered debuggees → delete temp files.

use std::time::Duration;

use agent_tools_support::{
    capsule::ProcessEnd,
    process::{KnownProcess, kill_group},
};

use super::Session;
use crate::{
    adapters::AdapterKind,
    dap_types::{Disconnect, DisconnectArguments},
    process::{describe_end, wait_until},
    response::{OUTPUT_CHARS, TeardownReport},
};

impl Session {
    /// Ends the session; bounded in time, idempotent. Reports what it did.
    pub(crate) async fn teardown(&mut self, reason: &str) -> TeardownReport {
        let mut report = TeardownReport {
            program: super::display_path(&self.program, &self.root),
            reason: reason.to_string(),
            ..Default::default()
        };
        if self.torn_down {
            report.steps.push("already ended".into());
            return report;
        }
        self.torn_down = true;
        self.cancel.cancel();
        // Learn the whole tree before anything dies and gets re-parented.
        self.remember_descendants();

        let ended = self.disconnect(&mut report).await;
        if self.kind == AdapterKind::Delve {
            // The program's last output comes through dlv's stdout.
            super::state::wait_for_pipes(&self.shared, Duration::from_millis(500)).await;
        }
        self.client.close_writer().await;

        self.end_adapter_tree(&mut report).await;
        if self.owns_debuggee {
            self.kill_debuggees(&mut report);
        }
        self.end_terminal_trees(&mut report).await;
        if self.owns_debuggee {
            self.await_debuggees_gone(&mut report).await;
        }

        for task in self.tasks.drain(..) {
            task.abort();
        }
        self.client.abort();
        if let Some(temp) = self.temp.take() {
            let path = temp.path().display().to_string();
            match temp.close() {
                Ok(()) => report.steps.push(format!("removed {path}")),
                Err(e) => report.steps.push(format!("could not remove {path}: {e}")),
            }
        }
        let (output, exit_code) =
            self.shared.update(|s| (s.output.read(None, OUTPUT_CHARS), s.exit_code));
        report.output = output;
        (report.exit_code, report.ended_by) = self.how_it_ended(exit_code);
        if self.owns_debuggee && !ended {
            // The code the adapter reports then (debugpy: 247) is that of our kill, not the
            // program's own exit.
            report.exit_code = None;
            report.ended_by = None;
            report.steps.push("the program was still running: terminate ended it".into());
        }
        report
    }

    /// `disconnect` (terminating the program we launched, detaching from one we attached to),
    /// unless the adapter is gone; whether the program had ended before.
    async fn disconnect(&mut self, report: &mut TeardownReport) -> bool {
        let (gone, ended) = self.shared.read(|s| (s.gone.is_some(), s.ended()));
        if !gone && !self.client.is_closed() {
            self.shared.update(|s| s.disconnecting = true);
            let terminate = self.owns_debuggee;
            let args =
                DisconnectArguments { restart: Some(false), terminate_debuggee: Some(terminate) };
            match self.client.request::<Disconnect>(args, self.config.disconnect_timeout()).await {
                Ok(_) => report.steps.push(format!(
                    "disconnect ({}): acknowledged",
                    if terminate {
                        "terminate the program"
                    } else {
                        "detach, the program keeps running"
                    }
                )),
                Err(e) => report.steps.push(format!("disconnect: {e}")),
            }
        } else if !ended {
            report.steps.push("disconnect skipped: the adapter is gone".into());
        }
        ended
    }

    /// Waits for the adapter to exit on its closed input, then ends its whole tree.
    async fn end_adapter_tree(&mut self, report: &mut TeardownReport) {
        let Some(process) = self.process.as_mut() else { return };
        let pgid = process.pid;
        match wait_for_exit(&mut process.child, Duration::from_secs(1)).await {
            Some(status) => {
                // In a capsule, a wrapper may pass lldb-dap's SIGABRT on as code 134.
                let end = self.shared.capsule.ended(status);
                report.steps.push(format!(
                    "adapter exited after its input closed ({}{})",
                    describe_end(end),
                    abort_note(self.kind, end)
                ));
            }
            None => report.steps.push("the adapter did not exit when its input closed".into()),
        }
        // The whole tree: SIGTERM, a grace period, SIGKILL to the group and to every
        // process carrying its lineage mark (what the program forked or started included).
        let ended = process.group.terminate(Duration::from_millis(300)).await;
        report.steps.push(format!("the adapter's process tree (group {pgid}): {ended}"));
        report.killed.extend(ended.killed.iter().map(|p| format!("pid {p} of the adapter's tree")));
        let _ = wait_for_exit(&mut process.child, Duration::from_secs(2)).await;
    }

    /// SIGKILL to the programs the adapter started and to what they left behind.
    fn kill_debuggees(&mut self, report: &mut TeardownReport) {
        let debuggees: Vec<KnownProcess> = self.shared.read(|s| s.debuggees.clone());
        for proc in debuggees {
            if !proc.alive() {
                continue;
            }
            if proc.leads_group() {
                // delve starts the program in a process group of its own.
                proc.kill_group();
            } else {
                proc.kill();
            }
            report.killed.push(format!("program pid {} (SIGKILL)", proc.pid));
        }
        // What the program started and left behind (a fork, `exec.Command(...).Start()`):
        // remembered by the tracker, found again now, and killed with its groups.
        self.remember_descendants();
        let (leftovers, groups) = self.shared.read(|s| (s.debuggees.clone(), s.groups.clone()));
        for group in groups {
            kill_group(group);
        }
        for proc in leftovers.iter().filter(|p| p.alive()) {
            proc.kill();
            report.killed.push(format!("pid {} the program left behind (SIGKILL)", proc.pid));
        }
    }

    /// Ends the trees of programs started in a terminal for the adapter.
    async fn end_terminal_trees(&mut self, report: &mut TeardownReport) {
        let (children, groups) = self.shared.update(|s| {
            (std::mem::take(&mut s.terminal_children), std::mem::take(&mut s.terminal_groups))
        });
        for group in groups {
            let ended = group.terminate(Duration::from_millis(300)).await;
            report
                .steps
                .push(format!("the program's process tree (group {}): {ended}", group.pid()));
        }
        for mut child in children {
            let _ = tokio::time::timeout(Duration::from_secs(1), child.wait()).await;
        }
    }

    /// Waits, bounded, for the programs to be gone; names the survivors.
    async fn await_debuggees_gone(&self, report: &mut TeardownReport) {
        let debuggees: Vec<KnownProcess> = self.shared.read(|s| s.debuggees.clone());
        let _ = wait_until(Duration::from_secs(2), || debuggees.iter().all(|p| !p.alive())).await;
        let survivors: Vec<String> =
            debuggees.iter().filter(|p| p.alive()).map(|p| p.pid.to_string()).collect();
        if !survivors.is_empty() {
            report.steps.push(format!("still alive after SIGKILL: pids {}", survivors.join(", ")));
        }
    }
}

async fn wait_for_exit(
    child: &mut tokio::process::Child,
    within: Duration,
) -> Option<std::process::ExitStatus> {
    tokio::time::timeout(within, child.wait()).await.ok().and_then(Result::ok)
}

fn abort_note(kind: AdapterKind, end: ProcessEnd) -> &'static str {
    if kind == AdapterKind::Lldb && end == ProcessEnd::Signal(libc::SIGABRT) {
        ", as lldb-dap does at shutdown: not an error"
    } else {
        ""
    }
}

impl Drop for Session {
    /// Last resort when a session is dropped without teardown (a panic, a dropped supervisor):
    /// the adapter's group dies with `AdapterProcess`; the debuggees we learned about die here.
    fn drop(&mut self) {
        if self.torn_down {
            return;
        }
        self.cancel.cancel();
        if self.owns_debuggee {
            for group in self.shared.read(|s| s.groups.clone()) {
                kill_group(group);
            }
            for proc in self.shared.read(|s| s.debuggees.clone()) {
                if proc.leads_group() {
                    proc.kill_group();
                } else {
                    proc.kill();
                }
            }
        }
        // Dropping the terminal children's trees kills them.
        self.shared.update(|s| s.terminal_groups.clear());
        for task in self.tasks.drain(..) {
            task.abort();
        }
    }
}
