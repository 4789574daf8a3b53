//! Running one cell on any kernel: events, the inactivity budget, bridged calls and output caps.
//!
//! One loop drives Python, Node.js and QuickJS alike: output and displays restart the
//! inactivity budget, pending `tool()` calls suspend it, its expiry or the call's cancellation
//! interrupts the cell (once more halfway through the grace period), and a cell still running
//! when the grace period ends is killed.

use std::{collections::VecDeque, sync::Arc, time::Duration};

use parking_lot::Mutex;
use serde_json::Value;
use tokio::{task::JoinSet, time::Instant};
use tokio_util::sync::CancellationToken;

use crate::{
    bridge::KernelBridge,
    svg,
    types::{Bundle, CellError, InterruptReason, Output, StreamName},
};

/// The end of a cell as the kernel reports it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Done {
    /// The id of the cell this ends: a kernel drops a `done` of any other cell, so a late end
    /// of a cancelled cell can never be read as the next cell's answer.
    pub cell: u64,
    /// `ok`, `error` or `interrupted`.
    pub status: String,
    pub error: Option<CellError>,
    pub result: Option<Bundle>,
    pub count: u64,
    pub cwd: Option<String>,
}

/// What a kernel tells the host while a cell runs.
#[derive(Debug)]
pub(crate) enum Event {
    Stream(StreamName, String),
    /// A rich output; `update`: it replaces the outputs shown with its `display_id`.
    Display {
        bundle: Bundle,
        display_id: Option<String>,
        update: bool,
    },
    ToolCall {
        id: u64,
        name: String,
        args: Value,
    },
    Done(Done),
    /// `clear_output()`: the cell's output so far goes (with `wait`, at its next output).
    Clear {
        wait: bool,
    },
    /// The kernel is gone; the text says how (exit status or signal, last stderr lines).
    Died(String),
}

/// The host side of a running kernel, as the cell loop drives it.
pub(crate) trait KernelIo {
    /// Waits for the next event. Must be cancel-safe (it is raced against timers).
    async fn next_event(&mut self) -> Event;
    /// Answers a bridged call.
    fn tool_result(&mut self, id: u64, result: Result<Value, String>);
    /// Asks the running cell to stop (SIGINT in Python, the interrupt handler in JavaScript).
    fn interrupt(&mut self);
    /// Kills the kernel; returns how it ended.
    async fn kill(&mut self) -> String;
}

/// Timing of one cell.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Budget {
    pub inactivity: Duration,
    pub grace: Duration,
}

/// How the cell loop ended.
#[derive(Debug)]
pub(crate) enum Fate {
    Finished { done: Done, interrupt: Option<InterruptReason> },
    Killed { reason: InterruptReason, how: String },
    Died(String),
}

/// Runs the event loop of one cell until it ends, collecting its outputs into `out` (shared
/// with the calls that wait for the cell, which take what has come so far). `cancel` stops it.
pub(crate) async fn drive<K: KernelIo>(
    kernel: &mut K,
    bridge: Arc<KernelBridge>,
    budget: Budget,
    cancel: &CancellationToken,
    out: &Mutex<Collector>,
) -> Fate {
    let mut calls: JoinSet<Result<Value, String>> = JoinSet::new();
    let mut call_ids: Vec<(tokio::task::Id, u64)> = Vec::new();
    let mut last = Instant::now();
    let mut interrupted: Option<(InterruptReason, Instant)> = None;
    let mut reminded = false;
    loop {
        let pending = !calls.is_empty();
        let idle_deadline = last + budget.inactivity;
        let grace_deadline = interrupted.map_or(last, |(_, at)| at + budget.grace);
        let remind_at = interrupted.map_or(last, |(_, at)| at + budget.grace / 2);
        tokio::select! {
            event = kernel.next_event() => match event {
                Event::Stream(name, text) => {
                    out.lock().stream(name, text);
                    last = Instant::now();
                }
                Event::Display { mut bundle, display_id, update } => {
                    let room = out.lock().has_room_for_an_image();
                    if room {
                        render_svg(&mut bundle, out).await;
                    }
                    out.lock().display(bundle, display_id, update);
                    last = Instant::now();
                }
                Event::ToolCall { id, name, args } => {
                    if interrupted.is_some() {
                        kernel.tool_result(id, Err(format!(
                            "tool(\"{name}\") refused: the cell is being interrupted"
                        )));
                    } else {
                        let bridge = bridge.clone();
                        let handle = calls.spawn(async move { bridge.call(&name, args).await });
                        call_ids.push((handle.id(), id));
                        out.lock().pending_calls = calls.len();
                    }
                    last = Instant::now();
                }
                Event::Clear { wait } => out.lock().clear(wait),
                Event::Done(mut done) => {
                    calls.abort_all();
                    if let Some(result) = done.result.as_mut() {
                        render_svg(result, out).await;
                    }
                    return Fate::Finished { done, interrupt: interrupted.map(|(r, _)| r) };
                }
                Event::Died(how) => {
                    calls.abort_all();
                    return Fate::Died(how);
                }
            },
            Some(joined) = calls.join_next_with_id(), if pending => {
                let (task, result) = match joined {
                    Ok((task, result)) => (task, result),
                    Err(err) => {
                        let why = if err.is_cancelled() {
                            "the call was cancelled".to_string()
                        } else {
                            "the tool panicked".to_string()
                        };
                        (err.id(), Err(why))
                    }
                };
                if let Some(pos) = call_ids.iter().position(|(t, _)| *t == task) {
                    let (_, id) = call_ids.swap_remove(pos);
                    kernel.tool_result(id, result);
                }
                out.lock().pending_calls = calls.len();
                last = Instant::now();
            }
            () = tokio::time::sleep_until(idle_deadline), if !pending && interrupted.is_none() => {
                kernel.interrupt();
                interrupted = Some((InterruptReason::Inactivity, Instant::now()));
            }
            () = tokio::time::sleep_until(remind_at), if interrupted.is_some() && !reminded => {
                // Once more, halfway through the grace period: the first interrupt may have
                // landed in the instant before the cell's user code began.
                kernel.interrupt();
                reminded = true;
            }
            () = tokio::time::sleep_until(grace_deadline), if interrupted.is_some() => {
                calls.abort_all();
                let how = kernel.kill().await;
                let reason = interrupted.map_or(InterruptReason::Inactivity, |(r, _)| r);
                return Fate::Killed { reason, how };
            }
            () = cancel.cancelled(), if interrupted.is_none() => {
                calls.abort_all();
                kernel.interrupt();
                interrupted = Some((InterruptReason::Cancelled, Instant::now()));
            }
        }
    }
}

/// Adds a PNG rendering to an SVG display; a drawing that cannot be rendered gets a note.
async fn render_svg(bundle: &mut Bundle, out: &Mutex<Collector>) {
    if let Err(why) = svg::add_png(bundle).await {
        out.lock().notes.push(format!(
            "an SVG display could not be rendered to an image ({why}); its source is shown"
        ));
    }
}

/// Collects a cell's outputs in order, keeping the head and the tail when it prints too much.
#[derive(Debug)]
pub(crate) struct Collector {
    items: Vec<Output>,
    tail: VecDeque<Output>,
    head_chars: usize,
    tail_chars: usize,
    head_cap: usize,
    tail_cap: usize,
    cut: usize,
    images: usize,
    max_images: usize,
    images_dropped: usize,
    lines: usize,
    displays: usize,
    /// A `clear_output(wait=True)` waits for the next output.
    clear_pending: bool,
    /// Facts for the model about the outputs (an SVG that could not be rendered).
    notes: Vec<String>,
    /// The last line of text the cell printed, for progress reports while a call waits.
    last_line: String,
    /// Bridged `tool()` calls pending now.
    pub(crate) pending_calls: usize,
}

impl Collector {
    pub(crate) fn new(max_chars: usize, max_images: usize) -> Self {
        let max_chars = max_chars.max(200);
        Collector {
            items: Vec::new(),
            tail: VecDeque::new(),
            head_chars: 0,
            tail_chars: 0,
            head_cap: max_chars * 3 / 4,
            tail_cap: max_chars - max_chars * 3 / 4,
            cut: 0,
            images: 0,
            max_images,
            images_dropped: 0,
            lines: 0,
            displays: 0,
            clear_pending: false,
            notes: Vec::new(),
            last_line: String::new(),
            pending_calls: 0,
        }
    }

    /// What has come since the last call took it; this collector starts over for what comes
    /// next (same caps; the line count and the last line carry on for progress reports).
    pub(crate) fn take_segment(&mut self) -> Collector {
        let mut fresh = Collector::new(self.head_cap + self.tail_cap, self.max_images);
        fresh.lines = self.lines;
        fresh.displays = self.displays;
        fresh.last_line.clone_from(&self.last_line);
        fresh.pending_calls = self.pending_calls;
        fresh.clear_pending = self.clear_pending;
        std::mem::replace(self, fresh)
    }

    /// `clear_output()`: only what comes after stays, as in a notebook; `wait` defers the clear
    /// to the next output, so a progress loop's last state is never blank.
    pub(crate) fn clear(&mut self, wait: bool) {
        if wait {
            self.clear_pending = true;
        } else {
            self.clear_now();
        }
    }

    fn clear_now(&mut self) {
        self.items.clear();
        self.tail.clear();
        self.head_chars = 0;
        self.tail_chars = 0;
        self.cut = 0;
        self.images = 0;
        self.images_dropped = 0;
        self.clear_pending = false;
        self.notes.clear();
    }

    /// "12 s, 3 lines of output; last: epoch 3 loss 0.21", for progress reports.
    pub(crate) fn progress_message(&self, elapsed: f64) -> String {
        let mut message = format!(
            "{} s, {} line{} of output",
            elapsed.round() as u64,
            self.lines,
            if self.lines == 1 { "" } else { "s" }
        );
        if self.displays > 0 {
            message.push_str(&format!(", {} display(s)", self.displays));
        }
        if self.pending_calls > 0 {
            message.push_str(&format!(", waiting for {} tool call(s)", self.pending_calls));
        }
        if !self.last_line.is_empty() {
            message.push_str("; last: ");
            message.push_str(&self.last_line);
        }
        message
    }

    /// Remembers the last non-blank line of `text` (a carriage return starts a line over, as a
    /// progress bar redraws it), cut to 200 characters.
    fn note_last_line(&mut self, text: &str) {
        let line = text.rsplit(['\n', '\r']).map(str::trim).find(|l| !l.is_empty());
        if let Some(line) = line {
            self.last_line = line.chars().take(200).collect();
        }
    }

    pub(crate) fn stream(&mut self, name: StreamName, text: String) {
        if text.is_empty() {
            return;
        }
        if self.clear_pending {
            self.clear_now();
        }
        self.lines += text.matches('\n').count();
        self.note_last_line(&text);
        let len = text.chars().count();
        if self.cut == 0 && self.tail.is_empty() && self.head_chars + len <= self.head_cap {
            self.head_chars += len;
            push_stream(&mut self.items, name, text);
            return;
        }
        if self.cut == 0 && self.tail.is_empty() && self.head_chars < self.head_cap {
            // Split: what fits goes to the head, the rest starts the tail.
            let room = self.head_cap - self.head_chars;
            let at = text.char_indices().nth(room).map_or(text.len(), |(i, _)| i);
            let (head, rest) = text.split_at(at);
            push_stream(&mut self.items, name, head.to_string());
            self.head_chars = self.head_cap;
            self.push_tail(name, rest.to_string());
            return;
        }
        self.push_tail(name, text);
    }

    fn push_tail(&mut self, name: StreamName, text: String) {
        self.tail_chars += text.chars().count();
        match self.tail.back_mut() {
            Some(Output::Stream { name: last, text: t }) if *last == name => t.push_str(&text),
            _ => self.tail.push_back(Output::Stream { name, text }),
        }
        while self.tail_chars > self.tail_cap {
            let excess = self.tail_chars - self.tail_cap;
            let Some(front) = self.tail.front_mut() else { break };
            match front {
                Output::Stream { text, .. } => {
                    let len = text.chars().count();
                    if len <= excess {
                        self.tail_chars -= len;
                        self.cut += len;
                        self.tail.pop_front();
                    } else {
                        let at = text.char_indices().nth(excess).map_or(text.len(), |(i, _)| i);
                        text.drain(..at);
                        self.tail_chars -= excess;
                        self.cut += excess;
                    }
                }
                _ => {
                    // A display inside the cut part: keep it, in order, before the tail.
                    if let Some(item) = self.tail.pop_front() {
                        self.items.push(item);
                    }
                }
            }
        }
    }

    /// A display. With `update` it replaces every output of this cell shown with its
    /// `display_id`, where that output is (as `update_display` and a display handle's `update`
    /// do in a notebook); an update whose display is an earlier cell's is shown as a new output,
    /// so the model still sees the new state.
    pub(crate) fn display(&mut self, mut bundle: Bundle, display_id: Option<String>, update: bool) {
        if self.clear_pending {
            self.clear_now();
        }
        self.displays += 1;
        if update
            && let Some(id) = display_id.as_deref()
            && self.replace(id, &bundle)
        {
            return;
        }
        self.admit_images(&mut bundle);
        let item = Output::Display { bundle, display_id };
        if self.cut == 0 && self.tail.is_empty() {
            self.items.push(item);
        } else {
            self.tail.push_back(item);
        }
    }

    /// Puts `bundle` in place of each output shown with display id `id`; false if none is.
    fn replace(&mut self, id: &str, bundle: &Bundle) -> bool {
        let mut olds = Vec::new();
        for item in self.items.iter_mut().chain(self.tail.iter_mut()) {
            if let Output::Display { bundle: old, display_id: Some(shown) } = item
                && shown == id
            {
                olds.push(std::mem::take(old));
            }
        }
        if olds.is_empty() {
            return false;
        }
        let mut fresh = Vec::with_capacity(olds.len());
        for old in &olds {
            if has_raster(old) {
                self.images -= 1;
            }
            let mut new = bundle.clone();
            self.admit_images(&mut new);
            fresh.push(new);
        }
        let mut fresh = fresh.into_iter();
        for item in self.items.iter_mut().chain(self.tail.iter_mut()) {
            if let Output::Display { bundle: slot, display_id: Some(shown) } = item
                && shown == id
                && let Some(new) = fresh.next()
            {
                *slot = new;
            }
        }
        true
    }

    /// Counts the bundle's image against `max_images`; past it the image is dropped (an SVG
    /// keeps its source, which the model can still read).
    fn admit_images(&mut self, bundle: &mut Bundle) {
        let has_image = has_raster(bundle);
        // An SVG past the limit was not rendered, but it is an image the model does not see.
        if has_image || svg::wants_png(bundle) {
            if self.images >= self.max_images {
                self.images_dropped += 1;
                bundle.retain(|k, _| !svg::RASTER_MIMES.contains(&k.as_str()));
            } else if has_image {
                self.images += 1;
            }
        }
    }

    /// Whether one more image would still be shown (at most `max_images` per cell).
    pub(crate) fn has_room_for_an_image(&self) -> bool {
        self.clear_pending || self.images < self.max_images
    }

    pub(crate) fn finish(mut self) -> (Vec<Output>, Vec<String>) {
        let mut notes = std::mem::take(&mut self.notes);
        if self.cut > 0 {
            self.items.push(Output::Cut { chars: self.cut });
        }
        self.items.extend(self.tail);
        if self.images_dropped > 0 {
            notes.push(format!(
                "{} more image(s) not shown: at most {} images per cell",
                self.images_dropped, self.max_images
            ));
        }
        (self.items, notes)
    }
}

fn has_raster(bundle: &Bundle) -> bool {
    svg::RASTER_MIMES.iter().any(|m| bundle.contains_key(*m))
}

fn push_stream(items: &mut Vec<Output>, name: StreamName, text: String) {
    match items.last_mut() {
        Some(Output::Stream { name: last, text: t }) if *last == name => t.push_str(&text),
        _ => items.push(Output::Stream { name, text }),
    }
}

/// Decodes a byte stream as UTF-8 across chunk boundaries.
#[derive(Debug, Default)]
pub(crate) struct Utf8Stream {
    carry: Vec<u8>,
}

impl Utf8Stream {
    pub(crate) fn push(&mut self, bytes: &[u8]) -> String {
        self.carry.extend_from_slice(bytes);
        let keep = match std::str::from_utf8(&self.carry) {
            Ok(_) => 0,
            Err(e) if e.error_len().is_none() => self.carry.len() - e.valid_up_to(),
            Err(_) => 0,
        };
        let cut = self.carry.len() - keep;
        let text = String::from_utf8_lossy(&self.carry[..cut]).into_owned();
        self.carry.drain(..cut);
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flood_keeps_head_and_tail_and_counts_the_cut() {
        let mut c = Collector::new(1000, 8);
        for i in 0..1000 {
            c.stream(StreamName::Stdout, format!("line {i:04}\n"));
        }
        let (items, _) = c.finish();
        let Output::Stream { text: head, .. } = &items[0] else { panic!("{items:?}") };
        assert!(head.starts_with("line 0000\n"));
        let Output::Cut { chars } = items[1] else { panic!("{items:?}") };
        let Output::Stream { text: tail, .. } = &items[2] else { panic!("{items:?}") };
        assert!(tail.ends_with("line 0999\n"));
        assert_eq!(head.len() + chars + tail.len(), 10_000);
    }

    #[test]
    fn utf8_split_across_chunks_is_joined() {
        let mut d = Utf8Stream::default();
        let bytes = "é€".as_bytes();
        let mut text = d.push(&bytes[..1]);
        text += &d.push(&bytes[1..3]);
        text += &d.push(&bytes[3..]);
        assert_eq!(text, "é€");
    }
}
