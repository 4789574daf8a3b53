//! The Python kernel as a user sees it: notebook semantics, rich output, idioms, the bridge,
//! the inactivity budget, crashes, and no process left behind.

use crate::common;

use std::time::Duration;

use agent_tools_eval::{
    CallScope, CellStatus, EvalConfig, InterruptReason, Language, Output, StreamName,
};
use common::{Session, alive, gone_within, has_module, require, short_budget, test_python};

/// A Python session on the test venv's interpreter when there is one, else `python3` on PATH.
fn check(config: EvalConfig) -> Session {
    let python = config.python.clone().or_else(test_python);
    Session::new(Language::Python, EvalConfig { python, ..config })
}

fn stream(report: &agent_tools_eval::CellReport, name: StreamName) -> String {
    report
        .outputs
        .iter()
        .filter_map(|o| match o {
            Output::Stream { name: n, text } if *n == name => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn the_last_expression_is_returned_and_state_persists() {
    let s = check(EvalConfig::default());
    let (r, text) = s.run("import math\nx = 20\nx + 1").await;
    assert_eq!(r.status, CellStatus::Ok, "{text}");
    assert!(r.kernel.started);
    assert!(text.starts_with("[started Python 3."), "{text}");
    assert!(text.ends_with("Out[1]: 21"), "{text}");
    let (_, text) = s.run("x * 2, math.pi > 3").await;
    assert_eq!(text, "Out[2]: (40, True)");
    let (_, text) = s.run("y = x; y;").await;
    assert_eq!(text, "(no output)", "a trailing semicolon hides the value");
    let (_, text) = s.run("None").await;
    assert_eq!(text, "(no output)");
    let (_, text) = s.run("_ + 1 if False else __").await;
    assert_eq!(text, "Out[5]: 21", "_ / __ history as in IPython");
    s.kernels.shutdown().await;
}

#[tokio::test]
async fn reset_starts_a_clean_kernel() {
    let s = check(EvalConfig::default());
    s.run("secret = 42").await;
    let (r, text) = s.reset("'secret' in globals()").await;
    assert!(r.kernel.started);
    assert!(
        text.contains("reset was requested; earlier state (variables, imports) is gone"),
        "{text}"
    );
    assert!(text.ends_with("Out[1]: False"), "{text}");
    s.kernels.shutdown().await;
}

#[tokio::test]
async fn stdout_and_stderr_are_captured_separately_with_c_level_writes() {
    let s = check(EvalConfig::default());
    let (r, text) = s
        .run(
            "import os, sys, subprocess\n\
             print('to stdout')\n\
             print('to stderr', file=sys.stderr)\n\
             os.write(1, b'\\x00\\x00\\x00\\x10{\"t\":\"done\"}  fd-1 write\\n')\n\
             os.write(2, b'fd-2 write\\n')\n\
             subprocess.run(['echo', 'from a child'])\n\
             'still fine'",
        )
        .await;
    assert_eq!(r.status, CellStatus::Ok, "{text}");
    let out = stream(&r, StreamName::Stdout);
    assert!(out.contains("to stdout\n"), "{out:?}");
    assert!(out.contains("fd-1 write\n"), "spoofed frame bytes are plain output: {out:?}");
    assert!(out.contains("from a child\n"), "{out:?}");
    let err = stream(&r, StreamName::Stderr);
    assert_eq!(err, "to stderr\nfd-2 write\n");
    assert!(text.contains("[stderr]\nto stderr\n"), "{text}");
    assert!(text.ends_with("Out[1]: 'still fine'"), "{text}");
    let (_, text) = s.run("1 + 1").await;
    assert_eq!(text, "Out[2]: 2", "the protocol survived the fd-1 writes");
    s.kernels.shutdown().await;
}

#[tokio::test]
async fn exceptions_come_with_a_useful_traceback() {
    let s = check(EvalConfig::default());
    let (r, text) = s.run("def f(n):\n    return n / 0\n\nvalue = 1\nf(value)").await;
    assert_eq!(r.status, CellStatus::Error);
    let error = r.error.as_ref().expect("error");
    assert_eq!(error.ename, "ZeroDivisionError");
    assert!(text.contains("Traceback (most recent call last):"), "{text}");
    assert!(text.contains("File \"<cell-1>\", line 5, in <module>\n    f(value)"), "{text}");
    assert!(text.contains("line 2, in f\n    return n / 0"), "{text}");
    assert!(text.ends_with("ZeroDivisionError: division by zero"), "{text}");
    assert!(!text.contains("agent-tools-runner"), "runner frames are hidden: {text}");
    let (r, text) = s.run("def broken(:\n  pass").await;
    assert_eq!(r.status, CellStatus::Error);
    assert!(text.contains("SyntaxError"), "{text}");
    let (_, text) = s.run("value").await;
    assert_eq!(text, "Out[3]: 1", "state survives errors");
    s.kernels.shutdown().await;
}

#[tokio::test]
async fn input_fails_fast_with_a_clear_message() {
    let s = check(EvalConfig::default());
    let (r, text) = s.run("name = input('who? ')").await;
    assert_eq!(r.status, CellStatus::Error);
    assert!(text.contains("StdinNotImplementedError: input() is not available"), "{text}");
    let (_, text) = s.run("import sys; sys.stdin.read()").await;
    assert_eq!(text, "Out[2]: ''", "stdin is /dev/null");
    s.kernels.shutdown().await;
}

#[tokio::test]
async fn top_level_await_works_and_the_kernel_starts_in_the_root() {
    let s = check(EvalConfig::default());
    let (r, text) = s
        .run("import asyncio, os\nasync def twice(x):\n    await asyncio.sleep(0.01)\n    return 2 * x\nawait twice(21)")
        .await;
    assert_eq!(r.status, CellStatus::Ok, "{text}");
    assert!(text.ends_with("Out[1]: 42"), "{text}");
    let (_, text) = s.run("os.getcwd()").await;
    assert_eq!(text, format!("Out[2]: {:?}", s.root().display().to_string()).replace('"', "'"));
    s.kernels.shutdown().await;
}

#[tokio::test]
async fn display_sends_mime_bundles_and_the_best_form_is_rendered() {
    let s = check(EvalConfig::default());
    let (r, text) = s
        .run(
            "class Card:\n    def _repr_markdown_(self):\n        return '**bold card**'\n    \
             def _repr_html_(self):\n        return '<b>bold card</b>'\n\
             class Page:\n    def _repr_html_(self):\n        return '<p>only <i>html</i></p>'\n    \
             def __repr__(self):\n        return ''\n\
             print('before')\ndisplay(Card())\ndisplay({'a': 1})\nPage()",
        )
        .await;
    assert_eq!(r.status, CellStatus::Ok, "{text}");
    // stdout and display frames travel on different pipes: their relative order is best effort.
    let bundle = r
        .outputs
        .iter()
        .find_map(|o| match o {
            Output::Display { bundle, .. } => Some(bundle),
            _ => None,
        })
        .expect("a display");
    assert_eq!(bundle["text/markdown"], "**bold card**");
    assert_eq!(bundle["text/html"], "<b>bold card</b>");
    assert!(text.starts_with("[started"), "{text}");
    assert!(text.contains("before\n"), "{text}");
    assert!(text.ends_with("**bold card**\n{'a': 1}\nOut[1]: only html"), "{text}");
    s.kernels.shutdown().await;
}

#[tokio::test]
async fn a_pandas_frame_becomes_a_capped_markdown_table() {
    let Some(python) = test_python().filter(|p| has_module(p, "pandas")) else {
        require("pandas in the test venv", false, "run `cargo xtask setup`");
        return;
    };
    let s = check(EvalConfig { python: Some(python), ..EvalConfig::default() });
    let (r, text) = s
        .run("import pandas as pd\ndf = pd.DataFrame({f'c{i}': range(i, i + 100) for i in range(15)})\ndf['name'] = 'x|y'\ndf")
        .await;
    assert_eq!(r.status, CellStatus::Ok, "{text}");
    // pandas 2 says `object`, pandas 3 `str` for the string column.
    assert!(
        text.contains("Out[1]:\nDataFrame 100 rows × 16 columns; dtypes: int64(15), "),
        "{text}"
    );
    assert!(
        text.contains("|  | c0 | c1 | c2 | c3 | c4 | c5 | c6 | c7 | … | c12 | c13 | c14 | name |"),
        "{text}"
    );
    assert!(
        text.contains("| 0 | 0 | 1 | 2 | 3 | 4 | 5 | 6 | 7 | … | 12 | 13 | 14 | x\\|y |"),
        "{text}"
    );
    assert!(text.contains("| 99 | 99 |"), "tail rows are shown: {text}");
    assert!(
        text.contains(
            "[table cut: 4 of 16 columns not shown; 85 of 100 rows not shown (head 10, tail 5)]"
        ),
        "{text}"
    );
    let (_, text) = s.run("df['c1'].head(3)").await;
    assert!(text.contains("Series 3 rows × 1 column; dtypes: int64(1)"), "{text}");
    s.kernels.shutdown().await;
}

#[tokio::test]
async fn a_matplotlib_figure_comes_back_as_a_png_image() {
    let Some(python) = test_python().filter(|p| has_module(p, "matplotlib")) else {
        require("matplotlib in the test venv", false, "run `cargo xtask setup`");
        return;
    };
    let s = check(EvalConfig { python: Some(python), ..EvalConfig::default() });
    let (r, text) = s
        .run(
            "import matplotlib.pyplot as plt\nprint('first')\nplt.plot([1, 2, 3], [1, 4, 9])\n\
             plt.title('squares')\nplt.show()\nprint('between')\nfig, ax = plt.subplots()\nax.bar(['a'], [1]);",
        )
        .await;
    assert_eq!(r.status, CellStatus::Ok, "{text}");
    let images = agent_tools_eval::images(&r);
    assert_eq!(images.len(), 2, "plt.show() and the figure left open: {text}");
    assert!(images.iter().all(|i| i.mime_type == "image/png" && i.data.starts_with(b"\x89PNG")));
    assert!(text.contains("first\n[image 1: <Figure size"), "{text}");
    assert!(text.contains("axes: 'squares'; 1 lines"), "{text}");
    assert!(text.contains("between\n[image 2: <Figure"), "in order: {text}");
    assert!(!text.contains("non-interactive"), "no Agg warning: {text}");
    let (r, text) = s.run("fig").await;
    assert_eq!(Session::image_count(&r), 1, "a figure as the value is one image: {text}");
    let (r, _) = s.run("1").await;
    assert_eq!(Session::image_count(&r), 0, "figures are closed after they were shown");
    s.kernels.shutdown().await;
}

#[tokio::test]
async fn without_ipython_the_stdlib_runner_rewrites_the_common_idioms() {
    let s = check(EvalConfig { ipython: false, ..EvalConfig::default() });
    std::fs::create_dir(s.root().join("sub")).expect("mkdir");
    let (r, text) = s.run("%cd sub\n!pwd\nfiles = !echo one; echo two\nfiles").await;
    assert_eq!(r.status, CellStatus::Ok, "{text}");
    let sub = s.root().join("sub").display().to_string();
    assert!(text.starts_with("[started"), "{text}");
    assert!(text.contains(&format!("{sub}\n{sub}\n")), "%cd prints, !pwd agrees: {text}");
    assert!(text.contains("Out[1]: ['one', 'two']"), "{text}");
    assert!(text.ends_with(&format!("[working directory is now {sub}]")), "{text}");
    let (_, text) = s.run("%%bash\necho \"from bash $((1 + 2))\"\necho err >&2").await;
    assert_eq!(text, "from bash 3\nerr", "%%bash merges its streams like !cmd");
    let (_, text) = s.run("n = 3\n!echo {n * 2} $n").await;
    assert_eq!(text, "6 3");
    let (_, text) = s.run("%env MY_FLAG=on\nimport os\nos.environ['MY_FLAG']").await;
    assert_eq!(text, "env: MY_FLAG=on\nOut[4]: 'on'");
    let (_, text) = s.run("%env MY_FLAG").await;
    assert_eq!(text, "Out[5]: 'on'");
    let (_, text) = s.run("%time sum(range(10))").await;
    assert!(text.contains("CPU times: total:") && text.contains("Wall time:"), "{text}");
    assert!(text.ends_with("Out[6]: 45"), "{text}");
    let (_, text) = s.run("%timeit -n 10 -r 2 sum(range(10))").await;
    assert!(text.contains("per loop (mean ± std. dev. of 2 runs, 10 loops each)"), "{text}");
    let (_, text) = s.run("%%timeit -n 5 -r 1\nx = sum(range(10))").await;
    assert!(text.contains("(mean ± std. dev. of 1 run, 5 loops each)"), "{text}");
    let (_, text) = s.run("s = '''\n%not a magic\n!not a shell\n'''\nlen(s.splitlines())").await;
    assert_eq!(text, "Out[9]: 3", "magic-looking lines inside strings stay");
    let (r, text) = s.run("%frobnicate now").await;
    assert_eq!(r.status, CellStatus::Error);
    assert!(
        text.contains(
            "UsageError: line magic %frobnicate is not supported here; supported: %cd, %env"
        ),
        "{text}"
    );
    let (r, text) = s.run("%%nonsense\nbody").await;
    assert_eq!(r.status, CellStatus::Error);
    assert!(
        text.contains("cell magic %%nonsense is not supported here; supported: %%bash"),
        "{text}"
    );
    s.kernels.shutdown().await;
}

#[tokio::test]
async fn pip_install_then_import_sees_the_new_package() {
    let Some(base) = agent_tools_eval::resolve_python_on_host(std::path::Path::new("/"), None).ok()
    else {
        require("python3", false, "install Python 3");
        return;
    };
    let project = tempfile::tempdir().expect("temp");
    let venv = std::process::Command::new(&base)
        .args(["-m", "venv"])
        .arg(project.path().join(".venv"))
        .output()
        .expect("python3 -m venv");
    assert!(venv.status.success(), "{}", String::from_utf8_lossy(&venv.stderr));
    let s = Session::new(Language::Python, EvalConfig::default());
    let request = |code: &str| agent_tools_eval::EvalRequest {
        code: code.into(),
        description: "pip".into(),
        language: None,
        reset: None,
        ..Default::default()
    };
    let cancel = tokio_util::sync::CancellationToken::new();
    let run = |code: &str| {
        s.kernels.eval(
            "pip",
            project.path(),
            request(code),
            s.bridge.clone(),
            CallScope::new(cancel.clone()),
        )
    };
    let r = run("%pip install -q iniconfig==1.1.1\nimport iniconfig, importlib.metadata\nimportlib.metadata.version('iniconfig')").await.expect("eval");
    let text = agent_tools_eval::render(&r);
    assert_eq!(r.status, CellStatus::Ok, "{text}");
    assert!(text.ends_with("Out[1]: '1.1.1'"), "{text}");
    let r = run("first = iniconfig\n%pip install -q iniconfig==2.0.0\nimport iniconfig\n(first is iniconfig, hasattr(iniconfig, '__version__') or 'IniConfig' in dir(iniconfig))").await.expect("eval");
    let text = agent_tools_eval::render(&r);
    assert!(text.contains("[%pip: removed iniconfig from sys.modules; the next import loads the installed version]"), "{text}");
    assert!(text.ends_with("Out[2]: (False, True)"), "the import is a fresh module: {text}");
    s.kernels.shutdown().await;
}

#[tokio::test]
async fn a_project_venv_is_preferred_over_path() {
    let Ok(base) = agent_tools_eval::resolve_python_on_host(std::path::Path::new("/"), None) else {
        require("python3", false, "install Python 3");
        return;
    };
    let project = tempfile::tempdir().expect("temp");
    let root = std::fs::canonicalize(project.path()).expect("canonical");
    let venv = std::process::Command::new(&base)
        .args(["-m", "venv", "--without-pip"])
        .arg(root.join(".venv"))
        .output()
        .expect("python3 -m venv");
    assert!(venv.status.success(), "{}", String::from_utf8_lossy(&venv.stderr));
    let s = Session::new(Language::Python, EvalConfig::default());
    let r = s
        .kernels
        .eval(
            "venv",
            &root,
            agent_tools_eval::EvalRequest {
                code: "import sys; sys.prefix".into(),
                description: "which interpreter".into(),
                language: None,
                reset: None,
                ..Default::default()
            },
            s.bridge.clone(),
            agent_tools_eval::CallScope::new(s.cancel.clone()),
        )
        .await
        .expect("eval");
    let text = agent_tools_eval::render(&r);
    assert!(r.kernel.interpreter.starts_with(&root.join(".venv").display().to_string()), "{text}");
    assert!(text.ends_with(&format!("Out[1]: '{}'", root.join(".venv").display())), "{text}");
    s.kernels.shutdown().await;
}

#[tokio::test]
async fn tool_calls_go_through_the_bridge_and_fan_out() {
    let s = check(EvalConfig::default());
    std::fs::write(s.root().join("notes.txt"), "hello from a file\n").expect("write");
    let (r, text) = s.run("tool('read', {'path': 'notes.txt'})").await;
    assert_eq!(r.status, CellStatus::Ok, "{text}");
    assert!(text.ends_with("Out[1]: 'hello from a file\\n'"), "{text}");
    let (r, text) = s.run("tool.read(path='notes.txt').strip()").await;
    assert!(text.ends_with("Out[2]: 'hello from a file'"), "{text} {:?}", r.status);
    let (r, text) = s
        .run("try:\n    tool('write', {'path': 'x', 'content': 'y'})\nexcept ToolError as e:\n    print('refused:', e)")
        .await;
    assert_eq!(r.status, CellStatus::Ok, "{text}");
    assert!(text.contains("refused: `write` is a write-tier tool"), "{text}");
    let (r, text) = s.run("tool('write', {'path': 'x'})").await;
    assert_eq!(r.status, CellStatus::Error);
    assert!(text.contains("ToolError: `write` is a write-tier tool"), "{text}");
    let (r, text) = s
        .run(
            "from concurrent.futures import ThreadPoolExecutor\n\
             with ThreadPoolExecutor(3) as pool:\n    \
             results = list(pool.map(lambda n: tool('gate', {'n': n}), range(3)))\n\
             [(r['arg'], r['in_flight_seen']) for r in results]",
        )
        .await;
    assert_eq!(r.status, CellStatus::Ok, "{text}");
    assert!(
        text.ends_with("Out[5]: [(0, 3), (1, 3), (2, 3)]"),
        "three calls were pending at once: {text}"
    );
    s.kernels.shutdown().await;
}

#[tokio::test]
async fn inactivity_interrupts_the_cell_and_state_survives() {
    let s = check(short_budget(0.5, 5.0));
    s.run("kept = 'still here'").await;
    let (r, text) = s.run("import time\nprint('working')\ntime.sleep(60)").await;
    assert_eq!(r.status, CellStatus::Interrupted, "{text}");
    assert_eq!(r.interrupt, Some(InterruptReason::Inactivity));
    assert!(r.kernel.state_preserved);
    assert!(text.starts_with("working\n"), "{text}");
    assert!(text.contains("[interrupted: the cell produced no output for 500 ms; the kernel's state (variables, imports) is preserved]"), "{text}");
    let (r, text) = s.run("kept").await;
    assert!(!r.kernel.started);
    assert_eq!(text, "Out[3]: 'still here'");
    s.kernels.shutdown().await;
}

#[tokio::test]
async fn a_cell_that_keeps_printing_is_not_interrupted() {
    let s = check(short_budget(0.5, 5.0));
    let (r, text) = s
        .run("import time\nfor i in range(15):\n    print(i)\n    time.sleep(0.1)\n'finished'")
        .await;
    assert_eq!(r.status, CellStatus::Ok, "{text}");
    assert!(text.ends_with("14\nOut[1]: 'finished'"), "{text}");
}

#[tokio::test]
async fn a_pending_bridged_call_suspends_the_budget() {
    let s = check(short_budget(0.3, 5.0));
    let (r, text) = s.run("tool('slow', {'seconds': 1.2})").await;
    assert_eq!(r.status, CellStatus::Ok, "{text}");
    assert!(text.ends_with("Out[1]: 'slept'"), "{text}");
    s.kernels.shutdown().await;
}

#[tokio::test]
async fn a_cell_that_ignores_the_interrupt_is_killed_and_the_next_call_starts_fresh() {
    let s = check(short_budget(0.3, 0.5));
    s.run("lost = 1").await;
    let (r, text) = s
        .run("import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\ntime.sleep(60)")
        .await;
    assert_eq!(r.status, CellStatus::Killed, "{text}");
    assert!(!r.kernel.state_preserved);
    assert!(
        text.contains(
            "the cell did not stop after an interrupt, so the kernel was killed; its state is lost"
        ),
        "{text}"
    );
    let (r, text) = s.run("'lost' in globals()").await;
    assert!(r.kernel.started);
    assert!(text.contains("the previous kernel was killed after a cell without output for the inactivity budget did not stop within 500 ms of an interrupt; earlier state (variables, imports) is gone"), "{text}");
    assert!(text.ends_with("Out[1]: False"), "{text}");
    s.kernels.shutdown().await;
}

/// Values strict JSON has no form for (NaN, infinities, lone surrogates) reach the model as
/// Jupyter sends them, and the kernel goes on; a cell that breaks the protocol itself (garbage
/// on the event pipe) ends at once as a crash that says so, not at the end of the budget.
#[tokio::test]
async fn values_json_lacks_are_cleaned_and_a_broken_protocol_ends_the_cell_at_once() {
    let s = check(short_budget(60.0, 2.0));
    let cells = [
        ("float('nan')", "nan"),
        (
            "display({'application/json': {'a': float('nan'), 'b': float('-inf')}}, raw=True)",
            "\"a\": \"nan\"",
        ),
        ("display({'text/plain': 'lone \\ud800 surrogate'}, raw=True)", "lone \u{fffd} surrogate"),
        ("{'k\\udfff': [float('inf')]}", "'k\\udfff'"),
    ];
    for (code, shows) in cells {
        let (r, text) = s.run(code).await;
        assert_eq!(r.status, CellStatus::Ok, "{code}: {text}");
        assert!(text.contains(shows), "{code} shows {shows:?}: {text}");
    }
    let (r, text) = s.run("x = 5\nx").await;
    assert!(!r.kernel.started, "the same kernel: {text}");
    let (r, text) = s.run("import os\nos.write(4, b'\\x00\\x00\\x00\\x03{x}')").await;
    assert_eq!(r.status, CellStatus::Crashed, "{text}");
    assert!(text.contains("[protocol error: bad frame"), "{text}");
    let (r, text) = s.run("1 + 1").await;
    assert!(r.kernel.started, "{text}");
    assert!(text.ends_with("Out[1]: 2"), "{text}");
    // A kernel that closes its event pipe and lives on is given up at once, not at the budget.
    let (r, text) = s.run("import os, time\nos.close(4)\ntime.sleep(3600)").await;
    assert_eq!(r.status, CellStatus::Crashed, "{text}");
    assert!(text.contains("it stopped answering and was killed"), "{text}");
    s.kernels.shutdown().await;
}

#[tokio::test]
async fn a_crash_is_reported_and_the_next_call_recovers() {
    let s = check(EvalConfig::default());
    s.run("state = 1").await;
    let (r, text) = s.run("import sys, os\nprint('bye', file=sys.stderr)\nos._exit(3)").await;
    assert_eq!(r.status, CellStatus::Crashed, "{text}");
    assert!(
        text.contains("kernel died: it exited with status 3; last stderr lines:\nbye"),
        "{text}"
    );
    assert!(text.contains("the Python kernel died while running this cell"), "{text}");
    let (r, text) = s.run("'state' in globals()").await;
    assert!(r.kernel.started);
    assert!(text.contains("the previous kernel died (it exited with status 3"), "{text}");
    assert!(text.ends_with("Out[1]: False"), "{text}");
    let (r, text) = s.run("import ctypes\nctypes.string_at(0)").await;
    assert_eq!(r.status, CellStatus::Crashed, "{text}");
    assert!(text.contains("killed by signal 11 (SIGSEGV, a segmentation fault)"), "{text}");
    assert!(text.contains("Fatal Python error: Segmentation fault"), "{text}");
    let (_, text) = s.run("2 + 2").await;
    assert!(text.ends_with("Out[1]: 4"), "{text}");
    s.kernels.shutdown().await;
}

#[tokio::test]
async fn output_is_capped_with_a_note() {
    let s = check(EvalConfig { max_output_chars: 2_000, ..EvalConfig::default() });
    let (r, text) = s.run("for i in range(5000):\n    print(f'line {i:05}')").await;
    assert_eq!(r.status, CellStatus::Ok);
    assert!(text.contains("line 00000\n"), "{text}");
    assert!(text.contains("[… output cut: 53000 characters in the middle not shown"), "{text}");
    assert!(text.ends_with("line 04999"), "{text}");
    s.kernels.shutdown().await;
}

#[tokio::test]
async fn cancelling_the_call_interrupts_the_cell() {
    let s = check(EvalConfig::default());
    let cancel = s.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        cancel.cancel();
    });
    let (r, text) = s.run("import time\ntime.sleep(60)").await;
    assert_eq!(r.status, CellStatus::Interrupted, "{text}");
    assert_eq!(r.interrupt, Some(InterruptReason::Cancelled));
    assert!(text.contains("[interrupted: the call was cancelled"), "{text}");
    s.kernels.shutdown().await;
}

#[tokio::test]
async fn no_kernel_process_or_child_survives_shutdown() {
    let s = check(EvalConfig::default());
    let (r, text) = s
        .run("import os, subprocess\nchild = subprocess.Popen(['sleep', '300'])\n(os.getpid(), child.pid)")
        .await;
    assert_eq!(r.status, CellStatus::Ok, "{text}");
    let pids: Vec<u32> = text
        .rsplit("Out[1]: (")
        .next()
        .unwrap_or_default()
        .trim_end_matches(')')
        .split(", ")
        .map(|p| p.parse().expect("pid"))
        .collect();
    assert!(pids.iter().all(|p| alive(*p)));
    s.kernels.shutdown().await;
    for pid in pids {
        assert!(gone_within(pid, Duration::from_secs(5)), "process {pid} survived the run");
    }
    let request = agent_tools_eval::EvalRequest {
        code: "1".into(),
        description: "after the end".into(),
        language: None,
        reset: None,
        ..Default::default()
    };
    let after = s
        .kernels
        .eval(
            "conversation",
            &s.root(),
            request,
            s.bridge.clone(),
            CallScope::new(s.cancel.clone()),
        )
        .await;
    assert_eq!(after, Err(agent_tools_eval::EvalError::Closed));
}
