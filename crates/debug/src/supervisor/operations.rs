//! The operations on a running session, and `status`.

use std::time::Duration;

use agent_tools_support::progress::CallScope;

use super::{SlotInner, need};
use crate::{
    error::DebugError,
    request::{DebugArgs, Operation},
    response::*,
    session::{Motion, Session},
};

pub(super) async fn session_op(
    session: &mut Session,
    args: &DebugArgs,
    wait: Duration,
    cancel: &CallScope,
) -> Result<DebugOutcome, DebugError> {
    let op = args.operation;
    Ok(match op {
        Operation::Continue => {
            DebugOutcome::Run(session.resume(Motion::Continue, args.thread_id, wait, cancel).await?)
        }
        Operation::StepOver => {
            DebugOutcome::Run(session.resume(Motion::StepOver, args.thread_id, wait, cancel).await?)
        }
        Operation::StepIn => {
            DebugOutcome::Run(session.resume(Motion::StepIn, args.thread_id, wait, cancel).await?)
        }
        Operation::StepOut => {
            DebugOutcome::Run(session.resume(Motion::StepOut, args.thread_id, wait, cancel).await?)
        }
        Operation::Pause => DebugOutcome::Run(session.pause(args.thread_id, wait, cancel).await?),
        Operation::Threads => {
            let (threads, more) = session.threads().await?;
            DebugOutcome::Threads { threads, more }
        }
        Operation::Stack => DebugOutcome::Stack(session.stack(args.thread_id).await?),
        Operation::Scopes => {
            let (frame_id, scopes) = session.scopes(args.frame_id).await?;
            DebugOutcome::Scopes { frame_id, scopes }
        }
        Operation::Variables => {
            let reference = need(
                args.reference,
                "variables",
                "reference",
                "from `scopes`, a variable or a snapshot",
            )?;
            DebugOutcome::Variables(session.variables(reference, args.start.unwrap_or(0)).await?)
        }
        Operation::Evaluate => {
            let expression = need(
                args.expression.as_deref(),
                "evaluate",
                "expression",
                "in the program's language",
            )?;
            DebugOutcome::Evaluate(session.evaluate(expression, args.frame_id).await?)
        }
        Operation::Output => DebugOutcome::Output(session.output(args.since)),
        Operation::SetVariable => {
            let reference =
                need(args.reference, "set_variable", "reference", "from `scopes` or a snapshot")?;
            let name = need(args.name.as_deref(), "set_variable", "name", "the variable's name")?;
            let value = need(
                args.expression.as_deref(),
                "set_variable",
                "expression",
                "the new value, in the program's language",
            )?;
            DebugOutcome::SetVariable(session.set_variable(reference, name, value).await?)
        }
        Operation::Input => {
            let text = need(
                args.stdin.as_deref(),
                "input",
                "stdin",
                "the text to send; \"\" closes stdin",
            )?;
            DebugOutcome::Input(session.send_input(text, wait, cancel).await?)
        }
        other => {
            return Err(DebugError::usage(format!(
                "{} is not a session operation",
                other.as_str()
            )));
        }
    })
}

pub(super) async fn status_view(inner: &mut SlotInner) -> StatusView {
    let breakpoints = inner.breakpoints.values().map(|b| b.lines.len()).sum();
    match &mut inner.session {
        Some(session) => {
            let snapshot = session.current_stop().await.map(Box::new);
            let (state, stop, exit_code, unread) = session.status();
            let (exit_code, ended_by) =
                if state == "exited" { session.how_it_ended(exit_code) } else { (exit_code, None) };
            StatusView {
                session: Some(session.view()),
                state,
                stop,
                snapshot,
                exit_code,
                ended_by,
                breakpoints,
                last_end: None,
                unread_output: unread,
                watching: session.watching(),
            }
        }
        None => StatusView {
            session: None,
            state: "none".into(),
            stop: None,
            snapshot: None,
            exit_code: None,
            ended_by: None,
            breakpoints,
            last_end: inner.last_end.clone(),
            unread_output: 0,
            watching: None,
        },
    }
}

/// Whether `operation` lets the program run (it then reports an unseen stop itself, in place
/// of resuming from it).
fn lets_the_program_run(operation: Operation) -> bool {
    matches!(
        operation,
        Operation::Continue
            | Operation::StepOver
            | Operation::StepIn
            | Operation::StepOut
            | Operation::Pause
            | Operation::Input
    )
}

/// Runs a session operation; a stop no call has shown yet comes first in its result.
pub(super) async fn session_op_after_unseen(
    session: &mut Session,
    args: &DebugArgs,
    wait: Duration,
    cancel: &CallScope,
) -> Result<DebugOutcome, DebugError> {
    let unseen =
        if lets_the_program_run(args.operation) { None } else { session.unseen_stop().await };
    let result = session_op(session, args, wait, cancel).await;
    let Some(stop) = unseen else { return result };
    match result {
        Ok(then) => {
            Ok(DebugOutcome::StoppedMeanwhile { stop: Box::new(stop), then: Box::new(then) })
        }
        Err(e) => {
            // Shown by the next call instead.
            session.unreport(stop.stop);
            let place = stop.frame.as_ref().map(|f| {
                format!(
                    " in {}{}",
                    f.name,
                    match (&f.path, f.line) {
                        (Some(p), Some(l)) => format!(" at {p}:{l}"),
                        _ => String::new(),
                    }
                )
            });
            let note = format!(
                " (meanwhile the program stopped: stop {}, {}{}; `status` shows it)",
                stop.stop,
                stop.reason,
                place.unwrap_or_default()
            );
            Err(match e {
                DebugError::Usage(m) => DebugError::Usage(m + &note),
                DebugError::Stale(m) => DebugError::Stale(m + &note),
                DebugError::Adapter(m) => DebugError::Adapter(m + &note),
                other => other,
            })
        }
    }
}
