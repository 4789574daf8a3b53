"""A run's processes end with the run: on close, on leaving `with`, on garbage collection, with
other Python threads running meanwhile; and the asyncio variants, including cancelling a call."""

from __future__ import annotations

import asyncio
import gc
import threading
import time
from pathlib import Path
from typing import Callable

import agent_tools
from conftest import assert_no_survivors, processes_with

CELL = {"code": "import os\nos.getpid()", "description": "the kernel's process id"}


def test_close_ends_the_python_kernel(project: Path, marker: str) -> None:
    run = agent_tools.Run(project)
    result = run.call("eval", CELL)
    assert not result.is_error, result.text
    kernel_pid = int(result.text.split()[-1])
    # The pid the kernel sees is its own PID namespace's in a bubblewrap capsule (the default).
    assert kernel_pid in [pid_inside(pid) for pid in processes_with(marker)]
    run.close()
    assert run.closed
    assert_no_survivors(marker)


def pid_inside(pid: int) -> int:
    """The pid `pid` has in its innermost PID namespace (itself without one)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return pid
    line = next((l for l in status.splitlines() if l.startswith("NSpid:")), "")
    return int(line.split()[-1]) if line.split()[1:] else pid


def test_leaving_the_with_block_ends_the_run(project: Path, marker: str) -> None:
    with agent_tools.Run(project) as run:
        assert not run.call("eval", CELL).is_error
        assert processes_with(marker)
    assert_no_survivors(marker)


def test_garbage_collection_ends_an_unclosed_run(project: Path, marker: str) -> None:
    run = agent_tools.Run(project)
    assert not run.call("eval", CELL).is_error
    assert processes_with(marker)
    del run
    gc.collect()
    assert_no_survivors(marker)


def test_async_calls_run_concurrently_and_close(project: Path, no_survivors: str) -> None:
    async def main() -> list[agent_tools.ToolResult]:
        async with agent_tools.Run(project) as run:
            return await asyncio.gather(
                run.acall("read", {"path": "notes.txt"}),
                run.acall("ast_grep", {"pattern": "print($X)", "path": ".", "language": "python"}),
                run.acall("eval", {"code": "6 * 7", "description": "multiply"}),
            )

    read, search, cell = asyncio.run(main())
    assert "second line" in read.text
    assert "app.py" in search.text
    assert "42" in cell.text, cell.text


def test_cancelling_an_async_call_interrupts_the_cell_and_the_kernel_answers_next(
    project: Path, no_survivors: str
) -> None:
    async def main() -> tuple[bool, agent_tools.ToolResult]:
        async with agent_tools.Run(project) as run:
            assert not (await run.acall("eval", {"code": "kept = 5", "description": "set a value"})).is_error
            slow = asyncio.ensure_future(
                run.acall("eval", {"code": "import time\ntime.sleep(120)", "description": "sleep long"})
            )
            await asyncio.sleep(1.0)
            slow.cancel()
            try:
                await slow
                cancelled = False
            except asyncio.CancelledError:
                cancelled = True
            after = await run.acall("eval", {"code": "kept + 1", "description": "read the value"})
            return cancelled, after

    cancelled, after = asyncio.run(main())
    assert cancelled
    assert not after.is_error, after.text
    assert "6" in after.text, after.text


def test_pending_async_calls_leave_the_loops_default_executor_free(
    project: Path, no_survivors: str
) -> None:
    """Eight slow cells in flight (more than the default executor's threads on a small
    machine); work the harness gives its loop's default executor still runs before any of them
    ends."""

    async def main() -> tuple[int, list[agent_tools.ToolResult]]:
        async with agent_tools.Run(project) as run:
            loop = asyncio.get_running_loop()
            cell = {"code": "import time\ntime.sleep(0.5)\n1", "description": "wait"}
            slow = [asyncio.ensure_future(run.acall("eval", cell)) for _ in range(8)]
            await asyncio.sleep(0.1)
            await loop.run_in_executor(None, lambda: None)
            finished_first = sum(f.done() for f in slow)
            return finished_first, await asyncio.gather(*slow)

    finished_first, results = asyncio.run(main())
    assert all(not r.is_error for r in results), [r.text for r in results]
    assert finished_first == 0, f"the default executor waited for {finished_first} tool call(s)"


SIGTERM_DEAF_CHILD = {
    # A process in the kernel's group that ignores SIGTERM (ready once it does): without a
    # capsule, teardown waits out its grace period before it kills it (half a second or more);
    # in bubblewrap's PID namespace it dies with the kernel, and teardown takes milliseconds.
    "code": "import subprocess, sys\n"
            "child = subprocess.Popen([sys.executable, '-c', 'import signal, time; "
            "signal.signal(signal.SIGTERM, signal.SIG_IGN); print(1, flush=True); time.sleep(120)'], "
            "stdout=subprocess.PIPE)\n"
            "child.stdout.readline() and 'started'",
    "description": "start a child that ignores SIGTERM",
}


class Ticker:
    """A Python thread counting while it gets the GIL."""

    def __init__(self) -> None:
        self.ticks = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.ticks += 1
            time.sleep(0.001)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def _ticks_during(end_the_run: Callable[[], None]) -> int:
    ticker = Ticker()
    try:
        before = ticker.ticks
        end_the_run()
        return ticker.ticks - before
    finally:
        ticker.stop()


def test_close_lets_other_python_threads_run_while_it_tears_down(project: Path, no_survivors: str) -> None:
    run = agent_tools.Run(project)
    assert "started" in run.call("eval", SIGTERM_DEAF_CHILD).text
    # Holding the GIL through the teardown would leave the ticker at most one tick; a teardown
    # that lets go of it gives one a millisecond (in a capsule, where it is short, about ten).
    ticks = _ticks_during(run.close)
    assert ticks >= 3, f"another thread ran {ticks} time(s) while the run closed"


def test_garbage_collection_lets_other_python_threads_run_while_it_tears_down(
    project: Path, no_survivors: str
) -> None:
    run = agent_tools.Run(project)
    assert "started" in run.call("eval", SIGTERM_DEAF_CHILD).text

    def collect() -> None:
        nonlocal run
        del run
        gc.collect()

    ticks = _ticks_during(collect)
    assert ticks >= 3, f"another thread ran {ticks} time(s) while the run was collected"
