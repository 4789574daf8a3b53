"""The adapters, each driven by its real framework (installed in the test venv, pinned in
`xtask/src/setup.rs`): the OpenAI Agents SDK's runner calling a function tool, LangChain
invoking a tool as an agent's tool call does, and an MCP SDK client talking to the in-process
server; and each one's rendering of a result with text and figures in order."""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path
from typing import Any

import pytest

import agent_tools
from conftest import require_env, require_module

FIGURE_CELL = {
    "code": "import matplotlib.pyplot as plt\nprint('before')\nplt.plot([1, 2, 3]); plt.show()\nprint('after')",
    "description": "a figure between two prints",
}


@pytest.fixture(scope="module")
def figure_result(tmp_path_factory: pytest.TempPathFactory) -> agent_tools.ToolResult:
    python = require_env("AGENT_TOOLS_TEST_PYTHON", "the test venv's Python, which has matplotlib")
    root = tmp_path_factory.mktemp("figure")
    (root / "agent-tools.toml").write_text(f"[eval]\npython = {json.dumps(python)}\n")
    with agent_tools.Run(root, config=root / "agent-tools.toml") as run:
        result = run.call("eval", FIGURE_CELL)
    assert not result.is_error and len(result.images) == 1, result.text
    return result


def test_the_openai_agents_runner_calls_a_tool_through_the_adapter(project: Path) -> None:
    require_module("agents", "openai-agents")
    from agents import Agent, Runner, set_tracing_disabled
    from agents.testing import ScriptedModel, assistant_message, function_call

    from agent_tools.openai_agents import function_tools, is_strict

    set_tracing_disabled(True)
    # The model's side is scripted (no network); the runner, the tool plumbing and the tools are real.
    model = ScriptedModel([
        [function_call("read", {"path": "notes.txt", "end_line": 2}, call_id="call_1")],
        [assistant_message("read it")],
    ])

    async def main() -> Any:
        async with agent_tools.Run(project) as run:
            tools = function_tools(run)
            agent = Agent(name="coder", instructions="Read files.", model=model, tools=tools)
            return tools, await Runner.run(agent, "What do the notes say?")

    tools, result = asyncio.run(main())
    assert result.final_output == "read it"
    outputs = [i for i in model.last_call.input if isinstance(i, dict) and i.get("type") == "function_call_output"]
    assert len(outputs) == 1 and outputs[0]["call_id"] == "call_1"
    assert "second line" in str(outputs[0]["output"]) and "third line" not in str(outputs[0]["output"])
    by_name = {t.name: t for t in tools}
    assert {t.name for t in model.first_call.tools} == set(by_name)
    # Strict mode would make every optional argument required: debug and read are not strict.
    assert by_name["debug"].strict_json_schema is False and by_name["read"].strict_json_schema is False
    assert by_name["read"].params_json_schema["properties"]["path"]
    # Every built-in tool has an optional argument now (apply_patch's dry_run); a schema that
    # already meets strict mode keeps it.
    assert by_name["apply_patch"].strict_json_schema is False, "dry_run is optional"
    strict = {
        "type": "object",
        "properties": {"patch": {"type": "string"}},
        "required": ["patch"],
        "additionalProperties": False,
    }
    assert is_strict(strict) is True


def test_openai_agents_output_keeps_text_and_figures_in_order(figure_result: agent_tools.ToolResult) -> None:
    require_module("agents", "openai-agents")
    from agents import ToolOutputImage, ToolOutputText

    from agent_tools.openai_agents import tool_output

    before, image, after = tool_output(figure_result)
    assert isinstance(before, ToolOutputText) and "before" in before.text
    assert isinstance(image, ToolOutputImage) and image.image_url.startswith("data:image/png;base64,")
    assert base64.b64decode(image.image_url.split(",", 1)[1]).startswith(b"\x89PNG")
    assert isinstance(after, ToolOutputText) and "after" in after.text


def test_langchain_tools_answer_tool_calls_sync_and_async(project: Path) -> None:
    require_module("langchain_core", "langchain-core")
    from langchain_core.messages import ToolMessage
    from langchain_core.utils.function_calling import convert_to_openai_tool

    from agent_tools.langchain import tools

    def tool_call(name: str, call_id: str, **args: Any) -> dict:
        return {"type": "tool_call", "name": name, "id": call_id, "args": args}

    with agent_tools.Run(project) as run:
        by_name = {t.name: t for t in tools(run)}
        read = by_name["read"].invoke(tool_call("read", "call_1", path="notes.txt", end_line=1))
        failed = by_name["read"].invoke(tool_call("read", "call_2", path="missing.txt"))
        found = asyncio.run(by_name["ast_grep"].ainvoke(
            tool_call("ast_grep", "call_3", pattern="print($X)", path=".", language="python")))
        plain = by_name["read"].invoke({"path": "notes.txt", "start_line": 3})
    assert isinstance(read, ToolMessage) and read.tool_call_id == "call_1" and read.status == "success"
    assert "first line" in read.content and "second line" not in read.content
    assert read.artifact.structured["content"] == "first line\n"
    assert failed.status == "error" and "missing.txt" in failed.content, failed
    assert found.status == "success" and "app.py" in found.content
    assert "third line" in plain
    openai_form = convert_to_openai_tool(by_name["read"])
    assert openai_form["function"]["name"] == "read"
    assert "path" in openai_form["function"]["parameters"]["properties"]


def test_langchain_content_keeps_text_and_figures_in_order(figure_result: agent_tools.ToolResult) -> None:
    require_module("langchain_core", "langchain-core")
    from langchain_core.messages import ToolMessage

    from agent_tools.langchain import content

    blocks = content(figure_result)
    assert [b["type"] for b in blocks] == ["text", "image", "text"]
    assert blocks[1]["mime_type"] == "image/png" and base64.b64decode(blocks[1]["base64"]).startswith(b"\x89PNG")
    message = ToolMessage(content=blocks, tool_call_id="call_1")
    assert [b["type"] for b in message.content_blocks] == ["text", "image", "text"]


def test_an_mcp_sdk_client_lists_and_calls_through_the_in_process_server(project: Path) -> None:
    require_module("mcp", "mcp")
    from mcp.shared.memory import create_connected_server_and_client_session

    from agent_tools import mcp as agent_tools_mcp

    async def main() -> Any:
        async with agent_tools.Run(project) as run:
            server = agent_tools_mcp.server(run)
            async with create_connected_server_and_client_session(server) as client:
                listed = await client.list_tools()
                read = await client.call_tool("read", {"path": "notes.txt", "end_line": 1})
                wrong = await client.call_tool("read", {"path": 12})
                unknown = await client.call_tool("reed", {"path": "notes.txt"})
                return listed, read, wrong, unknown

    listed, read, wrong, unknown = asyncio.run(main())
    tools = {t.name: t for t in listed.tools}
    assert tools["read"].annotations.readOnlyHint is True and tools["read"].title
    assert tools["write"].annotations.readOnlyHint is False
    # `read` has no output schema: clients that show only structured content show its text.
    assert tools["read"].outputSchema is None and "path" in tools["read"].inputSchema["properties"]
    assert tools["ast_grep"].outputSchema is not None
    assert not read.isError and "1\tfirst line" in read.content[0].text
    assert read.structuredContent is None
    assert wrong.isError and "path" in wrong.content[0].text
    assert unknown.isError and "unknown tool `reed`" in unknown.content[0].text


def test_mcp_call_results_keep_text_and_figures_in_order(figure_result: agent_tools.ToolResult) -> None:
    require_module("mcp", "mcp")
    from mcp import types

    from agent_tools import mcp as agent_tools_mcp

    result = agent_tools_mcp.call_result(figure_result)
    assert [type(b) for b in result.content] == [types.TextContent, types.ImageContent, types.TextContent]
    assert result.content[1].mimeType == "image/png"
    assert base64.b64decode(result.content[1].data).startswith(b"\x89PNG")
    assert result.structuredContent is None and not result.isError
