# The agent-tools Python kernel runner: stdlib only, shipped inside the agent-tools-eval crate.
#
# The host starts the interpreter with a tiny bootstrap that reads this file over the command
# pipe and executes it. Protocol: frames of a 4-byte big-endian length plus UTF-8 JSON,
# host -> kernel on fd CMD_FD, kernel -> host on fd EVT_FD. fds 0/1/2 belong to user code:
# stdin is /dev/null, stdout and stderr are captured by the host as cell output, so nothing
# user code writes (print, os.write(1, ...), C extensions, child processes) reaches the protocol.

import ast
import builtins
import json
import os
import queue
import signal
import struct
import sys
import threading
import time
import traceback
import types

CMD_FD = int(os.environ.pop("AGENT_TOOLS_KERNEL_CMD_FD", "3"))
EVT_FD = int(os.environ.pop("AGENT_TOOLS_KERNEL_EVT_FD", "4"))
RUNNER_FILE = "<agent-tools-runner>"
CO_COROUTINE = 0x80
TOP_LEVEL_AWAIT = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT

# Child processes must not inherit the protocol pipes.
for _fd in (CMD_FD, EVT_FD):
    try:
        os.set_inheritable(_fd, False)
    except OSError:
        pass

_write_lock = threading.Lock()


def send(frame):
    data = json.dumps(frame, default=repr).encode("utf-8", "surrogatepass")
    with _write_lock:
        view = memoryview(struct.pack(">I", len(data)) + data)
        while view:
            n = os.write(EVT_FD, view)
            view = view[n:]


def _read_exact(n):
    chunks = []
    while n:
        chunk = os.read(CMD_FD, n)
        if not chunk:
            return None
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def recv():
    head = _read_exact(4)
    if head is None:
        return None
    (size,) = struct.unpack(">I", head)
    body = _read_exact(size)
    if body is None:
        return None
    return json.loads(body.decode("utf-8"))


# ----------------------------------------------------------------------------------------------
# State shared between the main thread (runs cells) and the reader thread (reads the pipe).

class _State:
    def __init__(self):
        self.lock = threading.Lock()
        self.running = None  # id of the cell whose user code runs now
        self.main_ident = threading.main_thread().ident
        self.cells = queue.Queue()
        self.calls = {}  # bridged call id -> [event, result]
        self.next_call = 0
        self.cell = None  # id of the cell being executed (for tool calls and displays)
        self.token = ""  # the cell's end marker, also written at a clear_output
        self.cleared = threading.Event()  # the host has applied a clear_output


STATE = _State()


def _end_own_group():
    """Kills the kernel's process group when the kernel leads it (the host starts it so)."""
    try:
        if os.getpgid(0) == os.getpid():
            # SIGKILL takes the kernel too, which is on its way out anyway.
            os.killpg(os.getpid(), signal.SIGKILL)
    except Exception:
        pass


def _reader():
    while True:
        try:
            frame = recv()
        except Exception:
            frame = None
        if frame is None:
            # The host is gone (perhaps killed, with no chance to end the run): a kernel never
            # outlives its pipe, and neither does what its cells started in its process group.
            _end_own_group()
            os._exit(0)
        kind = frame.get("t")
        if kind == "exec":
            STATE.cells.put(frame)
        elif kind == "tool_result":
            with STATE.lock:
                slot = STATE.calls.get(frame.get("id"))
            if slot is not None:
                slot[1] = frame
                slot[0].set()
        elif kind == "cleared":
            STATE.cleared.set()
        elif kind == "interrupt":
            with STATE.lock:
                if STATE.running is not None and STATE.running == frame.get("cell"):
                    signal.pthread_kill(STATE.main_ident, signal.SIGINT)
        elif kind == "exit":
            os._exit(0)


# ----------------------------------------------------------------------------------------------
# The tool() bridge.

class ToolError(Exception):
    """A bridged tool call failed; the message is the tool's own."""


class _Tool:
    """`tool(name, args)` calls a tool of the harness; `tool.read(path=...)` is the same call."""

    def __call__(self, name, args=None, **kwargs):
        if args is None:
            args = {}
        if not isinstance(args, dict):
            raise TypeError("tool(name, args): args must be a dict of the tool's arguments")
        args = dict(args, **kwargs)
        event = threading.Event()
        with STATE.lock:
            STATE.next_call += 1
            call_id = STATE.next_call
            STATE.calls[call_id] = [event, None]
            cell = STATE.cell
        try:
            send({"t": "tool_call", "cell": cell, "id": call_id, "name": str(name), "args": args})
            event.wait()
            result = STATE.calls[call_id][1]
        finally:
            with STATE.lock:
                STATE.calls.pop(call_id, None)
        if result.get("ok"):
            return result.get("value")
        raise ToolError(result.get("error") or "the tool call failed")

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return lambda args=None, **kwargs: self(name, args, **kwargs)

    def __repr__(self):
        return "<tool(name, args): calls a harness tool through the agent-tools registry>"


# ----------------------------------------------------------------------------------------------
# Rich display: mime bundles.

MAX_ROWS = 20
HEAD_ROWS = 10
TAIL_ROWS = 5
MAX_COLS = 12
MAX_CELL = 40


def _cell_text(value):
    text = str(value).replace("\n", " ").replace("|", "\\|")
    if len(text) > MAX_CELL:
        text = text[: MAX_CELL - 1] + "…"
    return text


def _frame_markdown(df, kind="DataFrame"):
    """A pandas DataFrame as a capped markdown table with shape, dtypes and a note of the cut."""
    rows, cols = df.shape
    notes = []
    if cols > MAX_COLS:
        left = MAX_COLS - 4
        col_idx = list(range(left)) + [None] + list(range(cols - 4, cols))
        notes.append(f"{cols - MAX_COLS} of {cols} columns not shown")
    else:
        col_idx = list(range(cols))
    if rows > MAX_ROWS:
        row_idx = list(range(HEAD_ROWS)) + [None] + list(range(rows - TAIL_ROWS, rows))
        notes.append(f"{rows - HEAD_ROWS - TAIL_ROWS} of {rows} rows not shown (head {HEAD_ROWS}, tail {TAIL_ROWS})")
    else:
        row_idx = list(range(rows))

    def col_name(c):
        name = df.columns[c]
        if isinstance(name, tuple):
            name = " / ".join(str(p) for p in name)
        return _cell_text(name)

    index_names = [str(n) for n in getattr(df.index, "names", [df.index.name]) if n is not None]
    header = [_cell_text(" / ".join(index_names))] + ["…" if c is None else col_name(c) for c in col_idx]
    column_names = [str(n) for n in getattr(df.columns, "names", []) if n is not None]

    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] * len(header)) + "|"]
    for r in row_idx:
        if r is None:
            lines.append("| " + " | ".join(["…"] * len(header)) + " |")
            continue
        index = df.index[r]
        if isinstance(index, tuple):
            index = " / ".join(str(p) for p in index)
        cells = [_cell_text(index)]
        for c in col_idx:
            cells.append("…" if c is None else _cell_text(df.iat[r, c]))
        lines.append("| " + " | ".join(cells) + " |")
    counts = {}
    for dtype in df.dtypes:
        counts[str(dtype)] = counts.get(str(dtype), 0) + 1
    dtypes = ", ".join(f"{k}({v})" for k, v in counts.items())
    head = f"{kind} {rows} rows × {cols} columns; dtypes: {dtypes}"
    if column_names:
        head += "; column levels: " + " / ".join(column_names)
    text = head + "\n\n" + "\n".join(lines)
    if notes:
        text += "\n\n[table cut: " + "; ".join(notes) + "]"
    return text


def _figure_png(fig):
    import base64
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _figure_text(fig):
    parts = []
    for ax in fig.get_axes():
        title = ax.get_title()
        desc = f"axes{': ' + repr(title) if title else ''}"
        xl, yl = ax.get_xlabel(), ax.get_ylabel()
        if xl or yl:
            desc += f" (x: {xl or '-'}, y: {yl or '-'})"
        n_lines, n_patches, n_coll = len(ax.lines), len(ax.patches), len(ax.collections)
        desc += f"; {n_lines} lines, {n_patches} patches, {n_coll} collections"
        parts.append(desc)
    w, h = fig.get_size_inches() * fig.dpi
    return f"<Figure size {int(w)}x{int(h)} with {len(fig.get_axes())} Axes" + (": " + "; ".join(parts) if parts else "") + ">"


def _is_instance(obj, module, name):
    cls = type(obj)
    for klass in cls.__mro__:
        if klass.__name__ == name and klass.__module__.startswith(module):
            return True
    return False


def _report_display_failure(exc):
    """A `_repr_*_` method or `__repr__` raised: its traceback on stderr, as IPython shows it;
    the other forms of the object are still shown."""
    tb = _strip_runner_frames(exc.__traceback__)
    lines = [l for l in traceback.format_exception(type(exc), exc, tb) if RUNNER_FILE not in l]
    _flush_std()
    sys.stderr.write("".join(lines))
    _flush_std()


def bundle_of(obj):
    """The mime bundle of `obj`: text/plain always, richer forms from `_repr_*_` methods."""
    bundle = {}
    if _is_instance(obj, "matplotlib.figure", "Figure"):
        bundle["image/png"] = _figure_png(obj)
        bundle["text/plain"] = _figure_text(obj)
        _FIGURES_SHOWN.add(id(obj))
        return bundle
    if "pandas" in sys.modules:
        pd = sys.modules["pandas"]
        try:
            if isinstance(obj, pd.DataFrame):
                bundle["text/markdown"] = _frame_markdown(obj)
            elif isinstance(obj, pd.Series):
                frame = obj.to_frame(name=obj.name if obj.name is not None else "value")
                bundle["text/markdown"] = _frame_markdown(frame, "Series").replace(" columns;", " column;", 1) if obj.ndim == 1 else _frame_markdown(frame, "Series")
        except Exception:
            pass
    method = getattr(obj, "_repr_mimebundle_", None)
    if callable(method) and not isinstance(obj, type):
        try:
            data = method()
            if isinstance(data, tuple):
                data = data[0]
            if isinstance(data, dict):
                for k, v in data.items():
                    if isinstance(v, bytes) and k.startswith("image/") and k != "image/svg+xml":
                        import base64

                        v = base64.b64encode(v).decode("ascii")
                    elif isinstance(v, bytes):
                        v = v.decode("utf-8", "replace")
                    bundle.setdefault(k, v)
        except Exception as exc:
            _report_display_failure(exc)
    for mime, name in (
        ("text/html", "_repr_html_"),
        ("text/markdown", "_repr_markdown_"),
        ("image/png", "_repr_png_"),
        ("image/jpeg", "_repr_jpeg_"),
        ("image/svg+xml", "_repr_svg_"),
        ("application/json", "_repr_json_"),
        ("text/latex", "_repr_latex_"),
    ):
        if mime in bundle:
            continue
        method = getattr(obj, name, None)
        if not callable(method) or isinstance(obj, type):
            continue
        try:
            data = method()
        except Exception as exc:
            _report_display_failure(exc)
            continue
        if isinstance(data, tuple):
            data = data[0]
        if data is None:
            continue
        if isinstance(data, bytes) and mime in ("image/png", "image/jpeg"):
            import base64

            data = base64.b64encode(data).decode("ascii")
        bundle[mime] = data
    try:
        bundle["text/plain"] = repr(obj)
    except Exception as exc:
        _report_display_failure(exc)
        bundle["text/plain"] = f"<repr failed: {type(exc).__name__}: {exc}>"
    # Very large payloads are the host's to cap, but nobody needs megabytes of HTML.
    for mime in ("text/html", "text/plain", "text/markdown", "text/latex"):
        value = bundle.get(mime)
        if isinstance(value, str) and len(value) > 200_000:
            bundle[mime] = value[:200_000] + f"\n[cut: {len(value) - 200_000} more characters]"
    for mime, value in list(bundle.items()):
        if not isinstance(value, (str, dict, list, int, float, bool)) and value is not None:
            bundle[mime] = str(value)
    return bundle


def _clear_output(wait=False):
    """`clear_output()`: the cell's output so far is dropped (with `wait`, at its next output).

    The marker on stdout and stderr tells the host where the clear falls in the streams; the
    cell waits until the host has applied it, so nothing printed after it lands before it.
    """
    _flush_std()
    token = STATE.token
    STATE.cleared.clear()
    for fd in (1, 2):
        if token:
            try:
                os.write(fd, token.encode("ascii"))
            except OSError:
                pass
    send({"t": "clear", "cell": STATE.cell, "wait": bool(wait)})
    if token:
        STATE.cleared.wait(2)


def display(*objs, raw=False, **_ignored):
    """Shows each object as a rich output of this cell (mime bundle, as in Jupyter)."""
    for obj in objs:
        if raw and isinstance(obj, dict):
            bundle = obj
        else:
            bundle = bundle_of(obj)
        _flush_std()
        send({"t": "display", "cell": STATE.cell, "bundle": bundle})


# ----------------------------------------------------------------------------------------------
# Matplotlib: Agg is forced by MPLBACKEND; plt.show() and figures left open are sent as PNGs.

_FIGURES_SHOWN = set()


def _flush_figures():
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return
    try:
        numbers = list(plt.get_fignums())
    except Exception:
        return
    for num in numbers[:8]:
        fig = plt.figure(num)
        if id(fig) not in _FIGURES_SHOWN:
            try:
                display(fig)
            except Exception as exc:
                sys.stderr.write(f"could not render figure {num}: {exc}\n")
    if len(numbers) > 8:
        sys.stderr.write(f"[{len(numbers) - 8} more open figures not shown; at most 8 per cell]\n")
    try:
        plt.close("all")
    except Exception:
        pass
    _FIGURES_SHOWN.clear()


def _patch_pyplot():
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None or getattr(plt.show, "_agent_tools", False):
        return

    def show(*args, **kwargs):
        _flush_figures()

    show._agent_tools = True
    plt.show = show


class _PyplotHook:
    """Patches `plt.show` as soon as matplotlib.pyplot is imported, so it flushes figures."""

    def find_spec(self, name, path, target=None):
        if name != "matplotlib.pyplot":
            return None
        import importlib.machinery

        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        original = loader.exec_module

        def exec_module(module):
            original(module)
            _patch_pyplot()

        loader.exec_module = exec_module
        return spec


# ----------------------------------------------------------------------------------------------
# IPython idioms, rewritten into ordinary Python before parsing.

LINE_MAGICS = ("cd", "env", "matplotlib", "pip", "pwd", "time", "timeit", "who")
CELL_MAGICS = ("bash", "capture", "sh", "time", "timeit", "writefile")


class UsageError(Exception):
    pass


def _scan_state(line, state):
    """Advances the lexical state (open brackets, open triple-quoted string) over one line."""
    i, n = 0, len(line)
    quote, depth = state
    while i < n:
        ch = line[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if line.startswith(quote, i):
                i += len(quote)
                quote = None
                continue
            i += 1
            continue
        if ch == "#":
            break
        if ch in "\"'":
            triple = line[i : i + 3]
            if triple in ('"""', "'''"):
                quote = triple
                i += 3
            else:
                # A single-quoted string ends on this line.
                j = i + 1
                while j < n and line[j] != ch:
                    j += 2 if line[j] == "\\" else 1
                i = j + 1
            continue
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth = max(0, depth - 1)
        i += 1
    if quote and len(quote) == 1:
        quote = None
    return quote, depth


import re as _re

_ASSIGN_MAGIC = _re.compile(r"^(\s*)([A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_][\w.]*)*)\s*=\s*([!%])(.*)$")


def _magic_call(kind, body):
    """`%name args` or `!cmd` as a call of the magic dispatcher."""
    if kind == "!":
        return f"__agent_tools_magic__('system', {body!r})"
    body = body.strip()
    name, _, args = body.partition(" ")
    if name not in LINE_MAGICS:
        raise UsageError(
            f"UsageError: line magic %{name} is not supported here; supported: "
            + ", ".join("%" + m for m in LINE_MAGICS)
            + "; cell magics: "
            + ", ".join("%%" + m for m in CELL_MAGICS)
            + "; !cmd and x = !cmd run shell commands"
        )
    return f"__agent_tools_magic__({name!r}, {args!r})"


def _join_magic_continuations(lines):
    """`%env BAZ \\` + `qux` is one magic line, as in IPython."""
    joined = []
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.lstrip()
        is_magic = stripped[:1] in ("%", "!") or _ASSIGN_MAGIC.match(line)
        while is_magic and line.endswith("\\") and i + 1 < len(lines):
            i += 1
            line = line[:-1] + " " + lines[i].lstrip()
        joined.append(line)
        i += 1
    return joined


def _ends_with_semicolon(code):
    """A trailing `;` hides the value, also when a comment follows it."""
    import io
    import tokenize

    last = None
    try:
        for tok in tokenize.generate_tokens(io.StringIO(code).readline):
            if tok.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.ENDMARKER, tokenize.INDENT, tokenize.DEDENT):
                last = tok
    except (tokenize.TokenError, SyntaxError):
        return code.rstrip().endswith(";")
    return last is not None and last.type == tokenize.OP and last.string == ";"


def transform(code):
    """Rewrites IPython idioms into calls of `__agent_tools_magic__`; plain Python stays as it is."""
    lines = code.split("\n")
    first = 0
    while first < len(lines) and not lines[first].strip():
        first += 1
    if first < len(lines) and lines[first].startswith("%%"):
        head = lines[first][2:].strip()
        name, _, args = head.partition(" ")
        if name not in CELL_MAGICS:
            raise UsageError(
                f"UsageError: cell magic %%{name} is not supported here; supported: "
                + ", ".join("%%" + m for m in CELL_MAGICS)
            )
        body = "\n".join(lines[first + 1 :])
        return f"__agent_tools_cell_magic__({name!r}, {args!r}, {body!r})"
    out = []
    state = (None, 0)
    continued = False
    lines = _join_magic_continuations(lines)
    for line in lines:
        at_statement = state == (None, 0) and not continued
        stripped = line.lstrip()
        if at_statement and stripped[:1] in ("%", "!"):
            indent = line[: len(line) - len(stripped)]
            if stripped.startswith("%%"):
                raise UsageError("UsageError: a cell magic (%%name) must be on the first line of the cell")
            body = stripped[1:]
            if stripped[0] == "%" and body.startswith("%"):
                body = body[1:]
            out.append(indent + _magic_call(stripped[0], body))
            continued = False
            continue
        if at_statement:
            m = _ASSIGN_MAGIC.match(line)
            if m and not m.group(4).startswith("="):
                indent, target, kind, rest = m.groups()
                call = _magic_call(kind, rest)
                if kind == "!":
                    call = call.replace("'system'", "'sx'", 1)
                out.append(f"{indent}{target} = {call}")
                continued = False
                continue
        out.append(line)
        state = _scan_state(line, state)
        code_part = line.split("#", 1)[0] if state[0] is None else line
        continued = state[0] is None and code_part.rstrip().endswith("\\")
    return "\n".join(out)


def _expand(cmd, ns):
    """IPython's variable expansion in shell lines: {expr} and $name from the user namespace."""

    def brace(m):
        expr = m.group(1)
        try:
            return str(eval(expr, ns))
        except Exception:
            return m.group(0)

    def dollar(m):
        name = m.group(1)
        if name in ns:
            return str(ns[name])
        return m.group(0)

    cmd = cmd.replace("$$", "\x00")
    cmd = _re.sub(r"(?<!\{)\{([^{}]+)\}(?!\})", brace, cmd)
    cmd = _re.sub(r"\$([A-Za-z_]\w*)", dollar, cmd)
    return cmd.replace("\x00", "$").replace("{{", "{").replace("}}", "}")


class SList(list):
    """The lines of a shell command's output, as IPython's `x = !cmd` gives them."""

    @property
    def s(self):
        return " ".join(self)

    @property
    def n(self):
        return "\n".join(self)

    @property
    def l(self):  # noqa: E743
        return list(self)


def _shell():
    return "/bin/bash" if os.path.exists("/bin/bash") else "/bin/sh"


def _run_shell(cmd, capture=False, script=None, status_only=False):
    import subprocess

    if script is None and cmd.rstrip().endswith("&") and not cmd.rstrip().endswith("&&"):
        raise OSError("Background processes not supported.")

    argv = [_shell(), "-c", cmd if script is None else script]
    proc = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    captured = []
    try:
        for raw in iter(proc.stdout.readline, b""):
            text = raw.decode("utf-8", "replace")
            if capture:
                captured.append(text.rstrip("\n"))
            else:
                sys.stdout.write(text)
                sys.stdout.flush()
        proc.wait()
    except KeyboardInterrupt:
        proc.kill()
        proc.wait()
        raise
    if capture:
        return SList(captured)
    if status_only:
        return proc.returncode
    if proc.returncode:
        sys.stderr.write(f"[exit status {proc.returncode}]\n")
    return None


class CapturedIO:
    """What `%%capture name` binds: `.stdout`, `.stderr`, and `.show()` to replay them."""

    def __init__(self, stdout, stderr):
        self.stdout = stdout
        self.stderr = stderr
        self.outputs = []

    def show(self):
        sys.stdout.write(self.stdout)
        sys.stderr.write(self.stderr)

    __call__ = show

    def __repr__(self):
        return f"<CapturedIO stdout={len(self.stdout)} chars, stderr={len(self.stderr)} chars>"


def _format_seconds(seconds):
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds * 1e9:.3g} ns"


def _timeit(stmt, setup, args, ns):
    import timeit

    number, repeat, quiet, ret = 0, 7, False, False
    words = args.split()
    rest = []
    i = 0
    while i < len(words):
        w = words[i]
        if w == "-n" and i + 1 < len(words):
            number = int(words[i + 1])
            i += 2
            continue
        if w == "-r" and i + 1 < len(words):
            repeat = int(words[i + 1])
            i += 2
            continue
        if w == "-q":
            quiet = True
        elif w == "-o":
            ret = True
        else:
            rest.append(w)
        i += 1
    if stmt is None:
        stmt = " ".join(rest)
    elif rest:
        setup = " ".join(rest)
    timer = timeit.Timer(stmt, setup or "pass", globals=ns)
    if number == 0:
        number, _ = timer.autorange()
    runs = timer.repeat(repeat=repeat, number=number)
    per = [r / number for r in runs]
    mean = sum(per) / len(per)
    std = (sum((p - mean) ** 2 for p in per) / len(per)) ** 0.5
    if not quiet:
        print(
            f"{_format_seconds(mean)} ± {_format_seconds(std)} per loop "
            f"(mean ± std. dev. of {repeat} run{'s' if repeat != 1 else ''}, {number} loop{'s' if number != 1 else ''} each)"
        )
    if ret:
        return types.SimpleNamespace(best=min(per), worst=max(per), average=mean, stdev=std, all_runs=runs, loops=number, repeat=repeat)
    return None


def _time(code, ns):
    start_wall, start_cpu = time.perf_counter(), time.process_time()
    value = None
    try:
        tree = ast.parse(code, mode="exec")
        tail = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            tail = tree.body.pop()
        exec(compile(tree, "<timed>", "exec"), ns)
        if tail is not None:
            value = eval(compile(ast.Expression(tail.value), "<timed>", "eval"), ns)
    finally:
        wall, cpu = time.perf_counter() - start_wall, time.process_time() - start_cpu
        print(f"CPU times: total: {_format_seconds(cpu)}\nWall time: {_format_seconds(wall)}")
    return value


def _requirement_names(args):
    names = []
    skip_next = False
    for word in args:
        if skip_next:
            skip_next = False
            continue
        if word.startswith("-"):
            if word in ("-r", "--requirement", "-c", "--constraint", "-i", "--index-url", "--extra-index-url", "-f", "--find-links", "-t", "--target"):
                skip_next = True
            continue
        if "/" in word or word.startswith("."):
            continue
        m = _re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", word)
        if m:
            names.append(m.group(0))
    return names


def _normalize(name):
    return _re.sub(r"[-_.]+", "-", name).lower()


def _modules_of(dist_names):
    import importlib.metadata as md

    wanted = {_normalize(n) for n in dist_names}
    modules = set()
    try:
        mapping = md.packages_distributions()
    except Exception:
        mapping = {}
    for module, dists in mapping.items():
        if any(_normalize(d) in wanted for d in dists):
            modules.add(module)
    for name in dist_names:
        modules.add(name.replace("-", "_"))
    return modules


def _pip(args):
    import importlib
    import shlex
    import site
    import subprocess

    words = shlex.split(args)
    if not words:
        raise UsageError("UsageError: %pip needs a pip command, for example %pip install requests")
    cmd = [sys.executable, "-m", "pip", *words, "--disable-pip-version-check", "--no-input"]
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    for raw in iter(proc.stdout.readline, b""):
        sys.stdout.write(raw.decode("utf-8", "replace"))
        sys.stdout.flush()
    proc.wait()
    if proc.returncode:
        sys.stderr.write(f"[pip exited with status {proc.returncode}]\n")
    if words[0] not in ("install", "uninstall"):
        return None
    importlib.invalidate_caches()
    try:
        for path in site.getsitepackages() + [site.getusersitepackages()]:
            if os.path.isdir(path):
                site.addsitedir(path)
    except Exception:
        pass
    names = _requirement_names(words[1:])
    modules = _modules_of(names) if names else set()
    evicted, compiled = [], []
    for mod_name in list(sys.modules):
        top = mod_name.split(".", 1)[0]
        if top in modules:
            module = sys.modules.get(mod_name)
            origin = getattr(module, "__file__", "") or ""
            if origin.endswith((".so", ".pyd")):
                compiled.append(mod_name)
            del sys.modules[mod_name]
            if "." not in mod_name:
                evicted.append(mod_name)
    if evicted:
        print(f"[%pip: removed {', '.join(sorted(evicted))} from sys.modules; the next import loads the installed version]")
    if compiled:
        print("[%pip: compiled extension modules were loaded (" + ", ".join(sorted(compiled)[:5]) + "); if the new version misbehaves, run again with reset: true]")
    return None


_PREVIOUS_DIR = [None]


def _magic(name, args):
    ns = USER_NS
    if name == "system":
        return _run_shell(_expand(args, ns))
    if name == "sx":
        return _run_shell(_expand(args, ns), capture=True)
    if name == "cd":
        target = args.strip().strip("'\"")
        if not target:
            target = os.path.expanduser("~")
        elif target == "-":
            target = _PREVIOUS_DIR[0] or os.getcwd()
        target = os.path.expanduser(os.path.expandvars(_expand(target, ns)))
        previous = os.getcwd()
        os.chdir(target)
        _PREVIOUS_DIR[0] = previous
        print(os.getcwd())
        return None
    if name == "pwd":
        return os.getcwd()
    if name == "env":
        args = args.strip()
        if not args:
            return dict(os.environ)
        if "=" in args or " " in args:
            key, _, value = args.partition("=") if "=" in args else args.partition(" ")
            key, value = key.strip(), _expand(value.strip(), ns)
            os.environ[key] = value
            print(f"env: {key}={value}")
            return None
        if args not in os.environ:
            raise UsageError(f"UsageError: environment variable {args} is not set")
        return os.environ[args]
    if name == "pip":
        return _pip(args)
    if name == "time":
        return _time(args, ns)
    if name == "timeit":
        return _timeit(None, "pass", args, ns)
    if name == "matplotlib":
        # Figures always come back as images; `%matplotlib inline` is what already happens.
        return None
    if name == "who":
        names = sorted(k for k, v in ns.items() if not k.startswith("_") and not isinstance(v, types.ModuleType) and k not in ("display", "tool", "In", "Out", "exit", "quit", "get_ipython"))
        print("  ".join(names) if names else "Interactive namespace is empty.")
        return None
    raise UsageError(f"UsageError: line magic %{name} is not supported")


def _cell_magic(name, args, body):
    ns = USER_NS
    if name in ("bash", "sh"):
        _run_shell("", script=body if name == "bash" else body)
        return None
    if name == "timeit":
        return _timeit(body, args.strip() or "pass", "", ns) if not args.strip().startswith("-") else _timeit(body, "pass", args, ns)
    if name == "time":
        return _time(body, ns)
    if name == "writefile":
        words = args.split()
        append = "-a" in words or "--append" in words
        path = [w for w in words if not w.startswith("-")]
        if not path:
            raise UsageError("UsageError: %%writefile needs a file name")
        target = os.path.expanduser(path[0])
        exists = os.path.exists(target)
        with open(target, "a" if append else "w", encoding="utf-8") as f:
            f.write(body if body.endswith("\n") else body + "\n")
        print(f"{'Appending to' if append else ('Overwriting' if exists else 'Writing')} {path[0]}")
        return None
    if name == "capture":
        import contextlib
        import io

        words = args.split()
        out, err = io.StringIO(), io.StringIO()
        with contextlib.ExitStack() as stack:
            if "--no-stdout" not in words:
                stack.enter_context(contextlib.redirect_stdout(out))
            if "--no-stderr" not in words:
                stack.enter_context(contextlib.redirect_stderr(err))
            exec(compile(body, "<captured>", "exec"), ns)
        names = [w for w in words if not w.startswith("-")]
        if names:
            ns[names[0]] = CapturedIO(out.getvalue(), err.getvalue())
        return None
    raise UsageError(f"UsageError: cell magic %%{name} is not supported")


# ----------------------------------------------------------------------------------------------
# Executing a cell: notebook semantics.

def _no_input(*_args, **_kwargs):
    raise StdinNotImplementedError(
        "input() is not available: the kernel has no stdin (it reads /dev/null). "
        "Pass values in the code instead, or ask the user through the harness."
    )


class _Exit:
    """`exit()` / `quit()`: in ipykernel they end nothing (the frontend decides); so here."""

    def __repr__(self):
        return "Use exit() or quit() to leave; the kernel keeps running (reset: true starts a fresh one)."

    def __call__(self, *_args, **_kwargs):
        return None


class StdinNotImplementedError(RuntimeError):
    pass


MAIN = types.ModuleType("__main__")
MAIN.__dict__["__builtins__"] = builtins
USER_NS = MAIN.__dict__
HISTORY = {"count": 0}
_LOOP = [None]


def _flush_std():
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass


def _run_coroutine(coro):
    import asyncio

    if _LOOP[0] is None or _LOOP[0].is_closed():
        _LOOP[0] = asyncio.new_event_loop()
    asyncio.set_event_loop(_LOOP[0])
    return _LOOP[0].run_until_complete(coro)


def _exec_code(code_obj):
    if code_obj.co_flags & CO_COROUTINE:
        return _run_coroutine(eval(code_obj, USER_NS))
    return eval(code_obj, USER_NS)


def _strip_runner_frames(tb):
    while tb is not None and tb.tb_frame.f_code.co_filename == RUNNER_FILE:
        tb = tb.tb_next
    return tb


def _error_info(exc):
    tb = _strip_runner_frames(exc.__traceback__)
    if isinstance(exc, (SyntaxError, UsageError)):
        lines = traceback.format_exception_only(type(exc), exc)
        if isinstance(exc, UsageError):
            lines = [str(exc) + "\n"]
    else:
        lines = traceback.format_exception(type(exc), exc, tb)
        lines = [l for l in lines if RUNNER_FILE not in l]
    return {"ename": type(exc).__name__, "evalue": str(exc), "traceback": "".join(lines)}



# ----------------------------------------------------------------------------------------------
# IPython, when the kernel's interpreter has it: its input transformations, magics, display
# machinery and history, inside this runner. Created lazily, at the first cell that needs it
# (an idiom, `get_ipython`, `In`/`Out`, an IPython import), so plain cells start fast.

_SHELL = [None]
_HAVE_IPYTHON = [None]
_IDIOM = _re.compile(r"(?m)^\s*(%|!|>>>|\.\.\. )|[?]\s*$|=\s*[!%]|\bget_ipython\b|\bIn\b|\bOut\b|IPython")


def _ipython_importable():
    if _HAVE_IPYTHON[0] is None:
        import importlib.util

        if os.environ.get("AGENT_TOOLS_NO_IPYTHON"):
            _HAVE_IPYTHON[0] = False
        else:
            try:
                _HAVE_IPYTHON[0] = importlib.util.find_spec("IPython") is not None
            except Exception:
                _HAVE_IPYTHON[0] = False
    return _HAVE_IPYTHON[0]


def _needs_ipython(code):
    if _SHELL[0] is not None:
        return True
    if not _ipython_importable():
        return False
    if _IDIOM.search(code):
        return True
    first = next((l for l in code.split("\n") if l.strip()), "")
    if first[:1] in (" ", "\t"):
        return True  # an indented paste
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return True
    # Automagic: a lone name that is no variable (`pwd`, `whos`, `ls`).
    if len(tree.body) == 1 and isinstance(tree.body[0], ast.Expr) and isinstance(tree.body[0].value, ast.Name):
        name = tree.body[0].value.id
        return name not in USER_NS and not hasattr(builtins, name)
    return False


class _CellResult:
    def __init__(self):
        self.bundle = None
        self.error = None


_CURRENT = [_CellResult()]
# Inside a display formatter: IPython's report of a formatter failure is ours to make.
_FORMATTING = [False]


def _make_shell():
    from IPython.core.displayhook import DisplayHook
    from IPython.core.displaypub import DisplayPublisher
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    class Publisher(DisplayPublisher):
        def publish(self, data, metadata=None, source=None, *, transient=None, update=False, **kwargs):
            _flush_std()
            send({"t": "display", "cell": STATE.cell, "bundle": _json_bundle(data)})

        def clear_output(self, wait=False):
            _clear_output(wait)

    class Hook(DisplayHook):
        def compute_format_data(self, result):
            bundle = bundle_of(result)
            _FORMATTING[0] = True
            try:
                # IPython's pretty printer, as ipykernel shows it (%precision, long dicts).
                plain = self.shell.display_formatter.formatters["text/plain"](result)
                if isinstance(plain, str) and "image/png" not in bundle:
                    bundle["text/plain"] = plain
            except Exception:
                pass
            finally:
                _FORMATTING[0] = False
            return bundle, {}

        def write_output_prompt(self):
            pass

        def write_format_data(self, format_dict, md_dict=None):
            _CURRENT[0].bundle = _json_bundle(format_dict)

        def finish_displayhook(self):
            pass

    class Shell(InteractiveShell):
        def ask_exit(self):
            # `exit()` / `quit()` through IPython's ExitAutocall: status ok, as in ipykernel.
            pass

        def show_usage_error(self, exc):
            # The cell's error (shown once), not also a line on stderr.
            _CURRENT[0].error = {"ename": "UsageError", "evalue": str(exc), "traceback": f"UsageError: {exc}"}

        def _showtraceback(self, etype, evalue, stb):
            text = self.InteractiveTB.stb2text(stb)
            if _FORMATTING[0]:
                # A display formatter failed (our bundle_of has reported it already).
                return
            _CURRENT[0].error = {
                "ename": getattr(etype, "__name__", str(etype)),
                "evalue": str(evalue),
                "traceback": _strip_ansi(text),
            }

        def system_piped(self, cmd):
            if cmd.rstrip().endswith("&"):
                raise OSError("Background processes not supported.")
            status = _run_shell(self.var_expand(cmd, depth=1), status_only=True)
            self.user_ns["_exit_code"] = status

        system = system_piped

        def enable_gui(self, gui=None):
            pass

        # The tab completer is built on first use: a model never tab-completes, and building
        # it is 3 ms of every start that engages IPython.
        def init_completer(self):
            pass

        @property
        def Completer(self):
            if getattr(self, "_lazy_completer", None) is None:
                InteractiveShell.init_completer(self)
            return self._lazy_completer

        @Completer.setter
        def Completer(self, value):
            self._lazy_completer = value

    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    config.InteractiveShell.colors = "nocolor"
    config.InteractiveShell.xmode = "Context"
    config.InteractiveShell.autocall = 0
    shell = Shell.instance(
        config=config,
        user_module=MAIN,
        user_ns=USER_NS,
        display_pub_class=Publisher,
        displayhook_class=Hook,
    )
    shell.execution_count = HISTORY["count"] + 1

    def show_in_pager(_shell, data, start=0, screen_lines=0, pager_cmd=None):
        text = data.get("text/plain", "") if isinstance(data, dict) else str(data)
        print(_strip_ansi(text))

    shell.set_hook("show_in_pager", show_in_pager)
    ipython_format = shell.display_formatter.format

    def format_for_display(obj, include=None, exclude=None):
        # Our model views (tables as markdown, figures as PNG) first, IPython's forms besides.
        bundle = bundle_of(obj)
        _FORMATTING[0] = True
        try:
            data, metadata = ipython_format(obj, include=include, exclude=exclude)
        finally:
            _FORMATTING[0] = False
        for mime, value in data.items():
            if mime != "text/plain" or mime not in bundle:
                bundle.setdefault(mime, value)
        return bundle, metadata

    shell.display_formatter.format = format_for_display
    # Ours where they know more than IPython's: %pip evicts stale modules; figures always come
    # back as images, so %matplotlib only says so.
    shell.register_magic_function(lambda line: _pip(line), "line", "pip")
    shell.register_magic_function(lambda line: None, "line", "matplotlib")
    _SHELL[0] = shell
    return shell


def _json_bundle(data):
    bundle = {}
    for mime, value in (data or {}).items():
        if isinstance(value, bytes):
            import base64

            value = base64.b64encode(value).decode("ascii")
        elif not isinstance(value, (str, dict, list, int, float, bool)) and value is not None:
            value = str(value)
        bundle[mime] = value
    return bundle


def _strip_ansi(text):
    return _re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", text)


def _run_with_ipython(code):
    """Runs `code` as ipykernel would; returns (status, error, bundle, value_was_shown)."""
    shell = _SHELL[0] or _make_shell()
    _CURRENT[0] = _CellResult()
    shell.execution_count = HISTORY["count"]
    with STATE.lock:
        STATE.running = STATE.cell
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        result = shell.run_cell(code, store_history=True)
    finally:
        with STATE.lock:
            STATE.running = None
            signal.signal(signal.SIGINT, signal.SIG_IGN)
    failure = result.error_in_exec or result.error_before_exec
    status = "ok"
    if isinstance(failure, KeyboardInterrupt):
        status = "interrupted"
    elif failure is not None:
        status = "error"
    error = _CURRENT[0].error
    if status != "ok" and error is None:
        error = {"ename": type(failure).__name__, "evalue": str(failure), "traceback": f"{type(failure).__name__}: {failure}"}
    return status, error, _CURRENT[0].bundle


def run_cell(frame):
    import linecache

    cell = frame["cell"]
    code = frame["code"]
    HISTORY["count"] += 1
    count = HISTORY["count"]
    filename = f"<cell-{count}>"
    result = None
    status = "ok"
    error = None
    STATE.cell = cell
    STATE.token = frame.get("token", "")
    if _needs_ipython(code):
        bundle = None
        try:
            status, error, bundle = _run_with_ipython(code)
        except KeyboardInterrupt as exc:
            status, error = "interrupted", _error_info(exc)
        except BaseException as exc:
            status, error = "error", _error_info(exc)
        _finish_cell(frame, cell, count, status, error, bundle)
        return
    try:
        source = transform(code)
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        tree = ast.parse(source, filename=filename, mode="exec", type_comments=False)
        tail = None
        if tree.body and isinstance(tree.body[-1], ast.Expr) and not _ends_with_semicolon(source):
            tail = tree.body.pop()
        body_code = compile(tree, filename, "exec", flags=TOP_LEVEL_AWAIT, dont_inherit=True)
        tail_code = None
        if tail is not None:
            tail_code = compile(ast.Expression(tail.value), filename, "eval", flags=TOP_LEVEL_AWAIT, dont_inherit=True)
        with STATE.lock:
            STATE.running = cell
            signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            _exec_code(body_code)
            if tail_code is not None:
                value = _exec_code(tail_code)
                if value is not None:
                    result = value
        finally:
            with STATE.lock:
                STATE.running = None
                signal.signal(signal.SIGINT, signal.SIG_IGN)
    except KeyboardInterrupt as exc:
        status = "interrupted"
        error = _error_info(exc)
    except BaseException as exc:  # SystemExit too: a cell cannot end the kernel by accident
        status = "error"
        error = _error_info(exc)
    bundle = None
    try:
        if result is not None:
            try:
                bundle = bundle_of(result)
            except BaseException as exc:
                bundle = {"text/plain": f"<could not display the value: {exc}>"}
            USER_NS["___"] = USER_NS.get("__")
            USER_NS["__"] = USER_NS.get("_")
            USER_NS["_"] = result
            USER_NS[f"_{count}"] = result
    except BaseException as exc:
        sys.stderr.write(f"[display failed: {type(exc).__name__}: {exc}]\n")
    _finish_cell(frame, cell, count, status, error, bundle)


def _finish_cell(frame, cell, count, status, error, bundle):
    try:
        _patch_pyplot()
        _flush_figures()
    except BaseException as exc:
        sys.stderr.write(f"[display failed: {type(exc).__name__}: {exc}]\n")
    _flush_std()
    token = frame.get("token", "")
    if token:
        for fd in (1, 2):
            try:
                os.write(fd, token.encode("ascii"))
            except OSError:
                pass
    try:
        cwd = os.getcwd()
    except OSError:
        cwd = None
    send({"t": "done", "cell": cell, "status": status, "error": error, "result": bundle, "count": count, "cwd": cwd})
    STATE.cell = None


def main():
    import faulthandler

    try:
        faulthandler.enable()
    except Exception:
        pass
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sys.modules["__main__"] = MAIN
    builtins.input = _no_input
    try:
        import getpass

        getpass.getpass = _no_input
    except Exception:
        pass
    # Builtins, as IPython's own `display` is: usable everywhere in a cell, and not names of
    # the user's namespace (`%who`, `%whos`, `%who_ls`, `dir()` and `%reset` leave them be).
    builtins.display = display
    builtins.tool = _Tool()
    builtins.ToolError = ToolError
    # `exit()` and `quit()` end the cell, as in ipykernel, and not the kernel.
    builtins.exit = builtins.quit = _Exit()
    builtins.__agent_tools_magic__ = _magic
    builtins.__agent_tools_cell_magic__ = _cell_magic
    sys.meta_path.insert(0, _PyplotHook())
    if "" not in sys.path:
        sys.path.insert(0, "")
    threading.Thread(target=_reader, name="agent-tools-reader", daemon=True).start()
    send(
        {
            "t": "hello",
            "pid": os.getpid(),
            "executable": sys.executable,
            "version": sys.version.split()[0],
            "cwd": os.getcwd(),
        }
    )
    while True:
        try:
            frame = STATE.cells.get()
            run_cell(frame)
        except KeyboardInterrupt:
            # A late interrupt that landed outside user code: nothing to stop.
            continue


main()
