"""A local Anthropic Messages endpoint whose "model" makes a fixed series of tool calls, so that
Claude Code (pointed at it by ANTHROPIC_BASE_URL) runs real MCP tool calls offline.

Usage: python scripted_model.py CALLS_JSON LOG_FILE
CALLS_JSON is a list of {"name": TOOL, "input": {...}}. Prints the port it listens on
(127.0.0.1) as its first line, then serves until stdin closes. Every request is appended to
LOG_FILE as one JSON line: {"tools": [names], "tool_results": [...]}.
The reply to a conversation with N tool results so far: a `tool_use` of call N+1 when its tool
is among the request's tools; when it is not, but Claude Code's `ToolSearch` is (newer releases
defer MCP tools behind it), first a search that loads it (`select:NAME`), as a real model does;
else the text "done" (Claude Code's side requests, such as a title, carry no tools and get it
too). Only the results of the scripted calls are logged and counted, not those of searches.
"""

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CALLS = json.loads(sys.argv[1])
LOG = sys.argv[2]
LOCK = threading.Lock()


def record(entry):
    with LOCK, open(LOG, "a") as f:
        f.write(json.dumps(entry) + "\n")


def reply_blocks(body):
    tools = [t.get("name") for t in body.get("tools", [])]
    blocks = [
        block
        for message in body.get("messages", [])
        if isinstance(message.get("content"), list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]
    results = [b for b in blocks if str(b.get("tool_use_id", "")).startswith("toolu_e2e_")]
    searched = [b for b in blocks if str(b.get("tool_use_id", "")).startswith("toolu_search_")]
    record({"tools": tools, "tool_results": results})
    if len(results) < len(CALLS):
        call = CALLS[len(results)]
        if call["name"] in tools:
            use = {"type": "tool_use", "id": f"toolu_e2e_{len(results)}", **call}
            return [use], "tool_use"
        if "ToolSearch" in tools and len(searched) <= len(results):
            search = {"type": "tool_use", "id": f"toolu_search_{len(results)}",
                      "name": "ToolSearch", "input": {"query": f"select:{call['name']}"}}
            return [search], "tool_use"
    return [{"type": "text", "text": "done"}], "end_turn"


def stream_events(model, blocks, stop):
    """The server-sent events of one streamed message, as the Messages API sends them."""
    usage = {"input_tokens": 1, "output_tokens": 1}
    start = {"id": "msg_e2e", "type": "message", "role": "assistant", "model": model,
             "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage}
    events = [("message_start", {"type": "message_start", "message": start})]
    for i, block in enumerate(blocks):
        if block["type"] == "text":
            opened = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            opened = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events.append(("content_block_start",
                       {"type": "content_block_start", "index": i, "content_block": opened}))
        events.append(("content_block_delta",
                       {"type": "content_block_delta", "index": i, "delta": delta}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
    events.append(("message_delta", {"type": "message_delta", "usage": {"output_tokens": 1},
                                     "delta": {"stop_reason": stop, "stop_sequence": None}}))
    events.append(("message_stop", {"type": "message_stop"}))
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def answer(self, status, content_type, data):
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        length = int(self.headers.get("content-length", 0))
        body = json.loads(self.rfile.read(length) or b"{}")
        if not self.path.startswith("/v1/messages") or "count_tokens" in self.path:
            record({"path": self.path, "tools": [], "tool_results": []})
            self.answer(404, "application/json", b'{"type":"error"}')
            return
        blocks, stop = reply_blocks(body)
        model = body.get("model", "scripted")
        if body.get("stream"):
            data = stream_events(model, blocks, stop).encode()
            self.answer(200, "text/event-stream", data)
        else:
            message = {"id": "msg_e2e", "type": "message", "role": "assistant", "model": model,
                       "content": blocks, "stop_reason": stop, "stop_sequence": None,
                       "usage": {"input_tokens": 1, "output_tokens": 1}}
            self.answer(200, "application/json", json.dumps(message).encode())


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    sys.stdin.read()  # the test holds our stdin; it closes when the test ends, even on a panic
    server.shutdown()


if __name__ == "__main__":
    main()
