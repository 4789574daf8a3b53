//! Looking closer at a stopped program: the session view and status, threads, stack, scopes,
//! variables, evaluate and output.

use tokio::time::Instant;

use super::{handles::HandleKind, *};
use crate::{
    dap_types::{
        Evaluate, EvaluateArguments, NoArguments, Scopes, ScopesArguments, SetVariable,
        SetVariableArguments, StackTrace, StackTraceArguments, Threads, Variable, Variables,
        VariablesArguments,
    },
    error::DebugError,
    protocol::DapError,
    response::*,
};

impl Session {
    /// The session as `status` and `launch` show it.
    pub(crate) fn view(&self) -> SessionView {
        let adapter_pid = self.process.as_ref().map(|p| p.pid);
        let debuggee_pid = self
            .shared
            .read(|s| s.process_pid)
            .or_else(|| self.shared.read(|s| s.debuggees.first().map(|p| p.pid)));
        SessionView {
            adapter: self.kind,
            request: self.request.to_string(),
            program: display_path(&self.program, &self.root),
            command: self.command.clone(),
            adapter_version: self.version.clone(),
            adapter_pid,
            debuggee_pid,
            ttl_seconds_left: self.deadline.saturating_duration_since(Instant::now()).as_secs(),
            notes: self.notes.clone(),
        }
    }

    pub(crate) fn status(&self) -> (String, Option<StopSummary>, Option<i64>, u64) {
        self.shared.read(|s| {
            let unread = s.output.end().saturating_sub(s.output.delivered());
            if s.ended() {
                ("exited".into(), None, s.exit_code, unread)
            } else if s.gone.is_some() {
                ("adapter_gone".into(), None, None, unread)
            } else if s.running || s.epoch == 0 {
                ("running".into(), None, None, unread)
            } else {
                let stop = s.stop.clone().unwrap_or_default();
                (
                    "stopped".into(),
                    Some(StopSummary {
                        stop: s.epoch,
                        reason: stop.reason,
                        thread_id: stop.thread_id,
                        place: self.last_place.clone(),
                    }),
                    None,
                    unread,
                )
            }
        })
    }

    /// Whether the program ended or the adapter went away: a new launch may replace it.
    pub(crate) fn finished(&self) -> bool {
        self.shared.read(|s| s.ended() || s.gone.is_some())
    }

    pub(crate) async fn threads(&mut self) -> Result<(Vec<ThreadView>, usize), DebugError> {
        if self.finished() {
            self.require_stopped("list threads")?;
        }
        let body =
            self.client.request::<Threads>(NoArguments {}, self.config.request_timeout()).await?;
        let all: Vec<ThreadView> = body
            .threads
            .into_iter()
            .map(|t| ThreadView { id: t.id, name: t.name.unwrap_or_default() })
            .collect();
        let more = all.len().saturating_sub(MAX_THREADS);
        Ok((all.into_iter().take(MAX_THREADS).collect(), more))
    }

    pub(crate) async fn stack(&mut self, thread_id: Option<i64>) -> Result<StackView, DebugError> {
        self.require_stopped("read the stack")?;
        let thread = self.thread_or_default(thread_id);
        let epoch = self.shared.read(|s| s.epoch);
        self.handles.begin_stop(epoch);
        let args = StackTraceArguments { thread_id: thread, start_frame: 0, levels: MAX_FRAMES };
        let body = self.client.request::<StackTrace>(args, self.config.request_timeout()).await?;
        let frames: Vec<FrameView> =
            body.stack_frames.iter().take(MAX_FRAMES).map(|f| self.frame_view(f)).collect();
        Ok(StackView { stop: epoch, thread_id: thread, frames, total: body.total_frames })
    }

    pub(super) fn running(&self) -> bool {
        self.shared.read(|s| s.running || s.ended() || s.gone.is_some())
    }

    /// The scopes of `frame_id`, by default of the current stop's user frame.
    pub(crate) async fn scopes(
        &mut self,
        frame_id: Option<u64>,
    ) -> Result<(u64, Vec<ScopeView>), DebugError> {
        self.require_stopped("read scopes")?;
        let frame_id = frame_id.or(self.default_frame).ok_or_else(|| {
            DebugError::usage("this stop has no frame; pass `frame_id` from `stack`")
        })?;
        let handle = self.handles.resolve(frame_id, HandleKind::Frame, self.running())?;
        let body = self
            .client
            .request::<Scopes>(
                ScopesArguments { frame_id: handle.adapter_id },
                self.config.request_timeout(),
            )
            .await?;
        let views = body
            .scopes
            .into_iter()
            .filter(|s| s.variables_reference > 0)
            .map(|s| {
                let count = s.count();
                ScopeView {
                    reference: self.handles.add(
                        HandleKind::Reference,
                        s.variables_reference,
                        count,
                    ),
                    name: s.name,
                    expensive: s.expensive,
                    count,
                }
            })
            .collect();
        Ok((frame_id, views))
    }

    pub(crate) async fn variables(
        &mut self,
        reference: u64,
        start: u64,
    ) -> Result<VariablesView, DebugError> {
        let handle = self.handles.resolve(reference, HandleKind::Reference, self.running())?;
        let paged = start > 0 || handle.children.is_some_and(|c| c > MAX_CHILDREN as u64);
        let args = VariablesArguments {
            variables_reference: handle.adapter_id,
            start: paged.then_some(start),
            count: paged.then_some(MAX_CHILDREN as u64 + 1),
        };
        let body = self.client.request::<Variables>(args, self.config.request_timeout()).await?;
        let mut vars: Vec<Variable> = body.variables;
        if paged && vars.len() > MAX_CHILDREN + 1 {
            // The adapter ignored start/count: page here.
            vars = vars.into_iter().skip(usize::try_from(start).unwrap_or(usize::MAX)).collect();
        }
        let has_more = vars.len() > MAX_CHILDREN
            || handle.children.is_some_and(|c| c > start + MAX_CHILDREN as u64);
        let mut variables = Vec::new();
        for var in vars.into_iter().take(MAX_CHILDREN) {
            let var = self.with_preview(var).await;
            variables.push(self.variable_view(&var, None));
        }
        Ok(VariablesView { reference, start, variables, has_more, total: handle.children })
    }

    pub(crate) async fn evaluate(
        &mut self,
        expression: &str,
        frame_id: Option<u64>,
    ) -> Result<EvaluateView, DebugError> {
        // A running program has no frame to evaluate in (debugpy would answer a NameError).
        self.require_stopped("evaluate")?;
        let frame_id = frame_id.or(self.default_frame);
        let mut args = EvaluateArguments {
            expression: expression.to_string(),
            frame_id: None,
            context: self.kind.evaluate_context(),
        };
        if let Some(id) = frame_id {
            let handle = self.handles.resolve(id, HandleKind::Frame, self.running())?;
            args.frame_id = Some(handle.adapter_id);
        }
        let body =
            self.client.request::<Evaluate>(args, self.config.request_timeout()).await.map_err(
                |e| match e {
                    DapError::Failed { message, .. } => DebugError::adapter(format!(
                        "evaluating `{expression}` failed: {}",
                        evaluate_error(&message)
                    )),
                    other => other.into(),
                },
            )?;
        let result = self.variable_view(&body.into_variable(expression), Some(expression));
        Ok(EvaluateView { expression: expression.to_string(), frame_id, result })
    }

    /// Sets `name` under `reference` to the value of `value`, where the adapter can.
    pub(crate) async fn set_variable(
        &mut self,
        reference: u64,
        name: &str,
        value: &str,
    ) -> Result<VariableView, DebugError> {
        self.require_stopped("set a variable")?;
        if !self.capabilities.supports_set_variable.unwrap_or(false) {
            return Err(DebugError::usage(format!(
                "the {} adapter cannot set variables; `evaluate` an assignment instead",
                self.kind.id()
            )));
        }
        let handle = self.handles.resolve(reference, HandleKind::Reference, self.running())?;
        let args = SetVariableArguments {
            variables_reference: handle.adapter_id,
            name: name.to_string(),
            value: value.to_string(),
        };
        let body =
            self.client.request::<SetVariable>(args, self.config.request_timeout()).await.map_err(
                |e| match e {
                    DapError::Failed { message, .. } => DebugError::adapter(format!(
                        "setting `{name}` to `{value}` failed: {}",
                        evaluate_error(&message)
                    )),
                    other => other.into(),
                },
            )?;
        Ok(self.variable_view(&body.into_variable(name), Some(name)))
    }

    pub(crate) fn output(&self, since: Option<u64>) -> OutputView {
        let (output, exit_code) =
            self.shared.update(|s| (s.output.read(since, OUTPUT_CHARS), s.exit_code));
        let (exit_code, ended_by) = self.how_it_ended(exit_code);
        OutputView { output, exit_code, ended_by }
    }
}

/// An evaluation error as a model needs it: debugpy wraps a SyntaxError in its own traceback
/// (2 KB of internals); keep the error itself and the lines that point at it.
fn evaluate_error(message: &str) -> String {
    if !message.contains("Traceback (most recent call last)") {
        return message.trim().to_string();
    }
    let lines: Vec<&str> = message.lines().collect();
    let error = lines.iter().rposition(|l| {
        let l = l.trim_start();
        !l.starts_with("File ") && l.split(':').next().is_some_and(|h| h.ends_with("Error"))
    });
    let Some(error) = error else { return message.trim().to_string() };
    // The caret lines of a SyntaxError sit between the last `File "<string>"` and the error.
    let from = lines[..error]
        .iter()
        .rposition(|l| l.trim_start().starts_with("File \"<string>\""))
        .map_or(error, |i| i + 1);
    lines[from..=error].iter().map(|l| l.trim_end()).collect::<Vec<_>>().join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_syntax_error_keeps_the_error_not_the_adapter_internals() {
        let message = "Traceback (most recent call last):\n  File \"/x/pydevd_vars.py\", line 1, in f\n    compile()\n  File \"<string>\", line 1\n    1 +\n       ^\nSyntaxError: invalid syntax\n";
        assert_eq!(evaluate_error(message), "    1 +\n       ^\nSyntaxError: invalid syntax");
        assert_eq!(evaluate_error("name 'x' is not defined"), "name 'x' is not defined");
    }
}
