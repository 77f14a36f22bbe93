'use strict';
// The worker_threads of a pool started from a task file (`new Pool({ filename })`): they serve
// the file's exported functions, and the pool's native scheduler spreads calls among them.
//
// - Start-up: the pool expects a server for any method until the first worker says what the
//   file exports, so calls made meanwhile wait for it (natively, in the pool's queue) instead
//   of failing with MethodNotFound; a call to a name the file does not export fails then.
// - A worker that exits or crashes is replaced; its queued calls wait for the next server of
//   their method (or go to another worker), the ones it was running reject with ServerGone.
// - Failed loads (a worker that errs or exits before it is ready: the file throws, does not
//   parse, exports nothing) follow one respawn policy, RESPAWN, kept in `#start`: after k
//   failed loads in a row the next load waits min(firstDelayMs · 2^(k-1), maxDelayMs), and
//   one worker loads at a time. The pool gives up at once when a load fails while no worker
//   serves and none is still loading (as Piscina rejects a task whose worker could not
//   start, the calls waiting learn of it now, not after retries that would fail alike), and
//   after maxFailedLoads in a row of loads made to grow a pool whose other workers serve.
//   Giving up: the calls waiting for a worker (when none serves) and ready() fail with the
//   load error, which is also emitted as the pool's 'error' (when it has listeners), and
//   nothing is loaded until a call comes: that call makes the pool load the file once more
//   (as the delays allow) and waits for the outcome. A load that succeeds ends the failures.
//   A call's timeout counts from when it starts running, so it is the give-up that settles a
//   call no worker can take.
// - minThreads..maxThreads: one more worker starts when calls are waiting (none is free for
//   them) and no other is starting; a worker above minThreads that served nothing for
//   idleTimeout ms is stopped. Every call of the pool, whatever its way in (exec, call, run,
//   map, request, handle, render), is admitted through `admit()`: the one place that grows it.
// - The workers never keep the process alive by themselves (an idle pool lets Node exit); the
//   calls in flight do, through the pool's channel, and so does a pending ready().

const path = require('node:path');
const { performance } = require('node:perf_hooks');
const { Worker } = require('node:worker_threads');
const { RpcError, CODES, errorText } = require('./errors.js');
const { after, every, keepAlive } = require('./timer.js');
const { list } = require('./load-error.js');
const { taskError, PISCINA_WORKER } = require('./task-error.js');
const { openResults, keepResults, closeResults } = require('./calls.js');

const BOOTSTRAP = path.join(__dirname, 'task-worker.js');

/** The respawn policy for failed loads (see above). */
const RESPAWN = Object.freeze({ firstDelayMs: 50, maxDelayMs: 1000, maxFailedLoads: 5 });

/** How long the next load waits after `failed` failed loads in a row. */
function backoff(failed) {
  return failed === 0 ? 0 : Math.min(RESPAWN.firstDelayMs * 2 ** (failed - 1), RESPAWN.maxDelayMs);
}

/** The key of Pool's options under which corepool/piscina hears of its workers (see TaskWorkers). */
const kWorkerHooks = Symbol('workerHooks');

class TaskWorkers {
  #native;
  #options;
  #onError;
  #hooks;
  /** Worker → { ready, retiring, thread, idleSince, completed, error } */
  #workers = new Map();
  /** What the native pool holds calls for: 'any' method (until a worker says what the file
   *  exports), the file's 'methods', or 'nothing' (the waiting calls were failed). */
  #expects = 'any';
  #failedLoads = 0;
  #lastFailure = 0;
  #loadError = null;
  #loadData = null;
  /** The functions the file exports, as the last worker that loaded it said. */
  #methods = null;
  #gaveUp = false;
  #retryTimer = null;
  #stopping = false;
  #closing = false;
  #starting = false;
  #constructing = false;
  #idleTimer = null;
  /** Resolves ready() promises once minThreads workers are ready (or loading failed). */
  #readyWaiters = [];
  /** A ref'd timer while ready() promises are pending: they keep the process alive, as a call does. */
  #keepAlive = null;

  /**
   * @param nativePool the pool's native handle
   * @param options its resolved options
   * @param onError (RpcError) => void: loading gave up with this error
   * @param hooks what corepool/piscina hears of the workers, or null (its `sharesMemory` is the
   *   Pool's, lib/pool.js; its `filename`, the task file load errors name): `message(m)`, a message a
   *   worker posted that is not the pool's own (an object with a `corepool` key); `exit(threadId,
   *   code, error, running, terminated)`, a worker that was serving exited (`error`: the uncaught
   *   exception that ended it, or null; `running`: how many of its calls its departure failed;
   *   `terminated`: ended by terminate())
   */
  constructor(nativePool, options, onError, hooks = null) {
    this.#native = nativePool;
    this.#options = options;
    this.#onError = onError;
    this.#hooks = hooks;
    nativePool.expect(undefined);
    // maxQueue counts the calls that wait for a thread: the workers being started, and those
    // the pool may still start (up to maxThreads), count as threads, so that calls made before
    // they are ready are not counted as queued, and a call beyond the running workers makes
    // one start rather than being refused (as Piscina counts its workers starting).
    nativePool.planServed(this.#planned());
    this.#constructing = true;
    this.#start();
    this.#constructing = false;
    if (options.maxThreads > options.minThreads) {
      this.#idleTimer = every(Math.max(Math.min(options.idleTimeout, 1000), 20), () => this.#shrink()).unref();
    }
  }

  /**
   * Resolves once minThreads workers serve; rejects with the load error if the pool gives up
   * loading. After it gave up, ready() makes it load the file once more, as a call does (a
   * fixed file recovers).
   */
  ready() {
    if (this.#gaveUp) this.admit();
    return new Promise((resolve, reject) => {
      this.#readyWaiters.push({ resolve, reject });
      this.#tellReady();
      if (this.#readyWaiters.length > 0 && this.#keepAlive === null) this.#keepAlive = keepAlive();
    });
  }

  /** Settles the ready() promises if the workers are up, loading gave up or the pool stopped. */
  #tellReady() {
    let error;
    if (this.#stopping) error = new RpcError(CODES.PoolClosed, 'corepool: the pool stopped before its workers were ready: make calls before close()');
    else if (this.#serving() >= this.#options.minThreads) error = null;
    else if (this.#gaveUp) error = this.#loadFailure();
    else return;
    const waiters = this.#readyWaiters;
    this.#readyWaiters = [];
    this.#keepAlive?.clear();
    this.#keepAlive = null;
    for (const w of waiters) {
      if (error === null) w.resolve();
      else w.reject(error);
    }
  }

  /** Workers that exited while serving (a crash, process.exit in a task) and were replaced. */
  exits = 0;

  /** Workers that serve or are starting (not retiring). */
  get size() {
    return this.#count((s) => !s.retiring);
  }

  /** The live Worker objects (starting, serving or retiring), but one being terminated (Piscina drops it at once). */
  list() {
    const live = [];
    for (const [worker, state] of this.#workers) if (!state.terminated) live.push(worker);
    return live;
  }

  /** Workers that serve new calls. */
  #serving() {
    return this.#count((s) => s.ready && !s.retiring);
  }

  #count(test) {
    let n = 0;
    for (const state of this.#workers.values()) if (test(state)) n++;
    return n;
  }

  /**
   * A call of the pool is being handed to the native side (every entry point's calls pass
   * here, from lib/calls.js through the pool): once it is there, the pool grows if calls wait.
   * After the pool gave up loading the file, the call makes it load the file again, and waits
   * for that (as calls made before the first load do).
   */
  admit() {
    if (this.#closing || this.#stopping) return;
    if (this.#gaveUp) {
      this.#gaveUp = false;
      if (this.#expects === 'nothing') {
        this.#native.expect(undefined);
        this.#expects = 'any';
      }
    }
    if (!this.#starting) {
      this.#starting = true;
      queueMicrotask(this.#startSoon);
    }
  }

  #startSoon = () => {
    this.#starting = false;
    this.#start();
  };

  /** The pool takes no new calls: none makes a worker start any more (the accepted ones still get theirs). */
  close() {
    this.#closing = true;
  }

  /**
   * Terminates the worker of `threadId` `thread` now (corepool/piscina: a running task was
   * aborted, and Piscina ends its worker), once its server has departed (it answers no call
   * any more, lib/pool.js kCancel): a new worker starts as for one that crashed.
   */
  terminate(thread) {
    for (const [worker, state] of this.#workers) {
      if (state.thread !== thread || state.terminated) continue;
      state.terminated = true;
      worker.terminate();
      return;
    }
  }

  /** Stops every worker (the pool has no call left for them, or was destroyed). */
  async stop() {
    this.#stopping = true;
    this.#tellReady();
    this.#idleTimer?.clear();
    this.#retryTimer?.clear();
    await Promise.all([...this.#workers.keys()].map((w) => w.terminate()));
  }

  /**
   * Starts the workers the pool needs now, as the respawn policy allows (#wanted): up to
   * minThreads, or more while calls wait for them; one at a time after a failed load, and not
   * before its backoff has passed; after giving up, not at all (a call's admission ends that).
   */
  #start() {
    if (this.#stopping || this.#gaveUp || this.#retryTimer !== null) return;
    if (this.#failedLoads > 0 && this.#count((s) => !s.ready) > 0) return;
    if (!this.#wanted()) return;
    const wait = this.#lastFailure + backoff(this.#failedLoads) - performance.now();
    if (wait > 0) {
      // Calls waiting for the worker keep the process alive, and so does ready().
      this.#retryTimer = after(wait, () => {
        this.#retryTimer = null;
        this.#start();
      }).unref();
      return;
    }
    this.#spawn();
    while (this.#failedLoads === 0 && this.#wanted()) this.#spawn();
  }

  /**
   * Whether one more worker is wanted: fewer than minThreads, or fewer than maxThreads while
   * more calls wait for a worker than the workers starting will take (a slow file loading in
   * one of them does not hold up the others, as Piscina starts them all for a burst).
   */
  #wanted() {
    const o = this.#options;
    if (this.size < o.minThreads) return true;
    if (this.size >= o.maxThreads) return false;
    const waiting = waitingCalls(this.#native.stats());
    const loading = this.#count((s) => !s.ready);
    return loading === 0 ? waiting > 0 : waiting > loading * o.concurrency;
  }

  #spawn() {
    const o = this.#options;
    let worker;
    // Where the worker posts its results to this thread's calls (lib/posted.js).
    const results = openResults();
    try {
      worker = new Worker(BOOTSTRAP, {
        workerData: {
          __corepool: {
            pool: this.#native.id,
            filename: o.filename,
            concurrency: o.concurrency,
            results: results === null ? null : { port: results.there, origin: results.origin },
            // Its results share the shared memory they hold (the hooks' sharesMemory).
            shares: this.#hooks?.sharesMemory === true,
          },
          user: o.workerData,
        },
        transferList: results === null ? undefined : [results.there],
        resourceLimits: o.resourceLimits,
        env: o.env,
        argv: o.argv,
        execArgv: o.execArgv,
      });
    } catch (e) {
      if (results !== null) {
        results.here.close();
        results.there.close();
      }
      // new Pool throws it (its first workers are made there); a later Worker that cannot be
      // made (workerData changed since to something structured clone refuses) is a failed load.
      if (this.#constructing) throw e;
      this.#loadFailed({ why: errorText(e) });
      queueMicrotask(this.#startSoon);
      return;
    }
    if (results !== null) keepResults(worker.threadId, results);
    const state = { ready: false, retiring: false, terminated: false, thread: worker.threadId, idleSince: Date.now(), completed: 0, error: null, failure: null };
    this.#workers.set(worker, state);
    worker.on('message', (m) => {
      if (m === null || typeof m !== 'object' || !('corepool' in m)) {
        this.#hooks?.message(m);
        return;
      }
      if (m.corepool === 'ready' && !state.ready) {
        state.ready = true;
        state.idleSince = Date.now();
        this.#failedLoads = 0;
        this.#methods = m.methods;
        if (this.#expects !== 'methods') {
          // Now the pool knows what it serves: calls to any other name fail.
          this.#native.expect(m.methods);
          this.#expects = 'methods';
        }
        this.#start();
        this.#tellReady();
      } else if (m.corepool === 'failed' && !state.ready) {
        state.failure = { why: m.why, data: m.data }; // lib/load-error.js
      } else if (m.corepool === 'retired') {
        worker.terminate(); // its server has finished every call it had
      }
    });
    worker.on('error', (e) => {
      state.error = e;
    });
    worker.on('exit', (code) => {
      this.#workers.delete(worker);
      // Everything it posted is in the port by now; its calls may settle later.
      if (results !== null) closeResults(state.thread);
      if (!this.#stopping) {
        if (state.ready && !state.retiring && !state.terminated) this.exits++;
        if (!state.ready) this.#loadFailed(state.failure ?? { why: state.error === null ? `its worker exited with code ${code} before it was ready` : loadErrorText(state.error, this.#hooks?.filename ?? o.filename) });
        else if (this.#gaveUp) this.#failWaiting();
        this.#start();
      }
      // Last: what the hook does (an 'error' event without a listener throws) leaves the pool's own bookkeeping done.
      if (state.ready) this.#hooks?.exit(state.thread, code, state.error, this.#native.abandonedBy(state.thread), state.terminated);
    });
    // After the listeners: adding a 'message' listener refs the worker's port again.
    worker.unref();
  }

  /**
   * A worker could not load the file: `why` (text), `data` (where: `{ file, line?, column? }`;
   * lib/load-error.js). The pool gives up now if no worker serves and none is still loading
   * (the calls waiting would wait for nothing but more of the same), else after
   * maxFailedLoads in a row.
   */
  #loadFailed({ why, data }) {
    this.#failedLoads++;
    this.#lastFailure = performance.now();
    this.#loadError = `corepool: the task file ${this.#hooks?.filename ?? this.#options.filename} could not be loaded: ${why}`;
    this.#loadData = data ?? { file: this.#hooks?.filename ?? this.#options.filename };
    if (this.#gaveUp) return;
    const noneLeft = this.#serving() === 0 && this.#count((s) => !s.ready) === 0;
    if (!noneLeft && this.#failedLoads < RESPAWN.maxFailedLoads) return;
    this.#gaveUp = true;
    this.#failWaiting();
    this.#tellReady();
    this.#onError(this.#loadFailure());
  }

  #loadFailure() {
    return new RpcError(CODES.InternalError, this.#loadError, { ...this.#loadData });
  }

  /**
   * An error one of the pool's calls rejects with, made more telling where the pool knows more
   * than the native side: the load error's calls (failed natively, with its message only) get
   * its data too; MethodNotFound lists the file's exports; an error a task threw is made again.
   */
  explain(error) {
    if (error.code === CODES.InternalError && error.data === undefined && error.message === this.#loadError) {
      error.data = { ...this.#loadData };
    } else if (error.code === CODES.MethodNotFound && this.#methods !== null) {
      // The native message starts this way for a name nobody serves (and says more otherwise).
      const m = /^Method not found: ("(?:[^"\\]|\\.)*")(?::|$)/.exec(error.message);
      if (m !== null) error.message = methodNotFound(JSON.parse(m[1]), this.#options.filename, this.#methods);
    } else if (this.#options.filename !== PISCINA_WORKER) {
      return taskError(error);
    }
    return error;
  }

  /** Calls the workers run at once, once as many serve as the pool may start. */
  #planned() {
    return this.#options.maxThreads * this.#options.concurrency;
  }

  /**
   * Given up: the calls waiting for a worker fail with the load error, unless one still serves,
   * and so do the calls that find no worker after that (the native side keeps the error) until
   * a call's admission makes the pool load the file again. The calls that maxQueue parked
   * (onFull: 'wait') wait for a worker too: the planned capacity is lifted first, so that they
   * are admitted and fail with the rest instead of waiting for room no worker will make.
   */
  #failWaiting() {
    if (this.#expects === 'nothing' || this.#serving() > 0) return;
    this.#native.planServed(Infinity);
    this.#native.failExpected(this.#loadError);
    this.#native.planServed(this.#planned());
    this.#expects = 'nothing';
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


/** A load error's message, with the line and column in the task file where its stack shows them. */
function loadErrorText(error, filename) {
  const text = errorText(error);
  let stack;
  try {
    stack = String(error?.stack ?? '');
  } catch {
    return text;
  }
  const at = stack.indexOf(`${filename}:`);
  const place = at < 0 ? null : /^:(\d+)(?::(\d+))?/.exec(stack.slice(at + filename.length));
  if (place === null) return text;
  return place[2] === undefined ? `${text} (line ${place[1]})` : `${text} (line ${place[1]}, column ${place[2]})`;
}

/** MethodNotFound on a task-file pool: the file's exports, and the closest one if it is close. */
function methodNotFound(method, filename, methods) {
  const closest = closestName(method, methods);
  const guess = closest === null ? '' : `; did you mean ${JSON.stringify(closest)}?`;
  return `Method not found: ${JSON.stringify(method)} (the task file ${filename} exports: ${list(methods)}${guess})`;
}

/** The name of `names` nearest `wanted` by edit distance (case counts half), if it is within a third of its length. */
function closestName(wanted, names) {
  let best = null;
  let bestDistance = Infinity;
  for (const name of names) {
    const d = Math.min(editDistance(wanted, name), editDistance(wanted.toLowerCase(), name.toLowerCase()) + 0.5);
    if (d < bestDistance) {
      best = name;
      bestDistance = d;
    }
  }
  const limit = Math.max(1, Math.floor(Math.max(wanted.length, best?.length ?? 0) / 3));
  return bestDistance <= limit ? best : null;
}

/** Levenshtein distance (insertions, deletions, substitutions), in O(|b|) memory. */
function editDistance(a, b) {
  if (a.length > 100 || b.length > 100) return a === b ? 0 : Infinity; // no guess for huge names
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) {
      next[j] = Math.min(row[j] + 1, next[j - 1] + 1, row[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    row = next;
  }
  return row[b.length];
}

/** Calls that wait for a JavaScript worker: every queued or waiting call of the pool but the
 *  ones queued on its native threads. */
function waitingCalls(stats) {
  let n = stats.queued + stats.waiting;
  for (const w of stats.workers) n -= w.queued;
  return n;
}

module.exports = { TaskWorkers, RESPAWN, kWorkerHooks };
