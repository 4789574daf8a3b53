//! The stop snapshot: reason, thread, the first user frame with its source lines and locals,
//! the stack from there, exception details and new output, in as few requests as possible.

use std::path::Path;

use super::{handles::HandleKind, state::StopEvent, *};
use crate::{
    adapters::AdapterKind,
    dap_types::{
        Evaluate, EvaluateArguments, ExceptionInfo, ExceptionInfoBody, NoArguments, Scopes,
        ScopesArguments, StackFrame, StackTrace, StackTraceArguments, StackTraceBody, Thread,
        ThreadArguments, Threads, ThreadsBody, Variable, Variables, VariablesArguments,
    },
    error::DebugError,
    response::*,
};

impl Session {
    /// The stop snapshot of the current stop: the stopped thread's stack, the frame to show,
    /// its locals and exception details (asked together), then the stop as reported.
    pub(super) async fn snapshot(&mut self) -> StopSnapshot {
        let (epoch, stop) = self.shared.read(|s| (s.epoch, s.stop.clone().unwrap_or_default()));
        self.handles.begin_stop(epoch);
        self.reported_stop = epoch;
        let mut notes = Vec::new();
        let (threads, stack) = self.stopped_stack(stop.thread_id).await;
        let thread = stack.as_ref().map(|(id, _)| {
            let name = threads
                .as_ref()
                .and_then(|t| t.name_of(*id))
                .unwrap_or_else(|| format!("thread {id}"));
            ThreadView { id: *id, name }
        });
        let frames = self.frame_views(stack, &mut notes);
        let stopped_at = StoppedAt::of(self.kind, &frames);
        let (chosen, frames_skipped) = choose_frame(&stop.reason, stopped_at, &frames, &mut notes);
        self.default_frame = chosen.as_ref().map(|(f, _)| f.frame_id);
        self.shown_frame = chosen.as_ref().map(|(_, raw)| {
            let path = raw.source.as_ref().and_then(|s| s.path.as_ref()).map(PathBuf::from);
            (path, u32::try_from(raw.line).unwrap_or(0), raw.id)
        });
        let frame_id = chosen.as_ref().and_then(|(_, raw)| raw.id);
        let (info, locals_result) =
            self.exception_info_and_locals(&stop, thread.as_ref(), frame_id).await;
        let exception = (stop.reason == "exception").then(|| exception_view(&stop, info));
        let (mut locals, mut locals_more, mut locals_reference) = (Vec::new(), 0, None);
        match locals_result {
            Some(Ok((vars, more, reference))) => {
                locals = vars;
                locals_more = more;
                locals_reference = reference;
            }
            Some(Err(e)) => notes.push(format!(
                "no locals for {}: {e}",
                chosen.as_ref().map_or("the frame", |(f, _)| f.name.as_str())
            )),
            None => {}
        }
        let source = chosen
            .as_ref()
            .and_then(|(_, raw)| {
                let path = raw.source.as_ref()?.path.as_deref()?;
                let line = u32::try_from(raw.line).ok()?;
                Some(source_lines(Path::new(path), line))
            })
            .unwrap_or_default();
        let frame = chosen.map(|(f, _)| f);
        self.last_place = frame.as_ref().map(place_of);
        // The user frame and its callers: the library frames above it are counted, not shown.
        let stack: Vec<FrameView> =
            frames.iter().skip(frames_skipped).take(5).map(|(f, _)| f.clone()).collect();
        let output = self.shared.update(|s| s.output.read(None, OUTPUT_CHARS));
        let reported =
            self.stop_as_reported(stop.reason, exception, stopped_at, &frames, &output).await;
        StopSnapshot {
            stop: epoch,
            reason: reported.reason,
            description: if reported.paused_by_us { None } else { stop.description },
            exception: reported.exception,
            thread,
            all_threads_stopped: stop.all_threads_stopped,
            frame,
            frames_skipped,
            source,
            locals,
            locals_more,
            locals_reference,
            stack,
            output,
            notes,
        }
    }

    /// The threads (for the stopped thread's name) and the stopped thread's stack, asked
    /// together; without a thread in the stop, the first thread's stack.
    async fn stopped_stack(&mut self, thread_id: Option<i64>) -> (Option<ThreadsBody>, StackOf) {
        let timeout = self.config.request_timeout();
        let client = self.client.clone();
        let stack_args = |thread: i64| StackTraceArguments {
            thread_id: thread,
            start_frame: 0,
            levels: MAX_FRAMES,
        };
        let early_threads = self.early_threads.take();
        match thread_id {
            Some(thread) if self.kind == AdapterKind::Delve => {
                // delve's thread ids are goroutine ids, and its `threads` lists every goroutine
                // with its place (milliseconds, more with many goroutines): not asked for a name.
                let name = Some(format!("goroutine {thread}"));
                let threads = ThreadsBody { threads: vec![Thread { id: thread, name }] };
                let stack = client.request::<StackTrace>(stack_args(thread), timeout).await;
                (Some(threads), Some((thread, stack)))
            }
            Some(thread) => {
                let threads_request = async {
                    if let Some(pending) = early_threads
                        && let Ok(list) = pending.wait(timeout).await
                        && list.name_of(thread).is_some()
                    {
                        return Ok(list);
                    }
                    client.request::<Threads>(NoArguments {}, timeout).await
                };
                let (threads, stack) = tokio::join!(
                    threads_request,
                    client.request::<StackTrace>(stack_args(thread), timeout),
                );
                (threads.ok(), Some((thread, stack)))
            }
            None => {
                let threads = client.request::<Threads>(NoArguments {}, timeout).await.ok();
                let first = threads.as_ref().and_then(|t| Some(t.threads.first()?.id));
                let stack = match first {
                    Some(thread) => Some((
                        thread,
                        client.request::<StackTrace>(stack_args(thread), timeout).await,
                    )),
                    None => None,
                };
                (threads, stack)
            }
        }
    }

    /// The stack's frames as shown (with their handles) beside the adapter's; a note where
    /// there are none.
    fn frame_views(
        &mut self,
        stack: StackOf,
        notes: &mut Vec<String>,
    ) -> Vec<(FrameView, StackFrame)> {
        let mut frames = Vec::new();
        match stack {
            Some((_, Ok(body))) => {
                for frame in body.stack_frames.into_iter().take(MAX_FRAMES) {
                    frames.push((self.frame_view(&frame), frame));
                }
                if frames.is_empty() {
                    notes.push("the stopped thread has no frames".into());
                }
            }
            Some((_, Err(e))) => notes.push(format!("no stack for the stopped thread: {e}")),
            None => notes.push("the adapter reported no thread".into()),
        }
        frames
    }

    /// `exceptionInfo` (at an exception, where the adapter has it) and the locals of frame
    /// `frame_id`, asked together.
    async fn exception_info_and_locals(
        &mut self,
        stop: &StopEvent,
        thread: Option<&ThreadView>,
        frame_id: Option<i64>,
    ) -> (Option<ExceptionInfoBody>, Option<Result<Locals, DebugError>>) {
        let timeout = self.config.request_timeout();
        let client = self.client.clone();
        let wants_info = stop.reason == "exception"
            && self.capabilities.supports_exception_info_request.unwrap_or(false);
        let info_request = async {
            match (thread, wants_info) {
                (Some(thread), true) => client
                    .request::<ExceptionInfo>(ThreadArguments { thread_id: thread.id }, timeout)
                    .await
                    .ok(),
                _ => None,
            }
        };
        let locals_request = async {
            match frame_id {
                Some(id) => Some(self.locals(id).await),
                None => None,
            }
        };
        tokio::join!(info_request, locals_request)
    }

    /// The stop's reason and exception as reported: a Rust panic and a failed Go test stop at
    /// our function breakpoints and are reported as the exceptions they are; the SIGSTOP of
    /// our own `pause` as a pause.
    async fn stop_as_reported(
        &self,
        mut reason: String,
        mut exception: Option<ExceptionView>,
        stopped_at: StoppedAt,
        frames: &[(FrameView, StackFrame)],
        output: &crate::output::OutputChunk,
    ) -> ReportedStop {
        // A Rust panic stops lldb at our `rust_panic` function breakpoint: report it as the
        // exception it is, with the panic message the program printed.
        if stopped_at == StoppedAt::RustPanic && exception.is_none() {
            reason = "exception".into();
            exception = Some(ExceptionView {
                id: Some("panic".into()),
                description: panic_message(&output.text()),
                break_mode: Some("unhandled".into()),
                details: None,
            });
        }
        // A Go test marked failed stops delve at our `testing.(*common).Fail` breakpoint:
        // report it as the failure it is, with the message the test logged.
        if stopped_at == StoppedAt::GoTestFailure && exception.is_none() {
            reason = "exception".into();
            let top = frames.first().and_then(|(_, raw)| raw.id);
            exception = Some(ExceptionView {
                id: Some("test failed".into()),
                description: match top {
                    Some(id) => self.go_test_message(id).await,
                    None => None,
                },
                break_mode: Some("unhandled".into()),
                details: None,
            });
        }
        let mut paused_by_us = false;
        // lldb reports the stop our `pause` caused as "exception: signal SIGSTOP".
        if self.shared.read(|s| s.pausing)
            && exception.as_ref().is_some_and(|e| {
                [&e.id, &e.description]
                    .iter()
                    .any(|t| t.as_deref().is_some_and(|t| t.contains("SIGSTOP")))
            })
        {
            reason = "pause".into();
            exception = None;
            paused_by_us = true;
        }
        ReportedStop { reason, exception, paused_by_us }
    }

    /// What a failing Go test logged so far (`t.Errorf`'s message), read in delve's frame
    /// `frame_id` of `testing.(*common).Fail`.
    async fn go_test_message(&self, frame_id: i64) -> Option<String> {
        let args = EvaluateArguments {
            expression: "string(c.output)".into(),
            frame_id: Some(frame_id),
            context: "repl",
        };
        let body =
            self.client.request::<Evaluate>(args, self.config.request_timeout()).await.ok()?;
        let quoted = body.result.as_str();
        let text: String = serde_json::from_str(quoted).unwrap_or_else(|_| quoted.to_string());
        let lines: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
        (!lines.is_empty()).then(|| lines.join("\n"))
    }

    /// The locals of adapter frame `frame_id`: (shown, how many more, the scope's reference).
    pub(super) async fn locals(&mut self, frame_id: i64) -> Result<Locals, DebugError> {
        let timeout = self.config.request_timeout();
        let scopes =
            self.client.request::<Scopes>(ScopesArguments { frame_id }, timeout).await?.scopes;
        let scope = scopes
            .iter()
            .find(|s| s.presentation_hint.as_deref() == Some("locals"))
            .or_else(|| scopes.iter().find(|s| s.name.to_ascii_lowercase().starts_with("local")))
            .or_else(|| scopes.iter().find(|s| !s.expensive));
        let Some(scope) = scope else { return Ok((Vec::new(), 0, None)) };
        let reference = scope.variables_reference;
        if reference <= 0 {
            return Ok((Vec::new(), 0, None));
        }
        let count = scope.named_variables;
        let args = VariablesArguments { variables_reference: reference, start: None, count: None };
        let body = self.client.request::<Variables>(args, timeout).await?;
        let all: Vec<Variable> = body
            .variables
            .into_iter()
            .filter(|v| {
                let name = v.name.as_str();
                // pytest's assertion rewriting leaves `@py_assert1` and the like in the frame.
                !matches!(name, "special variables" | "function variables" | "class variables")
                    && !name.starts_with("@py_")
            })
            .collect();
        let handle =
            self.handles.add(HandleKind::Reference, reference, count.or(Some(all.len() as u64)));
        let mut shown = Vec::new();
        for var in all.iter().take(SNAPSHOT_LOCALS) {
            let var = self.with_preview(var.clone()).await;
            shown.push(self.variable_view(&var, None));
        }
        Ok((shown, all.len().saturating_sub(SNAPSHOT_LOCALS), Some(handle)))
    }

    pub(super) fn frame_view(&mut self, frame: &StackFrame) -> FrameView {
        let adapter_id = frame.id.unwrap_or(0);
        let frame_id = self.handles.add(HandleKind::Frame, adapter_id, None);
        let source = frame.source.as_ref();
        let path = source.and_then(|s| s.path.as_deref()).filter(|p| !p.is_empty());
        let hint = frame.presentation_hint.as_deref().unwrap_or_default();
        let source_hint = source.and_then(|s| s.presentation_hint.as_deref()).unwrap_or_default();
        let inside =
            path.is_some_and(|p| Path::new(p).starts_with(&self.root) && !is_library_path(p));
        FrameView {
            frame_id,
            name: tidy_frame_name(&frame.name),
            path: path.map(|p| display_path(p, &self.root)),
            line: u32::try_from(frame.line).ok().filter(|l| *l > 0),
            column: u32::try_from(frame.column).ok().filter(|c| *c > 0),
            library: !inside || hint == "subtle" || hint == "label" || source_hint == "deemphasize",
        }
    }

    pub(super) fn variable_view(&mut self, var: &Variable, name: Option<&str>) -> VariableView {
        // lldb pads its summaries with spaces, and shows a string's newlines as they are (Rust's
        // `&str`): a value is one line, with the escapes the language would write.
        let raw = var.value.trim();
        let escaped;
        let raw = if self.kind == AdapterKind::Lldb && raw.contains(['\n', '\r', '\t']) {
            escaped = raw.replace('\n', "\\n").replace('\r', "\\r").replace('\t', "\\t");
            escaped.as_str()
        } else {
            raw
        };
        let (value, cut_chars) = cut(raw, MAX_VALUE_CHARS);
        let children = var.children();
        let reference = Some(var.variables_reference)
            .filter(|r| *r > 0)
            .map(|r| self.handles.add(HandleKind::Reference, r, children));
        VariableView {
            name: name.unwrap_or(&var.name).to_string(),
            value,
            type_name: var.type_name.clone().filter(|t| !t.is_empty()),
            cut_chars,
            reference,
            children,
        }
    }
}

/// The stopped thread and its stack, as the adapter answered.
type StackOf = Option<(i64, Result<StackTraceBody, crate::protocol::DapError>)>;

/// A frame's locals: (shown, how many more, the scope's reference).
type Locals = (Vec<VariableView>, usize, Option<u64>);

/// Where the top frame says the program stopped: at one of the function breakpoints that
/// stand in for an exception, or elsewhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StoppedAt {
    /// lldb at our `rust_panic` breakpoint.
    RustPanic,
    /// delve at our `testing.(*common).Fail` breakpoint.
    GoTestFailure,
    Elsewhere,
}

impl StoppedAt {
    fn of(kind: AdapterKind, frames: &[(FrameView, StackFrame)]) -> StoppedAt {
        let top = frames.first().map(|(f, _)| f.name.as_str());
        match (kind, top) {
            (AdapterKind::Lldb, Some(name)) if name.ends_with("rust_panic") => StoppedAt::RustPanic,
            (AdapterKind::Delve, Some(GO_TEST_FAIL)) => StoppedAt::GoTestFailure,
            _ => StoppedAt::Elsewhere,
        }
    }
}

/// The stop's reason and exception as the snapshot reports them.
struct ReportedStop {
    reason: String,
    exception: Option<ExceptionView>,
    /// The stop is the SIGSTOP of our own `pause`.
    paused_by_us: bool,
}

/// The frame to show and how many frames above it are skipped. A stop the user asked for (a
/// breakpoint, a step) is shown where it is, library code or not; one they did not (an
/// exception, a crash, a pause) at the first user frame.
fn choose_frame(
    reason: &str,
    stopped_at: StoppedAt,
    frames: &[(FrameView, StackFrame)],
    notes: &mut Vec<String>,
) -> (Option<(FrameView, StackFrame)>, usize) {
    let asked_for = stop_was_asked_for(reason) && stopped_at == StoppedAt::Elsewhere;
    let user_index = if asked_for { Some(0) } else { frames.iter().position(|(f, _)| !f.library) };
    if user_index.is_none() && !frames.is_empty() {
        notes.push("no frame is in the project's code; showing the top frame".into());
    }
    let skipped = user_index.unwrap_or(0);
    (frames.get(skipped).cloned(), skipped)
}

/// The exception of a stop at an exception, completed by the adapter's `exceptionInfo`.
fn exception_view(stop: &StopEvent, info: Option<ExceptionInfoBody>) -> ExceptionView {
    let mut view = ExceptionView {
        id: stop.text.clone(),
        description: stop.description.clone(),
        break_mode: None,
        details: None,
    };
    if let Some(info) = info {
        view.id = info.exception_id.or(view.id);
        view.description = info.description.or(view.description);
        view.break_mode = info.break_mode;
        view.details = info.details.and_then(|d| d.stack_trace).map(|t| cut(&t, 1500).0);
    }
    view.id = view.id.as_deref().map(without_debugpy_note);
    view.description = view.description.as_deref().map(without_debugpy_note);
    view
}

/// The message line after Rust's `panicked at FILE:LINE:COL:`.
pub(super) fn panic_message(output: &str) -> Option<String> {
    let mut lines = output.lines();
    while let Some(line) = lines.next() {
        if line.contains("panicked at ") {
            let at = line.split("panicked at ").nth(1).unwrap_or_default().trim_end_matches(':');
            let message = lines.next().unwrap_or_default().trim();
            return Some(if message.is_empty() {
                at.to_string()
            } else {
                format!("{message} (at {at})")
            });
        }
    }
    None
}

/// debugpy's `AssertionError       (note: full exception trace is shown but execution is paused
/// at: test_x)` → `AssertionError`: the note is about its own display.
fn without_debugpy_note(text: &str) -> String {
    match text.find("(note: full exception trace is shown") {
        Some(at) => {
            let rest = text[at..].find(')').map_or("", |end| &text[at + end + 1..]);
            format!("{}{}", text[..at].trim_end(), rest)
        }
        None => text.to_string(),
    }
}

/// Where a Go test is marked failed (`t.Errorf`, `t.Fatalf` and the like all call it).
pub(super) const GO_TEST_FAIL: &str = "testing.(*common).Fail";

/// Whether a stop of this reason is one the user asked for: a breakpoint of theirs or a step
/// (shown at the top frame), not an exception, a signal, a pause or the entry.
pub(super) fn stop_was_asked_for(reason: &str) -> bool {
    matches!(
        reason,
        "breakpoint"
            | "step"
            | "function breakpoint"
            | "data breakpoint"
            | "instruction breakpoint"
            | "goto"
    )
}

/// `buggy::average::hbbee2e627357c3f3` → `buggy::average` (the Rust symbol hash is noise).
pub(super) fn tidy_frame_name(name: &str) -> String {
    // debugpy marks the frame of a user-unhandled exception in its name.
    let name = name.strip_suffix(" (Current frame)").unwrap_or(name);
    if let Some((head, hash)) = name.rsplit_once("::h")
        && hash.len() == 16
        && hash.chars().all(|c| c.is_ascii_hexdigit())
    {
        return head.to_string();
    }
    name.to_string()
}

pub(super) fn place_of(frame: &FrameView) -> String {
    match (&frame.path, frame.line) {
        (Some(path), Some(line)) => format!("{} at {path}:{line}", frame.name),
        (Some(path), None) => format!("{} in {path}", frame.name),
        _ => frame.name.clone(),
    }
}

/// Library or runtime code, whatever the adapter's hints say.
pub(crate) fn is_library_path(path: &str) -> bool {
    [
        "/site-packages/",
        "/dist-packages/",
        "/lib/python3",
        "/usr/lib/go",
        "/usr/local/go/",
        "/rustc/",
        "/rustlib/",
        "/.cargo/registry/",
        "/pkg/mod/",
    ]
    .iter()
    .any(|p| path.contains(p))
}

pub(super) fn source_lines(path: &Path, line: u32) -> Vec<SourceLine> {
    let Ok(meta) = std::fs::metadata(path) else { return Vec::new() };
    if meta.len() > 8 * 1024 * 1024 {
        return Vec::new();
    }
    // Only a regular file is read: a FIFO at the path is never opened for reading.
    let Ok(bytes) = agent_tools_support::fs::read_regular(path, "source") else {
        return Vec::new();
    };
    let Ok(text) = String::from_utf8(bytes) else { return Vec::new() };
    let first = line.saturating_sub(SOURCE_CONTEXT).max(1);
    let last = line + SOURCE_CONTEXT;
    text.lines()
        .enumerate()
        .map(|(i, l)| (u32::try_from(i + 1).unwrap_or(u32::MAX), l))
        .filter(|(n, _)| *n >= first && *n <= last)
        .map(|(n, l)| SourceLine { line: n, text: cut(l, 200).0, current: n == line })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn debugpy_notes_about_its_own_display_are_dropped() {
        assert_eq!(
            super::without_debugpy_note(
                "AssertionError       (note: full exception trace is shown but execution is \
                 paused at: test_mean_of_three)"
            ),
            "AssertionError"
        );
        assert_eq!(super::without_debugpy_note("KeyError"), "KeyError");
    }
}
