//! The roster with the command backend and fake worker scripts: spawn and wait, failures, the
//! queue, send, wait timeouts, stalls, bounded kills, the wall-clock budget, list, ceilings, and
//! no process left when the run ends.

use std::{sync::Arc, time::Duration};

use agent_tools_vibe::{
    CommandBackend, CommandLine, Roster, RosterError, RosterSettings, Tier, TierCommands,
    VibeConfig, WorkerState, WorkerTier, render_kill, render_list, render_send, render_spawn,
    render_wait,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// Fake workers. Each prints something recognisable; `block` waits for a release file.
const SCRIPTS: &[(&str, &str)] = &[
    (
        "echo.sh",
        "printf 'briefing: '; cat; echo\n\
         echo \"id=$AGENT_TOOLS_VIBE_WORKER_ID tier=$AGENT_TOOLS_VIBE_TIER ceiling=$AGENT_TOOLS_VIBE_CEILING revision=$AGENT_TOOLS_VIBE_REVISION label=$AGENT_TOOLS_VIBE_LABEL\"\n",
    ),
    ("fail.sh", "echo partial work\necho 'something broke' >&2\nexit 3\n"),
    (
        "block.sh",
        "printf 'briefing: '; cat; echo\n\
         while [ ! -f \"release-$AGENT_TOOLS_VIBE_WORKER_ID\" ]; do sleep 0.05; done\n\
         echo released\n",
    ),
    ("silent.sh", "echo tick 1\necho tick 2\nsleep 60\n"),
    ("depth.sh", "echo \"depth=$AGENT_TOOLS_WORKER_DEPTH max=$AGENT_TOOLS_WORKER_MAX_DEPTH\"\n"),
    ("stubborn.sh", "trap '' TERM\necho 'ignoring SIGTERM'\nsleep 60 &\nwait\nsleep 60\n"),
    ("loud.sh", "i=0\nwhile [ $i -lt 40 ]; do printf '0123456789'; i=$((i+1)); done\necho\n"),
];

struct Fixture {
    dir: tempfile::TempDir,
    marker: String,
    roster: Roster,
}

fn settings() -> RosterSettings {
    RosterSettings {
        slots: 4,
        stall_after: Duration::from_secs(600),
        budget: Duration::from_secs(600),
        kill_grace: Duration::from_millis(500),
        result_max_chars: 20_000,
        ..RosterSettings::default()
    }
}

impl Fixture {
    /// A run whose fast workers run `fast`, good workers `good`, read-only ones `read_only`
    /// (script names, or `None` for "not configured").
    fn new(
        settings: RosterSettings,
        fast: Option<&str>,
        read_only: Option<&str>,
        good: Option<&str>,
    ) -> Fixture {
        let dir = tempfile::tempdir().expect("temp dir");
        for (name, text) in SCRIPTS {
            std::fs::write(dir.path().join(name), text).expect("write script");
        }
        let marker = format!("vibe-test-{}-{}", std::process::id(), unique());
        let command = |script: Option<&str>| {
            script.map(|s| {
                CommandLine::Shell(format!(
                    "exec env AGENT_TOOLS_VIBE_TEST_MARKER={marker} sh ./{s}"
                ))
            })
        };
        let config = VibeConfig {
            fast: TierCommands { command: command(fast), read_only_command: command(read_only) },
            good: TierCommands { command: command(good), read_only_command: None },
            ..VibeConfig::default()
        };
        let backend = CommandBackend::new(dir.path(), config);
        let roster = Roster::new(Arc::new(backend), settings);
        Fixture { dir, marker, roster }
    }

    fn with(script: &str) -> Fixture {
        Fixture::new(settings(), Some(script), None, None)
    }

    fn release(&self, id: &str) {
        std::fs::write(self.dir.path().join(format!("release-{id}")), "").expect("release");
    }

    fn spawn(&self, brief: &str, label: &str) -> String {
        let report = self.roster.spawn(brief, label, WorkerTier::Fast, Tier::Exec).expect("spawn");
        report.worker.id
    }

    async fn wait(&self, id: &str, seconds: f64) -> agent_tools_vibe::WaitReport {
        self.roster
            .wait(id, Duration::from_secs_f64(seconds), &CancellationToken::new())
            .await
            .expect("wait")
    }

    /// Ends the run and checks that no worker process survived it.
    async fn end(self) {
        self.roster.shutdown().await;
        assert_no_survivors(&self.marker);
    }
}

fn unique() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

/// Live (non-zombie) processes whose environment carries `marker`.
fn survivors(marker: &str) -> Vec<String> {
    let needle = format!("AGENT_TOOLS_VIBE_TEST_MARKER={marker}");
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        if !entry.file_name().to_string_lossy().chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else { continue };
        if environ.split(|&b| b == 0).any(|v| v == needle.as_bytes()) {
            let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
            if stat.split(") ").nth(1).is_some_and(|rest| rest.starts_with('Z')) {
                continue;
            }
            let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
            found.push(String::from_utf8_lossy(&cmdline).replace('\0', " "));
        }
    }
    found
}

fn assert_no_survivors(marker: &str) {
    // Exits are asynchronous: give the kernel a moment to tear processes down, then insist.
    for _ in 0..100 {
        if survivors(marker).is_empty() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("worker processes survived the run: {:?}", survivors(marker));
}

/// A view as JSON with the clock readings replaced, for snapshots.
fn timeless(value: impl serde::Serialize) -> Value {
    fn scrub(v: &mut Value) {
        match v {
            Value::Object(map) => {
                // Whether a running worker has printed yet depends on scheduling.
                map.remove("recent_output");
                for (key, value) in map.iter_mut() {
                    if key.ends_with("seconds") || key.ends_with("seconds_ago") {
                        *value = Value::String("[time]".into());
                    } else {
                        scrub(value);
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(scrub),
            _ => {}
        }
    }
    let mut value = serde_json::to_value(value).expect("json");
    scrub(&mut value);
    value
}

/// The text with durations like `250 ms`, `0.3 s` or `12 s` replaced by `[t] s`, for snapshots.
fn timeless_text(text: &str) -> String {
    let mut out = String::new();
    let words: Vec<&str> = text.split(' ').collect();
    let mut i = 0;
    while i < words.len() {
        let is_number = words[i].parse::<f64>().is_ok();
        let unit = words.get(i + 1).copied().unwrap_or("");
        if is_number && (unit.starts_with('s') || unit.starts_with("min") || unit.starts_with("ms"))
        {
            out.push_str("[t] ");
            out.push_str(unit.strip_prefix('m').filter(|u| u.starts_with('s')).unwrap_or(unit));
            i += 2;
        } else {
            out.push_str(words[i]);
            i += 1;
        }
        if i < words.len() {
            out.push(' ');
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spawned_worker_completes_with_its_output_as_the_result() {
    let f = Fixture::with("echo.sh");
    let report =
        f.roster.spawn("Rename foo to bar.", "rename foo", WorkerTier::Fast, Tier::Exec).unwrap();
    assert_eq!(report.worker.id, "w1");
    assert_eq!(report.worker.state, WorkerState::Running, "spawn returns at once, running");
    insta::assert_snapshot!(render_spawn(&report), @r#"w1 started: "rename foo" (fast worker, exec ceiling), briefing revision 1. It runs in the background (slots 1/4 in use); collect it with vibe_wait w1, or see every worker with vibe_list."#);
    let done = f.wait("w1", 60.0).await;
    assert!(!done.timed_out);
    assert_eq!(done.worker.state, WorkerState::Completed);
    insta::assert_snapshot!(timeless_text(&render_wait(&done)), @r"
    w1 completed after [t] s (attempt 1, briefing revision 1): exit code 0.
    Result:
    briefing: Rename foo to bar.
    id=w1 tier=fast ceiling=exec revision=1 label=rename foo
    ");
    assert_eq!(f.roster.list().slots_used, 0, "a settled worker holds no slot");
    f.end().await;
}

/// In bubblewrap, whose init passes a death by signal N on as exit code 128+N, a worker that a
/// signal kills is reported killed by it; its own exit code stays a code.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_in_bubblewrap_killed_by_a_signal_is_reported_as_such() {
    use agent_tools_support::capsule::{Bwrap, CapsuleOptions};
    if !std::path::Path::new("/usr/bin/bwrap").exists() {
        assert!(std::env::var_os("CI").is_none(), "bubblewrap is missing: run `cargo xtask setup`");
        #[allow(clippy::print_stderr, reason = "a skipped test says so loudly")]
        {
            eprintln!(
                "\n!!! SKIPPED: bubblewrap is missing; `cargo xtask setup` installs it !!!\n"
            );
        }
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let capsule = Bwrap::start(CapsuleOptions {
        project: dir.path().to_path_buf(),
        ..CapsuleOptions::default()
    })
    .expect("a bubblewrap capsule");
    let shell = |line: &str| Some(CommandLine::Shell(line.to_string()));
    let config = VibeConfig {
        fast: TierCommands {
            command: shell("cat > /dev/null; kill -SEGV $$"),
            read_only_command: None,
        },
        good: TierCommands { command: shell("cat > /dev/null; exit 3"), read_only_command: None },
        ..VibeConfig::default()
    };
    let backend = CommandBackend::new(dir.path(), config).in_capsule(Arc::new(capsule));
    let roster = Roster::new(Arc::new(backend), settings());
    let killed = roster.spawn("Crash.", "crash", WorkerTier::Fast, Tier::Exec).expect("spawn");
    let exited = roster.spawn("Fail.", "fail", WorkerTier::Good, Tier::Exec).expect("spawn");
    let wait = |id: String| {
        let roster = roster.clone();
        async move {
            let done = roster.wait(&id, Duration::from_secs(60), &CancellationToken::new()).await;
            render_wait(&done.expect("wait"))
        }
    };
    let text = wait(killed.worker.id).await;
    assert!(text.contains("killed by signal 11") && !text.contains("139"), "{text}");
    let text = wait(exited.worker.id).await;
    assert!(text.contains("exit code 3"), "{text}");
    roster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_worker_is_failed_with_its_exit_code_and_stderr() {
    let f = Fixture::with("fail.sh");
    f.spawn("Do it.", "doomed");
    let done = f.wait("w1", 60.0).await;
    assert_eq!(done.worker.state, WorkerState::Failed);
    insta::assert_snapshot!(timeless_text(&render_wait(&done)), @r"
    w1 failed after [t] s (attempt 1, briefing revision 1): exit code 3.
    Output:
    partial work
    stderr (last part):
    something broke
    ");
    f.end().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_beyond_the_slot_limit_is_queued_and_starts_when_a_slot_frees() {
    let f = Fixture::new(RosterSettings { slots: 1, ..settings() }, Some("block.sh"), None, None);
    f.spawn("first", "first");
    let second = f.roster.spawn("second", "second", WorkerTier::Fast, Tier::Exec).unwrap();
    assert_eq!(second.worker.state, WorkerState::Queued);
    assert_eq!(second.queue_position, Some(1));
    insta::assert_snapshot!(render_spawn(&second), @r#"w2 queued: "second" (fast worker, exec ceiling) waits for a slot (1/1 in use; place 1 in the queue). It starts by itself when a slot frees; vibe_wait w2 waits for it."#);
    let still = f.wait("w2", 0.2).await;
    assert!(still.timed_out);
    assert_eq!(still.worker.state, WorkerState::Queued);

    f.release("w1");
    assert_eq!(f.wait("w1", 60.0).await.worker.state, WorkerState::Completed);
    // The freed slot went to w2, which now runs until released.
    let list = f.roster.list();
    assert_eq!(list.workers[1].state, WorkerState::Running);
    assert_eq!((list.slots_used, list.slots_max), (1, 1));
    f.release("w2");
    let done = f.wait("w2", 60.0).await;
    assert_eq!(done.worker.state, WorkerState::Completed);
    assert!(done.worker.result.unwrap().output.contains("briefing: second"));
    f.end().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_appends_to_the_briefing_and_restarts_a_running_worker() {
    let f = Fixture::with("block.sh");
    f.spawn("Write the parser.", "parser");
    let report = f.roster.send("w1", "Also handle comments.", Tier::Exec).await.unwrap();
    assert_eq!(report.previous_state, WorkerState::Running);
    assert!(report.interrupted.is_some(), "the running attempt was interrupted");
    assert_eq!(report.worker.revision, 2);
    assert_eq!(report.worker.attempt, 2);
    let text = render_send(&report);
    assert!(
        text.starts_with("w1 restarted with briefing revision 2 (attempt 2). The running attempt 1 was interrupted after"),
        "{text}"
    );
    f.release("w1");
    let done = f.wait("w1", 60.0).await;
    let result = done.worker.result.unwrap();
    assert_eq!((result.state, result.attempt, result.revision), (WorkerState::Completed, 2, 2));
    insta::assert_snapshot!(result.output, @r"
    briefing: Write the parser.

    --- message 1 (briefing revision 2) ---
    Also handle comments.
    released
    ");
    f.end().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_to_a_settled_worker_starts_a_new_attempt() {
    let f = Fixture::with("echo.sh");
    f.spawn("First pass.", "pass");
    f.wait("w1", 60.0).await;
    let report = f.roster.send("w1", "Second pass.", Tier::Exec).await.unwrap();
    assert_eq!(report.previous_state, WorkerState::Completed);
    assert!(report.interrupted.is_none());
    insta::assert_snapshot!(render_send(&report), @"w1 had completed; started attempt 2 with briefing revision 2. Nothing was interrupted.");
    let done = f.wait("w1", 60.0).await;
    assert!(done.worker.result.unwrap().output.contains("Second pass."));
    f.end().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_that_times_out_returns_the_running_state_not_an_error() {
    let f = Fixture::with("block.sh");
    f.spawn("Take your time.", "slow");
    let report = f.wait("w1", 0.3).await;
    assert!(report.timed_out);
    assert!(!report.stalled);
    assert_eq!(report.worker.state, WorkerState::Running);
    let text = render_wait(&report);
    assert!(text.starts_with("w1 is still running after a "), "{text}");
    assert!(text.contains("(not an error)"), "{text}");
    f.end().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_returns_early_when_the_worker_stalls() {
    let f = Fixture::new(
        RosterSettings { stall_after: Duration::from_millis(300), ..settings() },
        Some("silent.sh"),
        None,
        None,
    );
    f.spawn("Go quiet.", "quiet");
    // A slow start can stall before the first output; the worker then resumes and stalls again.
    let mut report = f.wait("w1", 600.0).await;
    while !report.worker.recent_output.as_deref().is_some_and(|o| o.contains("tick 2")) {
        report = f.wait("w1", 600.0).await;
    }
    assert!(report.stalled);
    assert!(!report.timed_out);
    assert_eq!(report.worker.state, WorkerState::Stalled);
    let text = render_wait(&report);
    assert!(text.starts_with("w1 stalled: no output for"), "{text}");
    assert!(text.contains("tick 2"), "the recent output is shown: {text}");
    assert_eq!(f.roster.list().slots_used, 1, "a stalled worker still runs and holds its slot");
    f.end().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_of_a_worker_that_ignores_sigterm_is_forced_and_frees_the_slot() {
    let f = Fixture::with("stubborn.sh");
    f.spawn("Never stop.", "stubborn");
    // Wait until the worker has set its trap and said so.
    loop {
        let list = f.roster.list();
        if list.workers[0].recent_output.as_deref().is_some_and(|o| o.contains("ignoring")) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let report = f.roster.kill("w1").await.unwrap();
    assert_eq!(report.previous_state, WorkerState::Running);
    assert_eq!(report.worker.state, WorkerState::Killed);
    let stop = report.stop.clone().expect("a stop report");
    assert!(stop.forced, "SIGTERM was ignored, so SIGKILL was needed: {stop:?}");
    assert_eq!(report.slots_used, 0);
    insta::assert_snapshot!(timeless_text(&render_kill(&report)), @r"
    w1 killed after [t] s: it did not stop within [t] s of SIGTERM, so it was killed with SIGKILL. Its slot is free (slots 0/4 in use).
    Output so far:
    ignoring SIGTERM
    ");
    assert_no_survivors(&f.marker);
    let again = f.roster.kill("w1").await.unwrap();
    assert!(again.stop.is_none());
    insta::assert_snapshot!(render_kill(&again), @"w1 had already settled as killed; nothing to stop (vibe_kill on a settled worker does nothing) (slots 0/4 in use).");
    f.end().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_of_a_queued_worker_removes_it_from_the_queue() {
    let f = Fixture::new(RosterSettings { slots: 1, ..settings() }, Some("block.sh"), None, None);
    f.spawn("one", "one");
    f.spawn("two", "two");
    let report = f.roster.kill("w2").await.unwrap();
    assert_eq!(report.worker.state, WorkerState::Killed);
    insta::assert_snapshot!(render_kill(&report), @"w2 removed from the queue; it never started (slots 1/1 in use).");
    f.end().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_over_its_wall_clock_budget_times_out_with_its_output_so_far() {
    let f = Fixture::new(
        RosterSettings { budget: Duration::from_secs(2), ..settings() },
        Some("silent.sh"),
        None,
        None,
    );
    f.spawn("Run forever.", "forever");
    let done = f.wait("w1", 600.0).await;
    assert_eq!(done.worker.state, WorkerState::TimedOut);
    let result = done.worker.result.clone().unwrap();
    assert_eq!(result.output, "tick 1\ntick 2\n");
    assert!(result.detail.starts_with("its wall-clock budget of 2 s ran out"), "{}", result.detail);
    assert_eq!(f.roster.list().slots_used, 0);
    f.end().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_shows_every_worker_with_its_fields_and_the_slots() {
    let f = Fixture::new(
        RosterSettings { slots: 2, ..settings() },
        Some("block.sh"),
        None,
        Some("echo.sh"),
    );
    f.roster.spawn("Review w1.", "review", WorkerTier::Good, Tier::Exec).unwrap();
    f.wait("w1", 60.0).await;
    f.spawn("Block.", "blocker");
    f.spawn("Block too.", "second blocker");
    f.spawn("Wait your turn.", "queued one");
    let list = f.roster.list();
    insta::assert_json_snapshot!("list_view", timeless(&list));

    let text = render_list(&list);
    assert!(text.starts_with("4 workers (slots 2/2 in use; worker time "), "{text}");
    assert!(text.contains(" of the run's 4 h):\nw1 completed"), "{text}");
    assert!(text.contains("w4 queued · fast · \"queued one\""), "{text}");
    assert!(text.contains("last result (completed, exit code 0): id=w1 tier=good"), "{text}");
    f.end().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_caller_without_a_read_only_command_is_refused_with_the_reason() {
    let f = Fixture::with("echo.sh");
    let err = f.roster.spawn("Edit files.", "editor", WorkerTier::Fast, Tier::Read).unwrap_err();
    let RosterError::Refused(message) = &err else { panic!("{err:?}") };
    insta::assert_snapshot!(message.replace(&f.marker, "[marker]"), @"this surface is limited to read-tier tools, and a fast worker runs `exec env AGENT_TOOLS_VIBE_TEST_MARKER=[marker] sh ./echo.sh`, which may change files or run commands; starting it would delegate around that limit. Set `vibe.fast.read_only_command` in agent-tools.toml to a command that cannot write (for example the agent CLI in its read-only mode), or spawn from a surface that allows exec-tier tools");
    assert!(f.roster.list().workers.is_empty(), "nothing was started");
    f.end().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_caller_gets_the_read_only_command_with_a_read_ceiling() {
    let f = Fixture::new(settings(), Some("fail.sh"), Some("echo.sh"), None);
    let report = f.roster.spawn("Look around.", "explorer", WorkerTier::Fast, Tier::Read).unwrap();
    assert_eq!(report.worker.ceiling, Tier::Read);
    let done = f.wait("w1", 60.0).await;
    assert!(done.worker.result.unwrap().output.contains("ceiling=read"));
    f.end().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_caller_cannot_restart_a_writing_worker_with_new_orders() {
    let f = Fixture::with("block.sh");
    f.spawn("Refactor.", "refactor");
    let err = f.roster.send("w1", "Now delete everything.", Tier::Read).await.unwrap_err();
    assert!(matches!(err, RosterError::Refused(_)), "{err:?}");
    let list = f.roster.list();
    assert_eq!(list.workers[0].revision, 1, "the briefing did not change");
    assert_eq!(list.workers[0].attempt, 1, "it was not restarted");
    f.end().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tier_without_a_command_is_an_error_naming_the_setting() {
    let f = Fixture::with("echo.sh");
    let err = f.roster.spawn("Design it.", "design", WorkerTier::Good, Tier::Exec).unwrap_err();
    insta::assert_snapshot!(err.to_string(), @"no command is configured for good workers: set `vibe.good.command` in agent-tools.toml (the agent command that reads its briefing on stdin, for example a coding-agent CLI in non-interactive mode)");
    f.end().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_that_cannot_start_fails_with_the_root_cause() {
    let dir = tempfile::tempdir().unwrap();
    let config = VibeConfig {
        fast: TierCommands {
            command: Some(CommandLine::Argv(vec!["/nonexistent/agent".into(), "-".into()])),
            read_only_command: None,
        },
        ..VibeConfig::default()
    };
    let roster = Roster::new(Arc::new(CommandBackend::new(dir.path(), config)), settings());
    roster.spawn("Anything.", "ghost", WorkerTier::Fast, Tier::Exec).unwrap();
    let done = roster.wait("w1", Duration::from_secs(60), &CancellationToken::new()).await.unwrap();
    assert_eq!(done.worker.state, WorkerState::Failed);
    let detail = done.worker.result.unwrap().detail;
    assert!(
        detail.starts_with("could not start: cannot start `/nonexistent/agent -` in")
            && detail.contains("No such file or directory"),
        "{detail}"
    );
    assert_eq!(roster.list().slots_used, 0);
    roster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_result_is_capped_with_a_note() {
    let f = Fixture::new(
        RosterSettings { result_max_chars: 50, ..settings() },
        Some("loud.sh"),
        None,
        None,
    );
    f.spawn("Be loud.", "loud");
    let done = f.wait("w1", 60.0).await;
    let result = done.worker.result.unwrap();
    assert_eq!(result.output.chars().count(), 50);
    assert_eq!(
        result.output_note.as_deref(),
        Some("[output capped: showing the last 50 of 401 characters; the first 351 were cut]")
    );
    f.end().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_worker_id_lists_the_known_ones() {
    let f = Fixture::with("echo.sh");
    f.spawn("x", "x");
    let err = f.roster.kill("w9").await.unwrap_err();
    assert_eq!(err.to_string(), "no worker `w9`; the workers of this run are w1");
    f.end().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_the_run_ends_no_worker_process_is_left() {
    let f = Fixture::new(
        RosterSettings { slots: 3, ..settings() },
        Some("stubborn.sh"),
        None,
        Some("block.sh"),
    );
    f.spawn("a", "a");
    f.spawn("b", "b");
    f.roster.spawn("c", "c", WorkerTier::Good, Tier::Exec).unwrap();
    f.spawn("d", "queued");
    let roster = f.roster.clone();
    let marker = f.marker.clone();
    f.end().await;
    let list = roster.list();
    assert!(list.workers.iter().all(|w| w.state == WorkerState::Killed), "{list:?}");
    assert_eq!(list.slots_used, 0);
    let err = roster.spawn("late", "late", WorkerTier::Fast, Tier::Exec).unwrap_err();
    assert_eq!(err, RosterError::Closed);
    assert_no_survivors(&marker);
}

#[test]
fn tool_argument_schemas_are_stable() {
    let schemas = serde_json::json!({
        "vibe_spawn": schemars::schema_for!(agent_tools_vibe::SpawnArgs),
        "vibe_send": schemars::schema_for!(agent_tools_vibe::SendArgs),
        "vibe_wait": schemars::schema_for!(agent_tools_vibe::WaitArgs),
        "vibe_kill": schemars::schema_for!(agent_tools_vibe::KillArgs),
        "vibe_list": schemars::schema_for!(agent_tools_vibe::ListArgs),
    });
    insta::assert_json_snapshot!("tool_argument_schemas", schemas);
}

#[test]
fn the_config_section_reads_commands_and_refuses_nonsense() {
    let config: VibeConfig = toml::from_str(
        "enabled = true\nslots = 2\nstall_seconds = 30\n\n[fast]\ncommand = [\"agent\", \"exec\", \"-\"]\n\n[good]\ncommand = \"agent --model big -\"\n",
    )
    .unwrap();
    assert!(config.enabled);
    assert_eq!(config.slots, 2);
    assert_eq!(
        config.fast.command,
        Some(CommandLine::Argv(vec!["agent".into(), "exec".into(), "-".into()]))
    );
    assert_eq!(
        config.good.command.as_ref().map(CommandLine::display).as_deref(),
        Some("agent --model big -")
    );
    assert_eq!(config.roster_settings().stall_after, Duration::from_secs(30));
    let err = toml::from_str::<VibeConfig>("slots = 0\n").unwrap_err();
    assert!(err.to_string().contains("must be at least 1"), "{err}");
    let err = toml::from_str::<VibeConfig>("stall_seconds = -1\n").unwrap_err();
    assert!(err.to_string().contains("give a positive number"), "{err}");
    let err = toml::from_str::<VibeConfig>("[fast]\ncmd = \"x\"\n").unwrap_err();
    assert!(err.to_string().contains("unknown field `cmd`"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_learns_its_depth_and_a_worker_at_the_limit_is_refused_a_spawn() {
    let f = Fixture::with("depth.sh");
    f.spawn("Say how deep you are.", "depth");
    let done = f.wait("w1", 600.0).await;
    let output = done.worker.result.clone().unwrap().output;
    assert_eq!(output, "depth=1 max=1\n", "the worker's environment carries its depth");
    f.end().await;
    // The same roster in an agent that is itself a worker at depth 1 (the default limit).
    let nesting = agent_tools_vibe::Nesting::from_values(Some("1"), Some("1"), 3);
    let f = Fixture::new(RosterSettings { nesting, ..settings() }, Some("echo.sh"), None, None);
    let err = f.roster.spawn("Delegate.", "nested", WorkerTier::Fast, Tier::Exec).unwrap_err();
    let RosterError::Refused(why) = &err else { panic!("{err:?}") };
    assert!(why.contains("runs as a worker at depth 1 (AGENT_TOOLS_WORKER_DEPTH=1)"), "{why}");
    assert!(why.contains("a worker cannot start workers of its own"), "{why}");
    assert!(f.roster.list().workers.is_empty(), "nothing was started");
    f.end().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_runs_worker_budget_stops_running_workers_and_refuses_new_ones() {
    let f = Fixture::new(
        RosterSettings { run_budget: Duration::from_secs(2), ..settings() },
        Some("silent.sh"),
        None,
        None,
    );
    f.spawn("Run long.", "one");
    f.spawn("Run long too.", "two");
    for id in ["w1", "w2"] {
        let done = f.wait(id, 600.0).await;
        assert_eq!(done.worker.state, WorkerState::TimedOut, "{id}");
        let detail = done.worker.result.clone().unwrap().detail;
        assert!(detail.starts_with("the run's worker budget of 2 s wall clock"), "{detail}");
    }
    let err = f.roster.spawn("One more.", "three", WorkerTier::Fast, Tier::Exec).unwrap_err();
    assert!(err.to_string().starts_with("the run's worker budget of 2 s wall clock is spent"));
    let list = f.roster.list();
    assert!(list.worker_time_used_seconds >= 2.0, "{list:?}");
    f.end().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_worker_is_reported_then_stopped_only_at_the_stall_limit() {
    let f = Fixture::new(
        RosterSettings {
            stall_after: Duration::from_millis(300),
            stall_limit: Some(Duration::from_secs(3)),
            ..settings()
        },
        Some("silent.sh"),
        None,
        None,
    );
    f.spawn("Go quiet.", "quiet");
    let mut report = f.wait("w1", 600.0).await;
    while report.worker.state != WorkerState::TimedOut {
        if report.stalled {
            assert_eq!(report.worker.state, WorkerState::Stalled, "reported, still running");
        }
        report = f.wait("w1", 600.0).await;
    }
    let result = report.worker.result.clone().unwrap();
    assert!(
        result.detail.starts_with("it printed nothing for 3 s (the stall limit)"),
        "{result:?}"
    );
    assert_eq!(result.output, "tick 1\ntick 2\n");
    f.end().await;
}
