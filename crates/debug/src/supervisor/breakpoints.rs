//! The `breakpoints` operation: the breakpoints of a conversation, as an IDE keeps them (each
//! line on its own, with its own condition, hit condition and log message; added and removed
//! one at a time), kept across its sessions and sent to the running one at once.

use std::path::{Path, PathBuf};

use super::{DebugSupervisor, SlotInner};
use crate::{
    error::DebugError,
    launch,
    request::DebugArgs,
    response::*,
    session::{BreakpointRequest, LineBreakpoint, check_hit_condition, display_path, pending_view},
};

impl DebugSupervisor {
    pub(super) async fn breakpoints(
        &self,
        inner: &mut SlotInner,
        root: &Path,
        args: &DebugArgs,
    ) -> Result<DebugOutcome, DebugError> {
        let Some(file) = args.file.as_deref() else {
            return self.every_file(inner, root, args).await;
        };
        let (lines, remove) = checked_lines(args)?;
        let libraries = self.library_roots(root).await;
        let (path, library) = launch::resolve_source(root, file, &libraries)?;
        if !path.is_file() {
            return Err(DebugError::usage(format!("`{file}` is not a file")));
        }
        let shown = display_path(&path.display().to_string(), root);
        let mut request = inner
            .breakpoints
            .get(&path)
            .cloned()
            .unwrap_or(BreakpointRequest { lines: Vec::new(), library });
        request.library = library;
        edit_lines(&mut request, &lines, remove, args, &shown)?;
        if request.lines.is_empty() {
            inner.breakpoints.remove(&path);
        } else {
            inner.breakpoints.insert(path.clone(), request.clone());
        }
        match inner.session.as_mut().filter(|s| !s.finished()) {
            Some(session) => {
                let breakpoints = session.set_breakpoints(&path, &request).await;
                Ok(DebugOutcome::Breakpoints(BreakpointsView {
                    file: shown,
                    breakpoints,
                    pending: false,
                }))
            }
            None => Ok(DebugOutcome::Breakpoints(BreakpointsView {
                breakpoints: request.lines.iter().map(|b| pending_view(&shown, b)).collect(),
                file: shown,
                pending: true,
            })),
        }
    }

    /// Without `file`: every breakpoint with its state, or (`lines: []`) none any more.
    async fn every_file(
        &self,
        inner: &mut SlotInner,
        root: &Path,
        args: &DebugArgs,
    ) -> Result<DebugOutcome, DebugError> {
        match args.lines.as_deref() {
            None => {}
            Some([]) => {
                let files: Vec<PathBuf> =
                    std::mem::take(&mut inner.breakpoints).into_keys().collect();
                if let Some(session) = inner.session.as_mut().filter(|s| !s.finished()) {
                    for file in files {
                        let none = BreakpointRequest { lines: Vec::new(), library: false };
                        session.set_breakpoints(&file, &none).await;
                    }
                }
            }
            Some(_) => {
                return Err(DebugError::usage(
                    "breakpoints with `lines` needs `file` (the source file the lines are in)",
                ));
            }
        }
        let live = inner.session.as_ref().filter(|s| !s.finished());
        let mut breakpoints = Vec::new();
        for (path, request) in &inner.breakpoints {
            let shown = display_path(&path.display().to_string(), root);
            match live.and_then(|s| s.placed(path)) {
                Some(placed) => breakpoints.extend(placed),
                None => breakpoints.extend(request.lines.iter().map(|b| pending_view(&shown, b))),
            }
        }
        Ok(DebugOutcome::Breakpoints(BreakpointsView {
            file: String::new(),
            breakpoints,
            pending: live.is_none(),
        }))
    }
}

/// The call's `lines` (checked) and whether they are to be removed.
fn checked_lines(args: &DebugArgs) -> Result<(Vec<u32>, bool), DebugError> {
    let lines = args.lines.clone().ok_or_else(|| {
        DebugError::usage(
            "breakpoints needs `lines` with `file` (line numbers to add, or to drop with \
             `remove: true`; [] clears the file); without `file` it lists every breakpoint",
        )
    })?;
    if lines.contains(&0) {
        return Err(DebugError::usage("line numbers start at 1"));
    }
    let remove = args.remove.unwrap_or(false);
    if remove
        && (args.condition.is_some() || args.hit_condition.is_some() || args.log_message.is_some())
    {
        return Err(DebugError::usage(
            "`remove: true` takes only `file` and `lines`; to change a breakpoint, add its \
             line again with the new condition, hit_condition or log_message",
        ));
    }
    if let Some(hit) = &args.hit_condition {
        check_hit_condition(hit)?;
    }
    Ok((lines, remove))
}

/// Applies the call to the file's breakpoints: `[]` clears them, `remove` drops the lines
/// (each must be set), else the lines are added or replaced, in line order.
fn edit_lines(
    request: &mut BreakpointRequest,
    lines: &[u32],
    remove: bool,
    args: &DebugArgs,
    shown: &str,
) -> Result<(), DebugError> {
    if lines.is_empty() {
        request.lines.clear();
    } else if remove {
        let missing: Vec<String> = lines
            .iter()
            .filter(|l| !request.lines.iter().any(|b| b.line == **l))
            .map(u32::to_string)
            .collect();
        if !missing.is_empty() {
            let set: Vec<String> = request.lines.iter().map(|b| b.line.to_string()).collect();
            return Err(DebugError::usage(format!(
                "no breakpoint at line {} of {shown} to remove ({})",
                missing.join(", "),
                if set.is_empty() {
                    "it has none".to_string()
                } else {
                    format!("it has line {}", set.join(", "))
                }
            )));
        }
        request.lines.retain(|b| !lines.contains(&b.line));
    } else {
        for line in lines {
            let asked = LineBreakpoint {
                line: *line,
                condition: args.condition.clone(),
                hit_condition: args.hit_condition.clone(),
                log_message: args.log_message.clone(),
            };
            match request.lines.iter_mut().find(|b| b.line == *line) {
                Some(existing) => *existing = asked,
                None => request.lines.push(asked),
            }
        }
        request.lines.sort_by_key(|b| b.line);
    }
    Ok(())
}
