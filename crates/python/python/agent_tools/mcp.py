"""The run's tools as MCP Python SDK types, for a harness that speaks MCP in-process::

    import agent_tools
    from agent_tools import mcp as agent_tools_mcp

    run = agent_tools.Run("/path/to/project")
    server = agent_tools_mcp.server(run)        # an mcp.server.lowlevel.Server
    # or the types alone:
    listed = agent_tools_mcp.tools(run)         # list[mcp.types.Tool]
    answer = agent_tools_mcp.call_result(run.call("read", {"path": "README.md"}), spec)

The types carry what the ``agent-tools mcp`` server sends: title and the four hints as
``ToolAnnotations``, the output schema, content blocks in order (text and images), structured
content where the tool declares an output schema, and ``isError``. Needs ``mcp`` (1.x).
"""

from __future__ import annotations

import base64
from typing import Any, Dict, List, Optional

from mcp import types
from mcp.server.lowlevel import Server

from ._native import AgentToolsError
from ._run import Run, ToolResult, ToolSpec

__all__ = ["call_result", "server", "tool", "tools"]


def tools(run: Run) -> List[types.Tool]:
    """Every tool of ``run``'s surface as an MCP ``Tool``."""
    return [tool(spec) for spec in run.tools()]


def tool(spec: ToolSpec) -> types.Tool:
    return types.Tool(
        name=spec.name,
        title=spec.title or None,
        description=spec.description,
        inputSchema=spec.input_schema,
        outputSchema=spec.output_schema,
        annotations=types.ToolAnnotations(
            title=spec.title or None,
            readOnlyHint=spec.read_only,
            destructiveHint=spec.destructive,
            idempotentHint=spec.idempotent,
            openWorldHint=spec.open_world,
        ),
    )


def call_result(result: ToolResult, spec: Optional[ToolSpec] = None) -> types.CallToolResult:
    """``result`` as an MCP ``CallToolResult``. Structured content goes with it when ``spec``
    declares an output schema and the call succeeded (as the server does: MCP requires it to
    match that schema, and it is an object)."""
    blocks: List[types.ContentBlock] = []
    for block in result.content:
        if block.type == "text":
            blocks.append(types.TextContent(type="text", text=block.text))
        else:
            data = base64.b64encode(block.data).decode("ascii")
            blocks.append(types.ImageContent(type="image", data=data, mimeType=block.mime_type))
    structured: Optional[Dict[str, Any]] = None
    declared = spec is not None and spec.output_schema is not None
    if declared and not result.is_error and isinstance(result.structured, dict):
        structured = result.structured
    return types.CallToolResult(content=blocks, structuredContent=structured, isError=result.is_error)


def server(run: Run, name: str = "agent-tools") -> Server:
    """A low-level MCP server over ``run``: ``tools/list`` and ``tools/call``, each call on
    :meth:`agent_tools.Run.acall` (arguments are checked by the run, naming the argument)."""
    mcp_server: Server = Server(name)

    @mcp_server.list_tools()
    async def list_tools() -> List[types.Tool]:
        return tools(run)

    @mcp_server.call_tool(validate_input=False)
    async def call_tool(tool_name: str, arguments: Optional[Dict[str, Any]]) -> types.CallToolResult:
        specs = {spec.name: spec for spec in run.tools()}
        try:
            result = await run.acall(tool_name, arguments or {})
        except AgentToolsError as e:
            return types.CallToolResult(content=[types.TextContent(type="text", text=str(e))], isError=True)
        return call_result(result, specs.get(tool_name))

    return mcp_server
