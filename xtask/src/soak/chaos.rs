//! The soak's chaos thread: seeded faults on the hosts' children (SIGKILL, SIGSTOP then SIGCONT)
//! and dropped connections, each logged with its time, pid and command; and the sampler of the
//! hosts' descriptors and memory.

use std::{
    collections::BTreeMap,
    sync::{
        Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use super::{
    client::MARKER_VAR,
    report::Report,
    workload::{Family, Rng},
};

/// One live process of the soak (not a zombie), found by its marker.
pub(super) struct Marked {
    pub(super) pid: u32,
    pub(super) marker: String,
    pub(super) command: String,
}

/// Every live process whose marker starts with `prefix`.
pub(super) fn marked(prefix: &str) -> Vec<Marked> {
    let needle = format!("{MARKER_VAR}={prefix}");
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else { continue };
        let Some(var) = environ.split(|&b| b == 0).find(|v| v.starts_with(needle.as_bytes()))
        else {
            continue;
        };
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        if stat.split(") ").nth(1).is_some_and(|rest| rest.starts_with('Z')) {
            continue;
        }
        let command = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let command = String::from_utf8_lossy(&command).replace(['\0', '\n'], " ");
        let command = command.trim().to_string();
        let marker = String::from_utf8_lossy(&var[MARKER_VAR.len() + 1..]).into_owned();
        found.push(Marked { pid, marker, command });
    }
    found
}

/// Which family a child process serves, from its command line.
pub(super) fn family_of(command: &str) -> Option<Family> {
    let has = |s: &str| command.contains(s);
    if has("langserver") || has("pyright") || has("clangd") {
        Some(Family::Lsp)
    } else if has("debugpy") || has("loop.py") || has("lldb") {
        Some(Family::Debug)
    } else if has("kernel") || has("python") || has("node") {
        Some(Family::Eval)
    } else {
        None
    }
}

fn is_watchdog(command: &str) -> bool {
    command.starts_with("sh -c trap ''")
}

/// What the sessions share with the chaos thread.
pub(super) struct SessionState {
    /// The marker of the session's current host (its processes carry it).
    pub(super) marker: String,
    pub(super) host_pid: u32,
    /// Families whose process was hit: when (seconds since the start), by what, and how many
    /// calls of the family failed since.
    pub(super) pending: BTreeMap<Family, (f64, String, u32)>,
    pub(super) drop_requested: bool,
    /// Descriptor counts of the current host: (seconds since the start, count).
    pub(super) fds: Vec<(f64, usize)>,
    pub(super) peak_rss_kb: u64,
}

fn lock(state: &Mutex<SessionState>) -> std::sync::MutexGuard<'_, SessionState> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}

/// Injects faults until `stop`: every 1.5 to 6 s, a SIGKILL (55%), a SIGSTOP held for 0.2 to
/// 3 s then SIGCONT (30%), or a dropped connection (15%).
pub(super) fn run(
    report: &Report,
    sessions: &[Mutex<SessionState>],
    prefix: &str,
    seed: u64,
    stop: &AtomicBool,
) {
    let mut rng = Rng::new(seed ^ 0xC4A0_5EED);
    while !stop.load(Ordering::Relaxed) {
        if pause(rng.millis(1500, 6000), stop) {
            return;
        }
        let roll = rng.below(100);
        if roll >= 85 {
            let index = rng.below(sessions.len() as u64) as usize;
            lock(&sessions[index]).drop_requested = true;
            report.fault("dropped connection", &format!("drop the connection of session {index}"));
            continue;
        }
        let hosts: Vec<u32> = sessions.iter().map(|s| lock(s).host_pid).collect();
        let targets: Vec<Marked> =
            marked(prefix).into_iter().filter(|m| !hosts.contains(&m.pid)).collect();
        if targets.is_empty() {
            continue;
        }
        // The trees' watchdogs (tiny `sh`) are many; a real OOM killer rarely picks them.
        let mut target = rng.pick(&targets);
        if is_watchdog(&target.command) && rng.below(3) != 0 {
            let others: Vec<&Marked> =
                targets.iter().filter(|m| !is_watchdog(&m.command)).collect();
            if !others.is_empty() {
                target = others[rng.below(others.len() as u64) as usize];
            }
        }
        let family = family_of(&target.command);
        let session = sessions.iter().position(|s| lock(s).marker == target.marker);
        let what = format!(
            "pid {} of session {} [{}]: {:.160}",
            target.pid,
            session.map_or("?".into(), |s| s.to_string()),
            match family {
                Some(family) => format!("{family:?}").to_lowercase(),
                None if is_watchdog(&target.command) => "watchdog".into(),
                None => "other".into(),
            },
            target.command
        );
        let kind = if roll < 55 {
            report.fault("SIGKILL", &format!("SIGKILL {what}"));
            signal(target.pid, libc::SIGKILL);
            "SIGKILL"
        } else {
            let held = rng.millis(200, 3000);
            report.fault("SIGSTOP+SIGCONT", &format!("SIGSTOP {what} for {held:?}"));
            signal(target.pid, libc::SIGSTOP);
            std::thread::sleep(held);
            signal(target.pid, libc::SIGCONT);
            "SIGSTOP"
        };
        if let (Some(family), Some(session), "SIGKILL") = (family, session, kind) {
            let at = report.elapsed().as_secs_f64();
            lock(&sessions[session]).pending.entry(family).or_insert((at, what, 0));
        }
    }
}

/// Sleeps `span` in short steps; whether `stop` was set meanwhile.
fn pause(span: Duration, stop: &AtomicBool) -> bool {
    let steps = (span.as_millis() / 100).max(1);
    for _ in 0..steps {
        if stop.load(Ordering::Relaxed) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    stop.load(Ordering::Relaxed)
}

pub(super) fn signal(pid: u32, signal: i32) {
    // SAFETY: kill(2) on a process of the soak, found by its marker.
    unsafe { libc::kill(pid as i32, signal) };
}

/// Samples each host's open descriptors and memory every 2 s until `stop`.
pub(super) fn sample(report: &Report, sessions: &[Mutex<SessionState>], stop: &AtomicBool) {
    while !pause(Duration::from_secs(2), stop) {
        for state in sessions {
            let mut state = lock(state);
            let pid = state.host_pid;
            let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { continue };
            let at = report.elapsed().as_secs_f64();
            state.fds.push((at, fds.count()));
            state.peak_rss_kb = state.peak_rss_kb.max(rss_kb(pid));
        }
    }
}

fn rss_kb(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// Whether a host's descriptor counts stayed bounded: after its first 30 s, no sample above
/// three times the first one then, plus 100. `Err` names the first sample over the bound.
pub(super) fn fds_bounded(fds: &[(f64, usize)]) -> Result<usize, String> {
    let Some(start) = fds.first().map(|(t, _)| *t) else { return Ok(0) };
    let settled: Vec<&(f64, usize)> = fds.iter().filter(|(t, _)| *t >= start + 30.0).collect();
    let peak = fds.iter().map(|(_, n)| *n).max().unwrap_or(0);
    let Some((_, base)) = settled.first() else { return Ok(peak) };
    let bound = base * 3 + 100;
    match settled.iter().find(|(_, n)| *n > bound) {
        Some((t, n)) => {
            Err(format!("{n} descriptors at {t:.0} s, over {bound} (3 x {base} + 100)"))
        }
        None => Ok(peak),
    }
}
