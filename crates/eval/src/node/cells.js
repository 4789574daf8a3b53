// Running a cell in the Node runner: `_` and `_error`, the cell's evaluation and its outcome (a
// value, an error, an interrupt), the 'done' frame after the end markers, one cell at a time.

/**
 * `_` and `_error`, as in node's REPL: the last cell's value (undefined too) and the last error
 * a cell threw; once the user assigns one, it is theirs ("Expression assignment to _ now
 * disabled.").
 */
const lastValues = (() => {
  const kept = { _: undefined, _error: undefined };
  const auto = { _: true, _error: true };
  for (const name of Object.keys(kept)) {
    Object.defineProperty(globalThis, name, {
      configurable: true,
      get: () => kept[name],
      set: (value) => {
        auto[name] = false;
        Object.defineProperty(globalThis, name, { value, writable: true, configurable: true, enumerable: true });
        process.stdout.write(`Expression assignment to ${name} now disabled.\n`);
      },
    });
  }
  return {
    value(v) { if (auto._) kept._ = v; },
    error(e) { if (auto._error) kept._error = e; },
  };
})();

let interruptCell = null;
let count = 0;

async function runCell(frame) {
  count += 1;
  currentCell = frame.cell;
  let status = 'ok';
  let error = null;
  let result = null;
  const interrupted = new Promise((resolve) => { interruptCell = resolve; });
  Atomics.store(running, 0, frame.cell);
  // Frames of the cell's code are `cell-N:line:column`, as Python's are `<cell-N>`.
  const name = `cell-${count}`;
  try {
    const source = rewriteImports(TYPESCRIPT ? stripTypes(frame.code, { mode: 'strip' }) : frame.code);
    const evaluated = evaluate(frame.cell, {
      expression: `${source}\n//# sourceURL=${name}`,
      replMode: true,
      awaitPromise: true,
      objectGroup: 'cell',
    });
    // The first cell's synchronous part is done (or stopped): the reader thread is started as
    // soon as the main thread is free, after the result of a cell that is done at once.
    if (!reader) setImmediate(startReader);
    const outcome = await Promise.race([evaluated, interrupted.then(() => ({ interrupted: true }))]);
    Atomics.store(running, 0, 0);
    if (outcome.interrupted) {
      status = 'interrupted';
    } else if (outcome.err) {
      status = /terminated/i.test(String(outcome.err.message)) ? 'interrupted' : 'error';
      if (status === 'error') error = { ename: 'Error', evalue: String(outcome.err.message), traceback: String(outcome.err.message) };
    } else if (outcome.result.exceptionDetails) {
      status = 'error';
      const details = outcome.result.exceptionDetails;
      const thrown = await valueOf(details.exception);
      lastValues.error(thrown);
      error = errorInfo(thrown, details, frame.code, name);
    } else {
      const value = await valueOf(outcome.result.result);
      lastValues.value(value);
      if (value !== undefined) result = bundleOf(value);
    }
  } catch (e) {
    Atomics.store(running, 0, 0);
    status = 'error';
    error = errorInfo(e, null, frame.code, name);
  }
  interruptCell = null;
  if (status === 'interrupted') stopCell(frame.cell);
  await post('Runtime.releaseObjectGroup', { objectGroup: 'cell' });
  if (frame.token) {
    try { fs.writeSync(1, frame.token); } catch {}
    try { fs.writeSync(2, frame.token); } catch {}
  }
  send({ t: 'done', cell: frame.cell, status, error, result, count, cwd: process.cwd() });
  currentCell = 0;
}

const queue = [];
let busy = false;
async function pump() {
  if (busy) return;
  busy = true;
  while (queue.length) await runCell(queue.shift());
  busy = false;
}
