//! The JavaScript kernel: QuickJS-NG through rquickjs, one runtime on a thread of its own.
//!
//! Cells are evaluated as global scripts with top-level await (the promise resolves to the
//! completion value); top-level `let`/`const`/`class` are rewritten to `var` so they persist and
//! may be declared again. The thread runs a small event loop while a cell is pending: promise
//! jobs, timers and `tool()` results. There is no file system, network or module loader: the
//! world is reachable only through `tool()`.

mod rewrite;

use std::{
    collections::BTreeMap,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
        mpsc as std_mpsc,
    },
    time::{Duration, Instant},
};

use rquickjs::{
    CatchResultExt, CaughtError, Context, Ctx, Function, Object, Promise, Runtime, Value,
    context::EvalOptions, promise::PromiseState,
};
use serde_json::Value as Json;
use tokio::sync::mpsc;

use crate::{
    cell::{Done, Event, KernelIo},
    types::{Bundle, CellError, StreamName},
};

pub(crate) use self::rewrite::rewrite;

const PRELUDE: &str = include_str!("prelude.js");

/// The engine's name and version, for notes and status.
pub(crate) const ENGINE: &str = "QuickJS-NG (rquickjs 0.14, embedded)";

enum Cmd {
    Exec { cell: u64, code: String },
    ToolResult { id: u64, result: Result<Json, String> },
    Wake,
    Shutdown,
}

enum Fatal {
    OutOfMemory,
    Broken(String),
}

pub(crate) struct JsKernel {
    cmd: std_mpsc::Sender<Cmd>,
    events: mpsc::UnboundedReceiver<Event>,
    interrupt: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    dead: bool,
    /// The cell being run: a `done` of any other cell is dropped.
    cell: u64,
}

impl JsKernel {
    /// Starts a runtime on its own thread with `memory_limit` bytes of heap.
    pub(crate) fn start(memory_limit: usize) -> Result<JsKernel, String> {
        let (cmd_tx, cmd_rx) = std_mpsc::channel();
        let (ev_tx, ev_rx) = mpsc::unbounded_channel();
        let interrupt = Arc::new(AtomicBool::new(false));
        let (ready_tx, ready_rx) = std_mpsc::channel();
        let flag = interrupt.clone();
        let thread = std::thread::Builder::new()
            .name("agent-tools-js".into())
            .stack_size(16 * 1024 * 1024)
            .spawn(move || js_thread(cmd_rx, ev_tx, flag, memory_limit, ready_tx))
            .map_err(|e| format!("cannot start the JavaScript thread: {e}"))?;
        match ready_rx.recv() {
            Ok(Ok(())) => Ok(JsKernel {
                cmd: cmd_tx,
                events: ev_rx,
                interrupt,
                thread: Some(thread),
                dead: false,
                cell: 0,
            }),
            Ok(Err(e)) => Err(e),
            Err(_) => Err("the JavaScript engine failed to start".into()),
        }
    }

    pub(crate) fn interrupt_flag(&self) -> Arc<AtomicBool> {
        self.interrupt.clone()
    }

    pub(crate) fn exec(&mut self, cell: u64, code: &str) -> Result<(), String> {
        self.interrupt.store(false, Ordering::SeqCst);
        self.cell = cell;
        self.cmd
            .send(Cmd::Exec { cell, code: code.to_string() })
            .map_err(|_| "the JavaScript kernel is gone".to_string())
    }

    /// Ends the runtime's thread.
    pub(crate) async fn shutdown(mut self) {
        self.interrupt.store(true, Ordering::SeqCst);
        let _ = self.cmd.send(Cmd::Shutdown);
        if let Some(thread) = self.thread.take() {
            let joined = tokio::task::spawn_blocking(move || thread.join());
            let _ = tokio::time::timeout(Duration::from_secs(5), joined).await;
        }
    }
}

impl Drop for JsKernel {
    fn drop(&mut self) {
        self.interrupt.store(true, Ordering::SeqCst);
        let _ = self.cmd.send(Cmd::Shutdown);
    }
}

impl KernelIo for JsKernel {
    async fn next_event(&mut self) -> Event {
        if self.dead {
            return Event::Died("the JavaScript engine was abandoned".into());
        }
        loop {
            return match self.events.recv().await {
                Some(Event::Done(done)) if done.cell != self.cell => continue,
                Some(event) => {
                    if matches!(event, Event::Died(_)) {
                        self.dead = true;
                    }
                    event
                }
                None => {
                    self.dead = true;
                    Event::Died("the JavaScript engine's thread ended unexpectedly".into())
                }
            };
        }
    }

    fn tool_result(&mut self, id: u64, result: Result<Json, String>) {
        let _ = self.cmd.send(Cmd::ToolResult { id, result });
    }

    fn interrupt(&mut self) {
        self.interrupt.store(true, Ordering::SeqCst);
        let _ = self.cmd.send(Cmd::Wake);
    }

    async fn kill(&mut self) -> String {
        // A thread cannot be killed; the interrupt flag stays set, so any JavaScript it still
        // runs throws at once, and the runtime is dropped when the thread notices.
        self.interrupt.store(true, Ordering::SeqCst);
        let _ = self.cmd.send(Cmd::Shutdown);
        self.dead = true;
        "the JavaScript engine did not stop and was abandoned".into()
    }
}

struct Hooks<'js> {
    settle: Function<'js>,
    fail_all: Function<'js>,
    fire: Function<'js>,
    bundle: Function<'js>,
    error: Function<'js>,
}

struct Loop {
    timers: BTreeMap<(Instant, u64), ()>,
}

fn js_thread(
    cmd_rx: std_mpsc::Receiver<Cmd>,
    ev_tx: mpsc::UnboundedSender<Event>,
    interrupt: Arc<AtomicBool>,
    memory_limit: usize,
    ready: std_mpsc::Sender<Result<(), String>>,
) {
    let runtime = match Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            let _ = ready.send(Err(format!("cannot create a QuickJS runtime: {e}")));
            return;
        }
    };
    runtime.set_memory_limit(memory_limit);
    runtime.set_max_stack_size(8 * 1024 * 1024);
    // Rejections nobody handles are kept on the JavaScript side and reported when the cell ends.
    runtime.set_host_promise_rejection_tracker(Some(Box::new(|ctx, promise, reason, handled| {
        if let Ok(track) = ctx.globals().get::<_, Function<'_>>(TRACK) {
            let _: rquickjs::Result<()> = track.call((promise, reason, handled));
        }
    })));
    let flag = interrupt.clone();
    runtime.set_interrupt_handler(Some(Box::new(move || flag.load(Ordering::Relaxed))));
    let context = match Context::full(&runtime) {
        Ok(c) => c,
        Err(e) => {
            let _ = ready.send(Err(format!("cannot create a QuickJS context: {e}")));
            return;
        }
    };
    let timers = std::rc::Rc::new(std::cell::RefCell::new(Loop { timers: BTreeMap::new() }));
    let fatal = context.with(|ctx| {
        let hooks = match install(&ctx, &ev_tx, &timers) {
            Ok(h) => h,
            Err(e) => {
                let _ = ready.send(Err(format!("cannot set up the JavaScript kernel: {e}")));
                return None;
            }
        };
        let _ = ready.send(Ok(()));
        let mut count = 0u64;
        while let Ok(cmd) = cmd_rx.recv() {
            match cmd {
                Cmd::Exec { cell, code } => {
                    count += 1;
                    let at = (cell, count);
                    match run_cell(&ctx, &hooks, &timers, &cmd_rx, &ev_tx, &interrupt, at, &code) {
                        Ok(done) => {
                            let _ = ev_tx.send(Event::Done(done));
                        }
                        Err(fatal) => return Some(fatal),
                    }
                }
                Cmd::Shutdown => return None,
                Cmd::ToolResult { .. } | Cmd::Wake => {}
            }
        }
        None
    });
    match fatal {
        Some(Fatal::OutOfMemory) => {
            let _ = ev_tx.send(Event::Died(format!(
                "the JavaScript kernel ran out of memory (limit {} MiB)",
                memory_limit / (1024 * 1024)
            )));
        }
        Some(Fatal::Broken(why)) => {
            let _ = ev_tx.send(Event::Died(why));
        }
        None => {}
    }
    drop(context);
    drop(runtime);
}

fn install<'js>(
    ctx: &Ctx<'js>,
    ev_tx: &mpsc::UnboundedSender<Event>,
    timers: &std::rc::Rc<std::cell::RefCell<Loop>>,
) -> rquickjs::Result<Hooks<'js>> {
    let host = Object::new(ctx.clone())?;
    let tx = ev_tx.clone();
    host.set(
        "write",
        Function::new(ctx.clone(), move |stream: String, text: String| {
            let name = if stream == "stderr" { StreamName::Stderr } else { StreamName::Stdout };
            let _ = tx.send(Event::Stream(name, text));
        })?,
    )?;
    let tx = ev_tx.clone();
    host.set(
        "display",
        Function::new(ctx.clone(), move |bundle: String| {
            if let Ok(bundle) = serde_json::from_str::<Bundle>(&bundle) {
                let _ = tx.send(Event::Display { bundle, display_id: None, update: false });
            }
        })?,
    )?;
    let tx = ev_tx.clone();
    host.set(
        "tool",
        Function::new(ctx.clone(), move |id: f64, name: String, args: String| {
            let args = serde_json::from_str(&args).unwrap_or(Json::Null);
            let _ = tx.send(Event::ToolCall { id: id as u64, name, args });
        })?,
    )?;
    let loop_state = timers.clone();
    host.set(
        "setTimer",
        Function::new(ctx.clone(), move |id: f64, ms: f64| {
            let at = Instant::now() + Duration::from_secs_f64(ms.max(0.0) / 1000.0);
            loop_state.borrow_mut().timers.insert((at, id as u64), ());
        })?,
    )?;
    let mut options = EvalOptions::default();
    options.global = true;
    options.strict = false;
    options.filename = Some("<agent-tools-prelude>".into());
    let make: Function<'js> = ctx.eval_with_options(PRELUDE, options)?;
    let hooks: Object<'js> = make.call((host,))?;
    let _: Value<'js> = ctx.eval(REJECTIONS)?;
    Ok(Hooks {
        settle: hooks.get("settle")?,
        fail_all: hooks.get("failAll")?,
        fire: hooks.get("fire")?,
        bundle: hooks.get("bundle")?,
        error: hooks.get("error")?,
    })
}

const TRACK: &str = "__agentToolsTrackRejection";
const UNHANDLED: &str = "__agentToolsUnhandled";

/// Keeps unhandled rejections until the cell ends; a later `.catch` removes its promise again.
const REJECTIONS: &str = "(() => {\
  const pending = new Map();\
  const hide = (name, value) => Object.defineProperty(globalThis, name, { value, enumerable: false });\
  hide('__agentToolsTrackRejection', (p, r, handled) => { if (handled) pending.delete(p); else pending.set(p, r); });\
  hide('__agentToolsUnhandled', (cell) => {\
    const out = [];\
    for (const [p, r] of pending) if (p !== cell) out.push(r instanceof Error ? `${r.name}: ${r.message}` : String(r));\
    pending.clear();\
    return out.map((t) => `Unhandled promise rejection: ${t}\\n`).join('');\
  });\
})()";

/// Reports, on stderr, the rejections of this cell that nobody handled (not the cell's own).
fn report_unhandled<'js>(
    ctx: &Ctx<'js>,
    ev_tx: &mpsc::UnboundedSender<Event>,
    cell: &Promise<'js>,
) {
    let Ok(unhandled) = ctx.globals().get::<_, Function<'js>>(UNHANDLED) else { return };
    let text: rquickjs::Result<String> = unhandled.call((cell.clone(),));
    if let Ok(text) = text
        && !text.is_empty()
    {
        let _ = ev_tx.send(Event::Stream(StreamName::Stderr, text));
    }
}

fn caught_message(err: &CaughtError<'_>) -> String {
    match err {
        CaughtError::Exception(e) => e.message().unwrap_or_default(),
        CaughtError::Value(v) => format!("{v:?}"),
        CaughtError::Error(e) => e.to_string(),
    }
}

fn is_oom(message: &str) -> bool {
    message.contains("out of memory")
}

fn is_interrupt(message: &str) -> bool {
    message == "interrupted"
}

fn error_of<'js>(hooks: &Hooks<'js>, value: Value<'js>) -> CellError {
    let info: rquickjs::Result<String> = hooks.error.call((value,));
    match info.ok().and_then(|s| serde_json::from_str::<CellError>(&s).ok()) {
        Some(e) => e,
        None => CellError {
            ename: "Error".into(),
            evalue: "an exception that could not be formatted".into(),
            traceback: "Uncaught exception".into(),
        },
    }
}

#[allow(clippy::too_many_arguments)]
fn run_cell<'js>(
    ctx: &Ctx<'js>,
    hooks: &Hooks<'js>,
    timers: &std::rc::Rc<std::cell::RefCell<Loop>>,
    cmd_rx: &std_mpsc::Receiver<Cmd>,
    ev_tx: &mpsc::UnboundedSender<Event>,
    interrupt: &AtomicBool,
    (cell, count): (u64, u64),
    code: &str,
) -> Result<Done, Fatal> {
    let mut done = Done { cell, status: "ok".into(), error: None, result: None, count, cwd: None };
    let source = rewrite(code);
    let mut options = EvalOptions::default();
    options.global = true;
    options.strict = false;
    options.promise = true;
    options.filename = Some(format!("<cell-{count}>"));
    let evaluated: rquickjs::Result<Promise<'js>> = ctx.eval_with_options(source, options);
    let promise = match evaluated.catch(ctx) {
        Ok(p) => p,
        Err(err) => return not_started(hooks, interrupt, err, done),
    };
    loop {
        // Run every queued promise job.
        while ctx.execute_pending_job() {
            if interrupt.load(Ordering::SeqCst) {
                break;
            }
        }
        match promise.state() {
            PromiseState::Resolved => return Ok(resolved(ctx, hooks, ev_tx, &promise, done)),
            PromiseState::Rejected => {
                return rejected(ctx, hooks, ev_tx, interrupt, &promise, done);
            }
            PromiseState::Pending => {}
        }
        if interrupt.load(Ordering::SeqCst) {
            // Waiting on a timer or a tool call: nothing runs, so stop here.
            let _: rquickjs::Result<()> = hooks.fail_all.call(("the cell was interrupted",));
            done.status = "interrupted".into();
            return Ok(done);
        }
        wait_for_the_loop(ctx, hooks, timers, cmd_rx, ev_tx)?;
    }
}

/// A cell whose code did not even start (a syntax error, an exception while it was set up).
fn not_started<'js>(
    hooks: &Hooks<'js>,
    interrupt: &AtomicBool,
    err: CaughtError<'js>,
    mut done: Done,
) -> Result<Done, Fatal> {
    let message = caught_message(&err);
    if is_oom(&message) {
        return Err(Fatal::OutOfMemory);
    }
    if interrupt.load(Ordering::SeqCst) && is_interrupt(&message) {
        done.status = "interrupted".into();
        return Ok(done);
    }
    done.status = "error".into();
    done.error = Some(match err {
        CaughtError::Exception(e) => error_of(hooks, e.into_value()),
        CaughtError::Value(v) => error_of(hooks, v),
        CaughtError::Error(e) => {
            CellError { ename: "Error".into(), evalue: e.to_string(), traceback: e.to_string() }
        }
    });
    Ok(done)
}

/// A cell whose promise resolved: its completion value as the result.
fn resolved<'js>(
    ctx: &Ctx<'js>,
    hooks: &Hooks<'js>,
    ev_tx: &mpsc::UnboundedSender<Event>,
    promise: &Promise<'js>,
    mut done: Done,
) -> Done {
    let completion: rquickjs::Result<Object<'js>> =
        promise.result::<Object<'js>>().unwrap_or_else(|| Err(rquickjs::Error::Unknown));
    if let Ok(obj) = completion {
        let value: Value<'js> =
            obj.get("value").unwrap_or_else(|_| Value::new_undefined(ctx.clone()));
        if !value.is_undefined() {
            let bundle: rquickjs::Result<String> = hooks.bundle.call((value,));
            done.result = bundle.ok().and_then(|s| serde_json::from_str(&s).ok());
        }
    }
    report_unhandled(ctx, ev_tx, promise);
    done
}

/// A cell whose promise was rejected: an error, an interrupt, or out of memory.
fn rejected<'js>(
    ctx: &Ctx<'js>,
    hooks: &Hooks<'js>,
    ev_tx: &mpsc::UnboundedSender<Event>,
    interrupt: &AtomicBool,
    promise: &Promise<'js>,
    mut done: Done,
) -> Result<Done, Fatal> {
    let rejected: rquickjs::Result<Value<'js>> =
        promise.result::<Value<'js>>().unwrap_or_else(|| Err(rquickjs::Error::Unknown));
    let error = match rejected.catch(ctx) {
        Ok(v) => error_of(hooks, v),
        Err(CaughtError::Exception(e)) => {
            let message = e.message().unwrap_or_default();
            if is_oom(&message) {
                return Err(Fatal::OutOfMemory);
            }
            if interrupt.load(Ordering::SeqCst) && is_interrupt(&message) {
                done.status = "interrupted".into();
                let _: rquickjs::Result<()> = hooks.fail_all.call(("the cell was interrupted",));
                return Ok(done);
            }
            error_of(hooks, e.into_value())
        }
        Err(CaughtError::Value(v)) => error_of(hooks, v),
        Err(CaughtError::Error(e)) => {
            CellError { ename: "Error".into(), evalue: e.to_string(), traceback: e.to_string() }
        }
    };
    if is_oom(&error.evalue) {
        return Err(Fatal::OutOfMemory);
    }
    if interrupt.load(Ordering::SeqCst) && is_interrupt(&error.evalue) {
        done.status = "interrupted".into();
        return Ok(done);
    }
    done.status = "error".into();
    done.error = Some(error);
    report_unhandled(ctx, ev_tx, promise);
    Ok(done)
}

/// Sleeps until the next timer or a message from the host, and handles it: a tool result is
/// settled, due timers fire.
fn wait_for_the_loop<'js>(
    ctx: &Ctx<'js>,
    hooks: &Hooks<'js>,
    timers: &std::rc::Rc<std::cell::RefCell<Loop>>,
    cmd_rx: &std_mpsc::Receiver<Cmd>,
    ev_tx: &mpsc::UnboundedSender<Event>,
) -> Result<(), Fatal> {
    let next = timers.borrow().timers.keys().next().map(|(at, _)| *at);
    let msg = match next {
        Some(at) => {
            let now = Instant::now();
            if at <= now {
                Err(std_mpsc::RecvTimeoutError::Timeout)
            } else {
                cmd_rx.recv_timeout(at - now)
            }
        }
        None => cmd_rx.recv().map_err(|_| std_mpsc::RecvTimeoutError::Disconnected),
    };
    match msg {
        Ok(Cmd::ToolResult { id, result }) => {
            let (ok, payload) = match result {
                Ok(v) => (true, v.to_string()),
                Err(e) => (false, e),
            };
            let settled: rquickjs::Result<()> = hooks.settle.call((id as f64, ok, payload));
            if let Err(e) = settled.catch(ctx) {
                let _ = ev_tx.send(Event::Stream(
                    StreamName::Stderr,
                    format!("[tool result could not be delivered: {}]\n", caught_message(&e)),
                ));
            }
        }
        Ok(Cmd::Wake) => {}
        Ok(Cmd::Exec { .. }) => {}
        Ok(Cmd::Shutdown) | Err(std_mpsc::RecvTimeoutError::Disconnected) => {
            return Err(Fatal::Broken("the JavaScript kernel was shut down".into()));
        }
        Err(std_mpsc::RecvTimeoutError::Timeout) => fire_due_timers(ctx, hooks, timers, ev_tx)?,
    }
    Ok(())
}

/// Fires the timers that are due, in order; an exception in one is reported on stderr.
fn fire_due_timers<'js>(
    ctx: &Ctx<'js>,
    hooks: &Hooks<'js>,
    timers: &std::rc::Rc<std::cell::RefCell<Loop>>,
    ev_tx: &mpsc::UnboundedSender<Event>,
) -> Result<(), Fatal> {
    let now = Instant::now();
    let due: Vec<u64> = {
        let mut state = timers.borrow_mut();
        let due: Vec<(Instant, u64)> =
            state.timers.keys().take_while(|(at, _)| *at <= now).copied().collect();
        for key in &due {
            state.timers.remove(key);
        }
        due.into_iter().map(|(_, id)| id).collect()
    };
    for id in due {
        let fired: rquickjs::Result<()> = hooks.fire.call((id as f64,));
        if let Err(e) = fired.catch(ctx) {
            let message = caught_message(&e);
            if is_oom(&message) {
                return Err(Fatal::OutOfMemory);
            }
            if !is_interrupt(&message) {
                let _ = ev_tx.send(Event::Stream(
                    StreamName::Stderr,
                    format!("Uncaught exception in a timer: {message}\n"),
                ));
            }
        }
    }
    Ok(())
}
