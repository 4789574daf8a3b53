"""Drives the agent-tools MCP server with the official Python MCP SDK, from a JSON script.

Usage: python mcp_driver.py SCRIPT.json   (with the pinned SDK 1.x or the newest 2.x)
The script: {"server": [argv...], "env": {...}, "cwd": "...",
             "mode": "legacy" | "auto" | "2026-07-28"   (SDK 2.x only; default "auto"),
             "elicitation": null | {"action": "accept"|"decline"|"cancel", "content": {...}},
             "steps": [{"op": "list_tools"}
                       | {"op": "call", "tool": "...", "args": {...},
                          "cancel_after": SECONDS   (the SDK's own cancel of this request),
                          "progress": true          (attach a progress token and record reports)}]}
Prints one JSON document: {"sdk": "1.30.0", "results": [...], "elicitations": [...]}.

Streamable HTTP: {"url": "http://127.0.0.1:PORT/mcp", "headers": {...} (SDK 1.x only),
             "terminate_on_close": true, "sessions": [[steps...], [steps...]]}
opens every session at once, runs their steps in turns (step 1 of each, then step 2, ...), and
closes them (a DELETE each unless terminate_on_close is false). Prints
{"sdk": ..., "sessions": [{"id": ..., "mode": ..., "protocol": the negotiated revision (2.x),
 "results": [...]}], "refused": [{"status", "body"}],
 "error": null | "..."}: every non-2xx answer the SDK's HTTP client saw, and what failed.

Each call result carries `model_view`: what a client that, like Claude Code and Codex, shows the
model only `structuredContent` when present (and the text blocks otherwise) would pass on.
"""

import asyncio
import importlib.metadata
import json
import re
import os
import sys

import mcp.types as types
from mcp import StdioServerParameters

SDK = importlib.metadata.version("mcp")
SDK2 = int(SDK.split(".")[0]) >= 2


def attr(obj, camel, default=None):
    """A field by its wire name; SDK 2.x models spell fields in snake case."""
    if obj is None:
        return default
    if hasattr(obj, camel):
        return getattr(obj, camel)
    snake = re.sub(r"(?<!^)([A-Z])", lambda m: "_" + m.group(1).lower(), camel)
    return getattr(obj, snake, default)


def content_to_json(block):
    if block.type == "text":
        return {"type": "text", "text": block.text}
    if block.type == "image":
        return {"type": "image", "mimeType": attr(block, "mimeType"), "bytes": len(block.data)}
    return {"type": block.type}


def tool_to_json(tool):
    hints = tool.annotations
    return {
        "name": tool.name,
        "title": getattr(tool, "title", None),
        "readOnly": bool(attr(hints, "readOnlyHint")),
        "destructive": attr(hints, "destructiveHint"),
        "idempotent": attr(hints, "idempotentHint"),
        "openWorld": attr(hints, "openWorldHint"),
        "hintTitle": attr(hints, "title"),
        "outputSchema": attr(tool, "outputSchema") is not None,
    }


def result_to_json(step, res, progress):
    content = [content_to_json(c) for c in res.content]
    structured = attr(res, "structuredContent")
    if structured is not None:
        view = json.dumps(structured)
    else:
        view = "\n".join(c.get("text", "") for c in content)
    return {
        "op": "call",
        "tool": step["tool"],
        "isError": bool(attr(res, "isError")),
        "content": content,
        "structured": structured,
        "model_view": view,
        "progress": progress,
    }


async def run_steps(call, list_tools, cancel_call, script):
    results = []
    for step in script["steps"]:
        if step["op"] == "list_tools":
            listed = await list_tools()
            results.append({"op": "list_tools", "tools": [tool_to_json(t) for t in listed.tools]})
        elif step["op"] == "call":
            progress = []

            async def on_progress(value, total, message):
                progress.append({"progress": value, "total": total, "message": message})

            callback = on_progress if step.get("progress") else None
            if "cancel_after" in step:
                outcome = await cancel_call(step, callback)
                results.append({"op": "call", "tool": step["tool"], "cancelled": outcome})
                continue
            res = await call(step["tool"], step.get("args", {}), callback)
            results.append(result_to_json(step, res, progress))
        else:
            raise SystemExit(f"unknown op {step['op']!r}")
    return results


def elicitation_callback(script, elicitations):
    elicit = script.get("elicitation")
    if elicit is None:
        return None

    async def callback(context, params):
        elicitations.append({"message": params.message, "schema": attr(params, "requestedSchema")})
        return types.ElicitResult(action=elicit["action"], content=elicit.get("content"))

    return callback


async def main_sdk1(params, script, elicitations):
    from datetime import timedelta

    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    callback = elicitation_callback(script, elicitations)
    async with stdio_client(params) as (read, write):
        kwargs = {"elicitation_callback": callback} if callback else {}
        async with ClientSession(read, write, **kwargs) as session:
            init = await session.initialize()

            async def call(tool, args, progress):
                return await session.call_tool(tool, args, progress_callback=progress)

            async def cancel_call(step, progress):
                # SDK 1.x has no cancel of its own on a timeout: the caller sends the
                # `notifications/cancelled` through the session, as a client's Esc does.
                task = asyncio.ensure_future(
                    session.call_tool(step["tool"], step.get("args", {}), progress_callback=progress)
                )
                await asyncio.sleep(0.2)
                request_id = session._request_id - 1
                await asyncio.sleep(step["cancel_after"])
                await session.send_notification(
                    types.ClientNotification(
                        types.CancelledNotification(
                            params=types.CancelledNotificationParams(
                                requestId=request_id, reason="test cancel"
                            )
                        )
                    )
                )
                try:
                    res = await asyncio.wait_for(task, timeout=3)
                    return {"answered": True, "isError": bool(attr(res, "isError"))}
                except asyncio.TimeoutError:
                    return {"answered": False}

            results = [{"op": "initialize", "server": init.serverInfo.name}]
            results += await run_steps(call, session.list_tools, cancel_call, script)
            return results


async def main_sdk2(params, script, elicitations):
    from mcp import Client

    client = Client(
        params,
        mode=script.get("mode") or "auto",
        elicitation_callback=elicitation_callback(script, elicitations),
    )
    async with client:

        async def call(tool, args, progress):
            return await client.call_tool(tool, args, progress_callback=progress)

        async def cancel_call(step, progress):
            # The SDK's own cancel: a request timeout sends `notifications/cancelled`.
            try:
                res = await client.call_tool(
                    step["tool"],
                    step.get("args", {}),
                    read_timeout_seconds=step["cancel_after"],
                    progress_callback=progress,
                )
                return {"answered": True, "isError": bool(attr(res, "isError"))}
            except Exception as e:  # the SDK raises on its timeout
                return {"answered": False, "error": type(e).__name__}

        results = [{"op": "initialize", "server": "agent-tools", "mode": client.mode}]
        results += await run_steps(call, client.list_tools, cancel_call, script)
        return results


async def main_http(script):
    import contextlib

    import httpx
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    refused = []

    async def record(response):
        if response.status_code >= 400:
            body = (await response.aread()).decode("utf-8", "replace")
            refused.append({"status": response.status_code, "body": body})

    sessions = [{"id": None, "results": []} for _ in script["sessions"]]
    error = None
    try:
        async with contextlib.AsyncExitStack() as stack:
            client = await stack.enter_async_context(
                httpx.AsyncClient(
                    headers=script.get("headers", {}),
                    timeout=httpx.Timeout(30, read=300),
                    event_hooks={"response": [record]},
                )
            )
            opened = []
            for record_of in sessions:
                read, write, session_id = await stack.enter_async_context(
                    streamable_http_client(
                        script["url"],
                        http_client=client,
                        terminate_on_close=script.get("terminate_on_close", True),
                    )
                )
                session = await stack.enter_async_context(ClientSession(read, write))
                await session.initialize()
                record_of["id"] = session_id()
                opened.append(session)
            turns = max((len(steps) for steps in script["sessions"]), default=0)
            for turn in range(turns):
                for session, steps, record_of in zip(opened, script["sessions"], sessions):
                    if turn >= len(steps):
                        continue

                    async def call(tool, args, progress, session=session):
                        return await session.call_tool(tool, args, progress_callback=progress)

                    record_of["results"] += await run_steps(
                        call, session.list_tools, None, {"steps": [steps[turn]]}
                    )
    except BaseException as e:  # an ExceptionGroup from the SDK's task groups, too
        error = f"{type(e).__name__}: {e}"
    print(json.dumps({"sdk": SDK, "sessions": sessions, "refused": refused, "error": error}))


async def main_http_sdk2(script):
    import contextlib

    from mcp import Client

    if script.get("headers"):
        raise SystemExit("the driver sends extra headers over HTTP only with the SDK 1.x")
    sessions = [{"id": None, "mode": None, "results": []} for _ in script["sessions"]]
    elicitations = []
    error = None
    try:
        async with contextlib.AsyncExitStack() as stack:
            opened = []
            for record_of in sessions:
                client = Client(
                    script["url"],
                    mode=script.get("mode") or "auto",
                    elicitation_callback=elicitation_callback(script, elicitations),
                )
                await stack.enter_async_context(client)
                record_of["mode"] = client.mode
                record_of["protocol"] = getattr(client, "protocol_version", None)
                opened.append(client)
            turns = max((len(steps) for steps in script["sessions"]), default=0)
            for turn in range(turns):
                for client, steps, record_of in zip(opened, script["sessions"], sessions):
                    if turn >= len(steps):
                        continue

                    async def call(tool, args, progress, client=client):
                        return await client.call_tool(tool, args, progress_callback=progress)

                    record_of["results"] += await run_steps(
                        call, client.list_tools, None, {"steps": [steps[turn]]}
                    )
    except BaseException as e:
        error = f"{type(e).__name__}: {e}"
    out = {"sdk": SDK, "sessions": sessions, "refused": [], "error": error}
    print(json.dumps(out | {"elicitations": elicitations}))


async def main(script):
    if "url" in script:
        await (main_http_sdk2(script) if SDK2 else main_http(script))
        return
    env = dict(os.environ)
    env.update(script.get("env", {}))
    params = StdioServerParameters(
        command=script["server"][0], args=script["server"][1:], env=env, cwd=script.get("cwd")
    )
    elicitations = []
    runner = main_sdk2 if SDK2 else main_sdk1
    results = await runner(params, script, elicitations)
    print(json.dumps({"sdk": SDK, "results": results, "elicitations": elicitations}))


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        asyncio.run(main(json.load(f)))
