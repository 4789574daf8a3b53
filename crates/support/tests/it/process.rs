//! Process lifetime with real processes: teardown reaches every descendant, a child outlives
//! the thread that spawned it, and the whole tree dies with a SIGKILLed host.

use std::{
    io::{BufRead, BufReader as StdBufReader, Write},
    os::unix::process::ExitStatusExt,
    process::Stdio,
    time::{Duration, Instant},
};

use agent_tools_support::process::{self, CgroupJoin, ProcessGroup, SpawnOptions, Spawned};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// A shell that starts a background grandchild and a double-forked, `setsid` descendant (in
/// a session and group of its own, parent gone), prints their pids, then becomes `sleep`.
const TREE: &str = "sleep 300 & echo $!; (setsid sleep 300 & echo $!); exec sleep 300";

/// How long a condition that must become true may take on a loaded machine; this bounds a
/// hang, it does not measure speed.
const EVENTUALLY: Duration = Duration::from_secs(60);

fn sh(script: &str) -> tokio::process::Command {
    let mut command = tokio::process::Command::new("sh");
    command.args(["-c", script]).stdin(Stdio::null()).stdout(Stdio::piped());
    command
}

/// Reads `count` lines of pids from the child's stdout.
async fn pids(child: &mut tokio::process::Child, count: usize) -> Vec<i32> {
    let stdout = child.stdout.take().expect("stdout is piped");
    let mut lines = BufReader::new(stdout).lines();
    let mut pids = Vec::new();
    while pids.len() < count {
        let line = lines.next_line().await.expect("readable stdout").expect("a pid line");
        pids.push(line.trim().parse().expect("a pid"));
    }
    // Keep the pipe open: a closed stdout would not end `sleep`, but keep the test plain.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    pids
}

/// The process's state letter from `/proc/PID/stat`, `None` once it no longer exists.
fn state(pid: i32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.get(stat.rfind(')')? + 2..)?.chars().next()
}

fn running(pid: i32) -> bool {
    state(pid).is_some_and(|s| s != 'Z' && s != 'X')
}

/// Pids of processes that carry `var=1` in their environment: an independent check of the
/// lineage mark.
fn marked(var: &str) -> Vec<i32> {
    let entry = format!("{var}=1").into_bytes();
    std::fs::read_dir("/proc")
        .expect("/proc")
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|e| e == entry))
        })
        .filter(|pid| running(*pid))
        .collect()
}

fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + EVENTUALLY;
    while !done() {
        assert!(Instant::now() < deadline, "after {EVENTUALLY:?}: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits until exactly `tree` carries the mark (the shell's short-lived subshell is gone) and
/// every process of it has become `sleep` (`setsid` has exec'd).
fn settled(var: &str, tree: &[i32]) {
    let mut tree = tree.to_vec();
    tree.sort_unstable();
    eventually("exactly the tree carries the lineage mark and runs sleep", || {
        let mut now = marked(var);
        now.sort_unstable();
        now == tree && tree.iter().all(|pid| command_name(*pid).as_deref() == Some("sleep"))
    });
}

fn command_name(pid: i32) -> Option<String> {
    Some(std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?.trim().to_owned())
}

fn check_tree_gone(group: &ProcessGroup, pids: &[i32]) {
    let alive: Vec<i32> = pids.iter().copied().filter(|p| running(*p)).collect();
    assert!(alive.is_empty(), "still running: {alive:?}");
    assert_eq!(marked(group.lineage_var()), Vec::<i32>::new(), "marked processes are left");
}

#[tokio::test]
async fn terminate_ends_the_child_its_grandchild_and_a_setsid_double_forked_descendant() {
    let Spawned { mut child, group } = process::spawn(sh(TREE)).await.unwrap();
    let mut tree = pids(&mut child, 2).await;
    tree.push(group.pid() as i32);
    settled(group.lineage_var(), &tree);
    let mut members = group.members();
    members.sort_unstable();
    let mut expected: Vec<u32> = tree.iter().map(|p| *p as u32).collect();
    expected.sort_unstable();
    assert_eq!(members, expected, "the tree is the shell and its two descendants");

    let report = group.terminate(Duration::from_secs(30)).await;

    assert!(report.survivors.is_empty(), "{report}");
    assert_eq!(report.found, 3, "{report}");
    check_tree_gone(&group, &tree);
    // The descendants were re-parented to this process (the subreaper) and reaped by the
    // teardown: not even a zombie is left.
    for pid in &tree[..2] {
        assert_eq!(state(*pid), None, "pid {pid} was not reaped");
    }
    let status = child.wait().await.unwrap();
    assert_eq!(status.signal(), Some(libc::SIGTERM), "the leader ended on SIGTERM: {status:?}");
}

#[tokio::test]
async fn a_detached_descendant_caught_in_the_middle_of_exec_is_still_found() {
    // The descendant leaves the group and loses its parent, then replaces its own image
    // without end: scans often read it between two images, when only its mark, read from the
    // new image's environment, places it in the tree.
    let dir = tempfile::tempdir().unwrap();
    let re_exec = dir.path().join("re-exec.sh");
    std::fs::write(&re_exec, "exec sh \"$0\"\n").unwrap();
    let script = format!("(setsid sh '{}' & echo $!); exec sleep 300", re_exec.display());
    let Spawned { mut child, group } = process::spawn(sh(&script)).await.unwrap();
    let detached = pids(&mut child, 1).await[0] as u32;
    eventually("the detached descendant is seen", || group.members().contains(&detached));

    let scans = 300;
    let missed = (0..scans).filter(|_| !group.members().contains(&detached)).count();

    assert_eq!(missed, 0, "{missed} of {scans} scans missed the re-exec'ing descendant");
    let report = group.terminate(Duration::from_secs(30)).await;
    assert!(report.survivors.is_empty(), "{report}");
    assert!(!running(detached as i32), "the detached descendant was ended");
}

#[tokio::test]
async fn terminate_asks_with_sigterm_first_and_waits_for_a_clean_exit() {
    let script = "trap 'exit 7' TERM; echo ready; while :; do sleep 1; done";
    let Spawned { mut child, group } = process::spawn(sh(script)).await.unwrap();
    let stdout = child.stdout.take().unwrap();
    BufReader::new(stdout).lines().next_line().await.unwrap().expect("ready");

    let report = group.terminate(Duration::from_secs(60)).await;

    assert!(report.killed.is_empty(), "nothing needed SIGKILL: {report}");
    assert_eq!(child.wait().await.unwrap().code(), Some(7), "the trap ran");
    assert_eq!(group.members(), Vec::<u32>::new());
}

#[tokio::test]
async fn descendants_without_the_mark_are_found_by_group_and_parentage() {
    // `env -i` drops the lineage mark: one stays in the group, one leaves it but keeps its
    // parent.
    let script = "env -i sleep 300 & echo $!; setsid env -i sleep 300 & echo $!; wait";
    let Spawned { mut child, group } = process::spawn(sh(script)).await.unwrap();
    let mut tree = pids(&mut child, 2).await;
    eventually("both exec'd into sleep without the mark", || {
        tree.iter().all(|p| {
            std::fs::read(format!("/proc/{p}/environ")).is_ok_and(|e| e.is_empty())
                && std::fs::read_to_string(format!("/proc/{p}/comm")).is_ok_and(|c| c == "sleep\n")
        })
    });
    tree.push(group.pid() as i32);

    let report = group.terminate(Duration::from_secs(30)).await;

    assert_eq!(report.found, 3, "{report}");
    assert_eq!(report.to_string(), "3 of 3 processes ended on SIGTERM");
    check_tree_gone(&group, &tree);
    child.wait().await.unwrap();
}

#[tokio::test]
async fn a_tree_that_ignores_sigterm_is_killed_after_the_grace_period() {
    let script = "trap '' TERM; sleep 300 & echo $!; exec sleep 300";
    let Spawned { mut child, group } = process::spawn(sh(script)).await.unwrap();
    let mut tree = pids(&mut child, 1).await;
    tree.push(group.pid() as i32);

    let report = group.terminate(Duration::from_millis(100)).await;

    let mut killed = report.killed.clone();
    killed.sort_unstable();
    let mut expected: Vec<u32> = tree.iter().map(|p| *p as u32).collect();
    expected.sort_unstable();
    assert_eq!(killed, expected, "{report}");
    assert!(report.to_string().contains("killed with SIGKILL"), "{report}");
    check_tree_gone(&group, &tree);
    assert_eq!(child.wait().await.unwrap().signal(), Some(libc::SIGKILL));
}

#[tokio::test]
async fn terminating_an_ended_tree_is_fine_and_repeating_it_does_nothing() {
    let Spawned { mut child, group } = process::spawn(sh("exit 0")).await.unwrap();
    assert!(child.wait().await.unwrap().success());

    let first = group.terminate(Duration::from_secs(1)).await;
    let second = group.terminate(Duration::from_secs(1)).await;

    assert_eq!((first.found, first.killed.len(), first.repeated), (0, 0, false), "{first}");
    assert_eq!(first.to_string(), "nothing of it was running");
    assert!(second.repeated, "{second}");
    assert_eq!(second.to_string(), "it had already been ended");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_outlives_the_thread_that_spawned_it() {
    let runtime = tokio::runtime::Handle::current();
    let (spawned, spawning_thread) = std::thread::spawn(move || {
        let mut command = tokio::process::Command::new("cat");
        command.stdin(Stdio::piped()).stdout(Stdio::piped());
        let spawned = runtime.block_on(process::spawn(command)).unwrap();
        // SAFETY: gettid has no preconditions.
        (spawned, unsafe { libc::gettid() })
    })
    .join()
    .unwrap();
    // The thread is fully gone once its task entry is: by then a death signal tied to it
    // would have been sent.
    eventually("the spawning thread's task entry disappears", || {
        std::fs::metadata(format!("/proc/self/task/{spawning_thread}")).is_err()
    });
    let Spawned { mut child, group } = spawned;

    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"still here\n").await.unwrap();
    let echoed = BufReader::new(child.stdout.take().unwrap()).lines().next_line().await.unwrap();

    assert_eq!(echoed.as_deref(), Some("still here"), "cat answered after its spawner exited");
    assert!(running(group.pid() as i32));
    group.terminate(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn dropping_the_handle_kills_the_tree_without_blocking() {
    let Spawned { mut child, group } = process::spawn(sh(TREE)).await.unwrap();
    let mut tree = pids(&mut child, 2).await;
    tree.push(group.pid() as i32);
    let lineage = group.lineage_var().to_string();

    drop(group);

    // The group dies at once; a background sweep finds the setsid descendant by its mark and
    // reaps the orphans: not even a zombie is left.
    eventually("every process of the dropped tree ends and is reaped", || {
        tree[..2].iter().all(|p| state(*p).is_none()) && marked(&lineage).is_empty()
    });
    assert_eq!(child.wait().await.unwrap().signal(), Some(libc::SIGKILL));
}

#[test]
fn blocking_code_spawns_and_terminates_the_same_way() {
    let mut command = std::process::Command::new("sh");
    command.args(["-c", TREE]).stdout(Stdio::piped());
    let process::SpawnedStd { mut child, group } =
        SpawnOptions::new().watchdog(false).spawn_std(command).unwrap();
    let mut lines = StdBufReader::new(child.stdout.take().unwrap()).lines();
    let mut tree: Vec<i32> =
        (0..2).map(|_| lines.next().unwrap().unwrap().trim().parse().unwrap()).collect();
    tree.push(group.pid() as i32);

    let report = group.terminate_blocking(Duration::from_secs(30));

    assert!(report.survivors.is_empty(), "{report}");
    check_tree_gone(&group, &tree);
    assert_eq!(child.wait().unwrap().signal(), Some(libc::SIGTERM));
}

#[tokio::test]
async fn a_signal_reaches_the_whole_group() {
    let Spawned { mut child, group } =
        process::spawn(sh("sleep 300 & echo $!; wait")).await.unwrap();
    let grandchild = pids(&mut child, 1).await[0];

    // Not SIGINT: a non-interactive shell starts background jobs with SIGINT ignored.
    group.signal(libc::SIGUSR1).unwrap();

    eventually("the grandchild ends on SIGUSR1", || !running(grandchild));
    child.wait().await.unwrap();
    group.terminate(Duration::from_secs(1)).await;
    let err = group.signal(libc::SIGUSR1).unwrap_err();
    assert!(err.to_string().contains("has ended"), "{err}");
}

/// Set in the environment of this test binary when it is re-run as the "host".
const HOST_ROLE: &str = "AGENT_TOOLS_SUPPORT_TEST_HOST";
const HOST_TEST: &str = "the_whole_tree_dies_when_the_host_is_sigkilled";

/// As the host: spawn the tree, report its lineage and pids on stdout, then wait to be killed.
fn act_as_host() -> ! {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let Spawned { mut child, group } = process::spawn(sh(TREE)).await.unwrap();
        let tree = pids(&mut child, 2).await;
        let mut out = std::io::stdout().lock();
        writeln!(out, "lineage {}", group.lineage_var()).unwrap();
        for pid in tree.iter().chain([&(group.pid() as i32)]) {
            writeln!(out, "pid {pid}").unwrap();
        }
        writeln!(out, "ready").unwrap();
        out.flush().unwrap();
        std::mem::forget(group);
        std::mem::forget(child);
    });
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

#[test]
fn the_whole_tree_dies_when_the_host_is_sigkilled() {
    if std::env::var_os(HOST_ROLE).is_some() {
        act_as_host();
    }
    let host = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            &crate::harness_name(module_path!(), HOST_TEST),
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(HOST_ROLE, "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut host = KillOnDrop(host);
    let mut lineage = None;
    let mut tree = Vec::new();
    for line in StdBufReader::new(host.0.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        // libtest prints `test NAME ... ` before the host's first line.
        if let Some((_, var)) = line.split_once("lineage ") {
            lineage = Some(var.to_string());
        } else if let Some(pid) = line.strip_prefix("pid ") {
            tree.push(pid.parse::<i32>().unwrap());
        } else if line == "ready" {
            break;
        }
    }
    let lineage = lineage.expect("the host reported its tree's lineage");
    assert_eq!(tree.len(), 3);
    settled(&lineage, &tree);

    host.0.kill().unwrap(); // SIGKILL: no destructor, no teardown in the host runs
    host.0.wait().unwrap();

    eventually("nothing of the killed host's tree is left", || {
        tree.iter().all(|p| !running(*p)) && marked(&lineage).is_empty()
    });
}

/// The host, killed if the test fails before it does so itself.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn a_daemon_that_left_the_group_cleared_its_environment_and_lost_its_parent_is_ended() {
    // The classic daemon: `setsid`, a cleared environment, and its parent gone (it is the
    // host's now, as the subreaper): no mark, no group, no parentage. Only the cgroup holds it.
    let script = "setsid env -i sh -c 'sleep 300 & echo $!'; exec sleep 300";
    let Spawned { mut child, group } = process::spawn(sh(script)).await.unwrap();
    let daemon = pids(&mut child, 1).await[0];
    let Some(cgroup) = cgroup_or_skip(&group) else { return };
    eventually("the daemon is the host's child, out of the group, without the mark", || {
        let stat = std::fs::read_to_string(format!("/proc/{daemon}/stat")).unwrap_or_default();
        let fields: Vec<&str> =
            stat.get(stat.rfind(')').unwrap_or(0) + 2..).unwrap_or("").split(' ').collect();
        fields.get(1) == Some(&std::process::id().to_string().as_str())
            && fields.get(2) != Some(&group.pid().to_string().as_str())
            && command_name(daemon).as_deref() == Some("sleep")
            && !marked(group.lineage_var()).contains(&daemon)
    });
    assert!(group.members().contains(&(daemon as u32)), "found through the cgroup");

    let report = group.terminate(Duration::from_secs(30)).await;

    assert!(report.survivors.is_empty(), "{report}");
    assert!(!running(daemon), "the daemon survived: {report}");
    assert_eq!(state(daemon), None, "the daemon was not reaped");
    child.wait().await.unwrap();
    drop(group);
    assert!(!cgroup.exists(), "the cgroup {} is left", cgroup.display());
}

#[tokio::test]
async fn a_program_that_joins_its_cgroup_while_it_boots_keeps_what_it_starts_later_in_it() {
    // What the kernels do: the runner joins after its exec and is given input only once the
    // spawn has returned, so the daemon its first command starts is born in the cgroup.
    daemon_started_after_the_join_is_in_the_cgroup(CgroupJoin::AfterStart).await;
}

#[tokio::test]
async fn a_program_that_joins_its_cgroup_on_a_helper_thread_keeps_what_it_starts_after_the_join() {
    // What the debug adapters do: the spawn returns at once, the adapter boots while it is
    // moved, and it is given its `launch` only once the join is done.
    daemon_started_after_the_join_is_in_the_cgroup(CgroupJoin::WhileStarting).await;
}

/// Spawns with `join` a program that, given input, starts a daemon outside its group and
/// environment; the daemon is found through the cgroup and ended with the tree.
async fn daemon_started_after_the_join_is_in_the_cgroup(join: CgroupJoin) {
    let script = "read go; setsid env -i sh -c 'sleep 300 & echo $!'; exec sleep 300";
    let mut command = sh(script);
    command.stdin(Stdio::piped());
    let Spawned { mut child, group } =
        SpawnOptions::new().cgroup_join(join).spawn(command).await.unwrap();
    let Some(cgroup) = cgroup_or_skip(&group) else { return };
    group.joined_cgroup().await;
    let procs = std::fs::read_to_string(cgroup.join("cgroup.procs")).unwrap();
    assert!(
        procs.lines().any(|l| l.trim() == group.pid().to_string()),
        "the leader is in its cgroup once the join is done ({join:?}): {procs:?}"
    );

    child.stdin.take().unwrap().write_all(b"go\n").await.unwrap();
    let daemon = pids(&mut child, 1).await[0];
    assert!(group.members().contains(&(daemon as u32)), "the daemon is found through the cgroup");
    let report = group.terminate(Duration::from_secs(30)).await;

    assert!(report.survivors.is_empty(), "{report}");
    assert!(!running(daemon), "the daemon survived: {report}");
    child.wait().await.unwrap();
    drop(group);
    assert!(!cgroup.exists(), "the cgroup {} is left", cgroup.display());
}

/// The tree's cgroup folder; None (after a loud skip) where none can be made outside CI.
#[allow(clippy::print_stderr)] // the loud skip outside CI
fn cgroup_or_skip(group: &ProcessGroup) -> Option<std::path::PathBuf> {
    let cgroup = group.cgroup().map(std::path::Path::to_path_buf);
    if cgroup.is_none() {
        let ci = std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "false");
        assert!(!ci, "CI has no writable cgroup v2 hierarchy for the tree");
        eprintln!(
            "\n!!! SKIPPED: no writable cgroup v2 hierarchy here (root or a delegated subtree) !!!\n"
        );
    }
    cgroup
}
