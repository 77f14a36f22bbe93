'use strict';
// The worker_thread of a pool of JavaScript workers (lib/workers.js starts it): it loads the
// task file, serves the file's exported functions on its pool (attached by id: the pool's
// scheduler is native and process-wide), and tells the pool it is ready and what it serves.
// The task file sees its own `workerData`, as with any worker_thread.

const workerThreads = require('node:worker_threads');
const { syncBuiltinESMExports } = require('node:module');
const { pathToFileURL } = require('node:url');
const { attach } = require('./pool.js');
const { loadFailure, noFunction } = require('./load-error.js');
const { kFullErrors, kResults, kUnreadable, kShares } = require('./serve.js');
const { PISCINA_WORKER } = require('./task-error.js');
const { kLoaded } = require('./piscina-common.js');
const { keepAlive } = require('./timer.js');

const { __corepool: own, user } = workerThreads.workerData;
workerThreads.workerData = user;
syncBuiltinESMExports();

/** The functions a task file offers: its named exports, and its default export's (a function
 *  exported as the whole module is the method `default`, as Piscina calls it). */
function methodsOf(namespace) {
  const handlers = Object.create(null);
  const add = (name, f) => {
    if (typeof f === 'function' && !(name in handlers)) handlers[name] = f;
  };
  for (const [name, value] of Object.entries(namespace)) {
    if (name !== 'default' && name !== 'module.exports') add(name, value);
  }
  const main = namespace.default;
  if (typeof main === 'function') add('default', main);
  else if (main !== null && typeof main === 'object') {
    for (const [name, value] of Object.entries(main)) add(name, value);
    // Listed in the order of the default export's (CommonJS: module.exports's) keys, which is
    // the file's; a module namespace's own names are sorted. Which function a name means stays.
    const ordered = Object.create(null);
    for (const name of Object.keys(main)) if (name in handlers) ordered[name] = handlers[name];
    return Object.assign(ordered, handlers);
  }
  return handlers;
}

(async () => {
  const port = workerThreads.parentPort;
  let namespace;
  try {
    namespace = await import(pathToFileURL(own.filename).href);
  } catch (e) {
    // The pool hears where the file went wrong (the 'error' event that follows is not read).
    port.postMessage({ corepool: 'failed', ...loadFailure(e, own.filename) });
    throw e;
  }
  // corepool/piscina's worker is ready once the pool's own task file has loaded (or failed
  // to), as Piscina's; it stays alive meanwhile (a load waiting on what holds no handle would
  // otherwise let its thread end).
  if (own.filename === PISCINA_WORKER) {
    const alive = keepAlive();
    try {
      await namespace.default?.[kLoaded];
    } finally {
      alive.clear();
    }
  }
  const handlers = methodsOf(namespace);
  const methods = Object.keys(handlers);
  if (methods.length === 0) {
    const failure = noFunction(namespace, own.filename);
    port.postMessage({ corepool: 'failed', ...failure });
    throw new Error(failure.why);
  }
  // A task's thrown error reaches its caller whole (stack, causes), to be made again there;
  // corepool/piscina's worker sends its tasks' errors its own way (lib/piscina-worker.js).
  const full = own.filename !== PISCINA_WORKER;
  // Results to the pool's own thread go by its port (lib/posted.js).
  // corepool/piscina's worker says what a result that cannot be written goes as (a rejection
  // with what its getter threw, as Piscina's). Results share the shared memory they hold when
  // the pool says so (corepool/piscina's, as Piscina's postMessage does: lib/workers.js).
  const unreadable = full ? undefined : namespace.default?.[kUnreadable];
  const server = attach(own.pool).serve(handlers, { concurrency: own.concurrency, [kFullErrors]: full, [kResults]: own.results, [kUnreadable]: unreadable, [kShares]: own.shares === true });
  port.on('message', (m) => {
    // The pool retires this worker: new calls go elsewhere, the ones it has finish here.
    if (m !== null && typeof m === 'object' && m.corepool === 'retire') {
      server.close().then(() => port.postMessage({ corepool: 'retired' }));
    }
  });
  port.unref();
  port.postMessage({ corepool: 'ready', methods });
})();
