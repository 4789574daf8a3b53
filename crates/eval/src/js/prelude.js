// The agent-tools JavaScript prelude: console, display(), tool(), timers and value formatting.
// Evaluated once per kernel with the host functions as `host`; returns the hooks Rust calls.
(function (host) {
  "use strict";

  const seenTag = Symbol("seen");

  function inspect(value, depth, seen) {
    depth = depth === undefined ? 0 : depth;
    seen = seen || new Set();
    const t = typeof value;
    if (value === null) return "null";
    if (t === "undefined") return "undefined";
    if (t === "string") return depth === 0 ? JSON.stringify(value) : JSON.stringify(value);
    if (t === "number" || t === "boolean") return Object.is(value, -0) ? "-0" : String(value);
    if (t === "bigint") return value + "n";
    if (t === "symbol") return value.toString();
    if (t === "function") {
      const src = Function.prototype.toString.call(value);
      if (src.startsWith("class")) return "[class " + (value.name || "(anonymous)") + "]";
      return "[Function: " + (value.name || "(anonymous)") + "]";
    }
    if (seen.has(value)) return "[Circular]";
    if (value instanceof Error) return value.stack ? value.name + ": " + value.message + "\n" + value.stack.trimEnd() : String(value);
    if (value instanceof Date) return isNaN(value) ? "Invalid Date" : value.toISOString();
    if (value instanceof RegExp) return String(value);
    if (value instanceof Promise) return "Promise { … }";
    if (depth > 4) return Array.isArray(value) ? "[Array]" : "[Object]";
    seen.add(value);
    try {
      if (Array.isArray(value) || ArrayBuffer.isView(value)) {
        const items = [];
        const n = Math.min(value.length, 100);
        for (let i = 0; i < n; i++) items.push(inspect(value[i], depth + 1, seen));
        if (value.length > 100) items.push("… " + (value.length - 100) + " more items");
        const prefix = Array.isArray(value) ? "" : value.constructor.name + "(" + value.length + ") ";
        return prefix + "[" + items.join(", ") + "]";
      }
      if (value instanceof Map) {
        const items = [];
        for (const [k, v] of value) {
          if (items.length >= 100) { items.push("…"); break; }
          items.push(inspect(k, depth + 1, seen) + " => " + inspect(v, depth + 1, seen));
        }
        return "Map(" + value.size + ") {" + (items.length ? " " + items.join(", ") + " " : "") + "}";
      }
      if (value instanceof Set) {
        const items = [];
        for (const v of value) {
          if (items.length >= 100) { items.push("…"); break; }
          items.push(inspect(v, depth + 1, seen));
        }
        return "Set(" + value.size + ") {" + (items.length ? " " + items.join(", ") + " " : "") + "}";
      }
      const keys = Object.keys(value);
      const parts = [];
      for (const k of keys.slice(0, 100)) {
        const key = /^[A-Za-z_$][\w$]*$/.test(k) ? k : JSON.stringify(k);
        parts.push(key + ": " + inspect(value[k], depth + 1, seen));
      }
      if (keys.length > 100) parts.push("… " + (keys.length - 100) + " more keys");
      const ctor = value.constructor && value.constructor !== Object ? value.constructor.name + " " : "";
      return ctor + "{" + (parts.length ? " " + parts.join(", ") + " " : "") + "}";
    } finally {
      seen.delete(value);
    }
  }

  function text(value) {
    return typeof value === "string" ? value : inspect(value);
  }

  function write(stream, args) {
    host.write(stream, Array.prototype.map.call(args, text).join(" ") + "\n");
  }

  const counts = new Map();
  const console = {
    log() { write("stdout", arguments); },
    info() { write("stdout", arguments); },
    debug() { write("stdout", arguments); },
    warn() { write("stderr", arguments); },
    error() { write("stderr", arguments); },
    trace() { write("stderr", arguments); },
    dir(v) { write("stdout", [inspect(v)]); },
    table(v) { write("stdout", [inspect(v)]); },
    count(label) {
      label = label === undefined ? "default" : String(label);
      const n = (counts.get(label) || 0) + 1;
      counts.set(label, n);
      write("stdout", [label + ": " + n]);
    },
    assert(cond, ...rest) { if (!cond) write("stderr", ["Assertion failed" + (rest.length ? ":" : ""), ...rest]); },
  };

  function jsonable(value) {
    try {
      const s = JSON.stringify(value);
      return s !== undefined && s.length <= 200000 ? JSON.parse(s) : undefined;
    } catch (e) {
      return undefined;
    }
  }

  const displaySymbol = Symbol.for("Jupyter.display");

  // The mime bundle of a value: strings as text, objects and arrays as JSON plus a plain view.
  function bundle(value, asResult) {
    if (value !== null && (typeof value === "object" || typeof value === "function") && typeof value[displaySymbol] === "function") {
      const b = value[displaySymbol]();
      if (b && typeof b === "object") return b;
    }
    if (typeof value === "string") return { "text/plain": asResult ? JSON.stringify(value) : value };
    const b = { "text/plain": inspect(value) };
    if (value !== null && typeof value === "object" && !(value instanceof Error)) {
      const j = jsonable(value);
      if (j !== undefined) b["application/json"] = j;
    }
    return b;
  }

  function display(...values) {
    for (const v of values) host.display(JSON.stringify(bundle(v, false)));
  }

  // tool(name, args) -> Promise of the tool's structured result (or its text).
  const pending = new Map();
  let nextCall = 0;
  function tool(name, args) {
    if (args === undefined || args === null) args = {};
    if (typeof args !== "object" || Array.isArray(args)) {
      return Promise.reject(new TypeError("tool(name, args): args must be an object of the tool's arguments"));
    }
    return new Promise((resolve, reject) => {
      const id = ++nextCall;
      pending.set(id, { resolve, reject });
      host.tool(id, String(name), JSON.stringify(args));
    });
  }
  class ToolError extends Error {
    constructor(message) { super(message); this.name = "ToolError"; }
  }
  function settle(id, ok, payload) {
    const p = pending.get(id);
    if (!p) return;
    pending.delete(id);
    if (ok) p.resolve(JSON.parse(payload));
    else p.reject(new ToolError(payload));
  }
  function failAll(message) {
    for (const [id, p] of pending) p.reject(new ToolError(message));
    pending.clear();
  }

  // Timers, driven by the host's event loop while a cell runs.
  const timers = new Map();
  let nextTimer = 0;
  function setTimer(fn, ms, args, repeat) {
    if (typeof fn !== "function") throw new TypeError("the callback must be a function");
    const id = ++nextTimer;
    ms = Math.max(0, Number(ms) || 0);
    timers.set(id, { fn, args, ms, repeat });
    host.setTimer(id, ms);
    return id;
  }
  function fire(id) {
    const t = timers.get(id);
    if (!t) return;
    if (t.repeat) host.setTimer(id, t.ms);
    else timers.delete(id);
    t.fn(...t.args);
  }

  function errorInfo(e) {
    if (e instanceof Error) {
      const stack = (e.stack || "").trimEnd();
      return JSON.stringify({
        ename: e.name || "Error",
        evalue: String(e.message),
        traceback: "Uncaught " + (e.name || "Error") + ": " + e.message + (stack ? "\n" + stack : ""),
      });
    }
    return JSON.stringify({ ename: "Uncaught", evalue: inspect(e), traceback: "Uncaught " + inspect(e) });
  }

  const g = globalThis;
  function define(name, value) {
    Object.defineProperty(g, name, { value, writable: true, configurable: true, enumerable: false });
  }
  define("console", console);
  define("display", display);
  define("tool", tool);
  define("ToolError", ToolError);
  define("setTimeout", (fn, ms, ...args) => setTimer(fn, ms, args, false));
  define("setInterval", (fn, ms, ...args) => setTimer(fn, ms, args, true));
  define("clearTimeout", (id) => { timers.delete(id); });
  define("clearInterval", (id) => { timers.delete(id); });
  define("queueMicrotask", (fn) => { Promise.resolve().then(fn); });

  return {
    settle,
    failAll,
    fire,
    bundle: (v) => JSON.stringify(bundle(v, true)),
    error: errorInfo,
  };
})
