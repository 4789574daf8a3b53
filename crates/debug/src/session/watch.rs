//! `watch`: let the program run until a condition holds (an expression true at a line, a
//! value changing, an exception raised, an output line matching), bounded like `continue`.
//! What the watch set up (breakpoints, a data breakpoint, exception filters, the output
//! pattern) is undone at the next stop, whichever call reports it, or at the end.

use std::path::{Path, PathBuf};

use agent_tools_support::progress::CallScope;
use tokio::time::Instant;

use super::*;
use crate::{
    adapters,
    dap_types::{
        DataBreakpoint, DataBreakpointInfo, DataBreakpointInfoArguments, Pause, SetDataBreakpoints,
        SetDataBreakpointsArguments, SetExceptionBreakpoints, SetExceptionBreakpointsArguments,
        ThreadArguments,
    },
    error::DebugError,
};

/// What to watch for; the first that holds stops the program.
#[derive(Debug, Clone, Default)]
pub(crate) struct WatchSpec {
    /// A line (with a condition, if any) and the conversation's own breakpoints in its file.
    pub at: Option<WatchAt>,
    /// An expression whose value changes, and the conversation's breakpoints in the stopped
    /// frame's file (for the fallback without data breakpoints).
    pub change: Option<String>,
    pub kept_in_frame_file: Option<BreakpointRequest>,
    /// Every exception raised, caught or not.
    pub exceptions: bool,
    pub pattern: Option<regex::Regex>,
}

#[derive(Debug, Clone)]
pub(crate) struct WatchAt {
    pub file: PathBuf,
    pub line: u32,
    pub condition: Option<String>,
    pub kept: Option<BreakpointRequest>,
}

/// A watch waiting for its condition.
#[derive(Default)]
pub(crate) struct ActiveWatch {
    /// What it waits for, in words ("`level` changes").
    pub(crate) what: Vec<String>,
    /// Files whose breakpoints the watch replaced, with the conversation's own to put back.
    files: Vec<(PathBuf, BreakpointRequest)>,
    data_breakpoint: bool,
    exception_filters: bool,
    /// The watched expression and its value when the watch began.
    change: Option<(String, String)>,
    at: Option<(PathBuf, u32)>,
    pattern: Option<String>,
    pauser: Option<tokio::task::JoinHandle<()>>,
}

impl Session {
    /// What a waiting watch waits for, in words.
    pub(crate) fn watching(&self) -> Option<String> {
        self.watching.as_ref().map(|w| w.what.join(", or "))
    }

    /// The file of the frame the latest stop showed.
    pub(crate) fn shown_file(&self) -> Option<PathBuf> {
        self.shown_frame.as_ref().and_then(|(p, _, _)| p.clone())
    }

    /// Sets up `spec`, lets the program run and waits (bounded by `wait`) for the next stop.
    pub(crate) async fn watch(
        &mut self,
        spec: WatchSpec,
        wait: Duration,
        cancel: &CallScope,
    ) -> Result<RunState, DebugError> {
        // Setting the watch up counts against the call's time: the call never waits past it.
        let started = Instant::now();
        if let Some(unseen) = self.unseen_stop().await {
            return Ok(RunState::Stopped(Box::new(unseen)));
        }
        if self.finished() {
            self.require_stopped("watch")?;
        }
        if self.watching.is_some() {
            return Err(DebugError::usage(
                "a watch is already waiting: `continue` waits for it again, `pause` ends it",
            ));
        }
        let running = self.shared.read(|s| s.running || s.epoch == 0);
        if spec.change.is_some() && running {
            self.require_stopped("watch a value (its frame is needed)")?;
        }
        let mut active = ActiveWatch::default();
        let setup = self.set_up_watch(spec, &mut active).await;
        // Kept first, so that a setup that failed half-way is undone like any watch.
        self.watching = Some(active);
        let notes = match setup {
            Ok(notes) => notes,
            Err(e) => {
                self.end_watch().await;
                return Err(e);
            }
        };
        let wait = wait.saturating_sub(started.elapsed());
        let state = if running {
            let epoch = self.shared.read(|s| s.epoch);
            self.wait_state(epoch, wait, cancel).await
        } else {
            match self.resume(Motion::Continue, None, wait, cancel).await {
                Ok(state) => state,
                Err(e) => {
                    self.end_watch().await;
                    return Err(e);
                }
            }
        };
        Ok(with_notes(state, notes))
    }

    /// Sets up every condition of `spec`; notes on how each is watched.
    async fn set_up_watch(
        &mut self,
        spec: WatchSpec,
        active: &mut ActiveWatch,
    ) -> Result<Vec<String>, DebugError> {
        let mut notes = Vec::new();
        if let Some(expression) = &spec.change {
            notes.extend(
                self.watch_change(expression, spec.kept_in_frame_file.clone(), active).await?,
            );
        }
        if let Some(at) = &spec.at {
            active.what.push(format!(
                "line {} of {} is reached{}",
                at.line,
                display_path(&at.file.display().to_string(), &self.root),
                at.condition.as_ref().map(|c| format!(" with `{c}` true")).unwrap_or_default()
            ));
            notes.extend(self.watch_line(at, active).await);
        }
        if spec.exceptions {
            active.what.push("an exception is raised".into());
            notes.extend(self.watch_exceptions(active).await?);
        }
        if let Some(pattern) = spec.pattern {
            active.what.push(format!("an output line matches `{pattern}`"));
            active.pattern = Some(pattern.as_str().to_string());
            self.shared.update(|s| {
                s.watch_matched = None;
                s.watch_pattern = Some(pattern);
            });
            active.pauser = Some(self.spawn_pauser());
        }
        Ok(notes)
    }

    /// A line reached with its condition true: the watched line joins the conversation's own
    /// breakpoints in its file until the watch ends.
    async fn watch_line(&mut self, at: &WatchAt, active: &mut ActiveWatch) -> Option<String> {
        let empty = BreakpointRequest { lines: Vec::new(), library: false };
        let kept = at.kept.clone().unwrap_or(empty);
        let mut request = kept.clone();
        request.lines.retain(|b| b.line != at.line);
        request.lines.push(LineBreakpoint {
            line: at.line,
            condition: at.condition.clone(),
            hit_condition: None,
            log_message: None,
        });
        request.lines.sort_by_key(|b| b.line);
        let views = self.set_breakpoints(&at.file, &request).await;
        active.files.push((at.file.clone(), kept));
        active.at = Some((at.file.clone(), at.line));
        let view = views.iter().find(|v| v.requested == at.line && !v.verified)?;
        Some(format!(
            "the watched line {} is not verified yet{}",
            at.line,
            view.message.as_ref().map(|m| format!(": {m}")).unwrap_or_default()
        ))
    }

    /// Every exception raised, caught or not, where the adapter has a filter for it.
    async fn watch_exceptions(
        &mut self,
        active: &mut ActiveWatch,
    ) -> Result<Option<String>, DebugError> {
        let wanted = adapters::exception_filters(self.kind, ExceptionMode::All, &self.capabilities);
        if wanted.is_empty() {
            return Ok(Some(format!(
                "the {} adapter has no filter for caught exceptions; it stops on crashes and \
                 panics by itself",
                self.kind.id()
            )));
        }
        self.client
            .request::<SetExceptionBreakpoints>(
                SetExceptionBreakpointsArguments { filters: wanted },
                self.config.request_timeout(),
            )
            .await
            .map_err(|e| DebugError::adapter(format!("watch: exception breakpoints: {e}")))?;
        active.exception_filters = true;
        Ok(None)
    }

    /// A value change: a data breakpoint where the adapter offers one, else a conditional
    /// breakpoint on every line of the stopped frame's function ("the value differs").
    async fn watch_change(
        &mut self,
        expression: &str,
        kept: Option<BreakpointRequest>,
        active: &mut ActiveWatch,
    ) -> Result<Vec<String>, DebugError> {
        let probe = if self.kind == AdapterKind::Debugpy {
            format!("repr({expression})")
        } else {
            expression.to_string()
        };
        let old = self.evaluate(&probe, None).await?.result;
        if old.cut_chars > 0 {
            return Err(DebugError::usage(format!(
                "`{expression}` is too long a value to watch ({} characters); watch a part of it \
                 (a length, a field)",
                old.value.chars().count() + old.cut_chars
            )));
        }
        let old = old.value;
        active.change = Some((expression.to_string(), old.clone()));
        let (path, line, frame_id) = self.shown_frame.clone().unwrap_or((None, 0, None));
        if self.capabilities.supports_data_breakpoints.unwrap_or(false) {
            let info = self
                .client
                .request::<DataBreakpointInfo>(
                    DataBreakpointInfoArguments {
                        name: data_name(self.kind, expression),
                        frame_id,
                    },
                    self.config.request_timeout(),
                )
                .await;
            if let Ok(info) = info
                && let Some(data_id) = info.data_id
            {
                let set = self
                    .client
                    .request::<SetDataBreakpoints>(
                        SetDataBreakpointsArguments {
                            breakpoints: vec![DataBreakpoint { data_id, access_type: "write" }],
                        },
                        self.config.request_timeout(),
                    )
                    .await;
                if set
                    .as_ref()
                    .is_ok_and(|b| b.breakpoints.iter().any(|b| b.verified == Some(true)))
                {
                    active.data_breakpoint = true;
                    active
                        .what
                        .push(format!("`{expression}` changes (now {old}; a data breakpoint)"));
                    return Ok(vec![format!(
                        "watching `{expression}` (now {old}) with a data breakpoint"
                    )]);
                }
            }
        }
        let Some(path) = path else {
            return Err(DebugError::usage(format!(
                "cannot watch `{expression}`: the stopped frame has no source file, and the {} \
                 adapter has no data breakpoint for it",
                self.kind.id()
            )));
        };
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let lines = function_lines(&text, line, self.kind);
        active.what.push(format!(
            "`{expression}` changes (now {old}; a condition on the {} lines of its function)",
            lines.len()
        ));
        let condition = change_condition(self.kind, expression, &old);
        let mut request =
            kept.clone().unwrap_or(BreakpointRequest { lines: Vec::new(), library: false });
        for l in &lines {
            if !request.lines.iter().any(|b| b.line == *l) {
                request.lines.push(LineBreakpoint {
                    line: *l,
                    condition: Some(condition.clone()),
                    hit_condition: None,
                    log_message: None,
                });
            }
        }
        request.lines.sort_by_key(|b| b.line);
        self.set_breakpoints(&path, &request).await;
        active
            .files
            .push((path, kept.unwrap_or(BreakpointRequest { lines: Vec::new(), library: false })));
        Ok(vec![format!(
            "watching `{expression}` (now {old}) with a condition on the {} lines of its function \
             (the {} adapter has no data breakpoint): the stop is at the first line after the change",
            lines.len(),
            self.kind.id()
        )])
    }

    /// A task that pauses the program once an output line matched the watched pattern.
    fn spawn_pauser(&self) -> tokio::task::JoinHandle<()> {
        let (shared, client) = (self.shared.clone(), self.client.clone());
        let timeout = self.config.request_timeout();
        let thread = self.thread_or_default(None);
        tokio::spawn(async move {
            let mut rx = shared.subscribe();
            loop {
                let (matched, over) = shared.read(|s| {
                    (
                        s.watch_matched.is_some(),
                        s.ended() || s.gone.is_some() || s.watch_pattern.is_none(),
                    )
                });
                if over {
                    return;
                }
                if matched && shared.read(|s| s.running) {
                    shared.update(|s| s.pausing = true);
                    let _ = client
                        .request::<Pause>(ThreadArguments { thread_id: thread }, timeout)
                        .await;
                    return;
                }
                if rx.changed().await.is_err() {
                    return;
                }
            }
        })
    }

    /// Undoes the watch (if one waits) at a stop, and says whether its condition held.
    pub(super) async fn finish_watch(&mut self, snapshot: &mut StopSnapshot) {
        let Some(watch) = self.watching.as_ref() else { return };
        let (change, at, pattern) = (watch.change.clone(), watch.at.clone(), watch.pattern.clone());
        let matched = self.end_watch().await;
        let mut held = Vec::new();
        if let (Some(pattern), Some(line)) = (&pattern, &matched) {
            held.push(format!("watch: an output line matched `{pattern}`: {line}"));
        }
        if let Some((expression, old)) = &change {
            let probe = if self.kind == AdapterKind::Debugpy {
                format!("repr({expression})")
            } else {
                expression.clone()
            };
            if let Ok(now) = self.evaluate(&probe, None).await
                && now.result.value != *old
            {
                held.push(format!("watch: `{expression}` changed: {old} → {}", now.result.value));
            }
        }
        if let Some((file, line)) = &at {
            let here = self.shown_frame.as_ref().is_some_and(|(p, l, _)| {
                p.as_deref().map(Path::new) == Some(file.as_path()) && l == line
            });
            if here && snapshot.reason.contains("breakpoint") {
                held.push(format!("watch: stopped at line {line} with the condition true"));
            }
        }
        if snapshot.reason == "exception" {
            held.push("watch: an exception was raised".into());
        }
        if held.is_empty() {
            held.push(format!(
                "watch ended: the program stopped ({}) before the watched condition held",
                snapshot.reason
            ));
        }
        snapshot.notes.splice(0..0, held);
    }

    /// Undoes what the watch set up; the output line that matched, if one did.
    pub(super) async fn end_watch(&mut self) -> Option<String> {
        let watch = self.watching.take()?;
        if let Some(pauser) = &watch.pauser {
            pauser.abort();
        }
        let matched = self.shared.update(|s| s.end_output_watch());
        if self.shared.read(|s| s.ended() || s.gone.is_some()) {
            return matched;
        }
        for (file, kept) in &watch.files {
            self.set_breakpoints(file, kept).await;
        }
        let timeout = self.config.request_timeout();
        if watch.data_breakpoint {
            let none = SetDataBreakpointsArguments { breakpoints: Vec::new() };
            let _ = self.client.request::<SetDataBreakpoints>(none, timeout).await;
        }
        if watch.exception_filters {
            let filters =
                adapters::exception_filters(self.kind, self.exceptions, &self.capabilities);
            let args = SetExceptionBreakpointsArguments { filters };
            let _ = self.client.request::<SetExceptionBreakpoints>(args, timeout).await;
        }
        matched
    }
}

/// The notes put first in a stop's snapshot.
fn with_notes(state: RunState, notes: Vec<String>) -> RunState {
    match state {
        RunState::Stopped(mut snapshot) => {
            snapshot.notes.extend(notes);
            RunState::Stopped(snapshot)
        }
        other => other,
    }
}

/// The `dataBreakpointInfo` name of `expression`: lldb-dap 19 takes an expression as the
/// address to watch (`level` = 1 would watch address 1), so it gets the address of it.
fn data_name(kind: AdapterKind, expression: &str) -> String {
    match kind {
        AdapterKind::Lldb => format!("&({expression})"),
        _ => expression.to_string(),
    }
}

/// "The value differs from `old`" in the adapter's language (`old` as the adapter showed it:
/// for debugpy the `repr` of the value, itself a string literal).
fn change_condition(kind: AdapterKind, expression: &str, old: &str) -> String {
    let name = expression.chars().all(|c| c.is_alphanumeric() || c == '_');
    match kind {
        // A line before the name is bound (in another call of the function) must not fail.
        AdapterKind::Debugpy if name => {
            format!("'{expression}' in locals() and repr({expression}) != {old}")
        }
        AdapterKind::Debugpy => format!("repr({expression}) != {old}"),
        _ => format!("{expression} != {old}"),
    }
}

/// The body lines of the function around `line`: by indentation for Python (from its `def`
/// to the first line indented no deeper), by braces for the others (from the line that opens
/// it at column 0 to the `}` at column 0).
pub(crate) fn function_lines(text: &str, line: u32, kind: AdapterKind) -> Vec<u32> {
    let lines: Vec<&str> = text.lines().collect();
    let here = (line as usize).saturating_sub(1).min(lines.len().saturating_sub(1));
    let indent = |l: &str| l.len() - l.trim_start().len();
    let blank = |l: &str| l.trim().is_empty() || l.trim_start().starts_with('#');
    let (start, end) = if kind == AdapterKind::Debugpy {
        let def = (0..=here).rev().find(|i| {
            let t = lines[*i].trim_start();
            (t.starts_with("def ") || t.starts_with("async def "))
                && indent(lines[*i]) < indent(lines[here]).max(1)
        });
        let Some(def) = def else { return Vec::new() };
        let end = (def + 1..lines.len())
            .find(|i| !blank(lines[*i]) && indent(lines[*i]) <= indent(lines[def]))
            .unwrap_or(lines.len());
        (def + 1, end)
    } else {
        let open = (0..=here).rev().find(|i| {
            let l = lines[*i];
            !l.starts_with(' ') && !l.starts_with('\t') && l.trim_end().ends_with('{')
        });
        let Some(open) = open else { return Vec::new() };
        let close = (here..lines.len()).find(|i| lines[*i].starts_with('}')).unwrap_or(lines.len());
        (open + 1, close)
    };
    (start..end)
        .filter(|i| !blank(lines[*i]) && !lines[*i].trim_start().starts_with("//"))
        .filter_map(|i| u32::try_from(i + 1).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_function_is_its_body_lines_by_indentation_or_braces() {
        let py = "import time\n\ndef main():\n    a = 1\n\n    # c\n    a = 2\n\nmain()\n";
        assert_eq!(function_lines(py, 4, AdapterKind::Debugpy), [4, 7]);
        let go = "package main\n\nfunc main() {\n\ta := 1\n\ta = 2\n}\n\nfunc x() {}\n";
        assert_eq!(function_lines(go, 4, AdapterKind::Delve), [4, 5]);
        assert_eq!(
            change_condition(AdapterKind::Debugpy, "level", "'1'"),
            "'level' in locals() and repr(level) != '1'"
        );
        assert_eq!(change_condition(AdapterKind::Delve, "level", "1"), "level != 1");
    }
}
