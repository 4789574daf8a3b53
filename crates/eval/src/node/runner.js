// The agent-tools Node.js kernel runner, shipped inside the agent-tools-eval crate.
//
// The runner is this file and those `mod.rs` joins after it at build time, one concern each and
// all one module: `frames.js` (the frames), `reader.js` (the reader thread), `source.js` (a cell's
// source: imports, TypeScript), `stopping.js` (stopping a cell), `evaluate.js` (the inspector
// session), `display.js` (rich display), `tool.js` (the tool() bridge), `errors.js` (errors and
// stacks), `cells.js` (running a cell) and `main.js` (the start). This file holds the requires
// and the environment's settings.
//
// The host starts `node -e BOOTSTRAP`; the bootstrap reads the runner over the command pipe and
// runs it. Protocol: frames of a 4-byte big-endian length plus UTF-8 JSON, host -> kernel on
// fd 3 (its first frame read by the main thread, every later one by a worker thread, so an
// interrupt arrives while the main thread is busy),
// kernel -> host on fd 4. fds 1 and 2 are the cell's stdout and stderr.
//
// Cells run through the in-process inspector's `Runtime.evaluate` with `replMode`, which gives
// what a REPL needs: the completion value, top-level await, and let/const/class declarations
// that persist and may be declared again. An interrupt is `Runtime.terminateExecution` from the
// worker (a busy loop stops, state stays), plus rejecting a cell that is waiting; before the
// worker is up, a SIGINT from the host stops the cell's synchronous part.
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const util = require('node:util');
const inspector = require('node:inspector');
const { Module } = require('node:module');
const vm = require('node:vm');
const { Worker } = require('node:worker_threads');
const { pathToFileURL } = require('node:url');
const { AsyncLocalStorage, createHook } = require('node:async_hooks');

const EVT_FD = Number(process.env.AGENT_TOOLS_KERNEL_EVT_FD || 4);
const CMD_FD = Number(process.env.AGENT_TOOLS_KERNEL_CMD_FD || 3);
// Whether the host interrupts with SIGINT too (no capsule prefix stands between it and node).
const SIGNALS = process.env.AGENT_TOOLS_INTERRUPT_SIGNAL === '1';
delete process.env.AGENT_TOOLS_KERNEL_EVT_FD;
delete process.env.AGENT_TOOLS_KERNEL_CMD_FD;
delete process.env.AGENT_TOOLS_INTERRUPT_SIGNAL;
