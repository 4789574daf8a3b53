# The Python runner's reader thread, which reads the command pipe while the main thread runs
# cells, and the state the two share: cells to run, tool results awaited, the host's 'cleared',
# interrupts (a SIGINT to the main thread while user code runs), the host's end.

class _Event:
    """`threading.Event` on a `_thread` lock (held while the event is not set)."""

    def __init__(self):
        self._lock = _thread.allocate_lock()
        self._lock.acquire()

    def set(self):
        try:
            self._lock.release()
        except RuntimeError:
            pass  # set already

    def clear(self):
        self._lock.acquire(False)

    def wait(self, timeout=-1):
        if self._lock.acquire(True, timeout):
            self._lock.release()
            return True
        return False


class _State:
    def __init__(self):
        self.lock = _thread.allocate_lock()
        self.running = None  # id of the cell whose user code runs now
        self.main_ident = _thread.get_ident()  # made on the main thread
        self.cells = _queue.SimpleQueue()
        self.calls = {}  # bridged call id -> [event, result]
        self.next_call = 0
        self.cell = None  # id of the cell being executed (for tool calls and displays)
        self.token = ""  # the cell's end marker, also written at a clear_output
        self.cleared = _Event()  # the host has applied a clear_output


STATE = _State()


def _arm_interrupts(cell):
    """From here the user code of `cell` runs: an interrupt of it is a KeyboardInterrupt."""
    with STATE.lock:
        STATE.running = cell
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _disarm_interrupts():
    """No user code runs from here: a late SIGINT is ignored."""
    with STATE.lock:
        STATE.running = None
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def _end_own_group():
    """Kills the kernel's process group when the kernel leads it (the host starts it so)."""
    try:
        if os.getpgid(0) == os.getpid():
            # SIGKILL takes the kernel too, which is on its way out anyway.
            os.killpg(os.getpid(), signal.SIGKILL)
    except Exception:
        pass


def _reader():
    while True:
        try:
            frame = recv()
        except Exception:
            frame = None
        if frame is None:
            # The host is gone (perhaps killed, with no chance to end the run): a kernel never
            # outlives its pipe, and neither does what its cells started in its process group.
            _end_own_group()
            os._exit(0)
        kind = frame.get("t")
        if kind == "exec":
            STATE.cells.put(frame)
        elif kind == "tool_result":
            with STATE.lock:
                slot = STATE.calls.get(frame.get("id"))
            if slot is not None:
                slot[1] = frame
                slot[0].set()
        elif kind in ("cleared", "shown"):
            STATE.cleared.set()
        elif kind == "interrupt":
            with STATE.lock:
                if STATE.running is not None and STATE.running == frame.get("cell"):
                    signal.pthread_kill(STATE.main_ident, signal.SIGINT)
        elif kind == "exit":
            os._exit(0)
