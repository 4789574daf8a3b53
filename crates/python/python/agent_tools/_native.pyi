"""Type stubs of the native extension module (see ``agent_tools`` for the documented API)."""

from typing import Callable, Optional, Sequence

__version__: str

def main(argv: Sequence[str]) -> int:
    """Runs the ``agent-tools`` command line ``argv`` (program name first); its exit code."""

class AgentToolsError(Exception): ...
class ToolNotFoundError(AgentToolsError): ...
class RunClosedError(AgentToolsError): ...

class Cancel:
    def __init__(self) -> None: ...
    def cancel(self) -> None: ...
    @property
    def cancelled(self) -> bool: ...

class NativeRun:
    def __init__(
        self,
        root: Optional[str] = None,
        surface: Optional[str] = None,
        vibe: bool = False,
        config: Optional[str] = None,
        trust_project: bool = False,
        present: Optional[Callable[[str, Optional[str]], str]] = None,
    ) -> None: ...
    @property
    def root(self) -> str: ...
    @property
    def surface(self) -> str: ...
    @property
    def run_id(self) -> str: ...
    @property
    def closed(self) -> bool: ...
    def tools(
        self,
    ) -> list[
        tuple[str, str, str, str, Optional[str], tuple[str, bool, bool, bool, bool]]
    ]: ...
    def call(
        self,
        name: str,
        args_json: str,
        cancel: Optional[Cancel] = None,
        progress: Optional[Callable[[float, Optional[float], str], None]] = None,
    ) -> tuple[str, Optional[str], list[tuple[str, bytes]], bool]: ...
    def close(self) -> None: ...
