# A part of the agent-tools Python kernel runner (`runner.py`): the stdlib fallback for IPython
# idioms, rewritten into ordinary Python before parsing, and the shell and %pip helpers IPython's
# shell uses too. The runner compiles it into its own namespace at the first cell that needs it
# (a `%` or `!`), so a kernel whose cells are plain Python never pays for it.

import ast
import re as _re
import types

LINE_MAGICS = ("cd", "env", "matplotlib", "pip", "pwd", "time", "timeit", "who")
CELL_MAGICS = ("bash", "capture", "sh", "time", "timeit", "writefile")


def _scan_state(line, state):
    """Advances the lexical state (open brackets, open triple-quoted string) over one line."""
    i, n = 0, len(line)
    quote, depth = state
    while i < n:
        ch = line[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if line.startswith(quote, i):
                i += len(quote)
                quote = None
                continue
            i += 1
            continue
        if ch == "#":
            break
        if ch in "\"'":
            triple = line[i : i + 3]
            if triple in ('"""', "'''"):
                quote = triple
                i += 3
            else:
                # A single-quoted string ends on this line.
                j = i + 1
                while j < n and line[j] != ch:
                    j += 2 if line[j] == "\\" else 1
                i = j + 1
            continue
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth = max(0, depth - 1)
        i += 1
    if quote and len(quote) == 1:
        quote = None
    return quote, depth


_ASSIGN_MAGIC = _re.compile(r"^(\s*)([A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_][\w.]*)*)\s*=\s*([!%])(.*)$")


def _magic_call(kind, body):
    """`%name args` or `!cmd` as a call of the magic dispatcher."""
    if kind == "!":
        return f"__agent_tools_magic__('system', {body!r})"
    body = body.strip()
    name, _, args = body.partition(" ")
    if name not in LINE_MAGICS:
        raise UsageError(
            f"UsageError: line magic %{name} is not supported here; supported: "
            + ", ".join("%" + m for m in LINE_MAGICS)
            + "; cell magics: "
            + ", ".join("%%" + m for m in CELL_MAGICS)
            + "; !cmd and x = !cmd run shell commands"
        )
    return f"__agent_tools_magic__({name!r}, {args!r})"


def _join_magic_continuations(lines):
    """`%env BAZ \\` + `qux` is one magic line, as in IPython."""
    joined = []
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.lstrip()
        is_magic = stripped[:1] in ("%", "!") or _ASSIGN_MAGIC.match(line)
        while is_magic and line.endswith("\\") and i + 1 < len(lines):
            i += 1
            line = line[:-1] + " " + lines[i].lstrip()
        joined.append(line)
        i += 1
    return joined


def transform(code):
    """Rewrites IPython idioms into calls of `__agent_tools_magic__`; plain Python stays as it is."""
    lines = code.split("\n")
    first = 0
    while first < len(lines) and not lines[first].strip():
        first += 1
    if first < len(lines) and lines[first].startswith("%%"):
        head = lines[first][2:].strip()
        name, _, args = head.partition(" ")
        if name not in CELL_MAGICS:
            raise UsageError(
                f"UsageError: cell magic %%{name} is not supported here; supported: "
                + ", ".join("%%" + m for m in CELL_MAGICS)
            )
        body = "\n".join(lines[first + 1 :])
        return f"__agent_tools_cell_magic__({name!r}, {args!r}, {body!r})"
    out = []
    state = (None, 0)
    continued = False
    lines = _join_magic_continuations(lines)
    for line in lines:
        at_statement = state == (None, 0) and not continued
        stripped = line.lstrip()
        if at_statement and stripped[:1] in ("%", "!"):
            indent = line[: len(line) - len(stripped)]
            if stripped.startswith("%%"):
                raise UsageError("UsageError: a cell magic (%%name) must be on the first line of the cell")
            body = stripped[1:]
            if stripped[0] == "%" and body.startswith("%"):
                body = body[1:]
            out.append(indent + _magic_call(stripped[0], body))
            continued = False
            continue
        if at_statement:
            m = _ASSIGN_MAGIC.match(line)
            if m and not m.group(4).startswith("="):
                indent, target, kind, rest = m.groups()
                call = _magic_call(kind, rest)
                if kind == "!":
                    call = call.replace("'system'", "'sx'", 1)
                out.append(f"{indent}{target} = {call}")
                continued = False
                continue
        out.append(line)
        state = _scan_state(line, state)
        code_part = line.split("#", 1)[0] if state[0] is None else line
        continued = state[0] is None and code_part.rstrip().endswith("\\")
    return "\n".join(out)


def _expand(cmd, ns):
    """IPython's variable expansion in shell lines: {expr} and $name from the user namespace."""

    def brace(m):
        expr = m.group(1)
        try:
            return str(eval(expr, ns))
        except Exception:
            return m.group(0)

    def dollar(m):
        name = m.group(1)
        if name in ns:
            return str(ns[name])
        return m.group(0)

    cmd = cmd.replace("$$", "\x00")
    cmd = _re.sub(r"(?<!\{)\{([^{}]+)\}(?!\})", brace, cmd)
    cmd = _re.sub(r"\$([A-Za-z_]\w*)", dollar, cmd)
    return cmd.replace("\x00", "$").replace("{{", "{").replace("}}", "}")


class SList(list):
    """The lines of a shell command's output, as IPython's `x = !cmd` gives them."""

    @property
    def s(self):
        return " ".join(self)

    @property
    def n(self):
        return "\n".join(self)

    @property
    def l(self):  # noqa: E743
        return list(self)


def _shell():
    return "/bin/bash" if os.path.exists("/bin/bash") else "/bin/sh"


def _run_shell(cmd, capture=False, script=None, status_only=False):
    import subprocess

    if script is None and cmd.rstrip().endswith("&") and not cmd.rstrip().endswith("&&"):
        raise OSError("Background processes not supported.")

    argv = [_shell(), "-c", cmd if script is None else script]
    proc = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    captured = []
    try:
        for raw in iter(proc.stdout.readline, b""):
            text = raw.decode("utf-8", "replace")
            if capture:
                captured.append(text.rstrip("\n"))
            else:
                sys.stdout.write(text)
                sys.stdout.flush()
        proc.wait()
    except KeyboardInterrupt:
        proc.kill()
        proc.wait()
        raise
    if capture:
        return SList(captured)
    if status_only:
        return proc.returncode
    if proc.returncode:
        sys.stderr.write(f"[exit status {proc.returncode}]\n")
    return None


class CapturedIO:
    """What `%%capture name` binds: `.stdout`, `.stderr`, and `.show()` to replay them."""

    def __init__(self, stdout, stderr):
        self.stdout = stdout
        self.stderr = stderr
        self.outputs = []

    def show(self):
        sys.stdout.write(self.stdout)
        sys.stderr.write(self.stderr)

    __call__ = show

    def __repr__(self):
        return f"<CapturedIO stdout={len(self.stdout)} chars, stderr={len(self.stderr)} chars>"


def _format_seconds(seconds):
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds * 1e9:.3g} ns"


def _timeit(stmt, setup, args, ns):
    import timeit

    number, repeat, quiet, ret = 0, 7, False, False
    words = args.split()
    rest = []
    i = 0
    while i < len(words):
        w = words[i]
        if w == "-n" and i + 1 < len(words):
            number = int(words[i + 1])
            i += 2
            continue
        if w == "-r" and i + 1 < len(words):
            repeat = int(words[i + 1])
            i += 2
            continue
        if w == "-q":
            quiet = True
        elif w == "-o":
            ret = True
        else:
            rest.append(w)
        i += 1
    if stmt is None:
        stmt = " ".join(rest)
    elif rest:
        setup = " ".join(rest)
    timer = timeit.Timer(stmt, setup or "pass", globals=ns)
    if number == 0:
        number, _ = timer.autorange()
    runs = timer.repeat(repeat=repeat, number=number)
    per = [r / number for r in runs]
    mean = sum(per) / len(per)
    std = (sum((p - mean) ** 2 for p in per) / len(per)) ** 0.5
    if not quiet:
        print(
            f"{_format_seconds(mean)} ± {_format_seconds(std)} per loop "
            f"(mean ± std. dev. of {repeat} run{'s' if repeat != 1 else ''}, {number} loop{'s' if number != 1 else ''} each)"
        )
    if ret:
        return types.SimpleNamespace(best=min(per), worst=max(per), average=mean, stdev=std, all_runs=runs, loops=number, repeat=repeat)
    return None


def _time(code, ns):
    start_wall, start_cpu = time.perf_counter(), time.process_time()
    value = None
    try:
        tree = ast.parse(code, mode="exec")
        tail = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            tail = tree.body.pop()
        exec(compile(tree, "<timed>", "exec"), ns)
        if tail is not None:
            value = eval(compile(ast.Expression(tail.value), "<timed>", "eval"), ns)
    finally:
        wall, cpu = time.perf_counter() - start_wall, time.process_time() - start_cpu
        print(f"CPU times: total: {_format_seconds(cpu)}\nWall time: {_format_seconds(wall)}")
    return value


def _requirement_names(args):
    names = []
    skip_next = False
    for word in args:
        if skip_next:
            skip_next = False
            continue
        if word.startswith("-"):
            if word in ("-r", "--requirement", "-c", "--constraint", "-i", "--index-url", "--extra-index-url", "-f", "--find-links", "-t", "--target"):
                skip_next = True
            continue
        if "/" in word or word.startswith("."):
            continue
        m = _re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", word)
        if m:
            names.append(m.group(0))
    return names


def _normalize(name):
    return _re.sub(r"[-_.]+", "-", name).lower()


def _modules_of(dist_names):
    import importlib.metadata as md

    wanted = {_normalize(n) for n in dist_names}
    modules = set()
    try:
        mapping = md.packages_distributions()
    except Exception:
        mapping = {}
    for module, dists in mapping.items():
        if any(_normalize(d) in wanted for d in dists):
            modules.add(module)
    for name in dist_names:
        modules.add(name.replace("-", "_"))
    return modules


def _pip(args):
    import importlib
    import shlex
    import site
    import subprocess

    words = shlex.split(args)
    if not words:
        raise UsageError("UsageError: %pip needs a pip command, for example %pip install requests")
    cmd = [sys.executable, "-m", "pip", *words, "--disable-pip-version-check", "--no-input"]
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    for raw in iter(proc.stdout.readline, b""):
        sys.stdout.write(raw.decode("utf-8", "replace"))
        sys.stdout.flush()
    proc.wait()
    if proc.returncode:
        sys.stderr.write(f"[pip exited with status {proc.returncode}]\n")
    if words[0] not in ("install", "uninstall"):
        return None
    importlib.invalidate_caches()
    try:
        for path in site.getsitepackages() + [site.getusersitepackages()]:
            if os.path.isdir(path):
                site.addsitedir(path)
    except Exception:
        pass
    names = _requirement_names(words[1:])
    modules = _modules_of(names) if names else set()
    evicted, compiled = [], []
    for mod_name in list(sys.modules):
        top = mod_name.split(".", 1)[0]
        if top in modules:
            module = sys.modules.get(mod_name)
            origin = getattr(module, "__file__", "") or ""
            if origin.endswith((".so", ".pyd")):
                compiled.append(mod_name)
            del sys.modules[mod_name]
            if "." not in mod_name:
                evicted.append(mod_name)
    if evicted:
        print(f"[%pip: removed {', '.join(sorted(evicted))} from sys.modules; the next import loads the installed version]")
    if compiled:
        print("[%pip: compiled extension modules were loaded (" + ", ".join(sorted(compiled)[:5]) + "); if the new version misbehaves, run again with reset: true]")
    return None


_PREVIOUS_DIR = [None]


def _magic(name, args):
    ns = USER_NS
    if name == "system":
        return _run_shell(_expand(args, ns))
    if name == "sx":
        return _run_shell(_expand(args, ns), capture=True)
    if name == "cd":
        target = args.strip().strip("'\"")
        if not target:
            target = os.path.expanduser("~")
        elif target == "-":
            target = _PREVIOUS_DIR[0] or os.getcwd()
        target = os.path.expanduser(os.path.expandvars(_expand(target, ns)))
        previous = os.getcwd()
        os.chdir(target)
        _PREVIOUS_DIR[0] = previous
        print(os.getcwd())
        return None
    if name == "pwd":
        return os.getcwd()
    if name == "env":
        args = args.strip()
        if not args:
            return dict(os.environ)
        if "=" in args or " " in args:
            key, _, value = args.partition("=") if "=" in args else args.partition(" ")
            key, value = key.strip(), _expand(value.strip(), ns)
            os.environ[key] = value
            print(f"env: {key}={value}")
            return None
        if args not in os.environ:
            raise UsageError(f"UsageError: environment variable {args} is not set")
        return os.environ[args]
    if name == "pip":
        return _pip(args)
    if name == "time":
        return _time(args, ns)
    if name == "timeit":
        return _timeit(None, "pass", args, ns)
    if name == "matplotlib":
        # Figures always come back as images; `%matplotlib inline` is what already happens.
        return None
    if name == "who":
        names = sorted(k for k, v in ns.items() if not k.startswith("_") and not isinstance(v, types.ModuleType) and k not in ("display", "tool", "In", "Out", "exit", "quit", "get_ipython"))
        print("  ".join(names) if names else "Interactive namespace is empty.")
        return None
    raise UsageError(f"UsageError: line magic %{name} is not supported")


def _cell_magic(name, args, body):
    ns = USER_NS
    if name in ("bash", "sh"):
        _run_shell("", script=body if name == "bash" else body)
        return None
    if name == "timeit":
        return _timeit(body, args.strip() or "pass", "", ns) if not args.strip().startswith("-") else _timeit(body, "pass", args, ns)
    if name == "time":
        return _time(body, ns)
    if name == "writefile":
        words = args.split()
        append = "-a" in words or "--append" in words
        path = [w for w in words if not w.startswith("-")]
        if not path:
            raise UsageError("UsageError: %%writefile needs a file name")
        target = os.path.expanduser(path[0])
        exists = os.path.exists(target)
        with open(target, "a" if append else "w", encoding="utf-8") as f:
            f.write(body if body.endswith("\n") else body + "\n")
        print(f"{'Appending to' if append else ('Overwriting' if exists else 'Writing')} {path[0]}")
        return None
    if name == "capture":
        import contextlib
        import io

        words = args.split()
        out, err = io.StringIO(), io.StringIO()
        with contextlib.ExitStack() as stack:
            if "--no-stdout" not in words:
                stack.enter_context(contextlib.redirect_stdout(out))
            if "--no-stderr" not in words:
                stack.enter_context(contextlib.redirect_stderr(err))
            exec(compile(body, "<captured>", "exec"), ns)
        names = [w for w in words if not w.startswith("-")]
        if names:
            ns[names[0]] = CapturedIO(out.getvalue(), err.getvalue())
        return None
    raise UsageError(f"UsageError: cell magic %%{name} is not supported")
