"""The ``agent-tools`` console command: the host's command line (``mcp``, ``call``, ``status``)
run from the extension module, so that the package carries the toolset once. It imports nothing
but the extension (the package's ``__init__`` loads the API lazily), which keeps the command's
start close to the bare binary's: an MCP client pays it at every server start."""

import sys

from agent_tools._native import main as _native_main


def main() -> int:
    # Usage and errors name the command, not the script path Python was given.
    return _native_main(["agent-tools", *sys.argv[1:]])


if __name__ == "__main__":
    raise SystemExit(main())
