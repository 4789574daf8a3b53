"""Shared fixtures of the agent_tools tests: a temp project, the process marker that proves no
process outlives a run, and the rule for programs missing on the machine (fail in CI, skip
loudly elsewhere)."""

from __future__ import annotations

import importlib
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Iterator, List

import pytest


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A small Python project: a module with `.unwrap()`-style calls to search for."""
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\nversion = "0.1.0"\n')
    (tmp_path / "app.py").write_text(
        "import os\n\n\ndef main():\n    print(os.getcwd())\n    print('done')\n"
    )
    (tmp_path / "notes.txt").write_text("first line\nsecond line\nthird line\n")
    return tmp_path


@pytest.fixture
def marker(monkeypatch: pytest.MonkeyPatch) -> str:
    """An environment marker every process a run starts inherits."""
    value = uuid.uuid4().hex
    monkeypatch.setenv("AGENT_TOOLS_PYTEST_MARKER", value)
    return value


def processes_with(marker: str) -> List[int]:
    """Pids (other than this test process) whose environment carries `marker`."""
    needle = f"AGENT_TOOLS_PYTEST_MARKER={marker}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if needle in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


def assert_no_survivors(marker: str, within: float = 10.0) -> None:
    """No process of the run is left once teardown has had `within` seconds to finish."""
    deadline = time.monotonic() + within
    while processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    survivors = processes_with(marker)
    assert not survivors, f"processes left after the run ended: {survivors}"


def require_env(name: str, why: str) -> str:
    """The value of env `name`; missing fails under CI and skips loudly elsewhere."""
    value = os.environ.get(name)
    if value:
        return value
    message = f"{name} is not set ({why}); run the tests with `cargo xtask wheel`"
    if os.environ.get("CI"):
        pytest.fail(message)
    sys.stderr.write(f"!!! SKIPPED: {message} !!!\n")
    pytest.skip(message)
    raise AssertionError("unreachable")


@pytest.fixture
def no_survivors(marker: str) -> Iterator[str]:
    """The marker, and after the test: every process carrying it is gone."""
    yield marker
    assert_no_survivors(marker)


def require_module(name: str, package: str) -> None:
    """Imports `name`; a missing package fails under CI and skips loudly elsewhere."""
    try:
        importlib.import_module(name)
    except ImportError as e:
        message = f"{package} is not installed ({e}); run the tests with `cargo xtask wheel`"
        if os.environ.get("CI"):
            pytest.fail(message)
        sys.stderr.write(f"!!! SKIPPED: {message} !!!\n")
        pytest.skip(message)
