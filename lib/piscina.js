'use strict';
// corepool/piscina: Piscina 5's API on corepool's scheduler. `new Piscina(options)` makes a
// corepool Pool of JavaScript workers whose task file is lib/piscina-worker.js; that file loads
// the user's task files as Piscina's worker does, so `run(task, { name, filename })` works for
// any file and export. Options are checked with Piscina's own messages; what corepool cannot
// honour is refused with a message that says why (docs/piscina.md has the table).

const { EventEmitter } = require('node:events');
const path = require('node:path');
const { types } = require('node:util');
const os = require('node:os');
const { fileURLToPath } = require('node:url');
const { performance, createHistogram } = require('node:perf_hooks');
const { isMainThread, SHARE_ENV } = require('node:worker_threads');
const { Pool, RpcError } = require('../index.js');
const { contract } = require('./native.js');
const { kCancellableCall, kCancel, kWithdraw, kTerminate, kWorkers, kWorkerHooks } = require('./pool.js');
const { after, keepAlive } = require('./timer.js');
const { version } = require('../package.json');
const { KEY, THROWN, WORKER_MARK, kTransferable, kValue, kQueueOptions, kMovable, isTransferable, isMoved } = require('./piscina-common.js');

const CODES = RpcError.codes;
const WORKER = path.join(__dirname, 'piscina-worker.js');

function cores() {
  return typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length;
}

/** Piscina's errors (its src/errors.ts), same messages. */
const Errors = {
  ThreadTermination: () => new Error('Terminating worker thread'),
  FilenameNotProvided: () => new Error('filename must be provided to run() or in options object'),
  TaskQueueAtLimit: () => new Error('Task queue is at limit'),
  NoTaskQueueAvailable: () => new Error('No task queue available and all Workers are busy'),
  CloseTimeout: () => new Error('Close operation timed out'),
};

/** Piscina's AbortError: name 'AbortError', message 'The task has been aborted', the reason as cause. */
class AbortError extends Error {
  constructor(reason) {
    super('The task has been aborted', { cause: reason });
  }

  get name() {
    return 'AbortError';
  }
}

/** Piscina's two FIFO task queues. corepool's scheduler queues tasks itself (FIFO); these are accepted as `taskQueue` and stay empty. */
class ArrayTaskQueue {
  tasks = [];

  get size() {
    return this.tasks.length;
  }

  shift() {
    return this.tasks.shift() ?? null;
  }

  push(task) {
    this.tasks.push(task);
  }

  remove(task) {
    const i = this.tasks.indexOf(task);
    if (i !== -1) this.tasks.splice(i, 1);
  }
}

class FixedQueue extends ArrayTaskQueue {}

/** Piscina's `move()` wrappers. */
class DirectlyTransferable {
  #value;

  constructor(value) {
    this.#value = value;
  }

  get [kTransferable]() {
    return this.#value;
  }

  get [kValue]() {
    return this.#value;
  }
}

class ArrayBufferViewTransferable {
  #view;

  constructor(view) {
    this.#view = view;
  }

  get [kTransferable]() {
    return this.#view.buffer;
  }

  get [kValue]() {
    return this.#view;
  }
}

const STANDARD_ERRORS = { Error, TypeError, RangeError, SyntaxError, ReferenceError, EvalError, URIError };

/** What a transfer list's item moves: Piscina's transferable wrappers name their buffer. */
function transferred(item) {
  return isTransferable(item) ? item[kTransferable] : item;
}

/** A settled promise: its reactions run as microtasks (see #drainCheck). */
const SETTLED = Promise.resolve();

function maybeFileURLToPath(filename) {
  return filename.startsWith('file:') ? fileURLToPath(new URL(filename)) : filename;
}

/** The FIFO queues Piscina ships, empty: what corepool's own queue does anyway. */
function isFifoQueue(q) {
  const name = q?.constructor?.name;
  return (q instanceof ArrayTaskQueue || name === 'ArrayTaskQueue' || name === 'FixedQueue') && q.size === 0;
}

/** Piscina's checks, with its messages (its src/index.ts). */
function validate(opts) {
  if (typeof opts.filename !== 'string' && opts.filename != null) throw new TypeError('options.filename must be a string or null');
  if (typeof opts.name !== 'string' && opts.name != null) throw new TypeError('options.name must be a string or null');
  if (opts.minThreads !== undefined && (typeof opts.minThreads !== 'number' || opts.minThreads < 0)) {
    throw new TypeError('options.minThreads must be a non-negative integer');
  }
  if (opts.maxThreads !== undefined && (typeof opts.maxThreads !== 'number' || opts.maxThreads < 1)) {
    throw new TypeError('options.maxThreads must be a positive integer');
  }
  if (opts.minThreads !== undefined && opts.maxThreads !== undefined && opts.minThreads > opts.maxThreads) {
    throw new RangeError('options.minThreads and options.maxThreads must not conflict');
  }
  if (opts.idleTimeout !== undefined && (typeof opts.idleTimeout !== 'number' || opts.idleTimeout < 0)) {
    throw new TypeError('options.idleTimeout must be a non-negative integer');
  }
  if (opts.maxQueue !== undefined && opts.maxQueue !== 'auto' && (typeof opts.maxQueue !== 'number' || opts.maxQueue < 0)) {
    throw new TypeError('options.maxQueue must be a non-negative integer');
  }
  if (opts.concurrentTasksPerWorker !== undefined && (typeof opts.concurrentTasksPerWorker !== 'number' || opts.concurrentTasksPerWorker < 1)) {
    throw new TypeError('options.concurrentTasksPerWorker must be a positive integer');
  }
  if (opts.atomics != null && (typeof opts.atomics !== 'string' || !['sync', 'async', 'disabled'].includes(opts.atomics))) {
    throw new TypeError('options.atomics should be a value of sync, sync or disabled.');
  }
  if (opts.resourceLimits !== undefined && (typeof opts.resourceLimits !== 'object' || opts.resourceLimits === null)) {
    throw new TypeError('options.resourceLimits must be an object');
  }
  if (opts.taskQueue !== undefined) {
    const q = opts.taskQueue;
    const isTaskQueue = typeof q === 'object' && q !== null && 'size' in q && typeof q.shift === 'function' && typeof q.remove === 'function' && typeof q.push === 'function';
    if (!isTaskQueue) throw new TypeError('options.taskQueue must be a TaskQueue object');
  }
  if (opts.niceIncrement !== undefined && (typeof opts.niceIncrement !== 'number' || (opts.niceIncrement < 0 && process.platform !== 'win32'))) {
    throw new TypeError('options.niceIncrement must be a non-negative integer on Unix systems');
  }
  if (opts.trackUnmanagedFds !== undefined && typeof opts.trackUnmanagedFds !== 'boolean') {
    throw new TypeError('options.trackUnmanagedFds must be a boolean value');
  }
  if (opts.closeTimeout !== undefined && (typeof opts.closeTimeout !== 'number' || opts.closeTimeout < 0)) {
    throw new TypeError('options.closeTimeout must be a non-negative integer');
  }
  if (opts.loadBalancer !== undefined && (typeof opts.loadBalancer !== 'function' || opts.loadBalancer.length < 1)) {
    throw new TypeError('options.loadBalancer must be a function with at least two args');
  }
  if (opts.workerHistogram !== undefined && typeof opts.workerHistogram !== 'boolean') {
    throw new TypeError('options.workerHistogram must be a boolean');
  }
  if (opts.stricterFIFO !== undefined && typeof opts.stricterFIFO !== 'boolean') {
    throw new TypeError('options.stricterFIFO must be a boolean');
  }
  // What corepool cannot honour: refused, saying why, rather than silently ignored.
  if (opts.taskQueue !== undefined && !isFifoQueue(opts.taskQueue)) {
    throw new TypeError(
      "corepool/piscina: options.taskQueue: a custom TaskQueue cannot be used: corepool's native scheduler keeps its own first-in-first-out queue (an empty Piscina.FixedQueue or ArrayTaskQueue, which are FIFO, is accepted)",
    );
  }
  if (opts.loadBalancer !== undefined) {
    throw new TypeError("corepool/piscina: options.loadBalancer cannot be used: corepool's native scheduler picks the worker (least busy first)");
  }
  if (opts.env === SHARE_ENV) {
    throw new TypeError('corepool/piscina: options.env cannot be SHARE_ENV: give an object (each worker gets its own copy)');
  }
  if (opts.env != null && typeof opts.env !== 'object') {
    throw new TypeError('corepool/piscina: options.env must be an object');
  }
  if (opts.useAtomics !== undefined && typeof opts.useAtomics !== 'boolean') {
    throw new TypeError('options.useAtomics must be a boolean value');
  }
}

/** Piscina's resolved options (what `piscina.options` shows). */
function fill(opts) {
  const parallelism = cores();
  const o = {
    filename: null,
    name: 'default',
    minThreads: Math.max(Math.floor(parallelism / 2), 1),
    maxThreads: parallelism * 1.5,
    idleTimeout: 0,
    maxQueue: Infinity,
    concurrentTasksPerWorker: 1,
    atomics: 'sync',
    taskQueue: new ArrayTaskQueue(),
    niceIncrement: 0,
    trackUnmanagedFds: true,
    closeTimeout: 30000,
    recordTiming: true,
    stricterFIFO: false,
    workerHistogram: false,
  };
  for (const [key, value] of Object.entries(opts)) if (value !== undefined) o[key] = value;
  if (o.filename) o.filename = maybeFileURLToPath(o.filename);
  if (o.name == null) o.name = 'default';
  if (opts.maxThreads !== undefined && o.minThreads >= opts.maxThreads) o.minThreads = opts.maxThreads;
  if (opts.minThreads !== undefined && o.maxThreads <= opts.minThreads) o.maxThreads = opts.minThreads;
  o.maxQueue = opts.maxQueue === 'auto' ? o.maxThreads ** 2 : o.maxQueue;
  return o;
}

class Piscina extends EventEmitter {
  #options;
  #pool;
  #start = performance.now();
  #completed = 0;
  #inflight = 0;
  #needsDrain = false;
  #maxCapacity;
  #closing = null;
  #destroyed = false;
  /**
   * destroy()s and close()s under way: a run() meanwhile is refused, and makes no pool. Once
   * none is and the pool was destroyed (close() destroys it too), the next run() starts the
   * workers again, as Piscina's.
   */
  #ending = 0;
  /** What the corepool Pool under this one is made with (again after an end). */
  #poolOptions;
  #runTime = null;
  #waitTime = null;
  #histogram = null;
  /** The tasks in flight (their handles: see run()). */
  #tasks = new Set();
  /** threadId → the error the tasks of the last workers that exited reject with. */
  #deaths = new Map();
  #lastFilename = null;
  #lastResolved = null;
  /**
   * The task file and name the workers were given (the file as resolved when the pool was
   * made): a task for them goes without them. (`options.name` may change later: Piscina reads
   * it at each run.)
   */
  #ownFile = null;
  #ownName = null;

  constructor(options = {}) {
    super();
    if (options === null || typeof options !== 'object') throw new TypeError('options must be an object');
    const opts = { __proto__: null, ...options };
    validate(opts);
    const o = fill(opts);
    this.#options = o;
    if (o.recordTiming) {
      this.#runTime = createHistogram();
      this.#waitTime = createHistogram();
    }
    // corepool counts whole workers and tasks; Piscina takes fractions (2 cores → maxThreads 3).
    // Piscina's checks let NaN through (`Number(process.env.UNSET)`), and its pool then runs
    // as if NaN workers or tasks per worker were 1, an idle timeout of NaN 0, a maxQueue of NaN
    // no limit: so do these. `maxThreads: Infinity` (a worker per task waiting, for Piscina)
    // is as many as corepool starts.
    const given = (v, ifNaN) => (Number.isNaN(v) ? ifNaN : v);
    const maxThreads = Math.min(contract.maxThreads, Math.max(1, Math.ceil(given(o.maxThreads, 1))));
    const minThreads = Math.min(maxThreads, Math.max(1, Math.ceil(given(o.minThreads, 1))));
    const perWorker = given(o.concurrentTasksPerWorker, 1);
    const concurrency = perWorker === Infinity ? Infinity : Math.ceil(perWorker);
    const maxQueue = given(o.maxQueue, Infinity);
    this.#maxCapacity = maxThreads * concurrency;
    if (typeof o.filename === 'string') this.#ownFile = this.#resolve(o.filename);
    this.#ownName = o.name;
    this.#poolOptions = {
      filename: WORKER,
      minThreads,
      maxThreads,
      idleTimeout: given(o.idleTimeout, 0),
      concurrency,
      maxQueue: maxQueue === Infinity ? Infinity : Math.ceil(maxQueue),
      resourceLimits: o.resourceLimits,
      env: o.env ?? undefined,
      argv: o.argv,
      execArgv: o.execArgv,
      workerData: {
        [KEY]: { filename: this.#ownFile, name: this.#ownName, niceIncrement: o.niceIncrement },
        user: o.workerData,
      },
      // What a task posts on parentPort is the pool's 'message'; a worker that dies settles its
      // own tasks. Results share the shared memory they hold, as Piscina's (lib/calls.js).
      [kWorkerHooks]: {
        sharesMemory: true,
        // A worker that cannot load names the pool's task file, not corepool/piscina's own.
        filename: this.#ownFile ?? undefined,
        message: (m) => this.emit('message', m),
        exit: (thread, code, error, running, terminated) => this.#workerExited(thread, code, error, running, terminated),
      },
    };
    this.#pool = new Pool(this.#poolOptions);
  }

  /**
   * Runs `task` on a worker: the function `name` of `filename` (defaults: the pool's). Rejects
   * with the task's error, an AbortError, or Piscina's queue errors.
   */
  run(task, options = { __proto__: null }) {
    if (options === null || typeof options !== 'object') return Promise.reject(new TypeError('options must be an object'));
    options = { __proto__: null, ...options };
    const transferList = options.transferList;
    const signal = options.signal ?? null;
    let filename = options.filename ?? null;
    let name = options.name ?? null;
    if (transferList !== undefined && !Array.isArray(transferList)) return Promise.reject(new TypeError('transferList argument must be an Array'));
    if (filename != null && typeof filename !== 'string') return Promise.reject(new TypeError('filename argument must be a string'));
    if (name != null && typeof name !== 'string') return Promise.reject(new TypeError('name argument must be a string'));
    if (signal != null && typeof signal !== 'object') return Promise.reject(new TypeError('signal argument must be an object'));
    filename = filename ?? this.#options.filename;
    name = name ?? this.#options.name;
    if (typeof filename !== 'string') return Promise.reject(Errors.FilenameNotProvided());
    filename = this.#resolve(filename);
    if (this.#destroyed && this.#ending === 0) this.#reopen();
    if (this.#closing !== null || this.#destroyed) return Promise.reject(new AbortError('queue is being terminated'));
    if (signal?.aborted) return Promise.reject(new AbortError(signal.reason));

    // The task's cancellation: the caller's signal (an AbortSignal, an EventTarget or an
    // EventEmitter emitting 'abort') and close({ force: true }) both cancel its call by id, and
    // `reason` says which did.
    // `thread`: the worker that ran it, once its death said so (ServerGone's data); `gone`:
    // the error that worker died of. Nothing is sent when a task starts (close({ force: true })
    // withdraws only the tasks not started, natively).
    // `unrun`: its abort withdrew it before it started (Piscina does not count it as completed).
    const handle = { id: 0, reason: undefined, thread: undefined, gone: undefined, wake: null, unrun: false };
    this.#tasks.add(handle);
    // What transferList and Piscina.move() name is moved (detached here), as postMessage does.
    let transfer = transferList === undefined ? undefined : transferList.map(transferred);
    if (isMoved(task)) {
      // Only an ArrayBuffer moves: anything else Piscina.move() wrapped is copied, as corepool
      // always did (postMessage would refuse it).
      const buffer = transferred(task);
      if (types.isArrayBuffer(buffer) && !transfer?.includes(buffer)) transfer = [...(transfer ?? []), buffer];
      task = task[kValue];
    }
    // The pool's own file and name are the worker's already (lib/piscina-worker.js): its
    // tasks go without them, and the worker finds their handler without a lookup by name.
    const own = filename === this.#ownFile && name === this.#ownName;
    const params = own ? (task === undefined ? [] : [task]) : task === undefined ? [filename, name, 0] : [filename, name, 1, task];
    const submitted = performance.now();
    this.#inflight++;
    // A task with a signal runs alone on its worker, as Piscina runs it: aborting it ends that
    // worker, and no task beside it is lost.
    const call = this.#pool[kCancellableCall]('piscina', params, handle, undefined, transfer, signal != null);
    let forgetSignal = null;
    if (signal != null) {
      const onAbort = () => this.#cancel(handle, { user: signal.reason });
      if (typeof signal.addEventListener === 'function') {
        signal.addEventListener('abort', onAbort, { once: true });
        forgetSignal = () => signal.removeEventListener('abort', onAbort);
      } else if (typeof signal.once === 'function') {
        signal.once('abort', onAbort);
        forgetSignal = () => signal.removeListener('abort', onAbort);
      }
    }
    // (`completed` counts what Piscina counts: every task it took, not one its full queue refused.)
    const done = (taken = true) => {
      if (forgetSignal !== null) forgetSignal();
      this.#tasks.delete(handle);
      this.#inflight--;
      if (taken) this.#completed++;
      SETTLED.then(this.#drainCheck);
    };
    SETTLED.then(this.#drainCheck);
    return call.then(
      (out) => {
        done();
        this.#record(submitted, out[0]);
        if (out.length > 2 && out[2] === THROWN) throw thrownBack(out[1]);
        return out.length > 1 ? out[1] : undefined;
      },
      (e) => {
        if (e instanceof RpcError && e.code === CODES.ServerGone && !this.#destroyed && typeof e.data?.thread === 'number') {
          handle.thread = e.data.thread;
          // Its worker died: the task rejects with what Piscina rejects it with, known once the worker's exit is.
          return this.#whenGone(handle).then((gone) => {
            done();
            throw gone;
          });
        }
        done(!(e instanceof RpcError && e.code === CODES.QueueFull) && !handle.unrun);
        if (typeof e?.data?.ms === 'number') this.#record(submitted, e.data.ms);
        throw this.#translate(e, handle.reason);
      },
    );
  }

  /**
   * The error a task whose worker died rejects with, once that worker's exit is known (its
   * exit and the task's rejection come in either order).
   */
  #whenGone(handle) {
    const gone = this.#deaths.get(handle.thread);
    if (gone !== undefined) return Promise.resolve(gone);
    if (handle.gone !== undefined) return Promise.resolve(handle.gone);
    if (!this.threads.some((w) => w.threadId === handle.thread)) {
      // Its exit is too old to be remembered (see #workerExited): no more is known of it.
      return Promise.resolve(new Error('worker exited'));
    }
    // The process stays alive until it is known (the worker is unref'd, its call settled).
    return new Promise((resolve) => {
      const alive = keepAlive();
      handle.wake = () => {
        alive.clear();
        resolve(handle.gone);
      };
    });
  }

  /**
   * A worker that served exited: its unfinished tasks reject with the uncaught exception that
   * ended it, else with Piscina's `worker exited with code: N`, or `Terminating worker thread`
   * when the pool ended it (`terminated`: a running task of it was aborted) or was destroyed.
   * An exception that ended a worker running no task is the pool's 'error', as with Piscina (no
   * listener: thrown, as an EventEmitter does). `running`: how many of its tasks its departure
   * rejected (the native side knows by now, whenever their rejections come in).
   */
  #workerExited(thread, code, error, running, terminated) {
    const gone = this.#destroyed || terminated ? Errors.ThreadTermination() : (error ?? new Error(`worker exited with code: ${code}`));
    this.#deaths.set(thread, gone);
    // Thread ids are never reused; the last few exits are plenty for the rejections on their way.
    if (this.#deaths.size > 64) this.#deaths.delete(this.#deaths.keys().next().value);
    for (const handle of this.#tasks) {
      if (handle.thread !== thread || handle.wake === null) continue;
      handle.gone = gone;
      handle.wake();
    }
    if (error !== null && running === 0 && !this.#destroyed) this.emit('error', error);
  }

  /** A task's filename as a path, the last absolute one's kept (its resolving costs more than a tiny task's call). */
  #resolve(filename) {
    if (filename === this.#lastFilename) return this.#lastResolved;
    const resolved = path.resolve(maybeFileURLToPath(filename));
    // A relative name is resolved again each time: the working directory may change.
    if (path.isAbsolute(filename)) {
      this.#lastFilename = filename;
      this.#lastResolved = resolved;
    }
    return resolved;
  }

  /**
   * Cancels a task's call, the first reason given being the one its AbortError tells. A task
   * already running rejects at once and its worker is terminated, as Piscina terminates it (a
   * task that never returns does not keep its thread; a new worker takes its place). A task
   * with a signal runs alone on its worker, so no other task is lost with it; should one run
   * there all the same (the native side checks), the worker goes on instead.
   */
  #cancel(handle, reason) {
    if (handle.reason !== undefined) return;
    handle.reason = reason;
    if (this.#pool[kWithdraw](handle.id)) {
      handle.unrun = true;
      return;
    }
    const thread = this.#pool[kCancel](handle.id, true);
    if (thread !== undefined) this.#pool[kTerminate](thread);
  }

  /** close({ force: true }) for one task: cancels it only if it has not started. */
  #withdraw(handle) {
    if (handle.reason !== undefined) return;
    handle.reason = { closing: true };
    if (!this.#pool[kWithdraw](handle.id)) handle.reason = undefined;
  }

  #record(submitted, ms) {
    if (this.#runTime === null) return;
    const total = performance.now() - submitted;
    this.#runTime.record(Math.max(1, Math.trunc(ms * 1000)));
    this.#waitTime.record(Math.max(1, Math.trunc(Math.max(0, total - ms) * 1000)));
  }

  /** corepool's errors as Piscina's users see them. */
  #translate(e, reason) {
    if (!(e instanceof RpcError)) return e;
    switch (e.code) {
      case CODES.Aborted:
        if (reason?.closing) return new AbortError('pool is closed');
        return new AbortError(reason?.user);
      case CODES.QueueFull:
        return this.#options.maxQueue === 0 ? Errors.NoTaskQueueAvailable() : Errors.TaskQueueAtLimit();
      case CODES.PoolClosed:
        return this.#destroyed ? Errors.ThreadTermination() : new AbortError('queue is being terminated');
      case CODES.InvalidParams:
        // The task is the call's fourth param, or its first when it travels alone (params[0]
        // is otherwise the file's name, which always crosses); a result or what the task
        // threw, the second item of the worker's answer.
        if (e.name === 'DataCloneError') {
          const yours = (where) =>
            where
              .replace(/^params\[[03]\]/, 'task')
              .replace(/^result\[1\]\.value/, 'the value the task threw')
              .replace(/^result\[1\]\.error\.cause/, "the cause of the error the task threw")
              .replace(/^result\[1\]/, 'result');
          e.message = yours(e.message);
          if (typeof e.data?.path === 'string') e.data.path = yours(e.data.path);
        }
        return e;
      case CODES.ServerGone:
        return this.#destroyed ? Errors.ThreadTermination() : e;
      default:
        return e;
    }
  }

  /**
   * #maybeDrain in a microtask, as Piscina checks after each task starts and ends: a reaction
   * of a settled promise (queueMicrotask makes an async resource per call; this cannot throw).
   */
  #drainCheck = () => this.#maybeDrain();

  /**
   * 'needsDrain' in a microtask, as Piscina emits it (again for every task while full): a
   * listener's exception is thrown from a microtask of its own, uncaught, as from Piscina's.
   */
  #emitNeedsDrain = () => {
    try {
      this.emit('needsDrain');
    } catch (e) {
      queueMicrotask(() => {
        throw e;
      });
    }
  };

  /** Piscina's 'needsDrain' / 'drain': every task slot (maxThreads × concurrentTasksPerWorker) taken, then one free again. */
  #maybeDrain() {
    const usage = Math.min(this.#inflight, this.#maxCapacity);
    if (usage === this.#maxCapacity) {
      this.#needsDrain = true;
      SETTLED.then(this.#emitNeedsDrain);
    } else if (this.#needsDrain) {
      this.#needsDrain = false;
      queueMicrotask(() => this.emit('drain'));
    }
  }

  /**
   * Lets the tasks in hand finish (`force`: the ones not started yet reject with an AbortError),
   * then stops the workers. After `closeTimeout` ms, emits 'error' (CloseTimeout) and destroys.
   */
  async close(options = { __proto__: null }) {
    if (options === null || typeof options !== 'object') throw new TypeError('options must be an object');
    options = { __proto__: null, ...options };
    const force = options.force ?? false;
    if (typeof force !== 'boolean') throw new TypeError('force argument must be a boolean');
    if (this.#closing !== null) return this.#closing;
    this.#closing = this.#close(force);
    return this.#closing;
  }

  async #close(force) {
    this.#ending++;
    if (force) for (const handle of [...this.#tasks]) this.#withdraw(handle);
    let timer;
    const timedOut = new Promise((resolve) => {
      timer = after(this.#options.closeTimeout, () => resolve(true)).unref();
    });
    try {
      if (await Promise.race([this.#pool.close().then(() => false), timedOut])) throw Errors.CloseTimeout();
    } catch (error) {
      this.emit('error', error);
    } finally {
      timer.clear();
      await this.destroy();
      this.#ending--;
      this.emit('close');
    }
  }

  /** Rejects the tasks in hand (Error 'Terminating worker thread') and stops the workers. */
  async destroy() {
    this.#ending++;
    this.#destroyed = true;
    try {
      await this.#pool.destroy();
      // A task still waiting to hear how its worker died hears it now.
      for (const handle of this.#tasks) {
        if (handle.wake === null || handle.gone !== undefined) continue;
        handle.gone = Errors.ThreadTermination();
        handle.wake();
      }
    } finally {
      this.#ending--;
    }
  }

  /**
   * After destroy() or close() has finished, a run() starts new workers, as Piscina's pool
   * does: a new corepool Pool of the same options, the pool's counts and histograms going on.
   */
  #reopen() {
    this.#destroyed = false;
    this.#closing = null;
    this.#deaths.clear();
    this.#pool = new Pool(this.#poolOptions);
  }

  [Symbol.asyncDispose]() {
    return this.close();
  }

  get maxThreads() {
    return this.#options.maxThreads;
  }

  get minThreads() {
    return this.#options.minThreads;
  }

  get options() {
    return this.#options;
  }

  /** The pool's live Worker objects, as Piscina's. */
  get threads() {
    return this.#pool[kWorkers]();
  }

  get idleThreads() {
    return this.#pool.stats().servers.filter((s) => s.open && s.running === 0).length;
  }

  /**
   * Tasks accepted that no worker runs yet, as Piscina counts them: not those a worker with a
   * free task slot is about to take (Piscina hands such a task to the worker at once), but those
   * a worker running a task with a signal holds (it takes nothing beside it).
   *
   * Counted worker by worker (each worker's `waiting` is read whole). The pool-wide `queued` is
   * read at another moment, so it only bounds the count (it leaves out aborted tasks a worker
   * has not dropped yet); it alone counts when no worker is open, every task then waiting for
   * one.
   */
  get queueSize() {
    const s = this.#pool.stats();
    let behind = 0;
    let open = false;
    for (const server of s.servers) {
      open ||= server.open;
      behind += server.waiting;
    }
    return Math.max(0, Math.min(this.#inflight, s.queued + s.waiting, (open ? behind : s.queued) + s.waiting));
  }

  get completed() {
    return this.#completed;
  }

  get duration() {
    return performance.now() - this.#start;
  }

  get needsDrain() {
    return this.#needsDrain;
  }

  get runTime() {
    return this.#runTime === null ? undefined : summary(this.#runTime);
  }

  get waitTime() {
    return this.#waitTime === null ? undefined : summary(this.#waitTime);
  }

  get histogram() {
    if (this.#histogram === null) {
      const self = this;
      this.#histogram = {
        get runTime() {
          return self.runTime;
        },
        get waitTime() {
          return self.waitTime;
        },
        resetRunTime() {
          self.#runTime?.reset();
        },
        resetWaitTime() {
          self.#waitTime?.reset();
        },
      };
    }
    return this.#histogram;
  }

  /** Piscina's estimate: the tasks' mean run time × their count, over duration × maxThreads. */
  get utilization() {
    if (this.#runTime === null || this.#runTime.count === 0) return 0;
    const capacity = this.duration * this.#options.maxThreads;
    return ((this.#runTime.mean / 1000) * this.#runTime.count) / capacity;
  }

  /** Piscina's `move()`: marks `value` to be moved rather than copied (its ArrayBuffer is detached here; docs/values.md). */
  static move(val) {
    if (val != null && typeof val === 'object') {
      if (!isTransferable(val)) {
        val = ArrayBuffer.isView(val) ? new ArrayBufferViewTransferable(val) : new DirectlyTransferable(val);
      }
      Object.defineProperty(val, kMovable, { enumerable: false, configurable: true, writable: true, value: true });
    }
    return val;
  }
}

if (typeof Symbol.dispose === 'symbol') {
  Piscina.prototype[Symbol.dispose] = function dispose() {
    this.close();
  };
}

/** A histogram's summary in ms, as Piscina gives it. */
function summary(h) {
  const p = (n) => h.percentile(n) / 1000;
  return {
    average: h.mean / 1000,
    mean: h.mean / 1000,
    stddev: h.stddev / 1000,
    min: h.min / 1000,
    max: h.max / 1000,
    p0_001: p(0.001),
    p0_01: p(0.01),
    p0_1: p(0.1),
    p1: p(1),
    p2_5: p(2.5),
    p10: p(10),
    p25: p(25),
    p50: p(50),
    p75: p(75),
    p90: p(90),
    p97_5: p(97.5),
    p99: p(99),
    p99_9: p(99.9),
    p99_99: p(99.99),
    p99_999: p(99.999),
  };
}

/**
 * What a task threw, from what its worker sent (lib/piscina-worker.js, thrownOut): the value
 * itself, or an Error made again on this thread: its class when it is a standard one, `name`,
 * `message`, the worker's `stack`, `cause` as structured clone carried it, its own fields.
 */
function thrownBack(thrown) {
  if (Object.hasOwn(thrown, 'value')) return thrown.value;
  const d = thrown.error;
  const Ctor = Object.hasOwn(STANDARD_ERRORS, d.name) ? STANDARD_ERRORS[d.name] : Error;
  const err = Object.hasOwn(d, 'cause') ? new Ctor(d.message, { cause: d.cause }) : new Ctor(d.message);
  if (err.name !== d.name) Object.defineProperty(err, 'name', { value: d.name, writable: true, configurable: true, enumerable: false });
  if (typeof d.stack === 'string') err.stack = d.stack;
  // (Its own fields as they were: defined, so that a `__proto__` field stays a field.)
  for (const [key, value] of Object.entries(d.own)) Object.defineProperty(err, key, { value, enumerable: true, writable: true, configurable: true });
  return err;
}

const mark = isMainThread ? undefined : globalThis[WORKER_MARK];

Piscina.isWorkerThread = mark !== undefined;
Piscina.workerData = mark?.workerData;
Piscina.version = version;
Piscina.transferableSymbol = kTransferable;
Piscina.valueSymbol = kValue;
Piscina.queueOptionsSymbol = kQueueOptions;
Piscina.FixedQueue = FixedQueue;
Piscina.ArrayTaskQueue = ArrayTaskQueue;

module.exports = Piscina;
module.exports.Piscina = Piscina;
module.exports.default = Piscina;
module.exports.move = Piscina.move;
module.exports.isWorkerThread = Piscina.isWorkerThread;
module.exports.workerData = Piscina.workerData;
module.exports.version = Piscina.version;
module.exports.transferableSymbol = kTransferable;
module.exports.valueSymbol = kValue;
module.exports.queueOptionsSymbol = kQueueOptions;
module.exports.FixedQueue = FixedQueue;
module.exports.ArrayTaskQueue = ArrayTaskQueue;
