# Rich display in the Python runner: mime bundles of values (tables as markdown, figures as PNG),
# `display()` and `clear_output()` sent in place among the cell's printed text, and matplotlib's
# figures (`plt.show()` and those left open at a cell's end).

MAX_ROWS = 20
HEAD_ROWS = 10
TAIL_ROWS = 5
MAX_COLS = 12
MAX_CELL = 40


def _cell_text(value):
    text = str(value).replace("\n", " ").replace("|", "\\|")
    if len(text) > MAX_CELL:
        text = text[: MAX_CELL - 1] + "…"
    return text


def _frame_markdown(df, kind="DataFrame"):
    """A pandas DataFrame as a capped markdown table with shape, dtypes and a note of the cut."""
    rows, cols = df.shape
    notes = []
    if cols > MAX_COLS:
        left = MAX_COLS - 4
        col_idx = list(range(left)) + [None] + list(range(cols - 4, cols))
        notes.append(f"{cols - MAX_COLS} of {cols} columns not shown")
    else:
        col_idx = list(range(cols))
    if rows > MAX_ROWS:
        row_idx = list(range(HEAD_ROWS)) + [None] + list(range(rows - TAIL_ROWS, rows))
        notes.append(f"{rows - HEAD_ROWS - TAIL_ROWS} of {rows} rows not shown (head {HEAD_ROWS}, tail {TAIL_ROWS})")
    else:
        row_idx = list(range(rows))

    def col_name(c):
        name = df.columns[c]
        if isinstance(name, tuple):
            name = " / ".join(str(p) for p in name)
        return _cell_text(name)

    index_names = [str(n) for n in getattr(df.index, "names", [df.index.name]) if n is not None]
    header = [_cell_text(" / ".join(index_names))] + ["…" if c is None else col_name(c) for c in col_idx]
    column_names = [str(n) for n in getattr(df.columns, "names", []) if n is not None]

    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] * len(header)) + "|"]
    for r in row_idx:
        if r is None:
            lines.append("| " + " | ".join(["…"] * len(header)) + " |")
            continue
        index = df.index[r]
        if isinstance(index, tuple):
            index = " / ".join(str(p) for p in index)
        cells = [_cell_text(index)]
        for c in col_idx:
            cells.append("…" if c is None else _cell_text(df.iat[r, c]))
        lines.append("| " + " | ".join(cells) + " |")
    counts = {}
    for dtype in df.dtypes:
        counts[str(dtype)] = counts.get(str(dtype), 0) + 1
    dtypes = ", ".join(f"{k}({v})" for k, v in counts.items())
    head = f"{kind} {rows} rows × {cols} columns; dtypes: {dtypes}"
    if column_names:
        head += "; column levels: " + " / ".join(column_names)
    text = head + "\n\n" + "\n".join(lines)
    if notes:
        text += "\n\n[table cut: " + "; ".join(notes) + "]"
    return text


def _figure_png(fig):
    import base64
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _figure_text(fig):
    parts = []
    for ax in fig.get_axes():
        title = ax.get_title()
        desc = f"axes{': ' + repr(title) if title else ''}"
        xl, yl = ax.get_xlabel(), ax.get_ylabel()
        if xl or yl:
            desc += f" (x: {xl or '-'}, y: {yl or '-'})"
        n_lines, n_patches, n_coll = len(ax.lines), len(ax.patches), len(ax.collections)
        desc += f"; {n_lines} lines, {n_patches} patches, {n_coll} collections"
        parts.append(desc)
    w, h = fig.get_size_inches() * fig.dpi
    return f"<Figure size {int(w)}x{int(h)} with {len(fig.get_axes())} Axes" + (": " + "; ".join(parts) if parts else "") + ">"


def _is_instance(obj, module, name):
    cls = type(obj)
    for klass in cls.__mro__:
        if klass.__name__ == name and klass.__module__.startswith(module):
            return True
    return False


def _report_display_failure(exc):
    """A `_repr_*_` method or `__repr__` raised: its traceback on stderr, as IPython shows it;
    the other forms of the object are still shown."""
    _flush_std()
    sys.stderr.write("".join(_user_traceback(exc)))
    _flush_std()


def bundle_of(obj):
    """The mime bundle of `obj`: text/plain always, richer forms from `_repr_*_` methods."""
    bundle = {}
    if _is_instance(obj, "matplotlib.figure", "Figure"):
        bundle["image/png"] = _figure_png(obj)
        bundle["text/plain"] = _figure_text(obj)
        _FIGURES_SHOWN.add(id(obj))
        return bundle
    if "pandas" in sys.modules:
        pd = sys.modules["pandas"]
        try:
            if isinstance(obj, pd.DataFrame):
                bundle["text/markdown"] = _frame_markdown(obj)
            elif isinstance(obj, pd.Series):
                frame = obj.to_frame(name=obj.name if obj.name is not None else "value")
                bundle["text/markdown"] = _frame_markdown(frame, "Series").replace(" columns;", " column;", 1) if obj.ndim == 1 else _frame_markdown(frame, "Series")
        except Exception:
            pass
    method = getattr(obj, "_repr_mimebundle_", None)
    if callable(method) and not isinstance(obj, type):
        try:
            data = method()
            if isinstance(data, tuple):
                data = data[0]
            if isinstance(data, dict):
                for k, v in data.items():
                    if isinstance(v, bytes) and k.startswith("image/") and k != "image/svg+xml":
                        import base64

                        v = base64.b64encode(v).decode("ascii")
                    elif isinstance(v, bytes):
                        v = v.decode("utf-8", "replace")
                    bundle.setdefault(k, v)
        except Exception as exc:
            _report_display_failure(exc)
    for mime, name in (
        ("text/html", "_repr_html_"),
        ("text/markdown", "_repr_markdown_"),
        ("image/png", "_repr_png_"),
        ("image/jpeg", "_repr_jpeg_"),
        ("image/svg+xml", "_repr_svg_"),
        ("application/json", "_repr_json_"),
        ("text/latex", "_repr_latex_"),
    ):
        if mime in bundle:
            continue
        method = getattr(obj, name, None)
        if not callable(method) or isinstance(obj, type):
            continue
        try:
            data = method()
        except Exception as exc:
            _report_display_failure(exc)
            continue
        if isinstance(data, tuple):
            data = data[0]
        if data is None:
            continue
        if isinstance(data, bytes) and mime in ("image/png", "image/jpeg"):
            import base64

            data = base64.b64encode(data).decode("ascii")
        bundle[mime] = data
    try:
        bundle["text/plain"] = repr(obj)
    except Exception as exc:
        _report_display_failure(exc)
        bundle["text/plain"] = f"<repr failed: {type(exc).__name__}: {exc}>"
    # Very large payloads are the host's to cap, but nobody needs megabytes of HTML.
    for mime in ("text/html", "text/plain", "text/markdown", "text/latex"):
        value = bundle.get(mime)
        if isinstance(value, str) and len(value) > 200_000:
            bundle[mime] = value[:200_000] + f"\n[cut: {len(value) - 200_000} more characters]"
    for mime, value in list(bundle.items()):
        if not isinstance(value, (str, dict, list, int, float, bool)) and value is not None:
            bundle[mime] = str(value)
    return bundle


def _clear_output(wait=False):
    """`clear_output()`: the cell's output so far is dropped (with `wait`, at its next output).

    The marker on stdout and stderr tells the host where the clear falls in the streams; the
    cell waits until the host has applied it, so nothing printed after it lands before it.
    """
    _send_in_place({"t": "clear", "cell": STATE.cell, "wait": bool(wait)})


def _send_in_place(frame):
    """Sends `frame` (a clear or a display) where it falls among the cell's printed text: the
    marker on stdout and stderr tells the host where that is, and the cell waits until the host
    has placed it, so nothing printed after it lands before it (the host reads the pipes and
    the frames apart, and under load may read the frame first)."""
    _flush_std()
    token = STATE.token
    STATE.cleared.clear()
    if token:
        frame["sync"] = True
        for fd in (1, 2):
            try:
                os.write(fd, token.encode("ascii"))
            except OSError:
                pass
    send(frame)
    if token:
        STATE.cleared.wait(2)


class DisplayHandle:
    """What `display(obj, display_id=True)` returns, as in IPython: `update(obj)` replaces the
    display where it is shown, `display(obj)` shows another one with the same id."""

    def __init__(self, display_id):
        self.display_id = display_id

    def display(self, obj, **kwargs):
        display(obj, display_id=self.display_id, **kwargs)

    def update(self, obj, **kwargs):
        display(obj, display_id=self.display_id, update=True, **kwargs)

    def __repr__(self):
        return f"<DisplayHandle display_id={self.display_id}>"


def display(*objs, raw=False, display_id=None, update=False, **_ignored):
    """Shows each object as a rich output of this cell (mime bundle, as in Jupyter); with a
    `display_id` (True: a new one) returns its `DisplayHandle`, and `update=True` replaces the
    display shown with that id."""
    if display_id is True:
        display_id = os.urandom(16).hex()
    for obj in objs:
        if raw and isinstance(obj, dict):
            bundle = obj
        else:
            bundle = bundle_of(obj)
        _send_display(bundle, display_id, update)
    if display_id and not update:
        return DisplayHandle(display_id)
    return None


def _send_display(bundle, display_id=None, update=False):
    """Sends `bundle` as a display of this cell, in place; with a `display_id` (a display handle's,
    ours or IPython's), `update` replaces the display shown with that id where it is."""
    frame = {"t": "display", "cell": STATE.cell, "bundle": bundle}
    if display_id:
        frame["display_id"] = str(display_id)
        frame["update"] = bool(update)
    _send_in_place(frame)


# ----------------------------------------------------------------------------------------------
# Matplotlib: Agg is forced by MPLBACKEND; plt.show() and figures left open are sent as PNGs.

_FIGURES_SHOWN = set()


def _flush_figures():
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return
    try:
        numbers = list(plt.get_fignums())
    except Exception:
        return
    for num in numbers[:8]:
        fig = plt.figure(num)
        if id(fig) not in _FIGURES_SHOWN:
            try:
                display(fig)
            except Exception as exc:
                sys.stderr.write(f"could not render figure {num}: {exc}\n")
    if len(numbers) > 8:
        sys.stderr.write(f"[{len(numbers) - 8} more open figures not shown; at most 8 per cell]\n")
    try:
        plt.close("all")
    except Exception:
        pass
    _FIGURES_SHOWN.clear()


def _patch_pyplot():
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None or getattr(plt.show, "_agent_tools", False):
        return

    def show(*args, **kwargs):
        _flush_figures()

    show._agent_tools = True
    plt.show = show
