"""Load on `agent-tools mcp --http`: N sessions at once, each running mixed calls, with the
official Python SDK's Streamable HTTP client (1.x).

Usage: python http_load.py URL SESSIONS ROUNDS
Prints one JSON document: {"calls": N, "errors": [...], "latencies_ms": {tool: [...]}, "wall_s": S}.
"""

import asyncio
import contextlib
import json
import sys
import time

import httpx
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

CALLS = [
    ("read", {"path": "app/shapes.py"}),
    ("ast_grep", {"pattern": "def $F($$$A): $$$B", "path": "app", "language": "python"}),
    ("lsp", {"action": "hover", "file": "app/shapes.py", "line": 1, "symbol": "area"}),
    ("eval", {"code": "total = sum(range(10_000))\ntotal", "description": "a small sum"}),
]


async def session(url, rounds, latencies, errors):
    async with contextlib.AsyncExitStack() as stack:
        client = await stack.enter_async_context(httpx.AsyncClient(timeout=httpx.Timeout(60, read=300)))
        read, write, _ = await stack.enter_async_context(streamable_http_client(url, http_client=client))
        mcp = await stack.enter_async_context(ClientSession(read, write))
        await mcp.initialize()
        for _ in range(rounds):
            for tool, args in CALLS:
                started = time.perf_counter()
                result = await mcp.call_tool(tool, args)
                latencies.setdefault(tool, []).append((time.perf_counter() - started) * 1000)
                if result.isError:
                    errors.append(f"{tool}: {result.content[0].text[:200]}")


async def main():
    url, sessions, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    latencies, errors = {}, []
    started = time.perf_counter()
    outcomes = await asyncio.gather(
        *(session(url, rounds, latencies, errors) for _ in range(sessions)), return_exceptions=True
    )
    errors += [f"session: {type(o).__name__}: {o}" for o in outcomes if isinstance(o, BaseException)]
    calls = sum(len(v) for v in latencies.values())
    wall = time.perf_counter() - started
    print(json.dumps({"calls": calls, "errors": errors, "latencies_ms": latencies, "wall_s": wall}))


asyncio.run(main())
