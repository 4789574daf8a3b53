// The tool() bridge of the Node runner: `await tool(name, args)` calls a tool of the harness
// through the host (the reader thread hands its result over).

class ToolError extends Error {}
ToolError.prototype.name = 'ToolError';
globalThis.ToolError = ToolError;
const calls = new Map();
let nextCall = 0;
/** `await tool(name, args)` calls a tool of the harness through the host. */
globalThis.tool = function tool(name, args = {}) {
  if (args === null || typeof args !== 'object' || Array.isArray(args)) {
    return Promise.reject(new TypeError('tool(name, args): args must be an object of the tool\'s arguments'));
  }
  if (fromStoppedCell()) return Promise.reject(new ToolError('the cell was interrupted'));
  const id = ++nextCall;
  const cell = cellContext.getStore() ?? currentCell;
  return new Promise((resolve, reject) => {
    calls.set(id, { resolve, reject, cell });
    send({ t: 'tool_call', cell: currentCell, id, name: String(name), args });
  });
};
