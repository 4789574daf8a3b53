//! Letting the program run: continue, the steps and pause, and the bounded wait for the next
//! stop (or exit, or the adapter going away) that each of them ends with.

use std::time::Duration;

use agent_tools_support::progress::CallScope;
use tokio::time::Instant;

use super::*;
use crate::{
    adapters::{AdapterKind, ExceptionMode},
    dap_types::{
        Continue, Disconnect, DisconnectArguments, Next, NoArguments, Pause, StackTrace,
        StackTraceArguments, StepIn, StepOut, ThreadArguments, Threads,
    },
    error::DebugError,
    protocol::DapError,
    response::*,
};

/// How `continue` and the steps let the program run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Motion {
    Continue,
    StepOver,
    StepIn,
    StepOut,
}

impl Motion {
    /// The operation as the user names it.
    fn what(self) -> &'static str {
        match self {
            Motion::Continue => "continue",
            Motion::StepOver => "step over",
            Motion::StepIn => "step in",
            Motion::StepOut => "step out",
        }
    }
}

pub(super) enum Wait {
    Stopped,
    Exited,
    Gone(String),
    StillRunning,
    Cancelled,
    /// Blocked reading the stdin that `input` feeds, with nothing pending.
    WaitingForInput,
}

/// How often a running program is looked at for a read on its stdin.
const INPUT_CHECK: Duration = Duration::from_millis(100);

impl Session {
    /// Remembers the adapter's descendants (debuggees, helpers) so teardown can kill them even
    /// after they are re-parented.
    pub(super) fn remember_descendants(&self) {
        if !self.owns_debuggee {
            return;
        }
        super::tracker::remember_family(&self.shared, self.process.as_ref().map(|p| p.pid));
    }

    /// At a stop, after its snapshot: the adapter's children at once (the program, named in the
    /// session's view; no scan), and every descendant by a `/proc` walk on the blocking pool,
    /// not awaited. The walk takes milliseconds where many processes run, and CPU the adapter
    /// needs: beside the snapshot's requests, a 0.5 ms `stackTrace` took 3–4 ms on two cores
    /// with 500 processes; after them, the call waited 6 ms for it.
    fn remember_at_stop(&self) {
        let Some(adapter) = self.process.as_ref().map(|p| p.pid).filter(|_| self.owns_debuggee)
        else {
            return self.remember_descendants();
        };
        super::tracker::remember_children(&self.shared, adapter);
        let shared = self.shared.clone();
        drop(tokio::task::spawn_blocking(move || {
            super::tracker::remember_family(&shared, Some(adapter));
        }));
    }

    pub(super) async fn wait_for(
        &self,
        after: u64,
        started: Instant,
        deadline: Instant,
        cancel: &CallScope,
    ) -> Wait {
        let mut rx = self.shared.subscribe();
        let mut progress_tick = tokio::time::interval(Duration::from_secs(1));
        let mut input_tick = tokio::time::interval(INPUT_CHECK);
        // Seen blocked in a read at two looks in a row: a read that returns at once is none.
        let mut reads_seen = 0;
        loop {
            let outcome = self.shared.read(|s| {
                if s.ended() {
                    Some(Wait::Exited)
                } else if s.epoch > after && !s.running {
                    Some(Wait::Stopped)
                } else {
                    s.gone.as_ref().map(|gone| {
                        if s.disconnecting { Wait::Exited } else { Wait::Gone(gone.clone()) }
                    })
                }
            });
            if let Some(outcome) = outcome {
                return outcome;
            }
            let stdin = self
                .shared
                .read(|s| s.stdin_inode.filter(|_| s.stdin.is_some() && s.pending_stdin.is_none()));
            tokio::select! {
                _ = input_tick.tick(), if stdin.is_some() => {
                    let procs = self.shared.read(|s| s.debuggees.clone());
                    if stdin.is_some_and(|inode| super::stdin_wait::reading_stdin(&procs, inode)) {
                        reads_seen += 1;
                        if reads_seen >= 2 {
                            return Wait::WaitingForInput;
                        }
                    } else {
                        reads_seen = 0;
                    }
                },
                changed = rx.changed() => if changed.is_err() {
                    return Wait::Gone("the session state was dropped".into());
                },
                _ = tokio::time::sleep_until(deadline) => return Wait::StillRunning,
                _ = progress_tick.tick() => cancel.report(
                    started.elapsed().as_secs_f64(),
                    "waiting for the program to stop",
                ),
                _ = cancel.cancelled() => return Wait::Cancelled,
                _ = self.cancel.cancelled() => return Wait::Cancelled,
            }
        }
    }

    /// Waits (bounded) for the program to stop after stop number `after`, and describes where
    /// it is then.
    pub(super) async fn wait_state(
        &mut self,
        after: u64,
        wait: Duration,
        cancel: &CallScope,
    ) -> RunState {
        let started = Instant::now();
        let deadline = started + wait;
        let mut after = after;
        let mut notes = Vec::new();
        loop {
            match self.wait_for(after, started, deadline, cancel).await {
                Wait::Stopped => {
                    let skipped = match self.skippable_stop() {
                        Some(note) => Some(Some(note)),
                        None => self.nested_go_test_failure().await.then_some(None),
                    };
                    if let Some(note) = skipped {
                        // debugpy reports `sys.exit(n)` as an uncaught SystemExit; it is an exit.
                        // A failed Go test marks its parents failed too: one stop is enough.
                        after = self.shared.read(|s| s.epoch);
                        notes.extend(note);
                        self.shared.update(|s| s.running = true);
                        let thread =
                            self.shared.read(|s| s.stop.as_ref().and_then(|x| x.thread_id));
                        if let Err(e) = self
                            .client
                            .request::<Continue>(
                                ThreadArguments { thread_id: thread.unwrap_or(0) },
                                self.config.request_timeout(),
                            )
                            .await
                        {
                            self.shared.update(|s| s.running = false);
                            notes.push(format!("could not continue past it: {e}"));
                            return self.stopped(notes).await;
                        }
                        continue;
                    }
                    return self.stopped(notes).await;
                }
                Wait::Exited => {
                    self.end_watch().await;
                    self.settle_after_exit().await;
                    let (exit_code, output) =
                        self.shared.update(|s| (s.exit_code, s.output.read(None, OUTPUT_CHARS)));
                    let (exit_code, ended_by) = self.how_it_ended(exit_code);
                    return RunState::Exited { exit_code, ended_by, output };
                }
                Wait::Gone(reason) => {
                    // Its exit first, then what it wrote before it died (its last stderr line
                    // may still be in the pipe when the connection closes).
                    let status = self.adapter_status().await;
                    self.settle_forwarders().await;
                    let context = self.failure_context();
                    let output = self.shared.update(|s| s.output.read(None, OUTPUT_CHARS));
                    return RunState::AdapterGone {
                        reason: format!(
                            "the adapter ended unexpectedly: {reason}{status}{context}"
                        ),
                        output,
                    };
                }
                wait @ (Wait::StillRunning | Wait::Cancelled | Wait::WaitingForInput) => {
                    self.remember_descendants();
                    let output = self.shared.update(|s| s.output.read(None, OUTPUT_CHARS));
                    return RunState::Running {
                        waited_seconds: started.elapsed().as_secs(),
                        cancelled: matches!(wait, Wait::Cancelled),
                        waiting_for_input: matches!(wait, Wait::WaitingForInput),
                        watching: self.watching(),
                        output,
                    };
                }
            }
        }
    }

    /// How the adapter process ended, if it did (waiting briefly: its pipe closes first).
    /// Waits (at most half a second) for the tasks that read the adapter's pipes to reach
    /// their end, so that everything it wrote is in the output.
    async fn settle_forwarders(&self) {
        for _ in 0..50 {
            if self.tasks.iter().all(|t| t.is_finished()) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    pub(super) async fn adapter_status(&mut self) -> String {
        let Some(process) = self.process.as_mut() else { return String::new() };
        match tokio::time::timeout(Duration::from_millis(500), process.child.wait()).await {
            Ok(Ok(status)) => format!(
                " (adapter {})",
                crate::process::describe_end(self.shared.capsule.ended(status))
            ),
            _ => String::new(),
        }
    }

    /// A stop that is not one for the user: debugpy's uncaught `SystemExit` (a `sys.exit(n)`).
    pub(super) fn skippable_stop(&self) -> Option<String> {
        if self.kind != AdapterKind::Debugpy || self.exceptions == ExceptionMode::All {
            return None;
        }
        let stop = self.shared.read(|s| s.stop.clone())?;
        (stop.reason == "exception" && stop.text.as_deref() == Some("SystemExit")).then(|| {
            format!(
                "the program called sys.exit({}); reported as the exit it is, not as an exception stop",
                stop.description.unwrap_or_default()
            )
        })
    }

    /// Whether delve stopped in `testing.(*common).Fail` called by itself: a failed test marks
    /// its parent failed, which is no new failure.
    async fn nested_go_test_failure(&self) -> bool {
        if self.kind != AdapterKind::Delve {
            return false;
        }
        let stop = self.shared.read(|s| s.stop.clone()).unwrap_or_default();
        let (Some(thread), "function breakpoint") = (stop.thread_id, stop.reason.as_str()) else {
            return false;
        };
        let args = StackTraceArguments { thread_id: thread, start_frame: 0, levels: 2 };
        let Ok(body) = self.client.request::<StackTrace>(args, self.config.request_timeout()).await
        else {
            return false;
        };
        let names: Vec<&str> = body.stack_frames.iter().map(|f| f.name.as_str()).collect();
        names.len() == 2 && names.iter().all(|n| *n == super::snapshot::GO_TEST_FAIL)
    }

    /// Lets the last output and the exit code arrive after the program ended.
    pub(super) async fn settle_after_exit(&mut self) {
        if self.kind == AdapterKind::Delve
            && self.shared.read(|s| s.exit_code.is_none() && s.gone.is_none())
        {
            // delve sends no `exited` event; it prints the exit status when we disconnect.
            self.shared.update(|s| s.disconnecting = true);
            let args = DisconnectArguments { restart: None, terminate_debuggee: Some(true) };
            let _ = self.client.request::<Disconnect>(args, self.config.disconnect_timeout()).await;
            let mut rx = self.shared.subscribe();
            let deadline = Instant::now() + Duration::from_secs(2);
            while !self.shared.read(|s| s.gone.is_some() || s.exit_code.is_some()) {
                tokio::select! {
                    changed = rx.changed() => if changed.is_err() { break },
                    _ = tokio::time::sleep_until(deadline) => break,
                }
            }
        } else {
            let mut rx = self.shared.subscribe();
            let deadline = Instant::now() + Duration::from_millis(500);
            while !self.shared.read(|s| s.terminated || s.gone.is_some()) {
                tokio::select! {
                    changed = rx.changed() => if changed.is_err() { break },
                    _ = tokio::time::sleep_until(deadline) => break,
                }
            }
        }
        state::wait_for_pipes(&self.shared, Duration::from_secs(2)).await;
    }

    /// The snapshot of a stop no call has shown yet (a breakpoint hit while no call was
    /// waiting, say in an HTTP handler between calls), or `None`.
    pub(crate) async fn unseen_stop(&mut self) -> Option<StopSnapshot> {
        let unseen = self
            .shared
            .read(|s| !s.ended() && s.gone.is_none() && !s.running && s.epoch > self.reported_stop);
        // debugpy's SystemExit stop is the exit, which the next wait reports as such.
        if !unseen || self.skippable_stop().is_some() {
            return None;
        }
        self.remember_descendants();
        let mut snapshot = self.snapshot().await;
        self.finish_watch(&mut snapshot).await;
        snapshot.notes.insert(
            0,
            format!("the program stopped (stop {}) while no call was waiting", snapshot.stop),
        );
        Some(snapshot)
    }

    /// The snapshot of the current stop, whether a call showed it already or not.
    pub(crate) async fn current_stop(&mut self) -> Option<StopSnapshot> {
        if let Some(unseen) = self.unseen_stop().await {
            return Some(unseen);
        }
        if self.shared.read(|s| s.ended() || s.gone.is_some() || s.running || s.epoch == 0) {
            return None;
        }
        Some(self.snapshot().await)
    }

    /// Counts stop `stop` as not shown yet (the call that took its snapshot failed).
    pub(crate) fn unreport(&mut self, stop: u64) {
        self.reported_stop = self.reported_stop.min(stop.saturating_sub(1));
    }

    /// A stop no call has shown yet, in place of letting the program run on from it: nobody
    /// has seen where it is.
    async fn unseen_instead_of(&mut self, what: &str) -> Option<RunState> {
        let mut snapshot = self.unseen_stop().await?;
        snapshot.notes.insert(
            1,
            format!(
                "not resumed: `{what}` was held back so that this stop is seen first; call it \
                 again to go on"
            ),
        );
        Some(RunState::Stopped(Box::new(snapshot)))
    }

    pub(super) async fn stopped(&mut self, notes: Vec<String>) -> RunState {
        tracing::trace!("stop: seen");
        let mut snapshot = self.snapshot().await;
        self.remember_at_stop();
        tracing::trace!("stop: snapshot taken");
        self.finish_watch(&mut snapshot).await;
        snapshot.notes.splice(0..0, notes);
        RunState::Stopped(Box::new(snapshot))
    }

    /// How the program ended, in the one wording every operation uses: "exited with code 3",
    /// "ended: killed by SIGSEGV (…)".
    pub(crate) fn ending(&self) -> String {
        match self.how_it_ended(self.shared.read(|s| s.exit_code)) {
            (_, Some(how)) => format!("ended: {how}"),
            (Some(code), None) => format!("exited with code {code}"),
            (None, None) => "exited".into(),
        }
    }

    pub(super) fn require_stopped(&self, what: &str) -> Result<(), DebugError> {
        let ending = if self.shared.read(|s| s.ended()) { self.ending() } else { String::new() };
        self.shared.read(|s| {
            if s.ended() {
                Err(DebugError::usage(format!(
                    "cannot {what}: the program has {ending}; `launch` it again (breakpoints are kept)"
                )))
            } else if let Some(gone) = &s.gone {
                Err(DebugError::usage(format!(
                    "cannot {what}: the adapter is gone ({gone}); `terminate`, then `launch` again"
                )))
            } else if s.running || s.epoch == 0 {
                Err(DebugError::usage(format!(
                    "cannot {what}: the program is running{}; `pause` it, or wait for a breakpoint \
                     with `continue`",
                    if s.epoch > 0 { format!(" (since stop {})", s.epoch) } else { String::new() }
                )))
            } else {
                Ok(())
            }
        })
    }

    pub(super) fn thread_or_default(&self, thread_id: Option<i64>) -> i64 {
        thread_id
            .or_else(|| self.shared.read(|s| s.stop.as_ref().and_then(|x| x.thread_id)))
            .unwrap_or(1)
    }

    /// `continue`, `next`, `stepIn`, `stepOut`: resume, then wait for the next stop.
    pub(crate) async fn resume(
        &mut self,
        motion: Motion,
        thread_id: Option<i64>,
        wait: Duration,
        cancel: &CallScope,
    ) -> Result<RunState, DebugError> {
        let what = motion.what();
        if let Some(unseen) = self.unseen_instead_of(what).await {
            return Ok(unseen);
        }
        let (running, epoch) = self.shared.read(|s| (s.running || s.epoch == 0, s.epoch));
        if motion == Motion::Continue && running && !self.finished() {
            // Already running (an earlier wait ended first): wait for the next stop again.
            return Ok(self.wait_state(epoch, wait, cancel).await);
        }
        self.require_stopped(what)?;
        let thread = self.thread_or_default(thread_id);
        // Register the stop waiter first: a fast adapter may stop before it answers.
        let after = self.shared.update(|s| {
            s.running = true;
            s.pausing = false;
            s.epoch
        });
        let args = ThreadArguments { thread_id: thread };
        let timeout = self.config.request_timeout();
        let result = match motion {
            Motion::Continue => self.client.request::<Continue>(args, timeout).await.map(drop),
            Motion::StepOver => self.client.request::<Next>(args, timeout).await.map(drop),
            Motion::StepIn => self.client.request::<StepIn>(args, timeout).await.map(drop),
            Motion::StepOut => self.client.request::<StepOut>(args, timeout).await.map(drop),
        };
        match result {
            Ok(()) => {}
            // The adapter went away mid-request: report it as the state it leaves us in.
            Err(DapError::Closed(_)) => {}
            Err(e) => {
                self.shared.update(|s| {
                    if s.epoch == after {
                        s.running = false;
                    }
                });
                return Err(DebugError::adapter(format!("{what} on thread {thread}: {e}")));
            }
        }
        Ok(self.wait_state(after, wait, cancel).await)
    }

    pub(crate) async fn pause(
        &mut self,
        thread_id: Option<i64>,
        wait: Duration,
        cancel: &CallScope,
    ) -> Result<RunState, DebugError> {
        if let Some(unseen) = self.unseen_stop().await {
            return Ok(RunState::Stopped(Box::new(unseen)));
        }
        let (running, epoch) = self.shared.read(|s| (s.running || s.epoch == 0, s.epoch));
        if self.finished() {
            self.require_stopped("pause")?;
        }
        if !running {
            let mut state = self
                .stopped(vec![format!("already stopped (stop {epoch}); nothing to pause")])
                .await;
            if let RunState::Stopped(s) = &mut state {
                s.notes.dedup();
            }
            return Ok(state);
        }
        let thread = match thread_id {
            Some(t) => t,
            None => self.first_thread().await.unwrap_or(1),
        };
        self.shared.update(|s| s.pausing = true);
        self.client
            .request::<Pause>(ThreadArguments { thread_id: thread }, self.config.request_timeout())
            .await
            .map_err(|e| DebugError::adapter(format!("pause: {e}")))?;
        Ok(self.wait_state(epoch, wait, cancel).await)
    }

    pub(super) async fn first_thread(&self) -> Option<i64> {
        if let Some(t) = self.shared.read(|s| s.stop.as_ref().and_then(|x| x.thread_id)) {
            return Some(t);
        }
        let body = self
            .client
            .request::<Threads>(NoArguments {}, self.config.request_timeout())
            .await
            .ok()?;
        Some(body.threads.first()?.id)
    }

    /// Writes `text` to the program's stdin (an empty text closes it); when the program is
    /// running, waits for its next stop as `continue` would.
    pub(crate) async fn send_input(
        &mut self,
        text: &str,
        wait: Duration,
        cancel: &CallScope,
    ) -> Result<InputView, DebugError> {
        if self.finished() {
            self.require_stopped("send input")?;
        }
        let (closed, pending) = self.shared.update(|s| {
            if s.stdin.is_none() {
                return Err(DebugError::usage(
                    "the program's stdin is not open: `launch` with `stdin` (text, may be \"\") \
                     keeps it open for `input`",
                ));
            }
            if text.is_empty() {
                s.flush_stdin();
                s.stdin = None;
                s.pending_stdin = None;
                return Ok((true, 0));
            }
            let mut all = s.pending_stdin.take().unwrap_or_default();
            all.push_str(text);
            s.pending_stdin = Some(all);
            s.flush_stdin();
            Ok((false, s.pending_stdin.as_ref().map_or(0, |p| p.chars().count())))
        })?;
        let (running, epoch) = self.shared.read(|s| (s.running || s.epoch == 0, s.epoch));
        let state = if running {
            Some(self.wait_state(epoch, wait, cancel).await)
        } else {
            self.unseen_stop().await.map(|s| RunState::Stopped(Box::new(s)))
        };
        Ok(InputView { chars: text.chars().count(), closed, pending, state })
    }

    /// The exit code the adapter gave, or how the program really ended: a negative code is a
    /// signal (Python's convention), and a process that vanished unreported has no code.
    pub(crate) fn how_it_ended(&self, exit_code: Option<i64>) -> (Option<i64>, Option<String>) {
        if let Some(pid) = self.shared.read(|s| s.unreported_exit) {
            return (
                None,
                Some(format!(
                    "its process (pid {pid}) is gone; the adapter did not report the exit \
                     (after a fork, a child may keep the adapter's connection)"
                )),
            );
        }
        let signal = match exit_code {
            Some(code) if (-64..0).contains(&code) => Some(-code),
            // debugpy reports a signal death as 256 - N (Python's -N as a byte).
            Some(code) if self.kind == AdapterKind::Debugpy && (225..256).contains(&code) => {
                Some(256 - code)
            }
            // lldb stopped on the signal, then reports its number as the exit code.
            Some(code) if self.kind == AdapterKind::Lldb => self
                .shared
                .read(|s| s.stop.as_ref().and_then(|x| x.description.clone()))
                .and_then(|d| signal_in(&d))
                .filter(|n| i64::from(*n) == code)
                .map(i64::from),
            _ => None,
        };
        match signal.and_then(|n| i32::try_from(n).ok()) {
            Some(n) => (
                None,
                Some(format!(
                    "killed by {} (the adapter reported exit code {})",
                    crate::process::signal_name(n),
                    exit_code.unwrap_or_default()
                )),
            ),
            None => (exit_code, None),
        }
    }
}

/// The signal number named in an lldb stop description such as `signal SIGABRT`.
fn signal_in(description: &str) -> Option<i32> {
    let name = description.split_whitespace().find(|w| w.starts_with("SIG"))?;
    (1..32).find(|n| {
        crate::process::signal_name(*n)
            == name.trim_end_matches(|c: char| !c.is_ascii_alphanumeric())
    })
}
