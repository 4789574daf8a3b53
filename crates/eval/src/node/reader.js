// The Node runner's reader thread (a worker), which reads the command pipe while the main thread is
// busy: its source, its start, and the frames it hands the main thread (cells, tool results,
// interrupts, the host's end).

// [0]: the cell whose code runs now (0: none); [1]: the last cell whose interrupt the main
// thread took itself. Shared with the reader thread.
const running = new Int32Array(new SharedArrayBuffer(8));

const READER = `
const net = require('node:net');
const inspector = require('node:inspector');
const { parentPort, workerData } = require('node:worker_threads');
const running = workerData.running;
// Connected only for the moment of an interrupt: a session still connected when the program
// exits makes node print "Waiting for the debugger to disconnect..." (and wait for it).
function terminate() {
  const session = new inspector.Session();
  session.connectToMainThread();
  session.post('Runtime.terminateExecution', () => {});
  session.disconnect();
}
let pending = Buffer.alloc(0);
let ended = false;
function gone() {
  if (ended) return;
  ended = true;
  parentPort.postMessage({ t: 'gone' });
}
// The main thread reads the first command itself (so the first cell does not wait for this
// thread to boot) and then says 'go': from here on every frame is read by this thread.
parentPort.once('message', listen);
function listen() {
  // An event-loop read, never a blocking one: a thread blocked in read(2) cannot be stopped, and
  // node joins this thread when the program exits (process.exit would wait for the next frame).
  const input = new net.Socket({ fd: workerData.fd, readable: true, writable: false });
  input.on('data', onData);
  input.on('end', gone);
  input.on('error', gone);
  parentPort.postMessage({ t: 'ready' });
}
function onData(chunk) {
  pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
  while (pending.length >= 4) {
    const n = pending.readUInt32BE(0);
    if (pending.length < 4 + n) break;
    const frame = JSON.parse(pending.subarray(4, 4 + n).toString('utf8'));
    pending = pending.subarray(4 + n);
    parentPort.postMessage(frame);
    // A main thread that is free takes the interrupt itself (the cell is waiting): terminating
    // then would hit whatever callback runs next, perhaps inside node. Only a main thread too
    // busy to answer is stopped from here.
    if (frame.t === 'interrupt' && Atomics.load(running, 0) === frame.cell) {
      setTimeout(() => {
        if (Atomics.load(running, 0) === frame.cell && Atomics.load(running, 1) !== frame.cell) terminate();
      }, 250);
    }
  }
}
`;

// The reader thread. Where SIGINT can come it is started once the first cell's synchronous part
// has run (its boot, a fifth of node's start, is then off the way to the first result), else
// before the first command is read. It reads every frame after the first; it is told 'go' once
// the main thread has taken that one.
let reader = null;
let readerUp = false;
let firstTaken = false;

function startReader() {
  if (reader) return;
  reader = new Worker(READER, { eval: true, workerData: { fd: CMD_FD, running } });
  reader.on('message', onFrame);
  reader.on('error', (e) => {
    process.stderr.write(`[agent-tools runner: the command reader failed: ${e.stack}]\n`);
    process.exit(70);
  });
  if (firstTaken) reader.postMessage('go');
}

function onFrame(frame) {
  switch (frame.t) {
    case 'ready':
      readerUp = true;
      break;
    case 'exec':
      queue.push(frame);
      pump();
      break;
    case 'tool_result': {
      const call = calls.get(frame.id);
      if (call) {
        calls.delete(frame.id);
        if (frame.ok) call.resolve(frame.value);
        else call.reject(new ToolError(frame.error || 'the tool call failed'));
      }
      break;
    }
    case 'interrupt':
      Atomics.store(running, 1, frame.cell);
      if (frame.cell === currentCell && interruptCell) interruptCell();
      break;
    case 'gone':
      // A kernel never outlives its pipe, nor does what its cells started in its group.
      try { process.kill(-process.pid, 'SIGKILL'); } catch {}
      process.exit(0);
      break;
    case 'exit':
      // Inspector sessions left connected make node wait at exit ("Waiting for the debugger
      // to disconnect"): close both first.
      session.disconnect();
      setTimeout(() => process.exit(0), 200).unref();
      if (reader) reader.terminate().finally(() => process.exit(0));
      else process.exit(0);
  }
}
