# The Python runner's frames to and from the host, a 4-byte big-endian length plus UTF-8 JSON on
# the protocol pipes (CMD_FD in, EVT_FD out). JSON through `_json`'s C encoder and scanner, as
# `json` itself uses them (importing `json` compiles its regular expressions, and imports `re`, at
# every start); `json` where `_json` is not as this expects. What is sent is strict JSON in UTF-8,
# which the host reads: a value that has none (NaN, an infinity, a lone surrogate) is cleaned
# first (`_json_clean`).

# Child processes must not inherit the protocol pipes.
for _fd in (CMD_FD, EVT_FD):
    try:
        os.set_inheritable(_fd, False)
    except OSError:
        pass


def _json_codec():
    try:
        import _json

        def dumps(obj):
            encoder = _json.make_encoder({}, repr, _json.encode_basestring, None, ":", ",", False, False, False)
            return "".join(encoder(obj, 0))

        class _Context:
            strict = True
            object_hook = None
            object_pairs_hook = None
            parse_float = float
            parse_int = int
            parse_constant = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}.__getitem__

        scan = _json.make_scanner(_Context())

        def loads(text):
            value, end = scan(text, 0)
            if end != len(text):
                raise ValueError("extra data after a JSON value")
            return value

        sample = {"t": "é\u2028\x00\"", "n": [1, -2.5, None, True, False], "o": {}, "big": 2**70}
        if loads(dumps(sample)) == sample and dumps(object) == '"' + repr(object) + '"':
            try:
                dumps(float("nan"))
            except ValueError:
                return dumps, loads
    except Exception:
        pass
    import json

    return (lambda obj: json.dumps(obj, default=repr, ensure_ascii=False, allow_nan=False)), json.loads


def _json_clean(value):
    """`value` as strict JSON holds it: NaN and the infinities as Jupyter's `json_clean` sends them
    ('nan', 'inf', '-inf'), a lone surrogate as U+FFFD, anything else JSON lacks as its repr."""
    if isinstance(value, str):
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        return value if value - value == 0 else repr(value)
    if isinstance(value, dict):
        keys = (str, int, float, type(None))  # what JSON makes a key of
        return {_json_clean(k if isinstance(k, keys) else repr(k)): _json_clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_clean(v) for v in value]
    return _json_clean(repr(value))


_json_dumps, _json_loads = _json_codec()
_write_lock = _thread.allocate_lock()


def send(frame):
    try:
        data = _json_dumps(frame).encode("utf-8")
    except ValueError:  # NaN or an infinity; UnicodeEncodeError: a lone surrogate
        data = _json_dumps(_json_clean(frame)).encode("utf-8")
    with _write_lock:
        view = memoryview(struct.pack(">I", len(data)) + data)
        while view:
            n = os.write(EVT_FD, view)
            view = view[n:]


def _read_exact(n):
    chunks = []
    while n:
        chunk = os.read(CMD_FD, n)
        if not chunk:
            return None
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def recv():
    head = _read_exact(4)
    if head is None:
        return None
    (size,) = struct.unpack(">I", head)
    body = _read_exact(size)
    if body is None:
        return None
    return _json_loads(body.decode("utf-8"))
