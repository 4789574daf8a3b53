//! Model-facing text for each outcome: short, factual, and naming the ids to use next.

use std::fmt::Write as _;

use agent_tools_support::words::count;

use agent_tools_support::duration::human_seconds;

use crate::{adapters::AdapterReport, output::OutputChunk, response::*};

/// Renders `outcome` as the text the model reads.
pub fn render(outcome: &DebugOutcome) -> String {
    let mut out = String::new();
    match outcome {
        DebugOutcome::Adapters { adapters } => render_adapters(&mut out, adapters),
        DebugOutcome::Status(s) => render_status(&mut out, s),
        DebugOutcome::Breakpoints(b) => render_breakpoints_set(&mut out, b),
        DebugOutcome::Started(s) => render_started(&mut out, s),
        DebugOutcome::Run(state) => render_run(&mut out, state),
        DebugOutcome::Threads { threads, more } => render_threads(&mut out, threads, *more),
        DebugOutcome::Stack(s) => render_stack(&mut out, s),
        DebugOutcome::Scopes { frame_id, scopes } => render_scopes(&mut out, *frame_id, scopes),
        DebugOutcome::Variables(v) => render_variables(&mut out, v),
        DebugOutcome::Evaluate(e) => render_variable(&mut out, &e.result, ""),
        DebugOutcome::SetVariable(v) => {
            let _ = writeln!(out, "Set:");
            render_variable(&mut out, v, "");
        }
        DebugOutcome::Input(i) => render_input(&mut out, i),
        DebugOutcome::Output(o) => render_output_view(&mut out, o),
        DebugOutcome::Terminated(t) => render_teardown(&mut out, t),
        DebugOutcome::Trace(t) => render_trace(&mut out, t),
        DebugOutcome::StoppedMeanwhile { stop, then } => {
            render_snapshot(&mut out, stop);
            let _ = writeln!(out, "\nThen, at this stop:");
            out.push_str(&render(then));
        }
    }
    out
}

fn render_status(out: &mut String, s: &StatusView) {
    match &s.session {
        None => {
            let _ = writeln!(
                out,
                "No debug session{}.",
                s.last_end.as_ref().map(|e| format!(" ({e})")).unwrap_or_default()
            );
        }
        Some(v) => {
            let _ = writeln!(
                out,
                "Session: {} {} with {}{}; ends in {} at the latest.",
                v.request,
                v.program,
                v.adapter.id(),
                v.debuggee_pid.map(|p| format!(", program pid {p}")).unwrap_or_default(),
                human_seconds(v.ttl_seconds_left)
            );
            match (&s.stop, s.state.as_str()) {
                (Some(_), _) if s.snapshot.is_some() => {
                    if let Some(snapshot) = &s.snapshot {
                        render_snapshot(out, snapshot);
                    }
                }
                (Some(stop), _) => {
                    let _ = writeln!(
                        out,
                        "Stopped at stop {} ({}){}{}.",
                        stop.stop,
                        stop.reason,
                        stop.place.as_ref().map(|p| format!(" in {p}")).unwrap_or_default(),
                        stop.thread_id.map(|t| format!(", thread {t}")).unwrap_or_default()
                    );
                }
                (None, "exited") => match &s.ended_by {
                    Some(how) => {
                        let _ = writeln!(out, "The program ended: {how}.");
                    }
                    None => {
                        let _ = writeln!(
                            out,
                            "The program exited{}.",
                            s.exit_code.map(|c| format!(" with code {c}")).unwrap_or_default()
                        );
                    }
                },
                (None, "adapter_gone") => {
                    let _ = writeln!(out, "The adapter is gone; `terminate`, then `launch` again.");
                }
                (None, _) => {
                    let _ = writeln!(
                        out,
                        "The program is running{}.",
                        s.watching
                            .as_ref()
                            .map(|w| format!("; a watch waits until {w}"))
                            .unwrap_or_default()
                    );
                }
            }
        }
    }
    let _ = writeln!(out, "Breakpoints set: {}.", s.breakpoints);
    if s.unread_output > 0 {
        let _ = writeln!(out, "Unread output: {} entries (`output`).", s.unread_output);
    }
}

fn render_breakpoints(out: &mut String, bps: &[BreakpointView]) {
    for b in bps {
        let place = match b.line {
            Some(line) if line != b.requested => {
                format!("{}:{} (moved to line {line})", b.file, b.requested)
            }
            _ => format!("{}:{}", b.file, b.requested),
        };
        let _ = writeln!(
            out,
            "  {place}{}: {}{}",
            breakpoint_settings(b),
            if b.verified { "verified" } else { "not verified" },
            b.message.as_ref().map(|m| format!(" ({m})")).unwrap_or_default()
        );
    }
}

/// ` [if x > 3, hits 3, logs "…"]`, or nothing for a plain breakpoint.
fn breakpoint_settings(b: &BreakpointView) -> String {
    let mut parts = Vec::new();
    if let Some(c) = &b.condition {
        parts.push(format!("if {c}"));
    }
    if let Some(h) = &b.hit_condition {
        parts.push(format!("hits {h}"));
    }
    if let Some(m) = &b.log_message {
        parts.push(format!("logs \"{m}\""));
    }
    if parts.is_empty() { String::new() } else { format!(" [{}]", parts.join(", ")) }
}

fn render_frame(out: &mut String, i: usize, f: &FrameView) {
    let place = match (&f.path, f.line) {
        (Some(p), Some(l)) => format!("{p}:{l}"),
        (Some(p), None) => p.clone(),
        _ => "no source".into(),
    };
    let _ = writeln!(
        out,
        "  #{i} {} at {place}  [frame_id {}]{}",
        f.name,
        f.frame_id,
        if f.library { " (library)" } else { "" }
    );
}

fn render_variable(out: &mut String, v: &VariableView, indent: &str) {
    let _ = write!(out, "{indent}  {}", v.name);
    if let Some(t) = &v.type_name {
        let _ = write!(out, ": {t}");
    }
    let _ = write!(out, " = {}", v.value);
    if v.cut_chars > 0 {
        let _ = write!(out, " …(value cut: {} more characters)", v.cut_chars);
    }
    if let Some(r) = v.reference {
        let _ = write!(
            out,
            "  [reference {r}{}]",
            v.children.map(|c| format!(", {c} children")).unwrap_or_default()
        );
    }
    out.push('\n');
}

fn render_output(out: &mut String, chunk: &OutputChunk, title: &str) {
    if chunk.entries.is_empty() && chunk.dropped == 0 && chunk.earlier == 0 {
        return;
    }
    let _ = writeln!(out, "{title}:");
    if chunk.dropped > 0 {
        let _ = writeln!(
            out,
            "  [{} older output entries were dropped: the buffer holds the last 64 KB]",
            chunk.dropped
        );
    }
    if chunk.earlier > 0 {
        let _ = writeln!(
            out,
            "  [{} earlier entries not shown; this is the newest output. `output` with since={} \
             reads from the first of them]",
            chunk.earlier, chunk.earlier_since
        );
    }
    let mut last = "";
    for entry in &chunk.entries {
        for line in entry.text.lines() {
            if entry.stream == "stderr" {
                let _ = writeln!(out, "  [stderr] {line}");
            } else {
                let _ = writeln!(out, "  {line}");
            }
        }
        last = &entry.stream;
    }
    let _ = last;
    if chunk.more > 0 {
        let _ = writeln!(out, "  [{} more output entries: call output]", chunk.more);
    }
}

fn render_run(out: &mut String, state: &RunState) {
    match state {
        RunState::Stopped(s) => render_snapshot(out, s),
        RunState::Exited { exit_code, ended_by, output } => {
            match (ended_by, exit_code) {
                (Some(how), _) => {
                    let _ = writeln!(out, "The program ended: {how}.");
                }
                (None, Some(code)) => {
                    let _ = writeln!(out, "The program exited with code {code}.");
                }
                (None, None) => {
                    let _ = writeln!(out, "The program exited (exit code unknown).");
                }
            }
            render_output(out, output, "Output since the last call");
        }
        RunState::Running { waited_seconds, cancelled, waiting_for_input, watching, output } => {
            if let Some(what) = watching.as_ref().filter(|_| !*waiting_for_input) {
                let _ = writeln!(
                    out,
                    "The program is still running after {waited_seconds} s; the watch keeps \
                     waiting until {what}. Its stop comes first in the result of the next call \
                     after it happens (`continue` waits for it; `pause` ends the watch)."
                );
            } else if *waiting_for_input {
                let _ = writeln!(
                    out,
                    "The program is waiting for input on stdin: `input` (stdin) sends it a line; \
                     \"\" closes stdin; `pause` stops it where it is."
                );
            } else if *cancelled {
                let _ = writeln!(
                    out,
                    "The wait was cancelled after {waited_seconds} s; the program is still \
                     running and the session is usable: `pause` stops it, `continue` waits again."
                );
            } else {
                let _ = writeln!(
                    out,
                    "The program is still running after {waited_seconds} s: it has not stopped. \
                     `pause` stops it where it is; `continue` or a step with a larger \
                     wait_seconds waits longer; `output` shows what it prints."
                );
            }
            render_output(out, output, "Output since the last call");
        }
        RunState::AdapterGone { reason, output } => {
            let _ = writeln!(out, "{reason}");
            let _ = writeln!(out, "`terminate` cleans up; `launch` starts again.");
            render_output(out, output, "Output since the last call");
        }
    }
}

fn render_snapshot(out: &mut String, s: &StopSnapshot) {
    let mut head = format!("Stopped (stop {}): {}", s.stop, s.reason);
    if let Some(e) = &s.exception {
        let id = e.id.clone().unwrap_or_else(|| "exception".into());
        match &e.description {
            Some(d) if !d.is_empty() && d != &id => head.push_str(&format!(" {id}: {d}")),
            _ => head.push_str(&format!(" {id}")),
        }
        if let Some(mode) = &e.break_mode {
            head.push_str(&format!(" ({mode})"));
        }
    } else if let Some(d) = &s.description
        && !d.is_empty()
        && !d.eq_ignore_ascii_case(&s.reason)
    {
        head.push_str(&format!(" ({d})"));
    }
    if let Some(f) = &s.frame {
        head.push_str(&format!(" in {}", f.name));
        if let (Some(p), Some(l)) = (&f.path, f.line) {
            head.push_str(&format!(" at {p}:{l}"));
        }
    }
    if let Some(t) = &s.thread {
        head.push_str(&format!(", thread {} \"{}\"", t.id, t.name));
    }
    let _ = writeln!(out, "{head}");
    for n in &s.notes {
        let _ = writeln!(out, "Note: {n}");
    }
    if !s.source.is_empty() {
        let width = s.source.iter().map(|l| l.line.to_string().len()).max().unwrap_or(1);
        for l in &s.source {
            let _ = writeln!(
                out,
                "{} {:>width$}  {}",
                if l.current { ">" } else { " " },
                l.line,
                l.text
            );
        }
    }
    if let Some(f) = &s.frame {
        let _ = writeln!(
            out,
            "Locals of {} [frame_id {}{}]:",
            f.name,
            f.frame_id,
            s.locals_reference.map(|r| format!(", reference {r}")).unwrap_or_default()
        );
        if s.locals.is_empty() {
            let _ = writeln!(out, "  (none)");
        }
        for v in &s.locals {
            render_variable(out, v, "");
        }
        if s.locals_more > 0 {
            let _ = writeln!(
                out,
                "  … {} more: variables with reference {}",
                s.locals_more,
                s.locals_reference.unwrap_or(0)
            );
        }
    }
    if let Some(e) = &s.exception
        && let Some(details) = &e.details
    {
        let _ = writeln!(out, "Exception details:");
        for line in details.lines().take(30) {
            let _ = writeln!(out, "  {line}");
        }
    }
    if s.stack.len() > 1 || s.frames_skipped > 0 {
        if s.frames_skipped > 0 {
            let _ = writeln!(
                out,
                "Stack from the user frame ({} library frames above it not shown; `stack` lists all):",
                s.frames_skipped
            );
        } else {
            let _ = writeln!(out, "Stack (top {}):", s.stack.len());
        }
        for (i, f) in s.stack.iter().enumerate() {
            render_frame(out, i, f);
        }
    }
    render_output(out, &s.output, "Output since the last call");
}

fn render_adapters(out: &mut String, adapters: &[AdapterReport]) {
    for a in adapters {
        let _ =
            writeln!(out, "{}: {}", a.adapter.id(), if a.usable { "usable" } else { "not usable" });
        let _ = writeln!(
            out,
            "  marker: {}",
            a.marker
                .clone()
                .unwrap_or_else(|| format!("none (looked for {})", a.markers.join(", ")))
        );
        match &a.command {
            Some(cmd) => {
                let _ = writeln!(
                    out,
                    "  command: {}{}",
                    cmd.join(" "),
                    a.version.as_ref().map(|v| format!(" ({v})")).unwrap_or_default()
                );
            }
            None => {
                let _ = writeln!(out, "  command: not found");
            }
        }
        for p in &a.problems {
            let _ = writeln!(out, "  problem: {p}");
        }
        for n in &a.notes {
            let _ = writeln!(out, "  note: {n}");
        }
        if a.command.is_none() {
            let _ = writeln!(out, "  install: {}", a.install);
        }
    }
}

fn render_breakpoints_set(out: &mut String, b: &BreakpointsView) {
    if b.file.is_empty() {
        if b.breakpoints.is_empty() {
            let _ = writeln!(out, "No breakpoints are set.");
        } else {
            let _ = writeln!(
                out,
                "Breakpoints{}:",
                if b.pending { " (pending: sent to the adapter at `launch`)" } else { "" }
            );
            render_breakpoints(out, &b.breakpoints);
        }
    } else if b.breakpoints.is_empty() {
        let _ = writeln!(out, "{} has no breakpoints now.", b.file);
    } else if b.pending {
        let _ =
            writeln!(out, "Breakpoints of {} (pending: sent to the adapter at `launch`):", b.file);
        for x in &b.breakpoints {
            let _ = writeln!(out, "  line {}{}", x.requested, breakpoint_settings(x));
        }
    } else {
        let _ = writeln!(out, "Breakpoints of {}:", b.file);
        render_breakpoints(out, &b.breakpoints);
    }
}

fn render_started(out: &mut String, s: &StartedView) {
    let v = &s.session;
    let _ = write!(
        out,
        "{} {} with {}",
        if v.request == "launch" { "Launched" } else { "Attached to" },
        v.program,
        v.adapter.id()
    );
    if let Some(version) = &v.adapter_version {
        let _ = write!(out, " ({version})");
    }
    let mut pids = Vec::new();
    if let Some(p) = v.adapter_pid {
        pids.push(format!("adapter pid {p}"));
    }
    if let Some(p) = v.debuggee_pid {
        pids.push(format!("program pid {p}"));
    }
    if !pids.is_empty() {
        let _ = write!(out, "; {}", pids.join(", "));
    }
    let _ =
        writeln!(out, ". The session ends in {} at the latest.", human_seconds(v.ttl_seconds_left));
    for n in &v.notes {
        let _ = writeln!(out, "Note: {n}");
    }
    if !s.breakpoints.is_empty() {
        let _ = writeln!(out, "Breakpoints:");
        render_breakpoints(out, &s.breakpoints);
    }
    if s.exception_filters.is_empty() {
        let _ = writeln!(
            out,
            "Exception breakpoints: none set (crashes and panics still stop the program)."
        );
    } else {
        let _ = writeln!(out, "Exception breakpoints: {}.", s.exception_filters.join(", "));
    }
    render_run(out, &s.state);
}

fn render_threads(out: &mut String, threads: &[ThreadView], more: usize) {
    for t in threads {
        let _ = writeln!(out, "thread {}: {}", t.id, t.name);
    }
    if more > 0 {
        let _ = writeln!(out, "… {more} more threads not shown");
    }
}

fn render_stack(out: &mut String, s: &StackView) {
    let _ = writeln!(
        out,
        "Stack of thread {} at stop {}{}:",
        s.thread_id,
        s.stop,
        s.total
            .map(|t| format!(" ({} of {})", s.frames.len(), count(t, "frame", "frames")))
            .unwrap_or_default()
    );
    for (i, f) in s.frames.iter().enumerate() {
        render_frame(out, i, f);
    }
}

fn render_scopes(out: &mut String, frame_id: u64, scopes: &[ScopeView]) {
    let _ = writeln!(out, "Scopes of frame {frame_id}:");
    for s in scopes {
        let _ = writeln!(
            out,
            "  {}: reference {}{}{}",
            s.name,
            s.reference,
            s.count.map(|c| format!(", {}", count(c, "variable", "variables"))).unwrap_or_default(),
            if s.expensive { " (expensive to read)" } else { "" }
        );
    }
}

fn render_variables(out: &mut String, v: &VariablesView) {
    if v.variables.is_empty() {
        let _ = writeln!(
            out,
            "Reference {} has no children{}.",
            v.reference,
            if v.start > 0 { " from there" } else { "" }
        );
    }
    for var in &v.variables {
        render_variable(out, var, "");
    }
    if v.has_more {
        let next = v.start + v.variables.len() as u64;
        let _ = writeln!(
            out,
            "… more children{}: call variables with reference {} and start {next}",
            v.total.map(|t| format!(" ({t} in all)")).unwrap_or_default(),
            v.reference
        );
    }
}

fn render_output_view(out: &mut String, o: &OutputView) {
    render_output(out, &o.output, "Output");
    if o.output.entries.is_empty() {
        let _ = writeln!(out, "No new output.");
    }
    let _ = writeln!(out, "(cursor: since={})", o.output.next);
    match (&o.ended_by, o.exit_code) {
        (Some(how), _) => {
            let _ = writeln!(out, "The program ended: {how}.");
        }
        (None, Some(code)) => {
            let _ = writeln!(out, "The program exited with code {code}.");
        }
        (None, None) => {}
    }
}

fn render_trace(out: &mut String, t: &TraceView) {
    let _ = writeln!(out, "Trace of {}: {} call(s); {}.", t.function, t.total, t.ended);
    if t.total == 0 {
        let _ = writeln!(
            out,
            "It was never called (or its name is not the adapter's: Python `fib`, C `fib`, Go \
             `main.fib`)."
        );
    }
    // Where the kept first calls end and the kept last ones begin.
    let cut_after = (1..t.calls.len()).find(|i| t.calls[*i].index > t.calls[i - 1].index + 1);
    let base = t.calls.iter().map(|c| c.depth).min().unwrap_or(0);
    for (i, call) in t.calls.iter().enumerate() {
        if Some(i) == cut_after {
            let _ = writeln!(out, "  … {} call(s) left out …", t.omitted);
        }
        let ended = match (&call.returned, &call.exception) {
            (Some(value), _) => format!("→ {value}"),
            (None, Some(e)) => format!("raised {e}"),
            (None, None) => "→ ? (the adapter shows no return value)".into(),
        };
        let _ = writeln!(
            out,
            "  #{} {}{}({}) {ended}  [{} ms{}]",
            call.index,
            "  ".repeat(usize::try_from((call.depth - base).min(12)).unwrap_or(0)),
            t.function,
            call.arguments.join(", "),
            call.elapsed_ms,
            call.caller.as_ref().map(|c| format!(", from {c}")).unwrap_or_default()
        );
    }
    if !t.output.is_empty() {
        let _ = writeln!(out, "Output:\n{}", t.output.trim_end());
    }
}

fn render_teardown(out: &mut String, t: &TeardownReport) {
    if t.program.is_empty() {
        for s in &t.steps {
            let _ = writeln!(out, "{s}.");
        }
        return;
    }
    let _ = writeln!(out, "Ended the session of {} ({}).", t.program, t.reason);
    for s in &t.steps {
        let _ = writeln!(out, "  - {s}");
    }
    for k in &t.killed {
        let _ = writeln!(out, "  - killed {k}");
    }
    match (&t.ended_by, t.exit_code) {
        (Some(how), _) => {
            let _ = writeln!(out, "The program had ended: {how}.");
        }
        (None, Some(code)) => {
            let _ = writeln!(out, "The program had exited with code {code}.");
        }
        (None, None) => {}
    }
    render_output(out, &t.output, "Output not read before");
}

fn render_input(out: &mut String, i: &InputView) {
    if i.closed {
        let _ = writeln!(out, "Closed the program's stdin: it reads end of file now.");
    } else {
        let _ = writeln!(
            out,
            "Sent {} to the program's stdin.",
            count(i.chars as u64, "character", "characters")
        );
    }
    if i.pending > 0 {
        let waiting = if i.pending == 1 { "waits" } else { "wait" };
        let _ = writeln!(
            out,
            "{} {waiting}: the program has not read its stdin yet.",
            count(i.pending as u64, "character", "characters")
        );
    }
    if let Some(state) = &i.state {
        render_run(out, state);
    }
}
