//! One soak session: its host (a stdio host of its own, or a session on the shared HTTP host),
//! its steps, the per-call invariants (an answer within the deadline, recovery after a fault),
//! and the checks when its host ends (exit on closed stdin, no survivors, bounded descriptors).

use std::{
    path::Path,
    time::{Duration, Instant},
};

use serde_json::Value;

use super::{
    Soak,
    chaos::{self, SessionState},
    client::{Client, HttpClient, Interrupt, Outcome, StdioClient},
    report::error_kind,
    workload::{self, Call, Family, RENAMED, Step, Workload},
};

/// A request without an answer this long is a hung request: a broken invariant.
const DEADLINE: Duration = Duration::from_secs(120);
/// Calls of a family that may fail after its process was killed before it must have recovered.
const RECOVERY_CALLS: u32 = 5;

/// What a call settled about a family's recovery from its pending fault.
#[derive(Debug, PartialEq)]
enum Recovery {
    Recovered { fault: String, failures: u32 },
    DidNot { fault: String },
}

/// Counts a call of `family` started at `started` against its pending fault. Calls started
/// before the fault, answered while the server pauses by design, or made while the disk is
/// full (a fill of its own, counted once it has room) do not count.
fn judge_recovery(
    state: &mut SessionState,
    family: Family,
    started: f64,
    verdict: Verdict,
) -> Option<Recovery> {
    let disk_full = state.disk_full_since.is_some();
    let pending = state.pending.get_mut(&family)?;
    if started < pending.since || verdict == Verdict::Paused {
        return None;
    }
    match verdict {
        Verdict::Answered => {
            let pending = state.pending.remove(&family)?;
            Some(Recovery::Recovered { fault: pending.fault, failures: pending.failures })
        }
        _ if disk_full && family == Family::Files => None,
        _ => {
            pending.failures += 1;
            if pending.failures < RECOVERY_CALLS {
                return None;
            }
            let pending = state.pending.remove(&family)?;
            Some(Recovery::DidNot { fault: pending.fault })
        }
    }
}

/// What an answer says about the family's recovery.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
enum Verdict {
    Answered,
    Failed,
    /// A server that crashed too often in a minute is not restarted for a while, by design,
    /// and the error says so and for how long: not counted against its recovery.
    Paused,
}

impl Verdict {
    fn of_error(text: &str) -> Verdict {
        if text.contains("not restarting it for another") {
            Verdict::Paused
        } else {
            Verdict::Failed
        }
    }
}

pub(super) enum Kind {
    Stdio,
    /// A session on the HTTP host at this URL.
    Http(String),
}

/// The connection of a session, and the host's generation (a new host after each drop).
enum Connection {
    Stdio(StdioClient),
    Http(HttpClient),
}

impl Connection {
    fn client(&mut self) -> &mut dyn Client {
        match self {
            Connection::Stdio(c) => c,
            Connection::Http(c) => c,
        }
    }
}

struct Session<'a> {
    soak: &'a Soak,
    index: usize,
    kind: Kind,
    project: &'a Path,
    generation: u32,
    next_id: u64,
    workload: Workload,
    /// The last bad state of the project's files that was reported: the same state seen by
    /// later checks is the same broken invariant, not a new one.
    reported_files: Option<String>,
}

fn state<'a>(soak: &'a Soak, index: usize) -> std::sync::MutexGuard<'a, SessionState> {
    soak.states[index].lock().unwrap_or_else(|e| e.into_inner())
}

pub(super) fn run(soak: &Soak, index: usize, kind: Kind, project: &Path) {
    let seed = soak.seed ^ (index as u64 + 1).wrapping_mul(0x1000_0000_01B3);
    let mut session = Session {
        soak,
        index,
        kind,
        project,
        generation: 0,
        next_id: 1,
        workload: Workload::new(seed),
        reported_files: None,
    };
    let Some(mut connection) = session.connect() else { return };
    while Instant::now() < soak.end {
        let dropped = std::mem::take(&mut state(soak, index).drop_requested);
        if dropped {
            let call = session.workload.interrupted();
            let after = session.workload.rng.millis(50, 1500);
            session.call(&mut connection, &call, Interrupt::Drop(after));
            session.end(connection);
            session.generation += 1;
            let Some(next) = session.connect() else { return };
            connection = next;
            continue;
        }
        let step = session.workload.next_step();
        if !session.step(&mut connection, step) {
            session.end(connection);
            session.generation += 1;
            let Some(next) = session.connect() else { return };
            connection = next;
        }
    }
    session.end(connection);
}

impl Session<'_> {
    fn connect(&mut self) -> Option<Connection> {
        let soak = self.soak;
        let connection = match &self.kind {
            Kind::Stdio => {
                let marker = format!("{}s{}-g{}", soak.prefix, self.index, self.generation);
                let started = StdioClient::start(&mut soak.host_command(), self.project, &marker);
                started.map(|client| {
                    let mut state = state(soak, self.index);
                    state.marker = marker;
                    state.host_pid = client.pid();
                    state.fds.clear();
                    Connection::Stdio(client)
                })
            }
            Kind::Http(url) => HttpClient::open(url).map(Connection::Http),
        };
        match connection {
            Ok(connection) => {
                soak.report
                    .note(&format!("session {} connected ({})", self.index, self.generation));
                Some(connection)
            }
            Err(e) => {
                soak.report.broken(&format!("session {} cannot connect: {e:#}", self.index));
                None
            }
        }
    }

    /// Runs a step's calls; `false` when the connection broke and must be made again.
    fn step(&mut self, connection: &mut Connection, step: Step) -> bool {
        match step {
            Step::Calls(calls) => {
                calls.iter().all(|call| self.call(connection, call, Interrupt::None).is_some())
            }
            Step::Cancelled(call, cleanup) => {
                let after = self.workload.rng.millis(100, 2500);
                self.call(connection, &call, Interrupt::Cancel(after)).is_some()
                    && cleanup.is_none_or(|c| self.call(connection, &c, Interrupt::None).is_some())
            }
            Step::StagedEdit { stage, accept } => {
                let Some(staged) = self.call(connection, &stage, Interrupt::None) else {
                    return false;
                };
                let Some(edit_id) = edit_id(&staged) else { return true };
                let action = if accept { "accept" } else { "discard" };
                let resolve = Call {
                    tool: "resolve",
                    args: serde_json::json!({"edit_id": edit_id, "action": action}),
                };
                self.call(connection, &resolve, Interrupt::None).is_some()
            }
            Step::Rename => {
                let Ok(name) = workload::renamed_name(self.project) else { return true };
                let new_name = RENAMED.iter().find(|n| **n != name).copied().unwrap_or(name);
                let rename = Call {
                    tool: "lsp_rename",
                    args: serde_json::json!({
                        "file": "pkg/scale.py", "line": 1, "symbol": name, "new_name": new_name
                    }),
                };
                self.call(connection, &rename, Interrupt::None).is_some()
            }
            Step::Worker { spawn, kill } => {
                let Some(spawned) = self.call(connection, &spawn, Interrupt::None) else {
                    return false;
                };
                let Some(worker_id) = worker_id(&spawned) else { return true };
                let next = if kill {
                    Call { tool: "vibe_kill", args: serde_json::json!({"worker_id": worker_id}) }
                } else {
                    let args = serde_json::json!({"worker_id": worker_id, "timeout_seconds": 30});
                    Call { tool: "vibe_wait", args }
                };
                self.call(connection, &next, Interrupt::None).is_some()
            }
        }
    }

    /// One call and its invariants; the answer, `Some(Null)` when there is none to be had
    /// (cancelled, dropped), `None` when the connection broke.
    fn call(
        &mut self,
        connection: &mut Connection,
        call: &Call,
        interrupt: Interrupt,
    ) -> Option<Value> {
        let (soak, index) = (self.soak, self.index);
        let id = self.next_id;
        self.next_id += 1;
        let started = soak.report.elapsed().as_secs_f64();
        let begun = Instant::now();
        let outcome = connection.client().call(id, call.tool, &call.args, interrupt, DEADLINE);
        let took = begun.elapsed().as_secs_f64();
        let what = format!("s{index} #{id} {} {:.160}", call.tool, call.args.to_string());
        let said = match &outcome {
            Outcome::Answer(answer) => {
                let text = answer["result"]["content"][0]["text"].as_str().map(String::from);
                text.unwrap_or_else(|| answer["error"].to_string()).replace('\n', " | ")
            }
            _ => String::new(),
        };
        soak.report.call(call.tool, &format!("call {what} ({took:.2} s): {said:.160}"));
        let family = Family::of(call.tool);
        self.files_whole(call);
        // The log says which fault an error follows: the family's last one not yet recovered,
        // and a full disk under the run.
        let cause = {
            let state = state(soak, index);
            let fault = state.pending.get(&family).map_or(String::new(), |p| {
                format!(" [after the fault at {:.3}: {:.120}]", p.since, p.fault)
            });
            let disk = state
                .disk_full_since
                .map_or(String::new(), |at| format!(" [during the full disk since {at:.3}]"));
            match (fault.is_empty(), disk.is_empty()) {
                (true, true) => " [no fault pending on this family]".to_string(),
                _ => fault + &disk,
            }
        };
        match outcome {
            Outcome::Answer(answer) => {
                let result = &answer["result"];
                let verdict = if let Some(error) = answer.get("error") {
                    let message = error["message"].as_str().unwrap_or_default();
                    let kind = error_kind(call.tool, &format!("JSON-RPC {message}"));
                    soak.report.error(&kind, &format!("{what}: {error}{cause}"));
                    Verdict::Failed
                } else if result["isError"] == true {
                    let text = result["content"][0]["text"].as_str().unwrap_or_default();
                    let line = format!("{what}: {text:.400}{cause}");
                    soak.report.error(&error_kind(call.tool, text), &line);
                    Verdict::of_error(text)
                } else {
                    Verdict::Answered
                };
                if verdict != Verdict::Answered && call.tool == "edit" {
                    self.workload.forget_counter();
                }
                self.recovery(family, started, verdict, &what);
                Some(answer)
            }
            Outcome::Hung => {
                soak.report.broken(&format!("no answer within {DEADLINE:?}: {what}"));
                None
            }
            Outcome::CancelledSilently => {
                soak.report.note(&format!("cancelled without an answer: {what}"));
                Some(Value::Null)
            }
            Outcome::Dropped => {
                soak.report.note(&format!("dropped mid-call: {what}"));
                self.workload.forget_counter();
                Some(Value::Null)
            }
            Outcome::Broken(why) => {
                soak.report.broken(&format!("the connection broke ({why}): {what}"));
                None
            }
        }
    }

    /// After a call that may write: every file of the project is all old or all new.
    fn files_whole(&mut self, call: &Call) {
        let writes = ["write", "edit", "ast_edit", "resolve", "lsp_rename", "eval"];
        if !writes.contains(&call.tool) {
            return;
        }
        match workload::check_files(self.project) {
            Ok(()) => self.reported_files = None,
            Err(why) if self.reported_files.as_ref() != Some(&why) => {
                self.soak.report.broken(&format!("session {}: {why}", self.index));
                self.reported_files = Some(why);
            }
            Err(_) => {}
        }
    }

    /// After a fault on the family's process: the family must answer without an error within
    /// [`RECOVERY_CALLS`] calls started after it.
    fn recovery(&self, family: Family, started: f64, verdict: Verdict, what: &str) {
        let news = judge_recovery(&mut state(self.soak, self.index), family, started, verdict);
        match news {
            Some(Recovery::Recovered { fault, failures }) => self
                .soak
                .report
                .note(&format!("{family:?} recovered after {fault} ({failures} calls failed)")),
            Some(Recovery::DidNot { fault }) => self.soak.report.broken(&format!(
                "{family:?} did not recover within {RECOVERY_CALLS} calls after {fault}; last: {what}"
            )),
            None => {}
        }
    }

    /// Ends the connection: a stdio host must exit once its stdin is closed and leave no
    /// process; its descriptors must have stayed bounded. An HTTP session is deleted.
    fn end(&mut self, connection: Connection) {
        let soak = self.soak;
        match connection {
            Connection::Http(client) => {
                if let Err(e) = client.delete() {
                    soak.report.note(&format!("session {}: DELETE failed: {e:#}", self.index));
                }
            }
            Connection::Stdio(mut client) => {
                let marker = state(soak, self.index).marker.clone();
                if !client.close(Duration::from_secs(30)) {
                    soak.report.broken(&format!(
                        "the host of session {} ({marker}) did not exit within 30 s of its stdin closing",
                        self.index
                    ));
                    let _ = client.child.kill();
                    let _ = client.child.wait();
                }
                let _ = client.child.wait();
                let (fds, rss, pid) = {
                    let mut state = state(soak, self.index);
                    let rss = std::mem::take(&mut state.rss);
                    (std::mem::take(&mut state.fds), rss, state.host_pid)
                };
                chaos::judge_memory(&soak.report, &rss, &marker, "stdio host");
                no_capsule_folder(soak, pid, &marker);
                match chaos::fds_bounded(&fds) {
                    Ok(peak) => {
                        soak.report.peak("peak descriptors of a stdio host", peak as u64);
                        soak.report.note(&format!("{marker}: peak {peak} descriptors"));
                    }
                    Err(why) => soak.report.broken(&format!("{marker}: descriptors grew: {why}")),
                }
                no_survivors(soak, &marker, &format!("session {}", self.index));
            }
        }
        state(soak, self.index).pending.clear();
    }
}

/// A host that exited must have removed its capsule folders (`agent-tools-capsule-<pid>-…`).
pub(super) fn no_capsule_folder(soak: &Soak, pid: u32, whose: &str) {
    let prefix = format!("agent-tools-capsule-{pid}-");
    let left: Vec<String> = std::fs::read_dir(&soak.tmp_dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(String::from))
        .filter(|name| name.starts_with(&prefix))
        .collect();
    if !left.is_empty() {
        soak.report.broken(&format!("{whose} exited and left its capsule folders: {left:?}"));
    }
}

/// The worker id `vibe_spawn` names (`wN`), from its structured content or its text.
fn worker_id(answer: &Value) -> Option<String> {
    let result = &answer["result"];
    if let Some(id) = result["structuredContent"]["worker"]["id"].as_str() {
        return Some(id.to_string());
    }
    let text = result["content"][0]["text"].as_str()?;
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .find(|w| w.len() > 1 && w.starts_with('w') && w[1..].chars().all(|c| c.is_ascii_digit()))
        .map(String::from)
}

/// The edit id a staged `ast_edit` names (`edit_N`), from its structured content or its text.
fn edit_id(answer: &Value) -> Option<String> {
    let result = &answer["result"];
    if let Some(id) = result["structuredContent"]["edit_id"].as_str() {
        return Some(id.to_string());
    }
    let text = result["content"][0]["text"].as_str()?;
    text.match_indices("edit_").find_map(|(at, _)| {
        let digits: String =
            text[at + "edit_".len()..].chars().take_while(char::is_ascii_digit).collect();
        (!digits.is_empty()).then(|| format!("edit_{digits}"))
    })
}

/// Waits up to 15 s for every process carrying `marker` to be gone; a broken invariant naming
/// the survivors (then killed) otherwise.
pub(super) fn no_survivors(soak: &Soak, marker: &str, whose: &str) {
    let end = Instant::now() + Duration::from_secs(15);
    loop {
        let alive: Vec<_> =
            chaos::marked(marker).into_iter().filter(|m| m.marker == marker).collect();
        if alive.is_empty() {
            return;
        }
        if Instant::now() > end {
            let list: Vec<String> =
                alive.iter().map(|m| format!("{} {:.120}", m.pid, m.command)).collect();
            soak.report.broken(&format!("processes of {whose} survived its end: {list:?}"));
            for m in alive {
                chaos::signal(m.pid, libc::SIGKILL);
            }
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn session() -> SessionState {
        SessionState {
            marker: "m".into(),
            host_pid: 1,
            pending: BTreeMap::new(),
            drop_requested: false,
            fds: Vec::new(),
            rss: Vec::new(),
            disk_full_since: None,
        }
    }

    #[test]
    fn a_second_full_disk_before_recovery_restarts_the_count() {
        let mut state = session();
        state.disk_filled(100.0);
        state.disk_freed(100.0, 104.0);
        state.disk_filled(110.0);
        // The second fill refuses every write, more than the calls allowed to recover.
        for at in 0..2 * RECOVERY_CALLS {
            let started = 110.5 + f64::from(at);
            assert_eq!(judge_recovery(&mut state, Family::Files, started, Verdict::Failed), None);
        }
        state.disk_freed(110.0, 125.0);
        for at in 0..RECOVERY_CALLS - 1 {
            let started = 126.0 + f64::from(at);
            assert_eq!(judge_recovery(&mut state, Family::Files, started, Verdict::Failed), None);
        }
        let news = judge_recovery(&mut state, Family::Files, 140.0, Verdict::Answered);
        let fault = "the full disk at 110.000".to_string();
        assert_eq!(news, Some(Recovery::Recovered { fault, failures: RECOVERY_CALLS - 1 }));
    }

    #[test]
    fn files_that_keep_failing_once_the_disk_has_room_did_not_recover() {
        let mut state = session();
        state.disk_filled(100.0);
        state.disk_freed(100.0, 104.0);
        let mut news = None;
        for at in 0..RECOVERY_CALLS {
            news =
                judge_recovery(&mut state, Family::Files, 105.0 + f64::from(at), Verdict::Failed);
        }
        assert_eq!(news, Some(Recovery::DidNot { fault: "the full disk at 100.000".into() }));
    }

    #[test]
    fn a_killed_server_is_not_excused_by_a_later_full_disk_of_another_family() {
        let mut state = session();
        state.process_hit(Family::Lsp, 50.0, "SIGKILL basedpyright");
        state.disk_filled(51.0);
        let mut news = None;
        for at in 0..RECOVERY_CALLS {
            news = judge_recovery(&mut state, Family::Lsp, 52.0 + f64::from(at), Verdict::Failed);
        }
        assert_eq!(news, Some(Recovery::DidNot { fault: "SIGKILL basedpyright".into() }));
    }

    #[test]
    fn calls_begun_before_the_fault_and_pauses_by_design_do_not_count() {
        let mut state = session();
        state.process_hit(Family::Lsp, 50.0, "SIGKILL basedpyright");
        assert_eq!(judge_recovery(&mut state, Family::Lsp, 49.0, Verdict::Failed), None);
        for at in 0..2 * RECOVERY_CALLS {
            let started = 51.0 + f64::from(at);
            assert_eq!(judge_recovery(&mut state, Family::Lsp, started, Verdict::Paused), None);
        }
        assert_eq!(state.pending[&Family::Lsp].failures, 0);
    }
}
