# The tool() bridge of the Python runner: `tool(name, args)` in a cell calls a tool of the harness
# through the host and waits for its result (the reader thread hands it over).

class ToolError(Exception):
    """A bridged tool call failed; the message is the tool's own."""


class _Tool:
    """`tool(name, args)` calls a tool of the harness; `tool.read(path=...)` is the same call."""

    def __call__(self, name, args=None, **kwargs):
        if args is None:
            args = {}
        if not isinstance(args, dict):
            raise TypeError("tool(name, args): args must be a dict of the tool's arguments")
        args = dict(args, **kwargs)
        event = _Event()
        with STATE.lock:
            STATE.next_call += 1
            call_id = STATE.next_call
            STATE.calls[call_id] = [event, None]
            cell = STATE.cell
        try:
            send({"t": "tool_call", "cell": cell, "id": call_id, "name": str(name), "args": args})
            event.wait()
            result = STATE.calls[call_id][1]
        finally:
            with STATE.lock:
                STATE.calls.pop(call_id, None)
        if result.get("ok"):
            return result.get("value")
        raise ToolError(result.get("error") or "the tool call failed")

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return lambda args=None, **kwargs: self(name, args, **kwargs)

    def __repr__(self):
        return "<tool(name, args): calls a harness tool through the agent-tools registry>"
