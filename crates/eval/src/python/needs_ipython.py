# Which cells the Python runner gives to IPython, when the kernel's interpreter has it
# (`ipython.py`): from the first cell that needs it (an idiom, `get_ipython`, `In`/`Out`, an
# IPython import), so plain cells start fast.

_SHELL = [None]
_HAVE_IPYTHON = [None]
_IDIOM = [None]
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
