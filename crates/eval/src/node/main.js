// The Node runner's start, joined last: the hello, then the first command, read on the main thread
// (while the reader thread boots, where it is started first), then the reader for every later one.

send({
  t: 'hello',
  pid: process.pid,
  executable: process.execPath,
  version: process.version,
  cwd: process.cwd(),
  typescript: typeof stripTypes === 'function',
});

// The first command, read here (while the reader thread boots, where it is started first): a
// blocking read is safe on this thread, as nothing else can run or exit before the first
// command. Exactly one frame is taken, so the reader thread, told 'go', starts at the next.
if (!SIGNALS) startReader();
const head = readCommandBytes(4);
const body = head && readCommandBytes(head.readUInt32BE(0));
firstTaken = true;
if (reader) reader.postMessage('go');
const first = body ? JSON.parse(body.toString('utf8')) : { t: 'gone' };
onFrame(first);
// Whatever the first command was, every later one needs the reader.
if (first.t !== 'exec') startReader();
