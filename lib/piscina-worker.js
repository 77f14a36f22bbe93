'use strict';
// The task file corepool/piscina gives corepool (lib/piscina.js): every worker of a Piscina
// pool loads this file, which then loads the user's task files as Piscina's worker does (a
// default export or `module.exports`, named exports by `name`, an exported Promise of the
// function, another `filename` per task). It serves one method, `piscina`.
//
// - `require('node:worker_threads').workerData` and `Piscina.workerData` are the pool's
//   `workerData` option (this file takes its own settings out of the envelope first).
// - `Piscina.isWorkerThread` is true here: this file marks the thread before any task file
//   is loaded.
// - `niceIncrement` lowers this thread's priority (Linux; elsewhere ignored), as Piscina's
//   worker does with @napi-rs/nice.
// - A task's result that `Piscina.move()` wrapped goes back as its value, its ArrayBuffer
//   moved (lib/clone.js); values go as structured clone carries them; a thrown error goes
//   back as its name, message, stack and own primitive fields, and the pool makes an Error of
//   them again; each outcome carries the task's running time (for `runTime` / `waitTime`).

const workerThreads = require('node:worker_threads');
const { syncBuiltinESMExports } = require('node:module');
const { pathToFileURL } = require('node:url');
const { performance } = require('node:perf_hooks');
const fs = require('node:fs');
const { types } = require('node:util');
const os = require('node:os');
const { KEY, WORKER_MARK, THROWN, isMoved, kValue, kTransferable, kLoaded } = require('./piscina-common.js');
const { transfer } = require('./clone.js');
const { safely } = require('./errors.js');
const { kUnreadable } = require('./serve.js');
const { adopt } = require('./thenable.js');

const envelope = workerThreads.workerData;
const own = envelope?.[KEY] ?? {};
workerThreads.workerData = envelope?.user;
syncBuiltinESMExports();
globalThis[WORKER_MARK] = Object.freeze({ workerData: envelope?.user });

if (own.niceIncrement > 0 && process.platform === 'linux') {
  try {
    // /proc/thread-self names this thread's own id: setpriority() on it changes this thread only.
    const tid = Number(fs.readlinkSync('/proc/thread-self').split('/').pop());
    os.setPriority(tid, Math.min(19, os.getPriority(tid) + own.niceIncrement));
  } catch {
    // As Piscina without @napi-rs/nice: the priority stays as it was.
  }
}

/** filename + '\0' + name → the handler (a Promise of it while it loads). */
const handlers = new Map();
/** filename + '\0' + name → the handler, once loaded: a task for it runs without waiting. */
const loaded = new Map();

/**
 * Piscina's worker's lookup: the module's export `name`, awaited (a module may export a
 * Promise of its function). The file is imported; one that `import()` cannot take by its
 * name (an extension only a require hook knows, `execArgv: ['-r', 'ts-node/register']`) is
 * `require`d, as Piscina, which requires first, would load it. (Requiring first would load an
 * ES module through `require`, with Node 22's warning about it, and a file whose code threw
 * once could be run a second time by the import after it, as Piscina does.)
 */
async function load(filename, name) {
  let ns;
  try {
    ns = await import(pathToFileURL(filename).href);
  } catch (e) {
    if (!refusedByName(e, filename)) throw e;
    // (Its named exports are read from `default` below, as a CommonJS file's are.)
    try {
      ns = { default: require(filename) };
    } catch (required) {
      // Not a file a hook loads either: import()'s error, as Piscina gives it, with require's.
      if (!Object.hasOwn(e, 'cause')) Object.defineProperty(e, 'cause', { value: required, writable: true, configurable: true });
      throw e;
    }
  }
  let handler = await ns[name];
  const main = ns.default;
  if (typeof handler !== 'function' && main !== null && (typeof main === 'object' || typeof main === 'function')) {
    // A named export of CommonJS; or its `default` when it says it stands for an ES module
    // (`__esModule`, what TypeScript and Babel write for `export default`), as Piscina reads it.
    if (name !== 'default') handler = await main[name];
    else if (main.__esModule) handler = await main.default;
  }
  if (typeof handler !== 'function') throw new Error(`No handler function exported from ${filename}`);
  return handler;
}

/**
 * Whether import() refused the task file itself by its name (its extension; TypeScript it
 * will not strip), before any of it ran: such a file is required. The same error about a
 * file the task file loads is the task file's own load error: it ran, and is not run again.
 */
function refusedByName(e, filename) {
  const code = safely(() => e.code);
  if (code !== 'ERR_UNKNOWN_FILE_EXTENSION' && code !== 'ERR_UNSUPPORTED_TYPESCRIPT_SYNTAX' && code !== 'ERR_UNSUPPORTED_NODE_MODULES_TYPE_STRIPPING') return false;
  const message = safely(() => e.message);
  return typeof message === 'string' && message.includes(filename);
}

function handlerFor(filename, name) {
  const key = `${filename}\0${name}`;
  let h = handlers.get(key);
  if (h === undefined) {
    h = load(filename, name);
    handlers.set(key, h);
    h.then((f) => loaded.set(key, f), () => {});
    // A file that failed to load is tried again by the next task, as Piscina does.
    h.catch(() => handlers.delete(key));
  }
  return h;
}

// As Piscina's worker, the default task file is loaded when the worker starts, and the worker
// is ready once that is done (lib/task-worker.js waits for it): a task aborted while its file
// loads would otherwise end the worker (lib/piscina.js), and the load would start over.
exports[kLoaded] = typeof own.filename === 'string' ? handlerFor(own.filename, own.name).then(() => {}, () => {}) : Promise.resolve();

/**
 * The outcome of a task that threw `e`: `[ms, thrown, THROWN]`, which crosses as a result
 * does (structured clone), so the pool can reject with what was thrown. An Error (a native
 * one, a class extending Error too) as `{ error: { name, message, stack, cause?, own } }`
 * (`own`: its other own enumerable fields of primitive values), so that its class and fields
 * are made again on the pool's thread; anything else as `{ value }`, as structured clone
 * carries it (an object with its own fields, a Date, undefined…). Each part of the error is
 * read once; a part whose getter throws is left out. Nothing the error holds can be taken
 * for corepool's own items: they are the array's, the error one object inside it.
 */
function thrownOut(e, started) {
  return thrownAfter(e, performance.now() - started);
}

/** thrownOut for a task that ran `ms`. */
function thrownAfter(e, ms) {
  if (!types.isNativeError(e)) return [ms, { value: e }, THROWN];
  const error = {};
  const name = safely(() => e.name);
  error.name = typeof name === 'string' ? name : 'Error';
  // (A message that is no string is made one, as V8 writes an error's message.)
  const message = safely(() => e.message);
  error.message = typeof message === 'string' ? message : message === undefined ? '' : (safely(() => String(message)) ?? '');
  const stack = safely(() => e.stack);
  if (typeof stack === 'string') error.stack = stack;
  if (safely(() => Object.hasOwn(e, 'cause'))) {
    const cause = safely(() => ({ cause: e.cause }));
    if (cause !== undefined) error.cause = cause.cause;
  }
  const own = {};
  for (const key of safely(() => Object.keys(e)) ?? []) {
    if (key === 'name' || key === 'message' || key === 'stack' || key === 'cause') continue;
    const v = safely(() => ({ v: e[key] }))?.v;
    if (v === null || typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') {
      Object.defineProperty(own, key, { value: v, enumerable: true, writable: true, configurable: true });
    }
  }
  error.own = own;
  return [ms, { error }, THROWN];
}

/**
 * A task's outcome `[ms, result]` that could not be sent because a getter or a Proxy trap in
 * the result threw `e` (lib/serve.js): the task rejects with `e`, as Piscina's worker, whose
 * postMessage of the result threw it, rejects the task with it.
 */
exports[kUnreadable] = (outcome, e) => thrownAfter(e, Array.isArray(outcome) && typeof outcome[0] === 'number' ? outcome[0] : 0);

/** The handler of the last task run here, and its file and name: most tasks run the same one. */
let last = { filename: null, name: null, handler: undefined };

/**
 * `piscina(filename, name, hasTask, task?, ctx)`: runs the task; gives `[ms, result?]` (ms:
 * the handler's running time; no result when it is undefined), or a Promise of it. A task for
 * the pool's own file and name comes without them, as `piscina(task?, ctx)` (lib/piscina.js).
 * A task whose handler is loaded and returns no Promise is done here, without a turn of the
 * microtask queue.
 */
exports.piscina = function piscina(filename, name, hasTask, given) {
  // The last argument is always the call's context: the count tells the two forms apart.
  let task;
  if (arguments.length <= 2) {
    task = arguments.length === 2 ? filename : undefined;
    filename = own.filename;
    name = own.name;
  } else task = hasTask ? given : undefined;
  // Nothing is sent when the task starts: its running time rides with its result (or error).
  const started = performance.now();
  let handler = last.handler;
  if (filename !== last.filename || name !== last.name) {
    handler = loaded.get(`${filename}\0${name}`);
    if (handler !== undefined) last = { filename, name, handler };
  }
  return handler === undefined ? loadAndRun(filename, name, task, started) : run(handler, task, started);
};

async function loadAndRun(filename, name, task, started) {
  let handler;
  try {
    handler = await handlerFor(filename, name);
  } catch (e) {
    return thrownOut(e, started);
  }
  return run(handler, task, started);
}

/** Calls the handler: the outcome, or a Promise of it if the handler returned a thenable. */
function run(handler, task, started) {
  try {
    const result = handler(task);
    // Reading `then` may run user code (a getter, a Proxy trap): inside the try.
    const adopted = adopt(result);
    return adopted === null ? outcome(result, started) : settled(adopted, started);
  } catch (e) {
    return thrownOut(e, started);
  }
}

async function settled(pending, started) {
  try {
    return outcome(await pending, started);
  } catch (e) {
    return thrownOut(e, started);
  }
}

function outcome(result, started) {
  // A result Piscina.move() wrapped goes as its value, its ArrayBuffer moved (detached here);
  // anything else it wrapped is copied.
  if (isMoved(result)) {
    const buffer = result[kTransferable];
    const ms = performance.now() - started;
    return types.isArrayBuffer(buffer) ? transfer([ms, result[kValue]], [buffer]) : [ms, result[kValue]];
  }
  // undefined would cross as null: it crosses as an absent third element.
  return result === undefined ? [performance.now() - started] : [performance.now() - started, result];
}
