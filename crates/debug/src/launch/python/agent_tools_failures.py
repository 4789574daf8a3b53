"""Loaded by agent-tools into the Python programs it debugs: a failing test (pytest, unittest)
stops the debugger where the test failed, with its locals, as an uncaught exception would; the
run goes on after `continue`. Passing tests never stop (the runner's own catching is left alone).
"""


def _stop(excinfo):
    """A post-mortem stop on `excinfo`, under the session's uncaught-exception filter."""
    try:
        import debugpy

        handler = getattr(debugpy, "trigger_exception_handler", None)
        if handler is not None:
            handler(excinfo)
        else:
            _stop_through_pydevd(excinfo)
    except Exception:  # noqa: BLE001 - never break the program being debugged
        pass


def _stop_through_pydevd(excinfo):
    """What `trigger_exception_handler` does, for a debugpy older than that API (pydevd's own
    stop on an uncaught exception)."""
    import threading

    import pydevd
    from _pydevd_bundle.pydevd_breakpoints import stop_on_unhandled_exception

    py_db = pydevd.get_global_debugger()
    if py_db is None:
        return
    thread = threading.current_thread()
    info = py_db.set_additional_thread_info(thread)
    info.is_tracing += 1
    try:
        stop_on_unhandled_exception(py_db, thread, info, excinfo)
    finally:
        info.is_tracing -= 1


def pytest_exception_interact(node, call, report):
    """pytest's hook for a failure it is about to report (as `--pdb` uses it)."""
    if call.excinfo is not None:
        _stop((call.excinfo.type, call.excinfo.value, call.excinfo.tb))


def patch_unittest():
    """unittest reports failures and errors to its result object: stop there first."""
    import unittest.result

    for name in ("addFailure", "addError"):
        original = getattr(unittest.result.TestResult, name)

        def hooked(self, test, err, _original=original):
            _stop(err)
            return _original(self, test, err)

        setattr(unittest.result.TestResult, name, hooked)
