//! The model-facing text of a proposal and of a resolution.

use std::fmt::Write as _;

use super::{Proposal, Resolution, ResolveAction};
use crate::search::{count, explain_empty, one_line, plural};

/// Lines of diff shown before the renderer cuts it.
pub const MAX_DIFF_LINES: usize = 300;

/// The model-facing text of a proposal.
pub fn render_proposal(p: &Proposal) -> String {
    let info = &p.pattern;
    let Some(id) = &p.edit_id else {
        if p.unchanged_matches > 0 {
            return format!(
                "(nothing staged) ast_edit `{}` ({}, {}): {} {} in `{}`, but the rewrite \
                 leaves the code exactly as it is\n",
                one_line(&info.pattern),
                info.language,
                info.parsed_as(),
                p.unchanged_matches,
                plural(p.unchanged_matches, "match", "matches"),
                p.scope
            );
        }
        let mut out = format!(
            "(nothing staged) ast_edit `{}` ({}, {}): no matches in `{}`\n",
            one_line(&info.pattern),
            info.language,
            info.parsed_as(),
            p.scope
        );
        out.push_str(&explain_empty(info.language, &p.scope, &p.stats, info));
        return out;
    };
    let mut out = format!(
        "(proposed) {} in {} … call resolve with edit_id \"{id}\" and action \"accept\" to write it, \
         or \"discard\"\n",
        count(p.replacements, "replacement", "replacements"),
        count(p.files.len(), "file", "files"),
    );
    let _ = writeln!(out, "{} ({})", info.parsed_as(), info.language);
    if p.skipped_nested > 0 {
        let _ = writeln!(
            out,
            "[{} nested or overlapping {} inside a rewritten match {} left as is (outermost wins); run ast_edit \
             again after accepting to rewrite them]",
            p.skipped_nested,
            plural(p.skipped_nested, "match", "matches"),
            plural(p.skipped_nested, "was", "were")
        );
    }
    for f in &p.files {
        if let Some(at) = &f.new_syntax_error {
            let _ = writeln!(out, "[warning: the rewrite introduces a syntax error at {at}]");
        }
    }
    let lines: Vec<&str> = p.diff.lines().collect();
    for l in lines.iter().take(MAX_DIFF_LINES) {
        out.push_str(l);
        out.push('\n');
    }
    if lines.len() > MAX_DIFF_LINES {
        let _ = writeln!(
            out,
            "[diff cut: showed {MAX_DIFF_LINES} of {} lines; the staged edit holds all of it. Files: {}]",
            lines.len(),
            p.files
                .iter()
                .map(|f| format!("{} ({})", f.file, f.replacements))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    out
}

/// The model-facing text of a resolution.
pub fn render_resolution(r: &Resolution) -> String {
    let replacements = count(r.replacements, "replacement", "replacements");
    let files = count(r.files, "file", "files");
    match r.action {
        ResolveAction::Accept => {
            format!(
                "accepted {}: wrote {replacements} to {files}: {}",
                r.edit_id,
                r.written.join(", ")
            )
        }
        ResolveAction::Discard => {
            format!("discarded {} ({replacements} in {files}); nothing was written", r.edit_id)
        }
    }
}
