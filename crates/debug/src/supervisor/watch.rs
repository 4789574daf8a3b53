//! The `watch` operation: what to watch for, from the call's arguments, and the session's
//! bounded run until it holds.

use std::{path::Path, time::Duration};

use agent_tools_support::progress::CallScope;

use super::{DebugSupervisor, SlotInner, no_session};
use crate::{
    adapters::ExceptionMode,
    error::DebugError,
    launch,
    request::DebugArgs,
    response::*,
    session::watch::{WatchAt, WatchSpec},
};

impl DebugSupervisor {
    pub(super) async fn watch(
        &self,
        inner: &mut SlotInner,
        root: &Path,
        args: &DebugArgs,
        wait: Duration,
        cancel: &CallScope,
    ) -> Result<DebugOutcome, DebugError> {
        let mut spec = WatchSpec {
            change: args.expression.clone(),
            exceptions: args.exceptions == Some(ExceptionMode::All),
            ..Default::default()
        };
        if let Some(pattern) = &args.pattern {
            spec.pattern = Some(regex::Regex::new(pattern).map_err(|e| {
                DebugError::usage(format!("watch: `pattern` is not a regular expression: {e}"))
            })?);
        }
        if let Some(file) = args.file.as_deref() {
            let line = match args.lines.as_deref() {
                Some([line]) if *line > 0 => *line,
                _ => {
                    return Err(DebugError::usage(
                        "watch with `file` needs `lines` with one line (1-based), and a \
                         `condition` to stop only when it is true there",
                    ));
                }
            };
            let libraries = self.library_roots(root).await;
            let (path, _) = launch::resolve_source(root, file, &libraries)?;
            let kept = inner.breakpoints.get(&path).cloned();
            spec.at = Some(WatchAt { file: path, line, condition: args.condition.clone(), kept });
        }
        if spec.at.is_none() && spec.change.is_none() && !spec.exceptions && spec.pattern.is_none()
        {
            return Err(DebugError::usage(
                "watch needs what to wait for: `file` + `lines` (+ `condition`): a line reached \
                 with the condition true; `expression`: its value changing; `exceptions: \
                 \"all\"`: any exception raised; `pattern`: an output line matching",
            ));
        }
        let last_end = inner.last_end.clone();
        let breakpoints = inner.breakpoints.clone();
        let Some(session) = inner.session.as_mut() else {
            return Err(no_session(last_end.as_deref()));
        };
        if spec.change.is_some() {
            spec.kept_in_frame_file =
                session.shown_file().and_then(|file| breakpoints.get(&file).cloned());
        }
        Ok(DebugOutcome::Run(session.watch(spec, wait, cancel).await?))
    }
}
