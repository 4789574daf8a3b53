"""agent-tools: a failing unittest test stops the debugger; debugpy's messages leave without
waiting for an acknowledgement; then the sitecustomize this one hides (the interpreter's own,
if any) runs as it would have."""

import importlib.machinery
import importlib.util
import os
import sys

try:
    import agent_tools_failures

    agent_tools_failures.patch_unittest()
except Exception:  # noqa: BLE001 - never break the program being debugged
    pass


class _SendAtOnce:
    """debugpy's server in the program (pydevd) writes each message's header and body in two
    sends; with Nagle's algorithm on, the body waits for the adapter's delayed acknowledgement
    of the header, about 40 ms per message on Linux. Its socket gets TCP_NODELAY as it
    connects: patched into `_pydevd_bundle.pydevd_comm.start_client` as that module loads."""

    MODULE = "_pydevd_bundle.pydevd_comm"

    def find_spec(self, name, path=None, target=None):
        if name != self.MODULE:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
            load = spec.loader.exec_module

            def load_and_patch(module):
                load(module)
                _patch_start_client(module)

            spec.loader.exec_module = load_and_patch
            return spec
        except Exception:  # noqa: BLE001 - pydevd loads as it would have
            return None


def _patch_start_client(module):
    try:
        import socket

        start_client = module.start_client

        def start_client_without_delay(host, port):
            sock = start_client(host, port)
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except Exception:  # noqa: BLE001 - a slower connection still works
                pass
            return sock

        module.start_client = start_client_without_delay
    except Exception:  # noqa: BLE001 - never break the program being debugged
        pass


if "_pydevd_bundle.pydevd_comm" not in sys.modules:
    sys.meta_path.insert(0, _SendAtOnce())


def _chain():
    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        sys.modules["sitecustomize"] = module
        spec.loader.exec_module(module)


_chain()
