// Stopping a cell in the Node runner: what a cell's code started is known by its async context, and
// a stopped cell's timers, workers and child processes end, its output and tool calls are dropped.

// Every callback a cell's code schedules runs in that cell's async context, so what a cell
// started (timers, intervals, immediates, workers, child processes) is known by cell. A cell
// that is interrupted or cancelled is stopped: all of that is cleared or ended, and whatever of
// its code still runs later (a promise that settles, a socket callback) can no longer print,
// display or call tools, so none of its output reaches a later result.
const cellContext = new AsyncLocalStorage();
const owned = new Map(); // asyncId -> { cell, type, resource }
const stoppedCells = new Set();
const STOPPABLE = new Set(['Timeout', 'Immediate', 'WORKER', 'PROCESSWRAP']);
let sweepPending = false;

function end({ type, resource }) {
  try {
    if (type === 'Timeout') clearTimeout(resource);
    else if (type === 'Immediate') clearImmediate(resource);
    else if (type === 'WORKER') resource.stopThread();
    else if (type === 'PROCESSWRAP') resource.kill(9);
  } catch {}
}

function sweep() {
  sweepPending = false;
  for (const [id, o] of owned) {
    if (stoppedCells.has(o.cell)) {
      owned.delete(id);
      end(o);
    }
  }
}

createHook({
  init(asyncId, type, _trigger, resource) {
    if (!STOPPABLE.has(type)) return;
    const cell = cellContext.getStore();
    if (cell === undefined) return;
    owned.set(asyncId, { cell, type, resource });
    // Started by code of a stopped cell that was still on its way: ended once it is set up.
    if (stoppedCells.has(cell) && !sweepPending) {
      sweepPending = true;
      process.nextTick(sweep);
    }
  },
  destroy(asyncId) {
    owned.delete(asyncId);
  },
}).enable();

/** True when the code running now belongs to a stopped cell. */
function fromStoppedCell() {
  const cell = cellContext.getStore();
  return cell !== undefined && stoppedCells.has(cell);
}

function stopCell(cell) {
  stoppedCells.add(cell);
  sweep();
  for (const [id, call] of calls) {
    if (call.cell === cell) {
      calls.delete(id);
      call.reject(new ToolError('the cell was interrupted'));
    }
  }
}

for (const stream of [process.stdout, process.stderr]) {
  const write = stream.write;
  stream.write = function write_(chunk, encoding, callback) {
    if (fromStoppedCell()) {
      const done = typeof encoding === 'function' ? encoding : callback;
      if (typeof done === 'function') process.nextTick(done);
      return true;
    }
    return write.apply(this, arguments);
  };
}
