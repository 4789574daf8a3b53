"""The `agent-tools` command the package installs: the same CLI as the cargo-built binary, run
from the extension module (the package carries no binary of its own)."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

import agent_tools

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


def test_the_package_carries_one_copy_of_the_toolset() -> None:
    """One native file, the extension module; no bundled binary (the wheel used to hold both)."""
    files = metadata.files("builtin-agent-tools") or []
    native = sorted(
        str(f) for f in files
        if not str(f).endswith((".py", ".pyi", ".typed", ".pyc")) and str(f).startswith("agent_tools/")
    )
    assert len(native) == 1 and native[0].startswith("agent_tools/_native"), native
    assert not (Path(agent_tools.__file__).parent / "bin").exists()
    scripts = [e for e in metadata.entry_points(group="console_scripts") if e.name == "agent-tools"]
    assert [e.value for e in scripts] == ["agent_tools._cli:main"]


def test_the_command_imports_only_the_extension_module() -> None:
    """The console script loads the extension and nothing of the API (asyncio, dataclasses,
    the `Run` class): that is the whole start-up cost an MCP client pays per server."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", command(), "--version"],
        capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("agent-tools "), done.stdout
    imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if "|" in line}
    assert "agent_tools._native" in imported, sorted(imported)
    for heavy in ["agent_tools._run", "asyncio", "dataclasses", "concurrent.futures", "json", "typing"]:
        assert heavy not in imported, f"the command imports {heavy}"


def test_native_main_returns_the_exit_code_and_names_the_command() -> None:
    done = subprocess.run(
        [sys.executable, "-c",
         "import sys; from agent_tools import _native; "
         "code = _native.main(['agent-tools', 'call', 'read', '[1]']); print('code', code)"],
        capture_output=True, text=True, timeout=60,
    )
    assert done.stdout.strip() == "code 2", (done.stdout, done.stderr)
    assert "agent-tools call: ARGS must be a JSON object" in done.stderr
    unknown = subprocess.run([command(), "no-such-command"], capture_output=True, text=True, timeout=60)
    assert unknown.returncode == 2
    assert "Usage: agent-tools" in unknown.stderr, unknown.stderr


def test_ctrl_c_ends_the_mcp_server(project: Path, marker: str) -> None:
    """SIGINT ends the command as it ends the binary: Python's own handler, which only sets a
    flag nobody reads while native code runs, is not left in charge."""
    server = subprocess.Popen(
        [command(), "mcp", "--root", str(project)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    assert server.stdin and server.stdout
    try:
        server.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "pytest", "version": "1"}}}) + "\n")
        server.stdin.flush()
        assert json.loads(server.stdout.readline())["id"] == 1
        server.send_signal(signal.SIGINT)
        code = server.wait(timeout=60)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
            pytest.fail("agent-tools mcp ignored SIGINT")
    assert code == -signal.SIGINT, code
    assert_no_survivors(marker)
