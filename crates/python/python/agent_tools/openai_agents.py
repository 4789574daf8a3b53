"""The run's tools as OpenAI Agents SDK function tools::

    from agents import Agent
    import agent_tools
    from agent_tools.openai_agents import function_tools

    run = agent_tools.Run("/path/to/project")
    agent = Agent(name="coder", instructions="...", tools=function_tools(run))

Each tool calls :meth:`agent_tools.Run.acall`. A tool whose schema already meets OpenAI's
strict mode gets ``strict_json_schema=True``; the others (``debug``, and every tool with an
optional argument) get ``False``, because making a schema strict makes every argument required.
A failed call returns its text to the model (the SDK's convention for an error the model can act
on); images come back in order with the text (``ToolOutputText`` and ``ToolOutputImage``).
Needs ``openai-agents``.
"""

from __future__ import annotations

import base64
import copy
import json
from typing import Any, Dict, List, Optional, Sequence, Union

from agents import FunctionTool, ToolOutputImage, ToolOutputText
from agents.strict_schema import ensure_strict_json_schema
from agents.tool_context import ToolContext

from ._run import Run, ToolResult, ToolSpec

__all__ = ["function_tool", "function_tools", "is_strict", "tool_output"]


def function_tools(run: Run, names: Optional[Sequence[str]] = None) -> List[FunctionTool]:
    """A function tool for every tool of ``run``'s surface (or only those in ``names``)."""
    return [function_tool(run, spec) for spec in run.tools() if names is None or spec.name in names]


def function_tool(run: Run, spec: ToolSpec) -> FunctionTool:
    """One tool of ``run`` as a function tool."""

    async def invoke(context: ToolContext[Any], args_json: str) -> Any:
        try:
            args = json.loads(args_json) if args_json.strip() else {}
        except ValueError as e:
            return f"{spec.name}: the arguments are not valid JSON ({e}); send a JSON object"
        if not isinstance(args, dict):
            return f"{spec.name}: the arguments must be a JSON object, got {args_json}"
        return tool_output(await run.acall(spec.name, args))

    return FunctionTool(
        name=spec.name,
        description=spec.description,
        params_json_schema=copy.deepcopy(spec.input_schema),
        on_invoke_tool=invoke,
        strict_json_schema=is_strict(spec.input_schema),
    )


def is_strict(schema: Dict[str, Any]) -> bool:
    """``schema`` already meets OpenAI's strict mode as it is (every property required, no open
    object): the SDK's own conversion leaves it unchanged."""
    try:
        return ensure_strict_json_schema(copy.deepcopy(schema)) == schema
    except Exception:  # the SDK raises UserError (or TypeError) for what strict mode cannot take
        return False


def tool_output(result: ToolResult) -> Union[str, List[Union[ToolOutputText, ToolOutputImage]]]:
    """What the model gets: the text, or text and images as ordered blocks."""
    if not result.images:
        return result.text
    blocks: List[Union[ToolOutputText, ToolOutputImage]] = []
    for block in result.content:
        if block.type == "text":
            blocks.append(ToolOutputText(text=block.text))
        else:
            data = base64.b64encode(block.data).decode("ascii")
            blocks.append(ToolOutputImage(image_url=f"data:{block.mime_type};base64,{data}"))
    return blocks
