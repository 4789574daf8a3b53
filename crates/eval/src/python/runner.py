# The agent-tools Python kernel runner: stdlib only, shipped inside the agent-tools-eval crate.
#
# The runner is this file and those `mod.rs` joins after it at build time, one concern each and
# all one module: `frames.py` (the frames on the protocol pipes), `reader.py` (the reader thread
# and the state it shares with the main thread), `tool.py` (the tool() bridge), `display.py`
# (rich display), `adapters.py` (modules adapted at their import), `needs_ipython.py` (which cells
# go to IPython), `cells.py` (executing a cell) and `main.py` (the start and the cell loop). This
# file holds the imports, the constants and the parts compiled at their first use.
#
# The host starts the interpreter with a tiny bootstrap that reads the runner over the command
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
