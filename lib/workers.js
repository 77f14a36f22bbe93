'use strict';
// The worker_threads of a pool started from a task file (`new Pool({ filename })`): they serve
// the file's exported functions, and the pool's native scheduler spreads calls among them.
//
// - Start-up: the pool expects a server for any method until the first worker says what the
//   file exports, so calls made meanwhile wait for it (natively, in the pool's queue) instead
//   of failing with MethodNotFound; a call to a name the file does not export fails then.
// - A worker that exits or crashes is replaced; its queued calls wait for the next server of
//   their method (or go to another worker), the ones it was running reject with ServerGone.
// - If the file cannot be loaded before any worker was ready, the calls waiting for one fail
//   with that error, and so do later calls: nothing is retried in a loop.
// - minThreads..maxThreads: one more worker starts when calls are waiting (none is free for
//   them) and no other is starting; a worker above minThreads that served nothing for
//   idleTimeout ms is stopped. Every call of the pool, whatever its way in (exec, call, run,
//   map, request, handle, render), is admitted through `admit()`: the one place that grows it.
// - The workers never keep the process alive by themselves (an idle pool lets Node exit); the
//   calls in flight do, through the pool's channel.

const path = require('node:path');
const { Worker } = require('node:worker_threads');
const { RpcError, CODES, errorText } = require('./errors.js');

const BOOTSTRAP = path.join(__dirname, 'task-worker.js');

class TaskWorkers {
  #native;
  #options;
  /** Worker → { ready, retiring, thread, idleSince, completed } */
  #workers = new Map();
  #everReady = false;
  #failure = null;
  #stopping = false;
  #idleTimer = null;
  #closing = false;
  #growing = false;
  /** Resolves ready() promises once minThreads workers are ready (or loading failed). */
  #readyWaiters = [];
  /** A ref'd timer while ready() promises are pending: they keep the process alive, as a call does. */
  #keepAlive = null;

  /**
   * @param nativePool the pool's native handle
   * @param options its resolved options
   */
  constructor(nativePool, options) {
    this.#native = nativePool;
    this.#options = options;
    nativePool.expect(undefined);
    // maxQueue counts the calls that wait for a thread: the workers being started count as
    // threads, so that calls made before they are ready are not counted as queued.
    nativePool.planServed(options.minThreads * options.concurrency);
    for (let i = 0; i < options.minThreads; i++) this.#spawn();
    if (options.maxThreads > options.minThreads) {
      this.#idleTimer = setInterval(() => this.#shrink(), Math.max(Math.min(options.idleTimeout, 1000), 20));
      this.#idleTimer.unref();
    }
  }

  /** Resolves once minThreads workers serve; rejects with the load error if the file cannot be loaded. */
  ready() {
    return new Promise((resolve, reject) => {
      this.#readyWaiters.push({ resolve, reject });
      this.#tellReady();
      if (this.#readyWaiters.length > 0 && this.#keepAlive === null) this.#keepAlive = setInterval(noop, 2 ** 31 - 1);
    });
  }

  /** Settles the ready() promises if the workers are up, loading failed or the pool stopped. */
  #tellReady() {
    let error = null;
    if (this.#stopping) error = new RpcError(CODES.PoolClosed, 'corepool: the pool stopped before its workers were ready');
    else if (this.#failure !== null) error = new RpcError(CODES.InternalError, this.#failure);
    else if (this.#count((s) => s.ready && !s.retiring) < this.#options.minThreads) return;
    const waiters = this.#readyWaiters;
    this.#readyWaiters = [];
    if (this.#keepAlive !== null) {
      clearInterval(this.#keepAlive);
      this.#keepAlive = null;
    }
    for (const w of waiters) {
      if (error === null) w.resolve();
      else w.reject(error);
    }
  }

  /** Workers that serve or are starting (not retiring). */
  get size() {
    return this.#count((s) => !s.retiring);
  }

  #count(test) {
    let n = 0;
    for (const state of this.#workers.values()) if (test(state)) n++;
    return n;
  }

  /**
   * A call of the pool is being handed to the native side (every entry point's calls pass
   * here, from lib/calls.js through the pool): once it is there, the pool grows if calls wait.
   */
  admit() {
    if (this.#closing || this.#growing) return;
    this.#growing = true;
    queueMicrotask(this.#grow);
  }

  /** The pool takes no new calls: no worker starts for them (the accepted ones still get theirs). */
  close() {
    this.#closing = true;
  }

  /** One more worker starts if calls wait for one (none is free) and no other is starting. */
  #grow = () => {
    this.#growing = false;
    if (this.#stopping || this.#failure !== null) return;
    if (this.#count((s) => !s.ready) > 0 || this.size >= this.#options.maxThreads) return;
    if (waitingCalls(this.#native.stats()) > 0) this.#spawn();
  };

  /** Stops every worker (the pool has no call left for them, or was destroyed). */
  async stop() {
    this.#stopping = true;
    this.#tellReady();
    if (this.#idleTimer !== null) clearInterval(this.#idleTimer);
    await Promise.all([...this.#workers.keys()].map((w) => w.terminate()));
  }

  #spawn() {
    const o = this.#options;
    const worker = new Worker(BOOTSTRAP, {
      workerData: {
        __corepool: { pool: this.#native.id, filename: o.filename, concurrency: o.concurrency },
        user: o.workerData,
      },
      resourceLimits: o.resourceLimits,
      env: o.env,
      argv: o.argv,
      execArgv: o.execArgv,
    });
    const state = { ready: false, retiring: false, thread: worker.threadId, idleSince: Date.now(), completed: 0 };
    this.#workers.set(worker, state);
    worker.on('message', (m) => {
      if (m === null || typeof m !== 'object') return;
      if (m.corepool === 'ready' && !state.ready) {
        state.ready = true;
        state.idleSince = Date.now();
        if (!this.#everReady) {
          this.#everReady = true;
          // Now the pool knows what it serves: calls to any other name fail.
          this.#native.expect(m.methods);
        }
        this.#grow();
        this.#tellReady();
      } else if (m.corepool === 'retired') {
        worker.terminate(); // its server has finished every call it had
      }
    });
    worker.on('error', (e) => {
      if (!state.ready && !this.#everReady && this.#failure === null) {
        this.#failure = `corepool: the task file ${o.filename} could not be loaded: ${errorText(e)}`;
        this.#native.failExpected(this.#failure);
        this.#tellReady();
      }
    });
    worker.on('exit', () => {
      this.#workers.delete(worker);
      if (!this.#stopping && this.#failure === null && this.size < o.minThreads) this.#spawn();
    });
    // After the listeners: adding a 'message' listener refs the worker's port again.
    worker.unref();
  }

  /**
   * Retires the workers above minThreads that served no call for idleTimeout ms: each closes
   * its server (the calls it has still finish there, new ones go elsewhere) and exits once
   * that is done, so retiring a worker never costs a call.
   */
  #shrink() {
    const o = this.#options;
    if (this.#stopping || this.size <= o.minThreads) return;
    const servers = new Map(this.#native.stats().servers.map((s) => [s.thread, s]));
    const now = Date.now();
    for (const [worker, state] of this.#workers) {
      if (this.size <= o.minThreads) break;
      const s = servers.get(state.thread);
      if (!state.ready || state.retiring || s === undefined) continue;
      if (s.queued + s.running > 0 || s.completed !== state.completed) {
        state.completed = s.completed;
        state.idleSince = now;
      } else if (now - state.idleSince >= o.idleTimeout) {
        state.retiring = true;
        worker.postMessage({ corepool: 'retire' });
      }
    }
  }
}

function noop() {}

/** Calls that wait for a JavaScript worker: every queued or waiting call of the pool but the
 *  ones queued on its native threads. */
function waitingCalls(stats) {
  let n = stats.queued + stats.waiting;
  for (const w of stats.workers) n -= w.queued;
  return n;
}

module.exports = { TaskWorkers };
