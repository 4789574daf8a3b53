//! Model-facing text for the roster's reports.

use std::time::Duration;

use crate::roster::{
    KillReport, RosterView, SendReport, SpawnReport, WaitReport, WorkerResult, WorkerState,
    WorkerView,
};

pub use agent_tools_support::duration::human as seconds;

fn secs(value: f64) -> String {
    seconds(Duration::from_secs_f64(value.max(0.0)))
}

fn who(w: &WorkerView) -> String {
    format!("\"{}\" ({} worker, {} ceiling)", w.label, w.tier.as_str(), w.ceiling.as_str())
}

fn block(title: &str, text: &str) -> String {
    let text = text.trim_end();
    if text.is_empty() { format!("\n{title}: (none)") } else { format!("\n{title}:\n{text}") }
}

/// The result of a settled attempt.
pub fn render_result(id: &str, result: &WorkerResult) -> String {
    let verb = match result.state {
        WorkerState::Completed => "completed",
        WorkerState::Failed => "failed",
        WorkerState::Killed => "was killed",
        WorkerState::TimedOut => "timed out",
        _ => "stopped",
    };
    let mut out = format!(
        "{id} {verb} after {} (attempt {}, briefing revision {}): {}.",
        secs(result.ran_seconds),
        result.attempt,
        result.revision,
        result.detail
    );
    let title = match result.state {
        WorkerState::Completed => "Result",
        WorkerState::Failed => "Output",
        _ => "Output so far",
    };
    if let Some(note) = &result.output_note {
        out.push_str(&format!("\n{note}"));
    }
    out.push_str(&block(title, &result.output));
    if let Some(stderr) = &result.stderr {
        out.push_str(&block("stderr (last part)", stderr));
    }
    out
}

pub fn render_spawn(report: &SpawnReport) -> String {
    let w = &report.worker;
    match report.queue_position {
        Some(position) => format!(
            "{} queued: {} waits for a slot ({}/{} in use; place {position} in the queue). It starts \
             by itself when a slot frees; vibe_wait {} waits for it.",
            w.id,
            who(w),
            report.slots_used,
            report.slots_max,
            w.id
        ),
        None if w.state.is_settled() => {
            let mut out = format!("{} could not run: {}", w.id, who(w));
            if let Some(result) = &w.result {
                out.push('\n');
                out.push_str(&render_result(&w.id, result));
            }
            out
        }
        None => format!(
            "{} started: {}, briefing revision {}. It runs in the background (slots {}/{} in use); \
             collect it with vibe_wait {}, or see every worker with vibe_list.",
            w.id,
            who(w),
            w.revision,
            report.slots_used,
            report.slots_max,
            w.id
        ),
    }
}

pub fn render_send(report: &SendReport) -> String {
    let w = &report.worker;
    let mut out = match (&report.interrupted, report.previous_state) {
        (Some(interrupted), _) => {
            let mut out = format!(
                "{} restarted with briefing revision {} (attempt {}). The running attempt {} was \
                 interrupted after {} ({}); whatever it was doing is abandoned and may be half done, \
                 so check what it touched.",
                w.id,
                w.revision,
                w.attempt,
                interrupted.attempt,
                secs(interrupted.ran_seconds),
                interrupted.stop.detail
            );
            out.push_str(&block("Its output when interrupted", &interrupted.output_so_far));
            out
        }
        (None, WorkerState::Queued) => format!(
            "{} is still queued; it will start with briefing revision {}. Nothing was interrupted.",
            w.id, w.revision
        ),
        (None, previous) if w.state == WorkerState::Queued => format!(
            "{} had {}; attempt {} with briefing revision {} is queued until a slot frees. Nothing \
             was interrupted.",
            w.id,
            previous.as_str(),
            w.attempt + 1,
            w.revision
        ),
        (None, previous) if previous.is_settled() => format!(
            "{} had {}; started attempt {} with briefing revision {}. Nothing was interrupted.",
            w.id,
            previous.as_str(),
            w.attempt,
            w.revision
        ),
        (None, _) => format!(
            "{} took briefing revision {}, but it was not restarted: it is {} now.",
            w.id,
            w.revision,
            w.state.as_str()
        ),
    };
    if let Some(from) = report.ceiling_lowered_from {
        out.push_str(&format!(
            "\nIts ceiling was lowered from {} to {}: this surface allows no more.",
            from.as_str(),
            w.ceiling.as_str()
        ));
    }
    out
}

fn recent(w: &WorkerView) -> String {
    w.recent_output.as_deref().map_or_else(String::new, |text| block("Recent output", text))
}

pub fn render_wait(report: &WaitReport) -> String {
    let w = &report.worker;
    if let (true, Some(result)) = (w.state.is_settled(), &w.result) {
        return render_result(&w.id, result);
    }
    let last = w
        .last_activity_seconds_ago
        .map_or_else(String::new, |s| format!(", last output {} ago", secs(s)));
    if report.stalled {
        return format!(
            "{} stalled: no output for {} (it has run {}); the wait returned early. It is still \
             running: wait again if silence is normal for its task, vibe_send {} with guidance to \
             restart it, or vibe_kill {}.{}",
            w.id,
            secs(w.last_activity_seconds_ago.unwrap_or_default()),
            secs(w.elapsed_seconds),
            w.id,
            w.id,
            recent(w)
        );
    }
    match w.state {
        WorkerState::Queued => format!(
            "{} is still queued after a {} wait (not an error): every slot is in use. It starts \
             when one frees; wait again, or vibe_kill a worker you no longer need.",
            w.id,
            secs(report.waited_seconds)
        ),
        _ => format!(
            "{} is still {} after a {} wait (not an error): it has run {}{last}. Wait again \
             (longer waits poll less), or vibe_send / vibe_kill it.{}",
            w.id,
            w.state.as_str(),
            secs(report.waited_seconds),
            secs(w.elapsed_seconds),
            recent(w)
        ),
    }
}

pub fn render_kill(report: &KillReport) -> String {
    let w = &report.worker;
    let slots = format!("slots {}/{} in use", report.slots_used, report.slots_max);
    match report.previous_state {
        WorkerState::Queued => {
            format!("{} removed from the queue; it never started ({slots}).", w.id)
        }
        WorkerState::Running | WorkerState::Stalled => {
            if w.state == WorkerState::Killed {
                let how = report.stop.as_ref().map_or("stopped", |s| s.detail.as_str());
                let mut out = format!(
                    "{} killed after {}: {how}. Its slot is free ({slots}).",
                    w.id,
                    secs(w.elapsed_seconds)
                );
                if let Some(result) = &w.result {
                    out.push_str(&block("Output so far", &result.output));
                }
                out
            } else {
                let mut out = format!(
                    "{} had just settled by itself as {}; nothing was left to stop ({slots}).",
                    w.id,
                    w.state.as_str()
                );
                if let Some(result) = &w.result {
                    out.push('\n');
                    out.push_str(&render_result(&w.id, result));
                }
                out
            }
        }
        previous => format!(
            "{} had already settled as {}; nothing to stop (vibe_kill on a settled worker does \
             nothing) ({slots}).",
            w.id,
            previous.as_str()
        ),
    }
}

fn preview(text: &str) -> String {
    let line = text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
    let short: String = line.chars().take(160).collect();
    if short.len() < line.len() { format!("{short}…") } else { short }
}

pub fn render_list(view: &RosterView) -> String {
    if view.workers.is_empty() {
        return format!(
            "No workers in this run yet (slots {}/{} in use). vibe_spawn starts one.",
            view.slots_used, view.slots_max
        );
    }
    let mut out = format!(
        "{} worker{} (slots {}/{} in use; worker time {} of the run's {}):",
        view.workers.len(),
        if view.workers.len() == 1 { "" } else { "s" },
        view.slots_used,
        view.slots_max,
        secs(view.worker_time_used_seconds),
        secs(view.run_budget_seconds)
    );
    for w in &view.workers {
        out.push_str(&format!(
            "\n{} {} · {} · \"{}\" · {} ceiling · revision {} · attempt {}",
            w.id,
            w.state.as_str(),
            w.tier.as_str(),
            w.label,
            w.ceiling.as_str(),
            w.revision,
            w.attempt
        ));
        match w.state {
            WorkerState::Queued => out.push_str(&format!(
                " · waiting {} for a slot",
                secs(w.queued_seconds.unwrap_or_default())
            )),
            WorkerState::Running | WorkerState::Stalled => {
                out.push_str(&format!(" · running {}", secs(w.elapsed_seconds)));
                if let Some(ago) = w.last_activity_seconds_ago {
                    out.push_str(&format!(" · last output {} ago", secs(ago)));
                }
            }
            _ => out.push_str(&format!(" · ran {}", secs(w.elapsed_seconds))),
        }
        if let Some(result) = &w.result {
            out.push_str(&format!(
                "\n   last result ({}, {}): {}",
                result.state.as_str(),
                result.detail,
                match preview(&result.output) {
                    p if p.is_empty() => "(no output)".to_string(),
                    p => p,
                }
            ));
        }
    }
    out.push_str("\nFull results: vibe_wait <id>.");
    out
}
