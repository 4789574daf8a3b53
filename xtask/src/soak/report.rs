//! The soak's log and tallies: every call, fault, error and broken invariant with its time since
//! the start, written to a log file as it happens and summed up at the end.

use std::{
    collections::BTreeMap,
    fs::File,
    io::Write,
    path::PathBuf,
    sync::Mutex,
    time::{Duration, Instant},
};

/// What the soak saw, shared by its threads.
pub(super) struct Report {
    start: Instant,
    pub(super) path: PathBuf,
    inner: Mutex<Tallies>,
}

#[derive(Default)]
struct Tallies {
    lines: Vec<String>,
    file: Option<File>,
    calls: BTreeMap<String, u64>,
    faults: BTreeMap<String, u64>,
    errors: BTreeMap<String, u64>,
    /// Broken invariants, each with the index of its line in `lines`.
    broken: Vec<(usize, String)>,
    /// Gauges: the largest value seen (descriptors, memory), or the last one set.
    peaks: BTreeMap<String, u64>,
}

/// What a line is, for the console: faults and broken invariants are shown as they happen.
#[derive(PartialEq)]
enum Loud {
    Quiet,
    Shown,
}

impl Report {
    pub(super) fn new(path: PathBuf) -> Report {
        let file = File::create(&path).ok();
        let inner = Mutex::new(Tallies { file, ..Tallies::default() });
        Report { start: Instant::now(), path, inner }
    }

    pub(super) fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }

    #[allow(clippy::print_stderr)]
    fn write(&self, tallies: &mut Tallies, line: &str, loud: Loud) -> usize {
        let line = format!("[{:8.3}] {line}", self.start.elapsed().as_secs_f64());
        if let Some(file) = tallies.file.as_mut() {
            let _ = writeln!(file, "{line}");
        }
        if loud == Loud::Shown {
            eprintln!("{line}");
        }
        tallies.lines.push(line);
        tallies.lines.len() - 1
    }

    fn with<T>(&self, f: impl FnOnce(&mut Tallies) -> T) -> T {
        let mut tallies = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut tallies)
    }

    pub(super) fn note(&self, line: &str) {
        self.with(|t| self.write(t, line, Loud::Quiet));
    }

    pub(super) fn call(&self, tool: &str, line: &str) {
        self.with(|t| {
            *t.calls.entry(tool.to_string()).or_default() += 1;
            self.write(t, line, Loud::Quiet);
        });
    }

    pub(super) fn fault(&self, kind: &str, line: &str) {
        self.with(|t| {
            *t.faults.entry(kind.to_string()).or_default() += 1;
            self.write(t, &format!("FAULT {line}"), Loud::Shown);
        });
    }

    pub(super) fn error(&self, kind: &str, line: &str) {
        self.with(|t| {
            *t.errors.entry(kind.to_string()).or_default() += 1;
            self.write(t, &format!("error {line}"), Loud::Quiet);
        });
    }

    /// Keeps the largest `value` of the gauge `name`.
    pub(super) fn peak(&self, name: &str, value: u64) {
        self.with(|t| {
            let peak = t.peaks.entry(name.to_string()).or_default();
            *peak = (*peak).max(value);
        });
    }

    /// Sets the gauge `name` to `value` (the last one set is shown).
    pub(super) fn gauge(&self, name: &str, value: u64) {
        self.with(|t| {
            t.peaks.insert(name.to_string(), value);
        });
    }

    pub(super) fn broken(&self, line: &str) {
        self.with(|t| {
            let at = self.write(t, &format!("BROKEN {line}"), Loud::Shown);
            t.broken.push((at, line.to_string()));
        });
    }

    /// Prints the summary; whether no invariant broke.
    #[allow(clippy::print_stdout)]
    pub(super) fn summary(&self, seed: u64) -> bool {
        self.with(|t| {
            let total: u64 = t.calls.values().sum();
            println!("\nsoak summary (seed {seed}, {:.0} s)", self.start.elapsed().as_secs_f64());
            println!("calls made: {total}");
            for (tool, n) in &t.calls {
                println!("  {tool}: {n}");
            }
            println!("faults injected: {}", t.faults.values().sum::<u64>());
            for (kind, n) in &t.faults {
                println!("  {kind}: {n}");
            }
            println!("errors: {}", t.errors.values().sum::<u64>());
            for (kind, n) in &t.errors {
                println!("  {n:4} {kind}");
            }
            for (name, value) in &t.peaks {
                println!("{name}: {value}");
            }
            println!("broken invariants: {}", t.broken.len());
            for (at, what) in &t.broken {
                println!("\n  BROKEN {what}\n  (seed {seed}; the log around it:)");
                for line in &t.lines[at.saturating_sub(8)..(*at + 3).min(t.lines.len())] {
                    println!("    {line:.300}");
                }
            }
            println!("full log: {}", self.path.display());
            t.broken.is_empty()
        })
    }
}

/// A short, stable name for an error: its first line (past a kernel's start banner), numbers
/// blanked, cut at 90 characters.
pub(super) fn error_kind(tool: &str, text: &str) -> String {
    let first = text
        .lines()
        .find(|l| !l.trim().is_empty() && !l.starts_with("[started "))
        .unwrap_or("(empty)");
    let blanked: String =
        first.chars().map(|c| if c.is_ascii_digit() { '#' } else { c }).take(90).collect();
    format!("{tool}: {blanked}")
}
