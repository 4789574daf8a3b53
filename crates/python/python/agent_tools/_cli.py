"""The ``agent-tools`` console command: runs the bundled ``agent-tools`` binary (the same CLI as
a cargo build: ``mcp``, ``call``, ``status``) in place of this Python process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import NoReturn, Optional


def find_binary() -> Optional[Path]:
    """The ``agent-tools`` binary shipped inside this package, if this build has one."""
    name = "agent-tools.exe" if os.name == "nt" else "agent-tools"
    path = Path(__file__).resolve().parent / "bin" / name
    return path if path.is_file() and os.access(path, os.X_OK) else None


def main() -> NoReturn:
    binary = find_binary()
    if binary is None:
        sys.stderr.write(
            "agent-tools: this installation has no bundled `agent-tools` binary (a build from "
            "source without it); install a wheel built by `cargo xtask wheel`, or build the "
            "binary with `cargo build --release -p agent-tools`\n"
        )
        raise SystemExit(2)
    argv = [str(binary), *sys.argv[1:]]
    if os.name == "nt":
        raise SystemExit(subprocess.call(argv))
    # exec: the MCP client talks to the binary directly (stdio, signals, exit code).
    os.execv(binary, argv)


if __name__ == "__main__":
    main()
