# Modules the Python runner adapts as they are imported (`_ImportHook`): `plt.show` flushes
# figures, `getpass.getpass` says there is no stdin, `linecache` knows the cells' sources.

class _ImportHook:
    """Adapts modules as they are imported: `plt.show` flushes figures, `getpass.getpass` says
    there is no stdin, and `linecache` knows the cells' sources (for tracebacks). Not imported
    at start, so a kernel that never uses them never pays for them."""

    def find_spec(self, name, path, target=None):
        adapt = _ADAPTERS.get(name)
        if adapt is None:
            return None
        import importlib.machinery

        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        original = loader.exec_module

        def exec_module(module):
            original(module)
            adapt(module)

        loader.exec_module = exec_module
        return spec


# A cell's filename -> its source; `linecache` gets them all when it is imported, and each new
# one once it is.
_SOURCES = {}


def _linecache_entry(filename, source):
    return (len(source), None, source.splitlines(True), filename)


def _remember_source(filename, source):
    _SOURCES[filename] = source
    linecache = sys.modules.get("linecache")
    if linecache is not None:
        linecache.cache[filename] = _linecache_entry(filename, source)


def _fill_linecache(linecache):
    for filename, source in _SOURCES.items():
        linecache.cache[filename] = _linecache_entry(filename, source)


_ADAPTERS = {
    "matplotlib.pyplot": lambda _module: _patch_pyplot(),
    "getpass": lambda module: setattr(module, "getpass", _no_input),
    "linecache": _fill_linecache,
}
