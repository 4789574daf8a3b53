//! `read`: a text file's lines, numbered; one declaration by name path; or the file's outline.
//!
//! The model gets the numbered text in every client: `read` declares no output schema, so no
//! MCP result carries structured content (Claude Code and Codex would show a model only that,
//! without line numbers, and numbered lines cost more as JSON than as text). Programs calling it
//! (an `eval` cell's `tool()`) get the lines' exact text as data, [`ReadOutput`].

use std::{
    fs::File,
    io::{BufReader, Read},
};

use agent_tools_support::{fs::RelPath, words::count};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::{
    access::{self, Access, SNIFF_BYTES},
    symbols::{self, MAX_OUTLINE_ROWS},
};
use crate::tool::{CallContext, ToolResult, ToolSpec, TypedTool, fit_prefix};

/// Lines `read` shows when no range is given.
const DEFAULT_READ_LINES: usize = 2000;

/// Bytes of lines one `read` keeps at most; a longer line is cut, and the read stops there.
const MAX_SHOWN_BYTES: usize = 1 << 20;

/// How far past the last line shown `read` still counts lines for `total_lines`.
const COUNT_AHEAD_BYTES: u64 = 8 << 20;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadArgs {
    /// File to read, relative to the run's root.
    pub path: String,
    /// First line to show, 1-based (default 1).
    #[schemars(range(min = 1))]
    pub start_line: Option<usize>,
    /// Last line to show, inclusive (default: 2000 lines on).
    #[schemars(range(min = 1))]
    pub end_line: Option<usize>,
    // A declaration to show whole, by name path (`Class/method`, `name[2]`); the tool's
    // description says so (the tool list's token budget).
    pub symbol: Option<String>,
    // Show the file's outline: declarations with kind, name path and lines.
    #[serde(default)]
    pub outline: bool,
}

/// Declarations listed above the first page of a file longer than one read.
const HEAD_OUTLINE_ROWS: usize = 150;

/// The data of a `read` for programs (never sent to MCP clients): the same lines as the text,
/// unnumbered and exactly as in the file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReadOutput {
    /// The file, relative to the root.
    pub path: String,
    /// First line shown, 1-based (0 for an empty file).
    pub start_line: usize,
    /// Last line shown.
    pub end_line: usize,
    /// Lines in the file; absent when the file goes on further than a read looks past the
    /// lines it shows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_lines: Option<usize>,
    /// Lines `start_line..=end_line` exactly as in the file: line endings (`\n` or `\r\n`)
    /// kept, none after a last line that has none.
    pub content: String,
    /// Where the read stopped short of the file's end (or of the output cap) and how to go
    /// on; the text ends with the same note.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// With `symbol`: the declaration's name path, as resolved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub symbol: Option<String>,
}

pub struct ReadTool {
    spec: ToolSpec,
}

impl ReadTool {
    pub fn new() -> Self {
        ReadTool { spec: ToolSpec::declared::<ReadArgs>(&super::READ) }
    }
}

impl Default for ReadTool {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl TypedTool for ReadTool {
    type Args = ReadArgs;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn run(&self, ctx: &CallContext, args: ReadArgs) -> ToolResult {
        let cancel = ctx.cancel.clone();
        let max_chars = ctx.max_output_chars;
        access::run(ctx, "read", &[], move |access| read(&access, &args, &cancel, max_chars)).await
    }
}

fn read(
    access: &Access,
    args: &ReadArgs,
    cancel: &CancellationToken,
    max_chars: usize,
) -> ToolResult {
    let fail = |e: String| ToolResult::error(format!("read: {e}"));
    let rel = match access.confine(&args.path, "path") {
        Ok(r) => r,
        Err(e) => return fail(e),
    };
    if args.symbol.is_some() || args.outline {
        return read_declarations(access, &rel, args, max_chars);
    }
    let start = args.start_line.unwrap_or(1);
    if let Some(end) = args.end_line.filter(|&end| end < start) {
        return fail(format!(
            "argument `end_line` ({end}) is before `start_line` ({start}); give a range with start_line <= end_line"
        ));
    }
    let last = args.end_line.unwrap_or(start.saturating_add(DEFAULT_READ_LINES - 1));
    let file = match access.root.open_file(&rel, "path") {
        Ok(f) => f,
        Err(e) => return fail(e.to_string()),
    };
    let window = match Window::read(file, &rel, start, last, cancel) {
        Ok(w) => w,
        Err(e) => return fail(e),
    };
    let shown = rel.to_string();
    if window.total == Some(0) {
        return ToolResult::text(format!("{shown} is empty")).with_structured(payload(
            &ReadOutput {
                path: shown,
                start_line: 0,
                end_line: 0,
                total_lines: Some(0),
                content: String::new(),
                note: None,
                symbol: None,
            },
        ));
    }
    if let Some(total) = window.total.filter(|&total| start > total) {
        return fail(format!(
            "argument `start_line` is {start}, but {shown} has only {}; use 1..={total}",
            count(total as u64, "line", "lines")
        ));
    }
    let first_page = args.start_line.is_none() && args.end_line.is_none();
    let head = if first_page
        && !(window.total == Some(window.lines.len())
            && render(&shown, start, &window, window.lines.len(), max_chars, None, "")
                .fits(max_chars))
    {
        outline_head(access, &rel, &window)
    } else {
        String::new()
    };
    let (n, result) = fit_prefix(window.lines.len(), max_chars, |n| {
        render(&shown, start, &window, n, max_chars, None, &head)
    });
    if n > 1 || result.fits(max_chars) {
        return result;
    }
    // One line alone is over the cap: it is cut to what fits, in both renderings.
    let chars = window.lines[0].chars().count();
    let (_, result) = fit_prefix(chars, max_chars, |keep| {
        render(&shown, start, &window, 1, max_chars, Some(keep), &head)
    });
    result
}

/// Where the first `keep` characters of `line` end.
fn char_boundary(line: &str, keep: usize) -> usize {
    line.char_indices().nth(keep).map_or(line.len(), |(i, _)| i)
}

/// The outline put above the first page of a file longer than one read, when its language
/// has one (empty otherwise).
fn outline_head(access: &Access, rel: &RelPath, window: &Window) -> String {
    if !symbols::has_outline(rel) {
        return String::new();
    }
    let Ok(text) = access.read_text(rel, "path") else { return String::new() };
    match symbols::outline(rel, &text, HEAD_OUTLINE_ROWS) {
        Ok((shown, count)) if count > 0 => {
            let total = window.total.map_or_else(String::new, |t| format!(" of {t} lines"));
            format!(
                "[{rel}{total} is longer than one read; its {count} declarations (read one whole \
                 with symbol=\"<name path>\"):]\n{shown}[{rel} from line 1:]\n"
            )
        }
        _ => String::new(),
    }
}

/// The result showing the first `n` lines of `window` (of the first line only its first
/// `keep_chars` characters, when given), numbered, under `head`, with a note on where it
/// stopped and how to go on.
fn render(
    shown: &str,
    start: usize,
    window: &Window,
    n: usize,
    max_chars: usize,
    keep_chars: Option<usize>,
    head: &str,
) -> ToolResult {
    let lines = &window.lines[..n];
    let end = start + n - 1;
    let width = end.to_string().len();
    let mut out = head.to_string();
    let mut content = String::new();
    for (i, (line, ending)) in lines.iter().zip(&window.endings).enumerate() {
        let (line, ending) = match keep_chars {
            // A line cut at the cap has no ending shown.
            Some(keep) if i == 0 => (&line[..char_boundary(line, keep)], &""),
            _ => (line.as_str(), ending),
        };
        out.push_str(&format!("{:>width$}\t{}\n", start + i, line));
        content.push_str(line);
        content.push_str(ending);
    }
    if window.endings.contains(&"\r\n") {
        // The numbered text shows lines; an edit that writes lines back should know.
        out.push_str(&format!("[{shown}: lines end in CRLF (\\r\\n)]\n"));
    }
    let capped = n < window.lines.len();
    let mut notes = Vec::new();
    if let Some(keep) = keep_chars {
        notes.push(format!(
            "[{shown}: line {end} is longer than the {max_chars}-character output cap and was cut \
             after {keep} characters]"
        ));
    } else if window.cut && !capped {
        notes.push(format!(
            "[{shown}: line {end} is longer than {} KiB and was cut there]",
            MAX_SHOWN_BYTES >> 10
        ));
    }
    let more = match window.total {
        Some(total) if end < total => Some(format!("of {total}")),
        Some(_) => None,
        None => Some(format!("of a file of {} bytes with more lines", window.size)),
    };
    if let Some(of) = more {
        let why = if capped {
            format!(" (the rest is over the {max_chars}-character output cap)")
        } else {
            String::new()
        };
        notes.push(format!(
            "[{shown}: showed lines {start}-{end} {of}{why}; call read with start_line={} to \
             continue]",
            end + 1
        ));
    }
    for note in &notes {
        out.push_str(note);
        out.push('\n');
    }
    ToolResult::text(out).with_structured(payload(&ReadOutput {
        path: shown.to_string(),
        start_line: start,
        end_line: end,
        total_lines: window.total,
        content,
        note: (!notes.is_empty()).then(|| notes.join("\n")),
        symbol: None,
    }))
}

/// `read` with `symbol` (one declaration whole, numbered) or `outline: true`.
fn read_declarations(
    access: &Access,
    rel: &RelPath,
    args: &ReadArgs,
    max_chars: usize,
) -> ToolResult {
    let fail = |e: String| ToolResult::error(format!("read: {e}"));
    let given = [("start_line", args.start_line.is_some()), ("end_line", args.end_line.is_some())];
    if let Some((arg, _)) = given.iter().find(|(_, set)| *set) {
        return fail(format!(
            "argument `{arg}` cannot be given with `symbol` or `outline`: a declaration is shown \
             whole; leave out `{arg}`, or `symbol` to read by lines"
        ));
    }
    let text = match access.read_text(rel, "path") {
        Ok(text) => text,
        Err(e) => return fail(e),
    };
    let symbol = match (&args.symbol, args.outline) {
        (Some(_), true) => {
            return fail(
                "give `symbol` (one declaration) or `outline: true` (all of them), not both".into(),
            );
        }
        (Some(symbol), false) => symbol,
        (None, _) => {
            return match symbols::outline(rel, &text, MAX_OUTLINE_ROWS) {
                Ok((_, 0)) => ToolResult::text(format!("{rel} declares nothing an outline lists")),
                Ok((shown, _)) => ToolResult::text(shown),
                Err(e) => fail(e),
            };
        }
    };
    let declaration = match symbols::find(rel, &text, symbol) {
        Ok(d) => d,
        Err(e) => return fail(e),
    };
    let lines: Vec<&str> = text
        .split_inclusive('\n')
        .skip(declaration.start_line - 1)
        .take(declaration.end_line + 1 - declaration.start_line)
        .collect();
    let total = text.lines().count();
    let (_, result) = fit_prefix(lines.len(), max_chars, |n| {
        render_declaration(rel, &declaration, &lines[..n], total, max_chars)
    });
    result
}

/// A declaration's lines, numbered, and a note naming it (and where to go on when the output
/// cap cut it).
fn render_declaration(
    rel: &RelPath,
    declaration: &symbols::Declaration,
    lines: &[&str],
    total: usize,
    max_chars: usize,
) -> ToolResult {
    let start = declaration.start_line;
    let end = start + lines.len() - 1;
    let width = end.to_string().len();
    let mut out = String::new();
    for (i, line) in lines.iter().enumerate() {
        let line = line.trim_end_matches('\n').trim_end_matches('\r');
        out.push_str(&format!("{:>width$}\t{line}\n", start + i));
    }
    let what = format!("{} {}", declaration.kind, declaration.name_path);
    if end < declaration.end_line {
        out.push_str(&format!(
            "[{rel}: {what} is lines {start}-{}; showed {start}-{end} (the rest is over the \
             {max_chars}-character output cap); call read with start_line={} end_line={} for the rest]\n",
            declaration.end_line,
            end + 1,
            declaration.end_line
        ));
    } else {
        out.push_str(&format!("[{rel}: {what}, lines {start}-{end}]\n"));
    }
    let note = out.lines().last().map(str::to_string);
    ToolResult::text(out).with_structured(payload(&ReadOutput {
        path: rel.to_string(),
        start_line: start,
        end_line: end,
        total_lines: Some(total),
        content: lines.concat(),
        note,
        symbol: Some(declaration.name_path.clone()),
    }))
}

fn payload(output: &ReadOutput) -> Value {
    serde_json::to_value(output).unwrap_or(Value::Null)
}

/// The lines `start..=last` of a file, read as a stream: only the bytes up to the last line
/// shown are read (and lines are counted at most [`COUNT_AHEAD_BYTES`] further, or a line cut
/// short passed over as far), and at most [`MAX_SHOWN_BYTES`] of lines are kept, whatever the
/// file's size.
struct Window {
    /// The lines, without their endings.
    lines: Vec<String>,
    /// Each line's ending as in the file: `\n`, `\r\n`, or none (a last line without one, or
    /// a line cut short).
    endings: Vec<&'static str>,
    /// The file's line count, when the read reached its end.
    total: Option<usize>,
    /// The last line was longer than what one read shows, and was cut.
    cut: bool,
    size: u64,
}

impl Window {
    fn read(
        file: File,
        rel: &RelPath,
        start: usize,
        mut last: usize,
        cancel: &CancellationToken,
    ) -> Result<Window, String> {
        let io = |e: std::io::Error| format!("cannot read {rel}: {e}");
        let size = file.metadata().map_err(io)?.len();
        let mut reader = BufReader::with_capacity(1 << 16, file);
        let mut head = Vec::with_capacity(SNIFF_BYTES);
        (&mut reader).take(SNIFF_BYTES as u64).read_to_end(&mut head).map_err(io)?;
        if head.contains(&0) {
            return Err(access::binary(rel, "path", size));
        }
        let mut reader = std::io::Cursor::new(head).chain(reader);
        let mut window =
            Window { lines: Vec::new(), endings: Vec::new(), total: None, cut: false, size };
        let mut line = 1usize; // the line the next byte belongs to
        let mut current: Vec<u8> = Vec::new();
        let mut line_offset = 0u64; // where `line` starts in the file
        let mut offset = 0u64;
        let mut partial = false; // bytes of `line` were seen
        let mut kept = 0usize;
        let mut counted_ahead = 0u64;
        let mut buf = vec![0u8; 1 << 16];
        loop {
            if cancel.is_cancelled() {
                return Err("the call was cancelled".into());
            }
            let n = match reader.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(io(e)),
            };
            let mut rest = &buf[..n];
            while !rest.is_empty() {
                if line > last {
                    // Past the window: only count, and only so far.
                    line += rest.iter().filter(|&&b| b == b'\n').count();
                    partial = rest.last() != Some(&b'\n');
                    counted_ahead += rest.len() as u64;
                    offset += rest.len() as u64;
                    if counted_ahead > COUNT_AHEAD_BYTES {
                        return Ok(window);
                    }
                    break;
                }
                if line >= start && current.is_empty() && kept >= MAX_SHOWN_BYTES {
                    // The lines kept fill what one read shows: this one starts the next read.
                    last = line - 1;
                    continue;
                }
                let (piece, ends) = match rest.iter().position(|&b| b == b'\n') {
                    Some(k) => (&rest[..k], true),
                    None => (rest, false),
                };
                if line >= start {
                    let room = (MAX_SHOWN_BYTES - kept).saturating_sub(current.len());
                    if piece.len() > room {
                        window.cut = true;
                        last = line;
                        // The rest of a cut line is passed over as lines past the window are
                        // counted, and only so far: a line of gigabytes (a sparse file's
                        // hole) is not read to its end.
                        counted_ahead += (piece.len() - room) as u64;
                        if counted_ahead > COUNT_AHEAD_BYTES {
                            current.extend_from_slice(&piece[..room]);
                            window.push(&mut current, line_offset, rel, false)?;
                            return Ok(window);
                        }
                    }
                    current.extend_from_slice(&piece[..piece.len().min(room)]);
                }
                let used = piece.len() + usize::from(ends);
                offset += used as u64;
                rest = &rest[used..];
                partial = !ends;
                if ends {
                    if line >= start {
                        kept += window.push(&mut current, line_offset, rel, true)?;
                    }
                    line += 1;
                    line_offset = offset;
                }
            }
        }
        if partial && (start..=last).contains(&line) {
            window.push(&mut current, line_offset, rel, false)?;
        }
        window.total = Some(if partial { line } else { line - 1 });
        Ok(window)
    }

    /// Keeps one line (its ending apart; `ended`: a `\n` ended it); a line cut short may end
    /// inside a character, which is dropped. Returns the bytes kept.
    fn push(
        &mut self,
        bytes: &mut Vec<u8>,
        at: u64,
        rel: &RelPath,
        ended: bool,
    ) -> Result<usize, String> {
        let mut bytes = std::mem::take(bytes);
        let crlf = bytes.last() == Some(&b'\r');
        if crlf {
            bytes.pop();
        }
        self.endings.push(match (ended, crlf) {
            (true, true) => "\r\n",
            (true, false) => "\n",
            // A last line without a `\n` keeps the lone `\r` it ends in.
            (false, true) => "\r",
            (false, false) => "",
        });
        let text = match String::from_utf8(bytes) {
            Ok(text) => text,
            Err(e) if self.cut && e.utf8_error().error_len().is_none() => {
                let valid = e.utf8_error().valid_up_to();
                let mut bytes = e.into_bytes();
                bytes.truncate(valid);
                String::from_utf8(bytes).unwrap_or_default()
            }
            Err(e) => {
                return Err(access::not_utf8(
                    rel,
                    "path",
                    at + e.utf8_error().valid_up_to() as u64,
                ));
            }
        };
        let len = text.len();
        self.lines.push(text);
        Ok(len)
    }
}
