# Executing a cell, in the Python runner: notebook semantics (the last expression's value, a
# trailing `;`, top-level await, `_`, `__`, `___` and `_N`), errors without the runner's frames,
# and the cell's end (figures, end markers, the 'done' frame).

class UsageError(Exception):
    pass


def _ends_with_semicolon(code):
    """A trailing `;` hides the value, also when a comment follows it."""
    if ";" not in code:
        return False
    import io
    import tokenize

    last = None
    try:
        for tok in tokenize.generate_tokens(io.StringIO(code).readline):
            if tok.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.ENDMARKER, tokenize.INDENT, tokenize.DEDENT):
                last = tok
    except (tokenize.TokenError, SyntaxError):
        return code.rstrip().endswith(";")
    return last is not None and last.type == tokenize.OP and last.string == ";"


def _no_input(*_args, **_kwargs):
    raise StdinNotImplementedError(
        "input() is not available: the kernel has no stdin (it reads /dev/null). "
        "Pass values in the code instead, or ask the user through the harness."
    )


class _Exit:
    """`exit()` / `quit()`: in ipykernel they end nothing (the frontend decides); so here."""

    def __repr__(self):
        return "Use exit() or quit() to leave; the kernel keeps running (reset: true starts a fresh one)."

    def __call__(self, *_args, **_kwargs):
        return None


class StdinNotImplementedError(RuntimeError):
    pass


MAIN = type(sys)("__main__")
MAIN.__dict__["__builtins__"] = builtins
USER_NS = MAIN.__dict__
HISTORY = {"count": 0}
_LOOP = [None]


def _flush_std():
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass


def _run_coroutine(coro):
    import asyncio

    if _LOOP[0] is None or _LOOP[0].is_closed():
        _LOOP[0] = asyncio.new_event_loop()
    asyncio.set_event_loop(_LOOP[0])
    return _LOOP[0].run_until_complete(coro)


def _exec_code(code_obj):
    if code_obj.co_flags & CO_COROUTINE:
        return _run_coroutine(eval(code_obj, USER_NS))
    return eval(code_obj, USER_NS)


def _strip_runner_frames(tb):
    while tb is not None and tb.tb_frame.f_code.co_filename == RUNNER_FILE:
        tb = tb.tb_next
    return tb


def _user_traceback(exc):
    """The lines of `exc`'s traceback without the runner's frames, as a cell's error shows it."""
    import traceback

    tb = _strip_runner_frames(exc.__traceback__)
    return [l for l in traceback.format_exception(type(exc), exc, tb) if RUNNER_FILE not in l]


def _error_info(exc):
    if isinstance(exc, UsageError):
        lines = [str(exc) + "\n"]
    elif isinstance(exc, SyntaxError):
        import traceback

        lines = traceback.format_exception_only(type(exc), exc)
    else:
        lines = _user_traceback(exc)
    return {"ename": type(exc).__name__, "evalue": str(exc), "traceback": "".join(lines)}



def run_cell(frame):
    cell = frame["cell"]
    code = frame["code"]
    HISTORY["count"] += 1
    count = HISTORY["count"]
    filename = f"<cell-{count}>"
    result = None
    status = "ok"
    error = None
    STATE.cell = cell
    STATE.token = frame.get("token", "")
    if _needs_ipython(code):
        bundle = None
        try:
            status, error, bundle = _run_with_ipython(code)
        except KeyboardInterrupt as exc:
            status, error = "interrupted", _error_info(exc)
        except BaseException as exc:
            status, error = "error", _error_info(exc)
        _finish_cell(frame, cell, count, status, error, bundle)
        return
    try:
        # Only a `%` or `!` can be an idiom of the stdlib fallback (its part is loaded then).
        source = transform(code) if ("%" in code or "!" in code) else code
        _remember_source(filename, source)
        tree = _parsed(source, filename)
        tail = None
        if tree.body and isinstance(tree.body[-1], _ast.Expr) and not _ends_with_semicolon(source):
            tail = tree.body.pop()
        body_code = compile(tree, filename, "exec", flags=TOP_LEVEL_AWAIT, dont_inherit=True)
        tail_code = None
        if tail is not None:
            tail_code = compile(_ast.Expression(tail.value), filename, "eval", flags=TOP_LEVEL_AWAIT, dont_inherit=True)
        _arm_interrupts(cell)
        try:
            _exec_code(body_code)
            if tail_code is not None:
                value = _exec_code(tail_code)
                if value is not None:
                    result = value
        finally:
            _disarm_interrupts()
    except KeyboardInterrupt as exc:
        status = "interrupted"
        error = _error_info(exc)
    except BaseException as exc:  # SystemExit too: a cell cannot end the kernel by accident
        status = "error"
        error = _error_info(exc)
    bundle = None
    try:
        if result is not None:
            try:
                bundle = bundle_of(result)
            except BaseException as exc:
                bundle = {"text/plain": f"<could not display the value: {exc}>"}
            USER_NS["___"] = USER_NS.get("__")
            USER_NS["__"] = USER_NS.get("_")
            USER_NS["_"] = result
            USER_NS[f"_{count}"] = result
    except BaseException as exc:
        sys.stderr.write(f"[display failed: {type(exc).__name__}: {exc}]\n")
    _finish_cell(frame, cell, count, status, error, bundle)


def _finish_cell(frame, cell, count, status, error, bundle):
    try:
        _patch_pyplot()
        _flush_figures()
    except BaseException as exc:
        sys.stderr.write(f"[display failed: {type(exc).__name__}: {exc}]\n")
    _flush_std()
    token = frame.get("token", "")
    if token:
        for fd in (1, 2):
            try:
                os.write(fd, token.encode("ascii"))
            except OSError:
                pass
    try:
        cwd = os.getcwd()
    except OSError:
        cwd = None
    send({"t": "done", "cell": cell, "status": status, "error": error, "result": bundle, "count": count, "cwd": cwd})
    STATE.cell = None
