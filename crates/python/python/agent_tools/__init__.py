"""agent-tools in-process: the registry of agent tools (files, language servers, structural
search, debugger, Python/JavaScript kernels, background workers) for Python harnesses.

Open a :class:`Run` on a project root and a surface, list its :meth:`Run.tools`, and
:meth:`Run.call` them by name with a dict of arguments::

    import agent_tools

    with agent_tools.Run("/path/to/project", surface="plan") as run:
        print([t.name for t in run.tools()])
        result = run.call("read", {"path": "README.md", "end_line": 5})
        print(result.text)

A run owns what its tools start (language servers, kernels, debug adapters, workers); they end
when the run is closed, when its ``with`` block exits, or when it is garbage collected.
The same tools are served to MCP clients by the ``agent-tools mcp`` command of this package.
"""

from __future__ import annotations

from ._native import AgentToolsError, RunClosedError, ToolNotFoundError
from ._native import __version__ as _native_version

# Not `typing.TYPE_CHECKING`: importing typing (and the `re` and `contextlib` it pulls in) is
# most of what this file would cost the command; type checkers read this name the same way.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ._cards import Answer, Card, CardOption, Skip
    from ._run import Image, Run, Text, ToolResult, ToolSpec

__all__ = [
    "AgentToolsError",
    "Answer",
    "Card",
    "CardOption",
    "Image",
    "Run",
    "RunClosedError",
    "Skip",
    "Text",
    "ToolNotFoundError",
    "ToolResult",
    "ToolSpec",
    "__version__",
]

__version__: str = _native_version

# The API is loaded on first use: the `agent-tools` command imports this package on its way to
# the extension module, and every millisecond of that is paid at each MCP server start.
_LAZY = {
    "Answer": "_cards",
    "Card": "_cards",
    "CardOption": "_cards",
    "Skip": "_cards",
    "Image": "_run",
    "Run": "_run",
    "Text": "_run",
    "ToolResult": "_run",
    "ToolSpec": "_run",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'agent_tools' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
