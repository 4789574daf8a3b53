// The Node runner's inspector session: a cell's code evaluated in REPL mode (under SIGINT until the
// reader thread is up), its value fetched, and the session closed at the program's exit.

const session = new inspector.Session();
session.connect();

function post(method, params) {
  return new Promise((resolve) => session.post(method, params, (err, result) => resolve({ err, result })));
}

/** `Runtime.evaluate` of a cell's code, in the cell's async context. */
// Until the reader thread is up, a cell's synchronous part runs inside this script, which a
// SIGINT stops (as node's REPL stops its input): the host sends one with every interrupt where
// it can. The script calls the function the runner puts under this key for the moment. A SIGINT
// at any other moment is ignored (the bootstrap's handler): the interrupt frame that comes with
// it, read by the reader thread, ends a waiting cell, and a SIGINT handled late could otherwise
// hit the next cell.
const EVALUATE = Symbol.for('agent-tools.evaluate');
const underSigint = new vm.Script('globalThis[Symbol.for("agent-tools.evaluate")]()', {
  filename: 'agent-tools-runner.js',
});

function evaluate(cell, params) {
  return new Promise((resolve) => {
    const post = () => session.post('Runtime.evaluate', params, (err, result) => resolve({ err, result }));
    cellContext.run(cell, () => {
      if (!SIGNALS || readerUp) return post();
      globalThis[EVALUATE] = post;
      try {
        underSigint.runInThisContext({ breakOnSigint: true });
      } catch (e) {
        const interrupted = e && e.code === 'ERR_SCRIPT_EXECUTION_INTERRUPTED';
        resolve({ err: { message: interrupted ? 'execution terminated by SIGINT' : String(e && e.message) } });
      } finally {
        delete globalThis[EVALUATE];
      }
    });
  });
}

const LAST = Symbol.for('agent-tools.last');
async function valueOf(remote) {
  if (!remote) return undefined;
  if (remote.objectId) {
    await post('Runtime.callFunctionOn', {
      objectId: remote.objectId,
      functionDeclaration: 'function () { globalThis[Symbol.for("agent-tools.last")] = this; }',
    });
    const value = globalThis[LAST];
    delete globalThis[LAST];
    return value;
  }
  if (remote.type === 'undefined') return undefined;
  if ('unserializableValue' in remote) {
    const u = remote.unserializableValue;
    return u.endsWith('n') ? BigInt(u.slice(0, -1)) : Number(u);
  }
  return remote.value;
}

// The program's own exit: the session is closed at the last moment (after every exit handler,
// one of which may throw and so cancel the exit, as in node's REPL), so node neither waits for
// a debugger nor says it does.
const reallyExit = process.reallyExit;
process.reallyExit = function exitNow(code) {
  try { session.disconnect(); } catch {}
  return reallyExit.call(process, code);
};
