//! Model-facing rendering of a cell report: the best form of each output, images apart.

use base64::Engine;
use serde_json::Value;

use crate::{
    html::html_to_text,
    svg::{RASTER_MIMES, SVG_MIME},
    types::{
        Bundle, CellImage, CellReport, CellStatus, InterruptReason, Language, Output, StreamName,
    },
};

/// Per display: cap on the text form, so one huge repr cannot take the whole budget.
const MAX_DISPLAY_CHARS: usize = 8_000;
/// An SVG shown as an image has its source beside it when the source is at most this long.
const MAX_SVG_SOURCE_CHARS: usize = 2_000;

/// The text the model reads for `report`. Images are referenced as `[image N: …]` and
/// delivered separately by [`images`].
pub fn render(report: &CellReport) -> String {
    let mut out = String::new();
    let mut image_no = 0usize;
    render_kernel_header(report, &mut out);
    render_outputs(&report.outputs, &mut out, &mut image_no);
    if let Some(result) = &report.result {
        ensure_newline(&mut out);
        let text = render_bundle(result, &mut image_no);
        let label = format!("Out[{}]:", report.execution_count);
        if text.contains('\n') {
            out.push_str(&format!("{label}\n{text}"));
        } else {
            out.push_str(&format!("{label} {text}"));
        }
        ensure_newline(&mut out);
    }
    if let Some(error) = &report.error
        && report.status != CellStatus::Interrupted
    {
        ensure_newline(&mut out);
        out.push_str(error.traceback.trim_end());
        out.push('\n');
    }
    if let Some(line) = status_line(report) {
        ensure_newline(&mut out);
        out.push_str(&line);
    }
    for note in &report.notes {
        if note.starts_with("budget:") {
            continue;
        }
        ensure_newline(&mut out);
        out.push_str(&format!("[{note}]\n"));
    }
    if let Some(cwd) = &report.cwd_changed {
        ensure_newline(&mut out);
        out.push_str(&format!("[working directory is now {cwd}]\n"));
    }
    if out.trim().is_empty() {
        out.push_str("(no output)\n");
    }
    out.trim_end().to_string()
}

/// The kernel the cell started (and why a previous one was lost), and what became of the
/// previous cell.
fn render_kernel_header(report: &CellReport, out: &mut String) {
    let kernel = &report.kernel;
    if kernel.started {
        let what = match report.language {
            Language::Python => format!("Python {} ({})", kernel.version, kernel.interpreter),
            Language::Javascript | Language::Typescript if !kernel.version.is_empty() => {
                format!("Node.js {} ({})", kernel.version, kernel.interpreter)
            }
            Language::Javascript | Language::Typescript => kernel.interpreter.clone(),
        };
        match &kernel.previous_lost {
            Some(why) => out.push_str(&format!(
                "[started a fresh {what} kernel: {why}; earlier state (variables, imports) is gone]\n"
            )),
            None => out.push_str(&format!("[started {what}]\n")),
        }
    }
    if let Some(previous) = &kernel.previous_cell {
        out.push_str(&format!("[{previous}]\n"));
    }
}

/// The cell's streams (labelled where they switch), displays and cuts, in order.
fn render_outputs(outputs: &[Output], out: &mut String, image_no: &mut usize) {
    let mut current = StreamName::Stdout;
    for item in outputs {
        match item {
            Output::Stream { name, text } => {
                if *name != current {
                    ensure_newline(out);
                    out.push_str(match name {
                        StreamName::Stderr => "[stderr]\n",
                        StreamName::Stdout => "[stdout]\n",
                    });
                    current = *name;
                }
                out.push_str(&clean_terminal_text(text));
            }
            Output::Display { bundle, .. } => {
                ensure_newline(out);
                out.push_str(&render_bundle(bundle, image_no));
                ensure_newline(out);
            }
            Output::Cut { chars } => {
                ensure_newline(out);
                out.push_str(&format!(
                    "[… output cut: {chars} characters in the middle not shown; the first and last \
                     parts are kept. Print less, or write the output to a file and read parts of it]\n"
                ));
            }
        }
    }
}

/// What an interrupted, killed or crashed cell left of the kernel; none for a cell that ended.
fn status_line(report: &CellReport) -> Option<String> {
    Some(match report.status {
        CellStatus::Interrupted => match report.interrupt {
            Some(InterruptReason::Inactivity) => format!(
                "[interrupted: the cell produced no output for {}; the kernel's state \
                 (variables, imports) is preserved]\n",
                notes_budget(report)
            ),
            Some(InterruptReason::Cancelled) => "[interrupted: the call was cancelled; the \
                 kernel's state (variables, imports) is preserved]\n"
                .to_string(),
            Some(InterruptReason::Requested) => "[interrupted as asked (interrupt: true); \
                 the kernel's state (variables, imports) is preserved]\n"
                .to_string(),
            None => {
                "[interrupted (KeyboardInterrupt); the kernel's state is preserved]\n".to_string()
            }
        },
        CellStatus::Killed => format!(
            "[{}: the cell did not stop after an interrupt, so the kernel was killed; its \
             state is lost and the next call starts a fresh kernel]\n",
            match report.interrupt {
                Some(InterruptReason::Cancelled) => "cancelled".to_string(),
                Some(InterruptReason::Requested) => "interrupted".to_string(),
                _ => format!("no output for {}", notes_budget(report)),
            }
        ),
        CellStatus::Crashed => format!(
            "[the {} kernel died while running this cell; its state is lost and the next \
             call starts a fresh kernel]\n",
            report.language.title()
        ),
        CellStatus::Ok
        | CellStatus::Error
        | CellStatus::Unavailable
        | CellStatus::Cancelled
        | CellStatus::Running => return None,
    })
}

fn notes_budget(report: &CellReport) -> String {
    report
        .notes
        .iter()
        .find_map(|n| n.strip_prefix("budget:").map(|s| s.trim().to_string()))
        .unwrap_or_else(|| "the inactivity budget".to_string())
}

fn ensure_newline(out: &mut String) {
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
}

/// The best text form of a bundle for the model; images become a reference line.
pub(crate) fn render_bundle(bundle: &Bundle, image_no: &mut usize) -> String {
    let plain = bundle.get("text/plain").and_then(Value::as_str).unwrap_or("");
    if let Some(mime) = image_mime(bundle) {
        *image_no += 1;
        let size = bundle.get(mime).and_then(Value::as_str).map_or(0, |b64| b64.len() * 3 / 4);
        let default_repr = plain.starts_with('<') && plain.ends_with(" object>");
        let svg = bundle.get(SVG_MIME).and_then(Value::as_str);
        let label = match (plain.is_empty() || default_repr, svg) {
            (true, Some(_)) => "SVG drawing".to_string(),
            (true, None) => mime.to_string(),
            (false, _) => plain.to_string(),
        };
        let kb = size.div_ceil(1024);
        return match svg {
            // A short source too, for its text and numbers; a long one is path data the image
            // shows better.
            Some(svg) if svg.trim().chars().count() <= MAX_SVG_SOURCE_CHARS => format!(
                "[image {}: {label} ({mime}, {kb} KB, rendered from the SVG below)]\n{}",
                *image_no,
                svg.trim()
            ),
            Some(svg) => format!(
                "[image {}: {label} ({mime}, {kb} KB, rendered from SVG; its source of {} \
                 characters is not shown)]",
                *image_no,
                svg.trim().chars().count()
            ),
            None => format!("[image {}: {label} ({mime}, {kb} KB)]", *image_no),
        };
    }
    // The richest readable form: markdown, then HTML when the plain text is only a default
    // `<... object>` repr (IPython's HTML, a `_repr_html_`-only object) or holds less.
    let default_repr = plain.is_empty() || (plain.starts_with('<') && plain.ends_with('>'));
    let html = bundle.get("text/html").and_then(Value::as_str);
    let latex = bundle.get("text/latex").and_then(Value::as_str);
    let text = if let Some(md) = bundle.get("text/markdown").and_then(Value::as_str) {
        md.to_string()
    } else if let Some(html) = html.filter(|_| default_repr) {
        html_to_text(html)
    } else if let Some(latex) = latex.filter(|_| default_repr) {
        latex.to_string()
    } else if let Some(json) = bundle.get("application/json").filter(|_| default_repr) {
        // `JSON(...)`: the data, as ipykernel sends it, not `<IPython.core.display.JSON object>`.
        serde_json::to_string_pretty(json).unwrap_or_default()
    } else if let Some(svg) = bundle.get(SVG_MIME).and_then(Value::as_str).filter(|_| default_repr)
    {
        // `SVG(...)`, `%%svg` not rendered to an image (the `svg` feature is off, or the SVG
        // does not parse, which a note says): the model reads the drawing's source.
        format!("[SVG image, {} characters]\n{}", svg.len(), svg.trim())
    } else if !plain.is_empty() {
        plain.to_string()
    } else if let Some(json) = bundle.get("application/json") {
        serde_json::to_string_pretty(json).unwrap_or_default()
    } else if let Some(svg) = bundle.get(SVG_MIME) {
        format!("[SVG image, {} characters, not shown]", svg.as_str().map_or(0, str::len))
    } else {
        bundle.keys().cloned().collect::<Vec<_>>().join(", ")
    };
    cap(&text, MAX_DISPLAY_CHARS)
}

fn image_mime(bundle: &Bundle) -> Option<&'static str> {
    RASTER_MIMES.into_iter().find(|m| bundle.get(*m).is_some_and(Value::is_string))
}

fn cap(text: &str, max: usize) -> String {
    // The runner already cut very large reprs and said by how much: count that part too.
    let (text, already_cut) = match text.rsplit_once("\n[cut: ") {
        Some((kept, note)) => match note.strip_suffix(" more characters]").map(str::parse::<usize>)
        {
            Some(Ok(n)) => (kept, n),
            _ => (text, 0),
        },
        None => (text, 0),
    };
    let total = text.chars().count();
    if total <= max && already_cut == 0 {
        return text.to_string();
    }
    let cut: String = text.chars().take(max).collect();
    let hidden = total.saturating_sub(max) + already_cut;
    format!("{cut}\n[… {hidden} more characters of this output not shown]")
}

/// Strips ANSI escape sequences and applies carriage returns (progress bars keep their last state).
pub(crate) fn clean_terminal_text(text: &str) -> String {
    let mut no_ansi = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.peek() == Some(&'[') {
                chars.next();
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            continue;
        }
        no_ansi.push(c);
    }
    if !no_ansi.contains('\r') {
        return no_ansi;
    }
    let mut out = String::with_capacity(no_ansi.len());
    for (i, line) in no_ansi.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let line = line.strip_suffix('\r').unwrap_or(line);
        out.push_str(line.rsplit('\r').next().unwrap_or(line));
    }
    out
}

/// The images of a cell (displays first, then the result), decoded, in the order the text
/// references them.
pub fn images(report: &CellReport) -> Vec<CellImage> {
    let bundles = report
        .outputs
        .iter()
        .filter_map(|o| match o {
            Output::Display { bundle, .. } => Some(bundle),
            _ => None,
        })
        .chain(report.result.iter());
    bundles
        .filter_map(|b| {
            let mime = image_mime(b)?;
            let data = b.get(mime)?.as_str()?;
            let data = base64::engine::general_purpose::STANDARD
                .decode(data.trim().replace('\n', ""))
                .ok()?;
            Some(CellImage { mime_type: mime.to_string(), data })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::clean_terminal_text;

    #[test]
    fn progress_bars_keep_their_last_state_and_colours_go() {
        assert_eq!(
            clean_terminal_text("\u{1b}[31mred\u{1b}[0m\n10%\r50%\r100%\ndone\r\n"),
            "red\n100%\ndone\n"
        );
    }
}
