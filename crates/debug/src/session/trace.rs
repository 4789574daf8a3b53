//! `trace`: the calls of one function over a run, one call each: its arguments (the frame's
//! locals at entry), its caller's place, its return value (debugpy's `(return)` local, lldb's
//! return value after the step out) or the exception that left it, and the time it took.
//! A function breakpoint stops each call; a step out ends it (a nested call stops first at the
//! breakpoint, so recursion unwinds call by call).

use std::collections::VecDeque;

use agent_tools_support::progress::CallScope;
use tokio::time::Instant;

use super::*;
use crate::dap_types::{Evaluate, EvaluateArguments, StackTrace, StackTraceArguments};

/// Calls kept from the start and from the end of a run; those between are counted.
const KEEP_FIRST: usize = 25;
const KEEP_LAST: usize = 25;
/// Characters of one argument or return value.
const VALUE_CHARS: usize = 120;
/// Characters of the program's output kept (its newest part).
const OUTPUT_TAIL: usize = 4000;

/// A call on its way: where it is in the stack and what was known at its entry.
struct Open {
    depth: u64,
    call: TraceCall,
    entered: Instant,
}

/// The calls seen so far: the first kept, the last in a ring, the open ones on a stack.
struct Tracer {
    /// Whether the adapter shows return values (delve 1.20 does not after a step out).
    values_known: bool,
    view: TraceView,
    tail: VecDeque<TraceCall>,
    open: Vec<Open>,
}

impl Tracer {
    fn new(function: &str, values_known: bool) -> Self {
        Tracer {
            values_known,
            view: TraceView { function: function.to_string(), ..Default::default() },
            tail: VecDeque::new(),
            open: Vec::new(),
        }
    }

    /// A call begins: its arguments and its caller, from the stop at its entry.
    fn enter(&mut self, snapshot: &StopSnapshot, depth: u64) {
        let caller = snapshot.stack.get(1).map(|f| match (&f.path, f.line) {
            (Some(p), Some(l)) => format!("{p}:{l} in {}", f.name),
            _ => f.name.clone(),
        });
        let arguments = snapshot
            .locals
            .iter()
            // delve's result slots (`~r0`) hold garbage until the function returns.
            .filter(|v| !v.name.starts_with("~r"))
            .map(|v| format!("{}={}", v.name, cut(&v.value, VALUE_CHARS).0))
            .collect();
        self.view.total += 1;
        let call =
            TraceCall { index: self.view.total, depth, arguments, caller, ..Default::default() };
        self.open.push(Open { depth, call, entered: Instant::now() });
    }

    /// An exception stop: it is leaving the innermost open call.
    fn raised(&mut self, snapshot: &StopSnapshot) {
        if let Some(top) = self.open.last_mut() {
            top.call.exception = Some(exception_text(snapshot));
        }
    }

    /// Back in a caller at `depth`: every open call deeper has ended; the one right below it
    /// returned `value`.
    fn returned(&mut self, depth: u64, value: Option<String>) {
        while self.open.last().is_some_and(|o| o.depth > depth) {
            let Some(done) = self.open.pop() else { break };
            let mut call = done.call;
            call.elapsed_ms = u64::try_from(done.entered.elapsed().as_millis()).unwrap_or(u64::MAX);
            // debugpy shows `None` as the return value of a frame an exception left.
            let raised_out = call.exception.is_some() && value.as_deref() == Some("None");
            if done.depth == depth + 1 && value.is_some() && !raised_out {
                // It returned: an exception raised in it was caught there.
                call.returned.clone_from(&value);
                call.exception = None;
            }
            if call.returned.is_none() && call.exception.is_none() && self.values_known {
                call.exception = Some("left without a return value (an exception?)".into());
            }
            keep(&mut self.view, &mut self.tail, call);
        }
    }

    /// The program ended, the time ran out or the adapter went away.
    fn ended(&mut self, state: RunState) {
        self.view.ended = match state {
            RunState::Exited { exit_code, ended_by, output } => {
                self.view.output.push_str(&output.text());
                match (ended_by, exit_code) {
                    (Some(how), _) => format!("the program ended: {how}"),
                    (None, Some(code)) => format!("the program exited with code {code}"),
                    (None, None) => "the program exited".into(),
                }
            }
            RunState::Running { output, cancelled, .. } => {
                self.view.output.push_str(&output.text());
                if cancelled {
                    "cut: the call was cancelled; the program was still running".into()
                } else {
                    "cut: the time given (`wait_seconds`) ran out; the program was still running"
                        .into()
                }
            }
            RunState::AdapterGone { reason, .. } => reason,
            RunState::Stopped(_) => String::new(),
        };
    }

    fn finish(mut self) -> TraceView {
        for unfinished in std::mem::take(&mut self.open) {
            let mut call = unfinished.call;
            call.exception.get_or_insert_with(|| "had not returned when the trace ended".into());
            keep(&mut self.view, &mut self.tail, call);
        }
        let mut view = self.view;
        let chars = view.output.chars().count();
        if chars > OUTPUT_TAIL {
            view.output = view.output.chars().skip(chars - OUTPUT_TAIL).collect();
        }
        view.calls.extend(self.tail);
        view.calls.sort_by_key(|c| c.index);
        view
    }
}

impl Session {
    /// Follows the calls of `function` from `first` (the launch's first state) until the
    /// program ends or `deadline` passes.
    pub(crate) async fn trace(
        &mut self,
        function: &str,
        first: RunState,
        deadline: Instant,
        cancel: &CallScope,
    ) -> TraceView {
        let mut tracer = Tracer::new(function, self.kind != AdapterKind::Delve);
        let mut state = first;
        loop {
            let snapshot = match state {
                RunState::Stopped(snapshot) => snapshot,
                other => {
                    tracer.ended(other);
                    break;
                }
            };
            tracer.view.output.push_str(&snapshot.output.text());
            let depth = self.depth(&snapshot).await;
            let on_top = snapshot.stack.first().is_some_and(|f| names_function(&f.name, function));
            match snapshot.reason.as_str() {
                "function breakpoint" | "breakpoint" if on_top => tracer.enter(&snapshot, depth),
                "exception" => tracer.raised(&snapshot),
                "step" if tracer.open.last().is_some_and(|o| o.depth > depth) => {
                    let value = match return_value(&snapshot, function) {
                        None if self.kind == AdapterKind::Lldb => self.lldb_return_value().await,
                        found => found,
                    };
                    tracer.returned(depth, value);
                }
                _ => {}
            }
            let remaining = deadline.saturating_duration_since(Instant::now());
            // Step out towards the innermost open call's return (from a callee where an
            // exception stopped, frame by frame); with none open, run to the next call.
            let inside_open = tracer.open.last().is_some_and(|o| depth >= o.depth);
            let motion = if inside_open && !remaining.is_zero() {
                Motion::StepOut
            } else {
                Motion::Continue
            };
            state = match self.resume(motion, None, remaining, cancel).await {
                Ok(state) => state,
                Err(e) => {
                    tracer.view.ended = format!("stopped tracing: {e}");
                    break;
                }
            };
        }
        tracer.finish()
    }

    /// The value the last step out returned, as lldb's `thread info` says it ("Return value:
    /// (int) $0 = 10"); lldb-dap 19 does not show it among the locals.
    async fn lldb_return_value(&self) -> Option<String> {
        let frame_id = self.shown_frame.as_ref().and_then(|(_, _, id)| *id);
        let args =
            EvaluateArguments { expression: "`thread info".into(), frame_id, context: "repl" };
        let body =
            self.client.request::<Evaluate>(args, self.config.request_timeout()).await.ok()?;
        let line = body.result.lines().find_map(|l| l.trim().strip_prefix("Return value:"))?;
        let value = line.split_once(" = ").map_or(line, |(_, v)| v).trim();
        Some(cut(value, VALUE_CHARS).0)
    }

    /// How many frames the stopped thread has.
    async fn depth(&self, snapshot: &StopSnapshot) -> u64 {
        let Some(thread) = snapshot.thread.as_ref().map(|t| t.id) else { return 0 };
        let args = StackTraceArguments { thread_id: thread, start_frame: 0, levels: 1000 };
        match self.client.request::<StackTrace>(args, self.config.request_timeout()).await {
            Ok(body) => {
                body.total_frames.filter(|t| *t > 0).unwrap_or(body.stack_frames.len() as u64)
            }
            Err(_) => 0,
        }
    }
}

/// Keeps the first calls and the last ones; those between are only counted.
fn keep(view: &mut TraceView, tail: &mut VecDeque<TraceCall>, call: TraceCall) {
    if view.calls.len() < KEEP_FIRST {
        view.calls.push(call);
        return;
    }
    tail.push_back(call);
    if tail.len() > KEEP_LAST {
        tail.pop_front();
        view.omitted += 1;
    }
}

/// Whether a frame named `frame` (`fib`, `main.fib`, `fib(n=3)`, `buggy::fib::h…`) is `function`.
fn names_function(frame: &str, function: &str) -> bool {
    let bare = frame.split('(').next().unwrap_or(frame).trim();
    bare == function
        || bare.rsplit(['.', ':']).next() == Some(function)
        || function.rsplit(['.', ':']).next() == Some(bare)
}

/// The return value a step out left in the caller's locals: debugpy's `(return) fib`, lldb's
/// return value entry.
fn return_value(snapshot: &StopSnapshot, function: &str) -> Option<String> {
    snapshot
        .locals
        .iter()
        .rfind(|v| {
            let name = v.name.to_lowercase();
            name.starts_with("(return)")
                && names_function(v.name.trim_start_matches("(return)").trim(), function)
                || name.contains("return value")
        })
        .map(|v| cut(&v.value, VALUE_CHARS).0)
}

fn exception_text(snapshot: &StopSnapshot) -> String {
    let e = snapshot.exception.as_ref();
    let id = e.and_then(|e| e.id.clone()).unwrap_or_else(|| "exception".into());
    match e.and_then(|e| e.description.clone()) {
        Some(d) if !d.is_empty() && d != id => format!("{id}: {}", cut(&d, VALUE_CHARS).0),
        _ => id,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_names_the_function_however_the_adapter_spells_it() {
        assert!(names_function("fib", "fib"));
        assert!(names_function("main.fib", "fib"));
        assert!(names_function("fib(n=3)", "fib"));
        assert!(names_function("fib", "main.fib"));
        assert!(!names_function("fibonacci", "fib"));
    }

    #[test]
    fn the_first_and_last_calls_are_kept_and_the_middle_counted() {
        let mut view = TraceView::default();
        let mut tail = VecDeque::new();
        for index in 1..=60 {
            keep(&mut view, &mut tail, TraceCall { index, ..Default::default() });
        }
        assert_eq!(view.calls.len(), KEEP_FIRST);
        assert_eq!(tail.len(), KEEP_LAST);
        assert_eq!(view.omitted, 10);
        assert_eq!(tail.back().map(|c| c.index), Some(60));
    }
}
