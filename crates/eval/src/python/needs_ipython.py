# Which cells the Python runner gives to IPython, when the kernel's interpreter has it
# (`ipython.py`): from the first cell that needs it (an idiom, `get_ipython`, `In`/`Out`, an
# IPython import), so plain cells start fast.

_SHELL = [None]
_HAVE_IPYTHON = [None]
_IDIOM = [None]
# The last cell `_wants_ipython` parsed, and its tree: `run_cell` compiles that tree instead of
# parsing the same source again (a parse is most of a small cell's own time in the runner).
_PARSED = [None, None]
# Every match of the idiom pattern holds one of these, so a cell without them needs no `re`.
_IDIOM_HINTS = ("%", "!", ">>>", "... ", "?", "get_ipython", "In", "Out", "IPython")


def _has_idiom(code):
    if not any(hint in code for hint in _IDIOM_HINTS):
        return False
    if _IDIOM[0] is None:
        import re

        _IDIOM[0] = re.compile(r"(?m)^\s*(%|!|>>>|\.\.\. )|[?]\s*$|=\s*[!%]|\bget_ipython\b|\bIn\b|\bOut\b|IPython")
    return _IDIOM[0].search(code) is not None


def _ipython_importable():
    if _HAVE_IPYTHON[0] is None:
        import importlib.util

        if os.environ.get("AGENT_TOOLS_NO_IPYTHON"):
            _HAVE_IPYTHON[0] = False
        else:
            try:
                _HAVE_IPYTHON[0] = importlib.util.find_spec("IPython") is not None
            except Exception:
                _HAVE_IPYTHON[0] = False
    return _HAVE_IPYTHON[0]


def _wants_ipython(code):
    """Whether IPython would read `code` otherwise than Python does (if it is importable)."""
    if _has_idiom(code):
        return True
    first = next((l for l in code.split("\n") if l.strip()), "")
    if first[:1] in (" ", "\t"):
        return True  # an indented paste
    try:
        tree = compile(code, "<cell>", "exec", ONLY_AST, dont_inherit=True)
    except SyntaxError:
        return True
    _PARSED[0], _PARSED[1] = code, tree
    # Automagic: a lone name that is no variable (`pwd`, `whos`, `ls`).
    body = tree.body
    if len(body) == 1 and isinstance(body[0], _ast.Expr) and isinstance(body[0].value, _ast.Name):
        name = body[0].value.id
        return name not in USER_NS and not hasattr(builtins, name)
    return False


def _needs_ipython(code):
    if _SHELL[0] is not None:
        return True
    return _wants_ipython(code) and _ipython_importable()


def _parsed(source, filename):
    """The tree of `source`: the one `_wants_ipython` made of it (taken: the caller changes it),
    else parsed now under `filename`."""
    code, tree = _PARSED
    _PARSED[0] = _PARSED[1] = None
    if tree is not None and code is source:
        return tree
    return compile(source, filename, "exec", ONLY_AST, dont_inherit=True)
