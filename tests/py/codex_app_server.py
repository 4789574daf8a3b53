"""Drives `codex app-server` (Codex's own JSON-RPC interface, no model needed) to show what its
MCP client makes of a configured server: the server's status and tools as Codex lists them, and
tool calls through Codex's MCP client in a fresh thread.

Usage: python codex_app_server.py SCRIPT.json
The script: {"codex": [argv of the app server...], "cwd": "...", "env": {...},
             "server": "agent-tools", "calls": [{"tool": "read", "args": {...}}, ...],
             "timeout": SECONDS,
             "elicitation": null | {"action": "accept"|"decline"|"cancel", "content": {...}}}
Prints {"status": <the server's entry of mcpServerStatus/list>, "calls": [<each
mcpServer/tool/call response: result or error>], "elicitations": [<the params of each
mcpServer/elicitation/request Codex forwarded, answered with "elicitation">],
"exit": <the app server's exit code>}.
"""

import json
import queue
import subprocess
import sys
import threading
import time


def main(script):
    timeout = script.get("timeout", 120)
    proc = subprocess.Popen(
        script["codex"],
        cwd=script["cwd"],
        env=script["env"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=sys.stderr,
        text=True,
    )
    lines = queue.Queue()

    def read_lines():
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=read_lines, daemon=True).start()

    def send(message):
        proc.stdin.write(json.dumps(message) + "\n")
        proc.stdin.flush()

    elicitations = []

    def answer_server_request(message):
        """Codex forwards the server's elicitation as a request of its own; anything else it
        asks (approvals) is declined."""
        if message["method"] == "mcpServer/elicitation/request":
            elicitations.append(message.get("params"))
            result = script.get("elicitation") or {"action": "decline"}
        else:
            result = {"decision": "decline"}
        send({"id": message["id"], "result": result})

    def request(request_id, method, params):
        send({"id": request_id, "method": method, "params": params})
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            line = lines.get(timeout=max(left, 0.01)) if left > 0 else None
            if line is None:
                raise SystemExit(f"no answer to {method} from the Codex app server")
            message = json.loads(line)
            if "method" in message and "id" in message:
                answer_server_request(message)
            elif message.get("id") == request_id:
                return message

    try:
        request(1, "initialize", {"clientInfo": {"name": "agent-tools-e2e", "version": "0"}})
        send({"method": "initialized"})
        listed = request(2, "mcpServerStatus/list", {})
        entries = listed.get("result", {}).get("data", [])
        status = next((e for e in entries if e.get("name") == script["server"]), None)
        thread = request(3, "thread/start", {"cwd": script["cwd"]})
        thread_id = thread["result"]["thread"]["id"]
        calls = [
            request(4 + i, "mcpServer/tool/call", {
                "server": script["server"],
                "threadId": thread_id,
                "tool": call["tool"],
                "arguments": call.get("args", {}),
            })
            for i, call in enumerate(script["calls"])
        ]
    finally:
        proc.stdin.close()
        try:
            code = proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = proc.wait()
    out = {"status": status, "calls": calls, "elicitations": elicitations, "exit": code}
    print(json.dumps(out))


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        main(json.load(f))
