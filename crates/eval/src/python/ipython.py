# A part of the agent-tools Python kernel runner (`runner.py`): IPython, when the kernel's
# interpreter has it, with its input transformations, magics, display machinery and history.
# The runner compiles it into its own namespace at the first cell that needs IPython (an idiom,
# `get_ipython`, `In`/`Out`, an IPython import), so plain cells start fast.

import re as _re

# Its %pip and shell commands are the stdlib fallback's.
_load("magics")

class _CellResult:
    def __init__(self):
        self.bundle = None
        self.error = None


_CURRENT = [_CellResult()]
# Inside a display formatter: IPython's report of a formatter failure is ours to make.
_FORMATTING = [False]


def _make_shell():
    from IPython.core.displayhook import DisplayHook
    from IPython.core.displaypub import DisplayPublisher
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    class Publisher(DisplayPublisher):
        def publish(self, data, metadata=None, source=None, *, transient=None, update=False, **kwargs):
            _send_display(_json_bundle(data), (transient or {}).get("display_id"), update)

        def clear_output(self, wait=False):
            _clear_output(wait)

    class Hook(DisplayHook):
        def compute_format_data(self, result):
            bundle = bundle_of(result)
            _FORMATTING[0] = True
            try:
                # IPython's pretty printer, as ipykernel shows it (%precision, long dicts).
                plain = self.shell.display_formatter.formatters["text/plain"](result)
                if isinstance(plain, str) and "image/png" not in bundle:
                    bundle["text/plain"] = plain
            except Exception:
                pass
            finally:
                _FORMATTING[0] = False
            return bundle, {}

        def write_output_prompt(self):
            pass

        def write_format_data(self, format_dict, md_dict=None):
            _CURRENT[0].bundle = _json_bundle(format_dict)

        def finish_displayhook(self):
            pass

    class Shell(InteractiveShell):
        def ask_exit(self):
            # `exit()` / `quit()` through IPython's ExitAutocall: status ok, as in ipykernel.
            pass

        def show_usage_error(self, exc):
            # The cell's error (shown once), not also a line on stderr.
            _CURRENT[0].error = {"ename": "UsageError", "evalue": str(exc), "traceback": f"UsageError: {exc}"}

        def _showtraceback(self, etype, evalue, stb):
            text = self.InteractiveTB.stb2text(stb)
            if _FORMATTING[0]:
                # A display formatter failed (our bundle_of has reported it already).
                return
            _CURRENT[0].error = {
                "ename": getattr(etype, "__name__", str(etype)),
                "evalue": str(evalue),
                "traceback": _strip_ansi(text),
            }

        def system_piped(self, cmd):
            if cmd.rstrip().endswith("&"):
                raise OSError("Background processes not supported.")
            status = _run_shell(self.var_expand(cmd, depth=1), status_only=True)
            self.user_ns["_exit_code"] = status

        system = system_piped

        def enable_gui(self, gui=None):
            pass

        # The tab completer is built on first use: a model never tab-completes, and building
        # it is 3 ms of every start that engages IPython.
        def init_completer(self):
            pass

        @property
        def Completer(self):
            if getattr(self, "_lazy_completer", None) is None:
                InteractiveShell.init_completer(self)
            return self._lazy_completer

        @Completer.setter
        def Completer(self, value):
            self._lazy_completer = value

    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    config.InteractiveShell.colors = "nocolor"
    config.InteractiveShell.xmode = "Context"
    config.InteractiveShell.autocall = 0
    shell = Shell.instance(
        config=config,
        user_module=MAIN,
        user_ns=USER_NS,
        display_pub_class=Publisher,
        displayhook_class=Hook,
    )
    shell.execution_count = HISTORY["count"] + 1

    def show_in_pager(_shell, data, start=0, screen_lines=0, pager_cmd=None):
        text = data.get("text/plain", "") if isinstance(data, dict) else str(data)
        print(_strip_ansi(text))

    shell.set_hook("show_in_pager", show_in_pager)
    ipython_format = shell.display_formatter.format

    def format_for_display(obj, include=None, exclude=None):
        # Our model views (tables as markdown, figures as PNG) first, IPython's forms besides.
        bundle = bundle_of(obj)
        _FORMATTING[0] = True
        try:
            data, metadata = ipython_format(obj, include=include, exclude=exclude)
        finally:
            _FORMATTING[0] = False
        for mime, value in data.items():
            if mime != "text/plain" or mime not in bundle:
                bundle.setdefault(mime, value)
        return bundle, metadata

    shell.display_formatter.format = format_for_display
    # Ours where they know more than IPython's: %pip evicts stale modules; figures always come
    # back as images, so %matplotlib only says so.
    shell.register_magic_function(lambda line: _pip(line), "line", "pip")
    shell.register_magic_function(lambda line: None, "line", "matplotlib")
    _SHELL[0] = shell
    return shell


def _json_bundle(data):
    bundle = {}
    for mime, value in (data or {}).items():
        if isinstance(value, bytes):
            import base64

            value = base64.b64encode(value).decode("ascii")
        elif not isinstance(value, (str, dict, list, int, float, bool)) and value is not None:
            value = str(value)
        bundle[mime] = value
    return bundle


def _strip_ansi(text):
    return _re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", text)


def _run_with_ipython(code):
    """Runs `code` as ipykernel would; returns (status, error, bundle, value_was_shown)."""
    shell = _SHELL[0] or _make_shell()
    _CURRENT[0] = _CellResult()
    shell.execution_count = HISTORY["count"]
    _arm_interrupts(STATE.cell)
    try:
        result = shell.run_cell(code, store_history=True)
    finally:
        _disarm_interrupts()
    failure = result.error_in_exec or result.error_before_exec
    status = "ok"
    if isinstance(failure, KeyboardInterrupt):
        status = "interrupted"
    elif failure is not None:
        status = "error"
    error = _CURRENT[0].error
    if status != "ok" and error is None:
        error = {"ename": type(failure).__name__, "evalue": str(failure), "traceback": f"{type(failure).__name__}: {failure}"}
    return status, error, _CURRENT[0].bundle
