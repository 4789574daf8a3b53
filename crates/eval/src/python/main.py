# The Python runner's start, joined last: the builtins cells see (display, tool, exit), the import
# hook, the reader thread and the hello; then the cells, one at a time.

def main():
    import faulthandler

    try:
        faulthandler.enable()
    except Exception:
        pass
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sys.modules["__main__"] = MAIN
    builtins.input = _no_input
    # getpass.getpass raises too (patched when getpass is imported: _ImportHook).
    # Builtins, as IPython's own `display` is: usable everywhere in a cell, and not names of
    # the user's namespace (`%who`, `%whos`, `%who_ls`, `dir()` and `%reset` leave them be).
    builtins.display = display
    builtins.tool = _Tool()
    builtins.ToolError = ToolError
    # `exit()` and `quit()` end the cell, as in ipykernel, and not the kernel.
    builtins.exit = builtins.quit = _Exit()
    builtins.__agent_tools_magic__ = _magic
    builtins.__agent_tools_cell_magic__ = _cell_magic
    sys.meta_path.insert(0, _ImportHook())
    if "" not in sys.path:
        sys.path.insert(0, "")
    _thread.start_new_thread(_reader, ())
    send(
        {
            "t": "hello",
            "pid": os.getpid(),
            "executable": sys.executable,
            "version": sys.version.split()[0],
            "cwd": os.getcwd(),
        }
    )
    while True:
        try:
            frame = STATE.cells.get()
            run_cell(frame)
        except KeyboardInterrupt:
            # A late interrupt that landed outside user code: nothing to stop.
            continue


main()
