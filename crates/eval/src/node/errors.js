// Errors in the Node runner: unhandled rejections and uncaught exceptions reported on stderr (the
// kernel goes on), stacks cut at the first frame beneath the cell, a SyntaxError with a caret.

process.on('unhandledRejection', (reason) => {
  if (fromStoppedCell()) return;
  const text = reason instanceof Error ? userStack(reason.stack || String(reason)) : inspect(reason);
  process.stderr.write(`Unhandled promise rejection: ${text}\n`);
});
process.on('uncaughtException', (err) => {
  if (fromStoppedCell()) return;
  process.stderr.write(`Uncaught exception: ${err && err.stack ? userStack(err.stack) : inspect(err)}\n`);
});

// A frame of the runner or of what lies beneath the cell (the inspector, the reader's events):
// a stack is cut at the first one, so it shows the user's frames (and node's above them) only.
const BENEATH_THE_CELL = /node:inspector|agent-tools-runner|\[eval\]|Session\.post|node:internal\/worker|at Worker\.emit|at MessagePort\./;

/** `stack` without the frames beneath the cell. */
function userStack(stack) {
  const lines = String(stack).split('\n');
  const cut = lines.findIndex((l) => /^\s+at /.test(l) && BENEATH_THE_CELL.test(l));
  return (cut < 0 ? lines : lines.slice(0, cut)).join('\n');
}

/** A SyntaxError of the cell's own source, as node prints one: where, the line, a caret. */
function syntaxErrorText(err, details, source, name) {
  const line = details.lineNumber ?? 0;
  const column = details.columnNumber ?? 0;
  const text = String(source).split('\n')[line] ?? '';
  return `${name}:${line + 1}\n${text}\n${' '.repeat(column)}^\n\n${err.name}: ${err.message}`;
}

function errorInfo(err, details, source, name) {
  if (err instanceof Error || (err && typeof err === 'object' && 'stack' in err)) {
    let stack = userStack(err.stack || `${err.name}: ${err.message}`);
    // Thrown by the parser: no frame is the cell's; the place is in the details.
    if (err.name === 'SyntaxError' && details && !stack.includes(`${name}:`)) {
      stack = syntaxErrorText(err, details, source, name);
    }
    return { ename: err.name || 'Error', evalue: String(err.message ?? ''), traceback: stack };
  }
  const text = inspect(err);
  return { ename: 'Error', evalue: text, traceback: `Uncaught ${text}` };
}
