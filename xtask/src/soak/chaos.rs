//! The soak's chaos thread: seeded faults on the hosts' children (SIGKILL, SIGSTOP then SIGCONT),
//! dropped connections and a full disk under a project and the journal, each logged with its
//! time, pid and command; and the sampler of the hosts' descriptors and memory.

use std::{
    collections::BTreeMap,
    io::Write,
    path::Path,
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
    } else if has("soak_worker") {
        Some(Family::Workers)
    } else if has("debugpy") || has("loop.py") || has("lldb") || has("native/loop") {
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
    /// Families hit by a fault they have not recovered from yet.
    pub(super) pending: BTreeMap<Family, Pending>,
    pub(super) drop_requested: bool,
    /// Descriptor counts of the current host: (seconds since the start, count).
    pub(super) fds: Vec<(f64, usize)>,
    /// Resident memory of the current host: (seconds since the start, kB).
    pub(super) rss: Vec<(f64, u64)>,
    /// Since when the small disk is full (seconds since the start), while it is.
    pub(super) disk_full_since: Option<f64>,
}

/// A fault a family has not recovered from yet.
#[derive(Debug)]
pub(super) struct Pending {
    /// From when calls count against its recovery (seconds since the start).
    pub(super) since: f64,
    pub(super) fault: String,
    pub(super) cause: Cause,
    /// Calls of the family that failed since.
    pub(super) failures: u32,
}

#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub(super) enum Cause {
    /// A process of the family was killed or stopped.
    Process,
    /// The small disk was full; counting starts once it has room again.
    FullDisk,
}

impl SessionState {
    /// A process fault: the family's errors from now on are put down to it until it recovers
    /// (an earlier fault not yet recovered keeps the count).
    pub(super) fn process_hit(&mut self, family: Family, at: f64, fault: &str) {
        let pending =
            Pending { since: at, fault: fault.to_string(), cause: Cause::Process, failures: 0 };
        self.pending.entry(family).or_insert(pending);
    }

    /// The disk is full from `at`. A full disk not yet recovered from is superseded: the calls
    /// this fill refuses are not the earlier fill's failures to recover.
    pub(super) fn disk_filled(&mut self, at: f64) {
        self.disk_full_since = Some(at);
        if self.pending.get(&Family::Files).is_some_and(|p| p.cause == Cause::FullDisk) {
            self.pending.remove(&Family::Files);
        }
    }

    /// The disk filled at `at` has room again at `freed`: files must recover from then on.
    pub(super) fn disk_freed(&mut self, at: f64, freed: f64) {
        self.disk_full_since = None;
        let fault = format!("the full disk at {at:.3}");
        let pending = Pending { since: freed, fault, cause: Cause::FullDisk, failures: 0 };
        self.pending.entry(Family::Files).or_insert(pending);
    }
}

fn lock(state: &Mutex<SessionState>) -> std::sync::MutexGuard<'_, SessionState> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}

/// Injects faults until `stop`: every 1.5 to 6 s, a SIGKILL (55%), a SIGSTOP held for 0.2 to
/// 3 s then SIGCONT (30%), a full `disk` for 1 to 6 s (5%, when there is one), or a dropped
/// connection (10%, 15% without a disk).
pub(super) fn run(
    report: &Report,
    sessions: &[Mutex<SessionState>],
    prefix: &str,
    seed: u64,
    disk: Option<&Path>,
    stop: &AtomicBool,
) {
    let mut rng = Rng::new(seed ^ 0xC4A0_5EED);
    while !stop.load(Ordering::Relaxed) {
        if pause(rng.millis(1500, 6000), stop) {
            return;
        }
        let roll = rng.below(100);
        if let (Some(disk), 85..90) = (disk, roll) {
            let held = rng.millis(1000, 6000);
            fill_disk(report, sessions, disk, held);
            continue;
        }
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
        // The family's errors from now on are put down to this fault until it recovers.
        let at = report.elapsed().as_secs_f64();
        let held = rng.millis(200, 3000);
        let line = if roll < 55 {
            format!("SIGKILL {what}")
        } else {
            format!("SIGSTOP {what} for {held:?}")
        };
        if let (Some(family), Some(session)) = (family, session) {
            lock(&sessions[session]).process_hit(family, at, &line);
        }
        if roll < 55 {
            report.fault("SIGKILL", &line);
            signal(target.pid, libc::SIGKILL);
        } else {
            report.fault("SIGSTOP+SIGCONT", &line);
            signal(target.pid, libc::SIGSTOP);
            std::thread::sleep(held);
            signal(target.pid, libc::SIGCONT);
        }
    }
}

/// Fills the small disk with a file for `held`, then removes it: the families writing there
/// (files, the journal) must answer with clear errors meanwhile and recover after.
fn fill_disk(report: &Report, sessions: &[Mutex<SessionState>], disk: &Path, held: Duration) {
    let filler = disk.join("soak-filler");
    let at = report.elapsed().as_secs_f64();
    report.fault("full disk", &format!("fill {} for {held:?}", disk.display()));
    if let Ok(mut file) = std::fs::File::create(&filler) {
        let (big, small) = (vec![0u8; 1 << 20], vec![0u8; 4096]);
        while file.write_all(&big).is_ok() {}
        while file.write_all(&small).is_ok() {}
        let _ = file.flush();
    }
    for state in sessions {
        lock(state).disk_filled(at);
    }
    std::thread::sleep(held);
    let _ = std::fs::remove_file(&filler);
    let freed = report.elapsed().as_secs_f64();
    report.note(&format!("the disk has room again (full since {at:.3})"));
    for state in sessions {
        lock(state).disk_freed(at, freed);
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
            let rss = rss_kb(pid);
            if rss > 0 {
                state.rss.push((at, rss));
            }
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

/// How long a host warms up (starts its servers and kernels) before its memory is judged.
const WARM_UP_SECONDS: f64 = 120.0;

/// A host's memory after warm-up and at its end, in kB: the means of the first and the last
/// quarter of its samples after [`WARM_UP_SECONDS`], and the seconds they span; `None` for a
/// host that lived under 5 minutes after warm-up.
fn memory_trend(rss: &[(f64, u64)]) -> Option<(u64, u64, f64)> {
    let first = rss.first()?.0;
    let settled: Vec<u64> =
        rss.iter().filter(|(t, _)| *t >= first + WARM_UP_SECONDS).map(|(_, kb)| *kb).collect();
    let span = rss.last().map_or(0.0, |(t, _)| *t) - first - WARM_UP_SECONDS;
    if span < 300.0 || settled.len() < 8 {
        return None;
    }
    let quarter = settled.len() / 4;
    let mean = |kbs: &[u64]| kbs.iter().sum::<u64>() / kbs.len().max(1) as u64;
    Some((mean(&settled[..quarter]), mean(&settled[settled.len() - quarter..]), span))
}

/// A leak: growth of more than half the start and more than 64 MB.
fn memory_grew(start_kb: u64, end_kb: u64) -> bool {
    let growth = end_kb.saturating_sub(start_kb);
    growth > start_kb / 2 && growth > 64 * 1024
}

/// Judges a host's memory on its trend after warm-up ([`memory_trend`], [`memory_grew`]), not
/// on a threshold of time; records its peak and its start and end figures.
pub(super) fn judge_memory(report: &Report, rss: &[(f64, u64)], whose: &str, kind: &str) {
    let peak = rss.iter().map(|(_, kb)| *kb).max().unwrap_or(0);
    report.peak(&format!("peak memory of a {kind} (MB)"), peak / 1024);
    let Some((start, end, span)) = memory_trend(rss) else { return };
    report.note(&format!(
        "{whose}: memory after warm-up {} MB, at the end {} MB (means of the first and last quarter, {span:.0} s)",
        start / 1024,
        end / 1024
    ));
    report.gauge(&format!("memory of a {kind}, after warm-up (MB)"), start / 1024);
    report.gauge(&format!("memory of a {kind}, at the end (MB)"), end / 1024);
    if memory_grew(start, end) {
        report.broken(&format!(
            "{whose}: memory grew from {} MB to {} MB after warm-up",
            start / 1024,
            end / 1024
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Samples every 2 s for `seconds`, of `kb(t)`.
    fn samples(seconds: u64, kb: impl Fn(f64) -> u64) -> Vec<(f64, u64)> {
        (0..seconds / 2).map(|i| (i as f64 * 2.0, kb(i as f64 * 2.0))).collect()
    }

    #[test]
    fn a_host_whose_memory_only_warms_up_is_flat() {
        // Climbs from 40 to 200 MB in its first two minutes, then holds with noise.
        let rss = samples(3600, |t| {
            if t < 120.0 { 40_000 + (t as u64) * 1_300 } else { 200_000 + (t as u64 % 7) * 900 }
        });
        let (start, end, _) = memory_trend(&rss).expect("judged");
        assert!(!memory_grew(start, end), "{start} -> {end}");
    }

    #[test]
    fn a_host_that_keeps_growing_after_warm_up_leaks() {
        // 40 MB, then 60 kB more every second: about 250 MB more over the hour.
        let rss = samples(3600, |t| 40_000 + (t as u64) * 60);
        let (start, end, _) = memory_trend(&rss).expect("judged");
        assert!(memory_grew(start, end), "{start} -> {end}");
    }

    #[test]
    fn a_short_lived_host_is_not_judged() {
        assert_eq!(memory_trend(&samples(300, |t| 40_000 + (t as u64) * 1_000)), None);
    }
}
