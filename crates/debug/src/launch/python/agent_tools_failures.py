"""Loaded by agent-tools into the Python programs it debugs: a failing test (pytest, unittest)
stops the debugger where the test failed, with its locals, as an uncaught exception would; the
run goes on after `continue`. Passing tests never stop (the runner's own catching is left alone).
"""


def _stop(excinfo):
    """A post-mortem stop on `excinfo`, under the session's uncaught-exception filter."""
    try:
        import debugpy

        debugpy.trigger_exception_handler(excinfo)
    except Exception:  # noqa: BLE001 - an older debugpy has no such API: no stop, as before
        pass


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
