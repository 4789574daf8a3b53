// Rich display in the Node runner: a value's mime bundle (`util.inspect` text, JSON, a custom
// `Symbol.for('Jupyter.display')` bundle) and `display()`.

function inspect(value) {
  return util.inspect(value, { depth: 4, colors: false, maxArrayLength: 100, maxStringLength: 20000, breakLength: 100 });
}

function bundleOf(value) {
  if (value && typeof value === 'object') {
    const custom = value[Symbol.for('Jupyter.display')];
    if (typeof custom === 'function') {
      const b = custom.call(value);
      if (b && typeof b === 'object') return b;
    }
  }
  const bundle = { 'text/plain': inspect(value) };
  if (value !== null && typeof value === 'object' && !(value instanceof Error)) {
    try {
      const json = JSON.parse(JSON.stringify(value));
      if (json !== undefined && JSON.stringify(json).length <= 200000) bundle['application/json'] = json;
    } catch {}
  }
  return bundle;
}

let currentCell = 0;

/** `display(value)`; `display(bundle, {raw: true})` sends a mime bundle as it is. */
globalThis.display = function display(value, options) {
  if (fromStoppedCell()) return;
  let bundle;
  if (options && options.raw && value && typeof value === 'object') {
    bundle = {};
    for (const [k, v] of Object.entries(value)) bundle[k] = Buffer.isBuffer(v) ? v.toString('base64') : v;
  } else if (Buffer.isBuffer(value) && value.subarray(0, 4).toString('hex') === '89504e47') {
    bundle = { 'image/png': value.toString('base64'), 'text/plain': `<PNG image, ${value.length} bytes>` };
  } else {
    bundle = typeof value === 'string' ? { 'text/plain': value } : bundleOf(value);
  }
  send({ t: 'display', cell: currentCell, bundle });
};
