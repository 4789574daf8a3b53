# The agent-tools Python kernel runner: stdlib only, shipped inside the agent-tools-eval crate.
#
# The host starts the interpreter with a tiny bootstrap that reads this file over the command
# pipe and executes it. Protocol: frames of a 4-byte big-endian length plus UTF-8 JSON,
# host -> kernel on fd CMD_FD, kernel -> host on fd EVT_FD. fds 0/1/2 belong to user code:
# stdin is /dev/null, stdout and stderr are captured by the host as cell output, so nothing
# user code writes (print, os.write(1, ...), C extensions, child processes) reaches the protocol.
#
# A kernel's start is mostly the interpreter's own, so the runner imports at start only what the
# interpreter has already loaded or what is built in (C modules: `_ast`, `_json`, `_thread`,
# `_queue`, `_signal`); `ast`, `json`, `threading`, `re`, `traceback` and the like are imported
# where they are first needed. The stdlib fallback for IPython idioms (`magics.py`) and the
# IPython integration (`ipython.py`) are parts of this runner compiled into its namespace at their
# first use (`_load`): the bootstrap hands them over as `__agent_tools_parts__`.

import _ast
import _queue
import _signal as signal  # without signal.py's enums, which cost a millisecond at start
import _struct as struct
import _thread
import builtins
import os
import sys
import time

CMD_FD = int(os.environ.pop("AGENT_TOOLS_KERNEL_CMD_FD", "3"))
EVT_FD = int(os.environ.pop("AGENT_TOOLS_KERNEL_EVT_FD", "4"))
os.environ.pop("AGENT_TOOLS_INTERRUPT_SIGNAL", None)  # SIGINT reaches Python whenever it can
RUNNER_FILE = "<agent-tools-runner>"
CO_COROUTINE = 0x80
TOP_LEVEL_AWAIT = _ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
ONLY_AST = _ast.PyCF_ONLY_AST

# ----------------------------------------------------------------------------------------------
# Parts of the runner compiled at their first use, into this namespace.

_PARTS = {}
for _part in globals().pop("__agent_tools_parts__", ()):
    _name, _, _source = _part.partition("\n")
    _PARTS[_name] = _source
_PARTS_LOCK = _thread.RLock()


def _load(name):
    """Compiles and runs the runner's part `name` into this namespace, once."""
    with _PARTS_LOCK:
        source = _PARTS.pop(name, None)
        if source is not None:
            exec(compile(source, RUNNER_FILE, "exec", dont_inherit=True), globals())


def _from_part(part, name):
    """A stand-in for `name` of `part`: loads the part, which replaces it, and calls the real one."""

    def call(*args, **kwargs):
        _load(part)
        return globals()[name](*args, **kwargs)

    call.__name__ = name
    return call


transform = _from_part("magics", "transform")
_magic = _from_part("magics", "_magic")
_cell_magic = _from_part("magics", "_cell_magic")
_run_with_ipython = _from_part("ipython", "_run_with_ipython")

# ----------------------------------------------------------------------------------------------
# Frames: JSON through `_json`'s C encoder and scanner, as `json` itself uses them (importing
# `json` compiles its regular expressions, and imports `re`, at every start); `json` where
# `_json` is not as this expects. What is sent is strict JSON in UTF-8, which the host reads:
# a value that has none (NaN, an infinity, a lone surrogate) is cleaned first (`_json_clean`).

# Child processes must not inherit the protocol pipes.
for _fd in (CMD_FD, EVT_FD):
    try:
        os.set_inheritable(_fd, False)
    except OSError:
        pass


def _json_codec():
    try:
        import _json

        def dumps(obj):
            encoder = _json.make_encoder({}, repr, _json.encode_basestring, None, ":", ",", False, False, False)
            return "".join(encoder(obj, 0))

        class _Context:
            strict = True
            object_hook = None
            object_pairs_hook = None
            parse_float = float
            parse_int = int
            parse_constant = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}.__getitem__

        scan = _json.make_scanner(_Context())

        def loads(text):
            value, end = scan(text, 0)
            if end != len(text):
                raise ValueError("extra data after a JSON value")
            return value

        sample = {"t": "é\u2028\x00\"", "n": [1, -2.5, None, True, False], "o": {}, "big": 2**70}
        if loads(dumps(sample)) == sample and dumps(object) == '"' + repr(object) + '"':
            try:
                dumps(float("nan"))
            except ValueError:
                return dumps, loads
    except Exception:
        pass
    import json

    return (lambda obj: json.dumps(obj, default=repr, ensure_ascii=False, allow_nan=False)), json.loads


def _json_clean(value):
    """`value` as strict JSON holds it: NaN and the infinities as Jupyter's `json_clean` sends them
    ('nan', 'inf', '-inf'), a lone surrogate as U+FFFD, anything else JSON lacks as its repr."""
    if isinstance(value, str):
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        return value if value - value == 0 else repr(value)
    if isinstance(value, dict):
        keys = (str, int, float, type(None))  # what JSON makes a key of
        return {_json_clean(k if isinstance(k, keys) else repr(k)): _json_clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_clean(v) for v in value]
    return _json_clean(repr(value))


_json_dumps, _json_loads = _json_codec()
_write_lock = _thread.allocate_lock()


def send(frame):
    try:
        data = _json_dumps(frame).encode("utf-8")
    except ValueError:  # NaN or an infinity; UnicodeEncodeError: a lone surrogate
        data = _json_dumps(_json_clean(frame)).encode("utf-8")
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
    return _json_loads(body.decode("utf-8"))
