"""The `agent-tools` command the wheel installs: the same CLI as the cargo-built binary."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import assert_no_survivors


def command() -> str:
    found = shutil.which("agent-tools")
    assert found, "the wheel installs an `agent-tools` command on PATH"
    assert Path(found).parent == Path(sys.executable).parent, f"not this venv's command: {found}"
    return found


def test_call_prints_the_result_and_exits_zero(project: Path) -> None:
    done = subprocess.run(
        [command(), "call", "read", '{"path": "notes.txt", "end_line": 1}', "--root", str(project)],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "first line" in done.stdout and "second line" not in done.stdout


def test_usage_errors_exit_two_with_the_reason(project: Path) -> None:
    done = subprocess.run(
        [command(), "call", "read", "[1]", "--root", str(project)],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 2
    assert "ARGS must be a JSON object" in done.stderr


def test_status_and_python_dash_m(project: Path) -> None:
    status = subprocess.run(
        [command(), "status", "--root", str(project)], capture_output=True, text=True, timeout=120
    )
    assert status.returncode == 0, status.stderr
    assert "astgrep" in status.stdout
    version = subprocess.run(
        [sys.executable, "-m", "agent_tools", "--version"], capture_output=True, text=True, timeout=60
    )
    assert version.returncode == 0, version.stderr
    assert "agent-tools" in version.stdout


def test_mcp_answers_initialize_and_lists_tools_over_stdio(project: Path, marker: str) -> None:
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "pytest", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    server = subprocess.Popen(
        [command(), "mcp", "--root", str(project), "--surface", "plan"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    assert server.stdin and server.stdout
    answers = {}
    try:
        for request in requests:
            server.stdin.write(json.dumps(request) + "\n")
            server.stdin.flush()
            if "id" in request:
                while True:
                    line = server.stdout.readline()
                    assert line, f"the server closed stdout; stderr: {server.stderr.read() if server.stderr else ''}"
                    message = json.loads(line)
                    if message.get("id") == request["id"]:
                        answers[request["id"]] = message
                        break
        server.stdin.close()
        assert server.wait(timeout=60) == 0
    finally:
        if server.poll() is None:
            server.kill()
            pytest.fail("agent-tools mcp did not exit when its stdin closed")
    assert answers[1]["result"]["serverInfo"]["name"]
    names = [tool["name"] for tool in answers[2]["result"]["tools"]]
    assert "read" in names and "write" not in names
    assert_no_survivors(marker)
