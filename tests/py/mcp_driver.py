"""Drives the agent-tools MCP server with the official Python MCP SDK, from a JSON script.

Usage: python mcp_driver.py SCRIPT.json
The script: {"server": [argv...], "env": {...}, "cwd": "...",
             "elicitation": null | {"action": "accept"|"decline"|"cancel", "content": {...}},
             "steps": [{"op": "list_tools"} | {"op": "call", "tool": "...", "args": {...}}]}
Prints one JSON document: {"results": [...], "elicitations": [...]}.
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
import mcp.types as types


def content_to_json(block):
    if block.type == "text":
        return {"type": "text", "text": block.text}
    if block.type == "image":
        return {"type": "image", "mimeType": block.mimeType, "bytes": len(block.data)}
    return {"type": block.type}


async def main(script):
    env = dict(os.environ)
    env.update(script.get("env", {}))
    params = StdioServerParameters(
        command=script["server"][0], args=script["server"][1:], env=env, cwd=script.get("cwd")
    )
    elicitations = []
    elicit = script.get("elicitation")
    callback = None
    if elicit is not None:

        async def callback(context, params):
            elicitations.append({"message": params.message, "schema": params.requestedSchema})
            return types.ElicitResult(action=elicit["action"], content=elicit.get("content"))

    results = []
    async with stdio_client(params) as (read, write):
        kwargs = {"elicitation_callback": callback} if callback else {}
        async with ClientSession(read, write, **kwargs) as session:
            init = await session.initialize()
            results.append({"op": "initialize", "server": init.serverInfo.name})
            for step in script["steps"]:
                if step["op"] == "list_tools":
                    listed = await session.list_tools()
                    results.append({
                        "op": "list_tools",
                        "tools": [
                            {"name": t.name, "readOnly": bool(t.annotations and t.annotations.readOnlyHint)}
                            for t in listed.tools
                        ],
                    })
                elif step["op"] == "call":
                    res = await session.call_tool(step["tool"], step.get("args", {}))
                    results.append({
                        "op": "call",
                        "tool": step["tool"],
                        "isError": bool(res.isError),
                        "content": [content_to_json(c) for c in res.content],
                        "structured": res.structuredContent,
                    })
                else:
                    raise SystemExit(f"unknown op {step['op']!r}")
    print(json.dumps({"results": results, "elicitations": elicitations}))


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        asyncio.run(main(json.load(f)))
