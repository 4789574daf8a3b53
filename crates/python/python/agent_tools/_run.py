"""The in-process API of :mod:`agent_tools`: :class:`Run`, :class:`ToolSpec`, :class:`ToolResult`
and what they hold (re-exported by the package)."""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import functools
import json
import os
import re
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable, List, Literal, Mapping, Optional, Union

from . import _native
from ._cards import CardHandler, presenter

Tier = Literal["read", "write", "exec"]
PathLike = Union[str, "os.PathLike[str]"]


@dataclass(frozen=True)
class ToolSpec:
    """One tool as a model sees it: name, description, tier, JSON Schemas, and the title and
    hints an MCP client gets for it on this run's surface."""

    name: str
    description: str
    #: ``read``, ``write`` or ``exec``; a surface shows only tools up to its ceiling.
    tier: Tier
    #: JSON Schema of the arguments (``call`` validates against it before the tool runs).
    input_schema: dict[str, Any]
    #: JSON Schema of :attr:`ToolResult.structured`, when the tool returns structured content.
    output_schema: Optional[dict[str, Any]] = None
    #: A short human title (MCP ``title``).
    title: str = ""
    #: Nothing changes, directly or through a worker (MCP ``readOnlyHint``).
    read_only: bool = False
    #: It may delete or overwrite (MCP ``destructiveHint``).
    destructive: bool = False
    #: The same call twice does no more than once (MCP ``idempotentHint``).
    idempotent: bool = False
    #: It reaches beyond the project (MCP ``openWorldHint``).
    open_world: bool = False


@dataclass(frozen=True)
class Image:
    """An image a tool returned (for example a matplotlib figure from ``eval``)."""

    mime_type: str
    data: bytes
    type: Literal["image"] = "image"


@dataclass(frozen=True)
class Text:
    """A run of a result's text, between its images (see :attr:`ToolResult.content`)."""

    text: str
    type: Literal["text"] = "text"


#: A line of a result's text that stands for its N-th image (``[image 1: Figure … (image/png, 20 KB)]``).
_IMAGE_LINE = re.compile(r"^\[image (\d+): .*\]$\n?", re.MULTILINE)


@dataclass(frozen=True)
class ToolResult:
    """What a call returned. ``text`` is complete on its own; ``structured`` is the same payload
    as data (or ``None``); ``is_error`` says the tool failed (the text says why)."""

    text: str
    structured: Optional[Any] = None
    images: list[Image] = field(default_factory=list)
    is_error: bool = False

    def __str__(self) -> str:
        return self.text

    @property
    def content(self) -> List[Union[Text, Image]]:
        """The result as ordered blocks, the way a model should read it: text, and each image
        right after the line of the text that stands for it (``[image N: …]``, where the cell
        showed it), so printed output and figures keep their order. Images no line names come
        last. The text blocks joined are :attr:`text`."""
        blocks: List[Union[Text, Image]] = []
        start = 0
        shown = 0
        for line in _IMAGE_LINE.finditer(self.text):
            if int(line.group(1)) != shown + 1 or shown >= len(self.images):
                continue
            blocks.append(Text(self.text[start : line.end()]))
            blocks.append(self.images[shown])
            start = line.end()
            shown += 1
        if start < len(self.text):
            blocks.append(Text(self.text[start:]))
        blocks.extend(self.images[shown:])
        return blocks


_open_runs: "weakref.WeakSet[Run]" = weakref.WeakSet()


@atexit.register
def _close_open_runs() -> None:
    for run in list(_open_runs):
        run.close()


class Run:
    """A run of the registry on one project root.

    :param root: the project root; every path a tool takes is confined to it (default: the
        current directory).
    :param surface: ``"build"`` (every tool, up to exec) or ``"plan"`` (read-only tools only;
        write and exec tools are absent). Default: ``[mcp] surface`` of the configuration, else
        ``"build"``.
    :param vibe: register the ``vibe_*`` background-worker tools.
    :param config: an ``agent-tools.toml`` to use instead of the ones found from the root and
        the user's config directory (a file the caller chose, so it is trusted).
    :param trust_project: trust the project's own ``agent-tools.toml`` (as ``--trust-project``):
        without it that file may only set limits, never commands or policies.
    :param on_card: who answers the run's cards: called as ``on_card(card)`` with a
        :class:`Card` for every ``ask_user`` question and every approval the ``[approval]``
        policy asks, on a library thread (it may block while a person answers; an asyncio
        harness hands the card to its loop with ``asyncio.run_coroutine_threadsafe(...).result()``).
        It returns an :class:`Answer`, a :class:`Skip`, an option number, a list of them, typed
        text, or ``True``/``False`` on an approval. Without it ``ask_user`` is not offered and
        approval cards are declined; a handler that raises or returns anything else fails the
        card closed (a question is answered "no operator" naming the cause, an approval denied).
    :raises AgentToolsError: the root, surface or configuration cannot be used (the message
        says which and what would work).
    """

    def __init__(
        self,
        root: Optional[PathLike] = None,
        *,
        surface: Optional[Literal["build", "plan"]] = None,
        vibe: bool = False,
        config: Optional[PathLike] = None,
        trust_project: bool = False,
        on_card: Optional[CardHandler] = None,
    ) -> None:
        if on_card is not None and not callable(on_card):
            raise TypeError(
                f"on_card must be callable as on_card(card), got {type(on_card).__name__}"
            )
        self._native = _native.NativeRun(
            root=None if root is None else os.fspath(root),
            surface=surface,
            vibe=vibe,
            config=None if config is None else os.fspath(config),
            trust_project=trust_project,
            present=None if on_card is None else presenter(on_card),
        )
        _open_runs.add(self)

    @property
    def root(self) -> str:
        """The run's root, absolute and canonical."""
        return self._native.root

    @property
    def surface(self) -> str:
        """``"build"`` or ``"plan"``."""
        return self._native.surface

    @property
    def run_id(self) -> str:
        return self._native.run_id

    @property
    def closed(self) -> bool:
        return self._native.closed

    def tools(self) -> list[ToolSpec]:
        """The tools of this run's surface, sorted by name."""
        return [
            ToolSpec(
                name,
                description,
                tier,
                json.loads(schema),
                _loads(output),
                title=title,
                read_only=read_only,
                destructive=destructive,
                idempotent=idempotent,
                open_world=open_world,
            )
            for name, description, tier, schema, output, (
                title,
                read_only,
                destructive,
                idempotent,
                open_world,
            ) in self._native.tools()
        ]

    def tool_names(self) -> list[str]:
        return [spec.name for spec in self.tools()]

    def call(
        self,
        name: str,
        args: Optional[Mapping[str, Any]] = None,
        *,
        progress: Optional[ProgressCallback] = None,
    ) -> ToolResult:
        """Calls tool ``name`` with ``args`` and waits for its result.

        A tool that fails returns a result with ``is_error`` set (its text is what a model
        should see); bad arguments fail the same way, naming the argument. ``progress``, if
        given, is called as ``progress(done, total, message)`` while a long call works (a search
        counting files, a language server indexing, a cell running); ``total`` may be ``None``.
        It runs on a thread of the library: keep it short, and hand work to your loop.

        :raises ToolNotFoundError: ``name`` is not on this surface (the message lists the tools
            that are).
        :raises RunClosedError: the run was closed.
        :raises TypeError: ``args`` is not a mapping of JSON values.
        """
        return self._call(name, args, None, progress)

    async def acall(
        self,
        name: str,
        args: Optional[Mapping[str, Any]] = None,
        *,
        progress: Optional[ProgressCallback] = None,
    ) -> ToolResult:
        """:meth:`call` for asyncio: runs on a thread of this library's own pool (never the
        loop's default executor, which the harness needs for DNS and files), and cancelling the
        awaiting task cancels the tool call (the tool winds down and its resource stays usable)."""
        cancel = _native.Cancel()
        loop = asyncio.get_running_loop()
        call = functools.partial(self._call, name, args, cancel, progress)
        future = loop.run_in_executor(_call_pool(), call)
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            cancel.cancel()
            # The tool answers promptly once cancelled; wait so that nothing outlives the task.
            await asyncio.wait([future])
            raise

    def close(self) -> None:
        """Ends the run: its calls are cancelled and every process it started is gone when this
        returns. Closing twice is harmless."""
        self._native.close()
        _open_runs.discard(self)

    async def aclose(self) -> None:
        await asyncio.get_running_loop().run_in_executor(_call_pool(), self.close)

    def __enter__(self) -> "Run":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def __aenter__(self) -> "Run":
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        if "_native" not in self.__dict__:
            return "<agent_tools.Run (not opened)>"
        state = "closed" if self.closed else "open"
        return f"<agent_tools.Run {self.run_id} root={self.root!r} surface={self.surface!r} {state}>"

    def _call(
        self,
        name: str,
        args: Optional[Mapping[str, Any]],
        cancel: Optional[_native.Cancel],
        progress: Optional[ProgressCallback] = None,
    ) -> ToolResult:
        if not isinstance(name, str):
            raise TypeError(f"name must be a tool name (str), got {type(name).__name__}")
        if args is None:
            args = {}
        if not isinstance(args, Mapping):
            raise TypeError(
                f"args must be a dict of the tool's arguments, got {type(args).__name__}; "
                'for example {"path": "README.md"}'
            )
        try:
            args_json = json.dumps(dict(args))
        except (TypeError, ValueError) as e:
            raise TypeError(f"args must hold only JSON values (str, int, float, bool, None, list, dict): {e}") from None
        if progress is not None and not callable(progress):
            raise TypeError(
                f"progress must be callable as progress(done, total, message), got {type(progress).__name__}"
            )
        text, structured, images, is_error = self._native.call(name, args_json, cancel, progress)
        return ToolResult(
            text=text,
            structured=_loads(structured),
            images=[Image(mime, data) for mime, data in images],
            is_error=is_error,
        )


#: ``progress(done, total, message)``: how far a long call is (``total`` may be ``None``).
ProgressCallback = Callable[[float, Optional[float], str], None]

_pool: Optional[concurrent.futures.ThreadPoolExecutor] = None


def _call_pool() -> concurrent.futures.ThreadPoolExecutor:
    """The threads async calls wait on: the library's own, so that pending tool calls never
    take the event loop's default executor from the harness. Threads sit in the native call
    with the GIL released."""
    global _pool
    if _pool is None:
        _pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=64, thread_name_prefix="agent-tools-call"
        )
    return _pool


def _loads(text: Optional[str]) -> Optional[Any]:
    return None if text is None else json.loads(text)
