"""The run's tools as LangChain tools::

    import agent_tools
    from agent_tools.langchain import tools

    run = agent_tools.Run("/path/to/project")
    model_with_tools = chat_model.bind_tools(tools(run))

Each is a ``StructuredTool`` with the tool's JSON Schema as ``args_schema``, sync
(:meth:`agent_tools.Run.call`) and async (:meth:`agent_tools.Run.acall`). Its content is the
result's text, or text and image blocks in order; its artifact is the
:class:`agent_tools.ToolResult` (``response_format="content_and_artifact"``). A failed call raises
``ToolException``, which the tool turns into an error ``ToolMessage`` holding the text, so the
model reads what went wrong. Needs ``langchain-core``.
"""

from __future__ import annotations

import base64
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from langchain_core.tools import StructuredTool, ToolException

from ._run import Run, ToolResult, ToolSpec

__all__ = ["content", "tool", "tools"]


def tools(run: Run, names: Optional[Sequence[str]] = None) -> List[StructuredTool]:
    """A LangChain tool for every tool of ``run``'s surface (or only those in ``names``)."""
    return [tool(run, spec) for spec in run.tools() if names is None or spec.name in names]


def tool(run: Run, spec: ToolSpec) -> StructuredTool:
    """One tool of ``run`` as a LangChain tool."""

    def call(**args: Any) -> Tuple[Union[str, List[Dict[str, Any]]], ToolResult]:
        return _answer(run.call(spec.name, args))

    async def acall(**args: Any) -> Tuple[Union[str, List[Dict[str, Any]]], ToolResult]:
        return _answer(await run.acall(spec.name, args))

    return StructuredTool(
        name=spec.name,
        description=spec.description,
        args_schema=spec.input_schema,
        func=call,
        coroutine=acall,
        response_format="content_and_artifact",
        handle_tool_error=True,
    )


def content(result: ToolResult) -> Union[str, List[Dict[str, Any]]]:
    """The message content for ``result``: its text, or standard text and image blocks in order."""
    if not result.images:
        return result.text
    blocks: List[Dict[str, Any]] = []
    for block in result.content:
        if block.type == "text":
            blocks.append({"type": "text", "text": block.text})
        else:
            data = base64.b64encode(block.data).decode("ascii")
            blocks.append({"type": "image", "base64": data, "mime_type": block.mime_type})
    return blocks


def _answer(result: ToolResult) -> Tuple[Union[str, List[Dict[str, Any]]], ToolResult]:
    if result.is_error:
        raise ToolException(result.text)
    return content(result), result
