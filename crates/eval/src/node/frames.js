// The Node runner's frames to and from the host, a 4-byte big-endian length plus UTF-8 JSON: sent
// on fd 4, and the first command read from fd 3 (every later one the reader thread reads).

// JSON.stringify escapes a lone surrogate (`\ud800`), which the host's strict JSON refuses; a
// well-formed pair it writes as itself. So an escaped surrogate in the text is a lone one.
const LONE_SURROGATE = /\\u[dD][89a-fA-F][0-9a-fA-F]{2}/;

function wellFormed(_key, value) {
  return typeof value === 'string' ? value.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd') : value;
}

function send(frame) {
  let text = JSON.stringify(frame);
  if (LONE_SURROGATE.test(text)) text = JSON.stringify(frame, wellFormed);
  const body = Buffer.from(text, 'utf8');
  const buf = Buffer.alloc(4 + body.length);
  buf.writeUInt32BE(body.length, 0);
  body.copy(buf, 4);
  let off = 0;
  while (off < buf.length) {
    try {
      off += fs.writeSync(EVT_FD, buf, off, buf.length - off);
    } catch (e) {
      if (e.code !== 'EAGAIN') throw e;
    }
  }
}

/** Reads `n` bytes of the command pipe, blocking; null at its end. */
function readCommandBytes(n) {
  const buf = Buffer.alloc(n);
  let off = 0;
  while (off < n) {
    let got = 0;
    try {
      got = fs.readSync(CMD_FD, buf, off, n - off, null);
    } catch (e) {
      if (e.code === 'EAGAIN') continue;
      return null;
    }
    if (got === 0) return null;
    off += got;
  }
  return buf;
}
