'use strict';
// Pool: the handle JavaScript holds on a native pool — a private one (of native threads, or of
// JavaScript workers started from a task file: lib/workers.js), or the process-wide one of
// Pool.shared(). It starts calls (lib/calls.js settles them), and tells its listeners when no
// call of its own is in flight.

const { EventEmitter } = require('node:events');
const { native, contract } = require('./native.js');
const { CODES, rejected, describe, errorText } = require('./errors.js');
const { validateOptions, nativeOptions } = require('./options.js');
const { callOptions } = require('./call-options.js');
const { start, kStarted, kSettled, kExplain, kSharesMemory, channel } = require('./calls.js');
const { wireParams, released, lastRefused, lastTooMany } = require('./params.js');
const { clonedParams } = require('./clone.js');
const { map } = require('./map.js');
const { finishRender, renderFailed, prepareRenderParams } = require('./render.js');
const { Server, kFullErrors, kResults, kUnreadable, kShares } = require('./serve.js');
const { TaskWorkers, kWorkerHooks } = require('./workers.js');
const views = require('./views.js');
const { callChannel, renderChannel, CallContext, traced } = require('./channels.js');
const { startCallSpan, endCallSpan } = require('./trace-context.js');

/** The key of a pool's count of task-file workers that exited while serving (corepool/metrics). */
const kWorkerExits = Symbol('workerExits');


/** The key of Pool's cancellable handle() (see there). */
const handleCancellable = Symbol('handleCancellable');
/** The keys of the calls corepool/piscina makes (lib/piscina.js): cancellable by id (see there). */
const kCancellableCall = Symbol('cancellableCall');
const kCancel = Symbol('cancel');
const kWithdraw = Symbol('withdraw');
const kTerminate = Symbol('terminate');
const kWorkers = Symbol('workers');

/** This thread's handle on Pool.shared(), until it is closed. */
let sharedPool = null;
/** The native handle a Pool made by this module takes (Pool.shared(), attach()), instead of making one. */
let handing = null;
/** Pool.#around, for attach() (set by Pool's static block). */
let around;

class Pool extends EventEmitter {
  #native;
  #call;
  #inflight = 0;
  #closed = false;
  #closing = null;
  #drainWaiters = [];
  #notifying = false;
  #servers = [];
  #workers = null;
  #sharesMemory = false;
  #isShared = false;

  /**
   * @param {object} [options] threads, strategy, maxQueue, onFull, timeout; with `filename`, a
   *   pool of JavaScript workers serving that file's functions (see README)
   */
  constructor(options) {
    super();
    if (handing !== null) {
      // Pool.shared() or attach(): options were validated there.
      this.options = options;
      this.#native = handing;
      handing = null;
      this.#call = this.#native.caller();
      this.#isShared = this.#native.isShared;
      return;
    }
    this.options = validateOptions(options);
    const o = this.options;
    this.#native = new native.NativePool(channel, nativeOptions(o));
    this.#call = this.#native.caller();
    // corepool/piscina's hooks (lib/workers.js): a module-private key, no user's option.
    if (o.filename !== undefined) {
      const hooks = options[kWorkerHooks] ?? null;
      this.#workers = new TaskWorkers(this.#native, o, this.#loadFailed, hooks);
      this.#sharesMemory = hooks?.sharesMemory === true;
    }
  }

  /** Its results may hold shared memory (lib/calls.js): corepool/piscina's pool, as Piscina's. */
  get [kSharesMemory]() {
    return this.#sharesMemory;
  }

  /** A task-file pool's live Worker objects (corepool/piscina's `threads`); [] for others. */
  [kWorkers]() {
    return this.#workers === null ? [] : this.#workers.list();
  }

  /** A task-file pool gave up loading its file: listeners of 'error' hear of it (the calls
   *  waiting for a worker and ready() fail with the same error; without a listener, an
   *  'error' event would throw, so none is emitted). */
  #loadFailed = (error) => {
    if (this.listenerCount('error') > 0) this.emit('error', error);
  };

  /** A Pool of this module's making around a native handle. */
  static #around(options, handle) {
    handing = handle;
    try {
      return new Pool(options);
    } finally {
      handing = null;
    }
  }

  static {
    around = (options, handle) => Pool.#around(options, handle);
  }

  /**
   * A handle on the one native pool of this process (shared by every worker_thread). After this
   * thread's handle was closed, the next call returns a new handle.
   */
  static shared(options) {
    const explicit = options !== undefined;
    if (sharedPool !== null && !sharedPool.#closed && !explicit) return sharedPool;
    const o = validateOptions(options);
    let handle;
    try {
      handle = native.NativePool.shared(channel, nativeOptions(o), explicit);
    } catch (e) {
      throw new TypeError(e.message, { cause: e });
    }
    if (sharedPool !== null && !sharedPool.#closed) return sharedPool;
    const actual = Object.freeze({ ...o, threads: handle.threads });
    sharedPool = Pool.#around(actual, handle);
    return sharedPool;
  }

  /** Native threads, or for a pool started from a task file, its JavaScript workers (now). */
  get threads() {
    return this.#workers === null ? this.#native.threads : this.#workers.size;
  }

  /** `exec(method, ...params)`: the book's RpcWorkerPool.exec. */
  exec(method, ...params) {
    if (callChannel.hasSubscribers) {
      const context = new CallContext('exec', method, this);
      return traced(callChannel, context, () => this.#submit(method, params, undefined, undefined, undefined, 0, undefined, undefined, undefined, context));
    }
    return this.#submit(method, params, undefined, undefined);
  }

  /** `call(method, params, { signal, timeout, onProgress })` (lib/call-options.js reads the options). */
  call(method, params, options) {
    if (callChannel.hasSubscribers) {
      const context = new CallContext('call', method, this);
      return traced(callChannel, context, () => this.#callChecked(method, params, options, context));
    }
    return this.#callChecked(method, params, options);
  }

  #callChecked(method, params, options, context) {
    let o;
    try {
      o = callOptions('call', options);
    } catch (e) {
      return Promise.reject(e);
    }
    return this.#callWith(method, params, o, context);
  }

  /**
   * Piscina's `run(task, { name, signal, timeout, onProgress })`: calls the task file's function
   * `name` (`'default'`: the function the file exports as a whole) with `task`.
   */
  run(task, options) {
    let o;
    try {
      o = callOptions('run', options);
    } catch (e) {
      return Promise.reject(e);
    }
    const name = o.name ?? 'default';
    if (callChannel.hasSubscribers) {
      const context = new CallContext('run', name, this);
      return traced(callChannel, context, () => this.#callWith(name, [task], o, context));
    }
    return this.#callWith(name, [task], o);
  }

  /** A call with its options read (`o`, from callOptions); `context`: see #submit. */
  #callWith(method, params, o, context) {
    if (params === undefined) params = [];
    else if (!isArray(params)) params = [params];
    try {
      if (o.signal?.aborted) return rejected(CODES.Aborted, 'The call was aborted before it started');
    } catch (e) {
      return rejected(CODES.InvalidRequest, `call options.signal could not be read: ${errorText(e)}`);
    }
    return this.#submit(method, params, o.timeout, o.signal, o.onProgress, 0, undefined, o.transfer, undefined, context);
  }

  /**
   * `map(method, inputs, { settle, onProgress, signal, timeout, concurrency })`: `method` once
   * per input (its one param), results in input order. Rejects with the first error, unless
   * `settle: 'all'` (then each result is `{ status, value | reason }`, as Promise.allSettled
   * gives). `onProgress(done, total, { index, input, value | error })` after each input.
   * `inputs` (an array or any iterable) is read once, at the call: changing it later changes
   * nothing of the map; inputs whose reading throws reject it with InvalidRequest.
   */
  map(method, inputs, options) {
    if (callChannel.hasSubscribers) return traced(callChannel, new CallContext('map', method, this), () => map(this, this.#native, method, inputs, options));
    return map(this, this.#native, method, inputs, options);
  }

  /**
   * `render(template, data?, partials?, config?)`: Mustache on a native thread, output as
   * mustache.js 4.2.0's. Functions in `data` (and `config.escape`) run on this thread.
   */
  render(...params) {
    if (renderChannel.hasSubscribers) {
      const context = new CallContext('render', 'render', this);
      return traced(renderChannel, context, () => this.#render(params, context));
    }
    return this.#render(params);
  }

  #render(params, context) {
    const call = this.#submit('render', params, undefined, undefined, undefined, contract.callFlags.functions, undefined, undefined, prepareRenderParams, context);
    const handles = this.#handles;
    this.#handles = undefined;
    const rendered = handles === undefined ? call : call.then((result) => finishRender(result, handles));
    return rendered.catch(renderFailed);
  }

  /** Runs `method(...params)` once on every thread; resolves with the results in thread order. */
  broadcast(method, ...params) {
    if (callChannel.hasSubscribers) return traced(callChannel, new CallContext('broadcast', method, this), () => start(this, (id) => this.#native.broadcast(id, method, params, undefined)));
    return start(this, (id) => this.#native.broadcast(id, method, params, undefined));
  }

  /** A JSON-RPC 2.0 request object or batch → response object(s); never rejects. */
  request(request) {
    if (callChannel.hasSubscribers) return traced(callChannel, new CallContext('request', null, this), () => this.#request(request));
    return this.#request(request);
  }

  #request(request) {
    const span = startCallSpan('request');
    return endCallSpan(
      span,
      start(this, (id) => this.#native.request(id, request, span?.text)),
    );
  }

  /** JSON-RPC 2.0 text → response text ('' when there is nothing to answer); never rejects. */
  handle(text) {
    if (callChannel.hasSubscribers) return traced(callChannel, new CallContext('handle', null, this), () => this.#handle(text));
    return this.#handle(text);
  }

  #handle(text) {
    const span = startCallSpan('handle');
    return endCallSpan(
      span,
      start(this, (id) => this.#native.handle(id, text, false, span?.text)),
    );
  }

  /**
   * `handle(text)` whose requests can each be stopped while it is in flight (for corepool/nats
   * hosts, whose callers give up on single calls of a batch; not public): `answer` resolves as
   * handle() does; `cancel(places)` cancels the requests at those places (a batch's indices, 0
   * for a lone request) as an AbortSignal cancels a call, and they answer Aborted. Places not
   * in hand any more, and a cancel after the answer, are passed over.
   */
  [handleCancellable](text) {
    let id = -1;
    const run = () => {
      const span = startCallSpan('handle');
      return endCallSpan(
        span,
        start(this, (i) => {
          id = i;
          this.#native.handle(i, text, true, span?.text);
        }),
      );
    };
    const answer = callChannel.hasSubscribers ? traced(callChannel, new CallContext('handle', null, this), run) : run();
    return { answer, cancel: (places) => id >= 0 && this.#native.cancelRequests(id, places) };
  }

  /** Task-file workers that exited while serving and were replaced (0 for native threads). */
  get [kWorkerExits]() {
    return this.#workers === null ? 0 : this.#workers.exits;
  }

  /** The built-in commands: `[{ name, params, summary }]`. */
  methods() {
    return this.#native.methods();
  }

  stats() {
    return this.#native.stats();
  }

  /**
   * Serves the methods of `handlers` (an object of functions) from this thread: calls to them
   * from any thread are scheduled among the threads serving them. At most `concurrency` calls
   * (default 1) run at once on this server; the others wait in its queue. Returns a Server.
   */
  serve(handlers, options) {
    if (handlers === null || typeof handlers !== 'object') {
      throw new TypeError(`corepool: serve() takes an object of functions, got ${describe(handlers)}`);
    }
    const names = Object.keys(handlers);
    if (names.length === 0) throw new TypeError('corepool: serve() needs at least one method');
    for (const name of names) {
      if (typeof handlers[name] !== 'function') {
        throw new TypeError(`corepool: serve(): handler '${name}' must be a function, got ${describe(handlers[name])}`);
      }
    }
    let concurrency = 1;
    if (options !== undefined) {
      if (options === null || typeof options !== 'object') {
        throw new TypeError(`corepool: serve() options must be an object, got ${describe(options)}`);
      }
      for (const key of Object.keys(options)) {
        if (key !== 'concurrency') throw new TypeError(`corepool: unknown serve() option '${key}' (expected concurrency)`);
      }
      if (options.concurrency !== undefined) concurrency = options.concurrency;
      if (concurrency !== Infinity && !(Number.isInteger(concurrency) && concurrency >= 1)) {
        throw new RangeError(`corepool: serve() options.concurrency must be a whole number ≥ 1 or Infinity, got ${describe(concurrency)}`);
      }
    }
    views.open(); // before registering: views sent to this thread must find the channel open
    // (A task file's worker's own settings, lib/task-worker.js: module-private keys, no user's option.)
    const own = { fullErrors: options?.[kFullErrors], results: options?.[kResults], unreadable: options?.[kUnreadable], shares: options?.[kShares] };
    const server = new Server(this.#native, handlers, names, concurrency, own);
    // A private pool's servers can get no call once it is closed: they stop with it (a shared
    // pool's serve the rest of the process).
    if (!this.#native.isShared) this.#servers.push(server);
    return server;
  }

  /**
   * Resolves when the pool's threads are up: at once for native threads; for a pool started
   * from a task file, once minThreads workers serve (rejects with InternalError if the pool
   * gave up loading the file, PoolClosed if the pool stops first). Calls need not wait for it:
   * they wait for the workers by themselves. While it is pending it keeps the process alive,
   * as a call in flight does.
   */
  ready() {
    return this.#workers === null ? Promise.resolve() : this.#workers.ready();
  }

  /** Resolves when no call made through this handle is queued or running. */
  drained() {
    if (this.#inflight === 0) return Promise.resolve();
    return new Promise((resolve) => this.#drainWaiters.push(resolve));
  }

  /** Finishes every accepted call, then stops; later calls reject with PoolClosed. */
  close() {
    if (this.#closing) return this.#closing;
    this.#closed = true;
    this.#native.close();
    this.#workers?.close();
    this.#closing = this.drained().then(() => this.#stop());
    return this.#closing;
  }

  /** After the last call: the servers and workers of a private pool stop, then its threads. */
  async #stop() {
    await Promise.all(this.#servers.map((s) => s.close()));
    if (this.#workers !== null) await this.#workers.stop();
    this.#native.shutdown();
  }

  /** Rejects queued calls (PoolClosed), stops running ones cooperatively, then stops. */
  destroy() {
    this.#closed = true;
    if (this.#native.isShared) {
      // The shared threads serve the whole process; this handle just stops and lets its calls finish.
      return this.close();
    }
    this.#native.destroy();
    this.#workers?.close();
    if (!this.#closing) this.#closing = this.drained().then(() => this.#stop());
    return this.#closing;
  }

  [Symbol.asyncDispose]() {
    return this.close();
  }

  /** What the call function returned for the last render with functions (see render()). */
  #handles = undefined;

  /** Whether calls to `method` reach JavaScript (a task file's function, a served method), not a native command. */
  #servedByJs(method) {
    if (this.#workers !== null) {
      // A task-file pool's methods are its workers', unless it runs native threads beside them.
      if (this.options.nativeThreads === 0) return true;
    } else if (this.#servers.length === 0 && !this.#isShared) {
      // A private pool of native threads serves JavaScript only through this handle's serve().
      return false;
    }
    return typeof method === 'string' && !this.#native.runsNatively(method);
  }

  /**
   * `method(...params)`, cancellable with [kCancel](handle.id) rather than an AbortSignal:
   * corepool/piscina merges each task's own signal and close({ force }) into one cancellation,
   * and an AbortController of its own per task (an EventTarget, a listener added and removed)
   * cost more on the calling thread than the rest of a tiny task's call (lib/piscina.js).
   * `handle.id` is the call's id from the moment it is in flight. `alone`: a method served by
   * JavaScript runs alone on its serving thread (nothing beside it, as Piscina runs a task that
   * has a signal), so that ending that thread loses no other call.
   */
  [kCancellableCall](method, params, handle, onProgress, transfer, alone = false) {
    const flags = contract.callFlags.cancellable | (alone ? contract.callFlags.alone : 0);
    return this.#submit(method, params, undefined, undefined, onProgress, flags, handle, transfer);
  }

  /**
   * Cancels call `id` as its AbortSignal would (a call no longer in flight is passed over).
   * `endThread`: a running task's worker is to end too (corepool/piscina, as Piscina ends it):
   * if it has no other task to answer, it takes no new one and its `threadId` is returned, to
   * terminate it with [kTerminate]; otherwise undefined.
   */
  [kCancel](id, endThread = false) {
    return this.#native.cancel(id, endThread) ?? undefined;
  }

  /** Terminates the task-file worker of `threadId` `thread` (see TaskWorkers#terminate). */
  [kTerminate](thread) {
    this.#workers?.terminate(thread);
  }

  /** Cancels call `id` only if it has not started: true if it was withdrawn (it rejects with Aborted). */
  [kWithdraw](id) {
    return this.#native.withdraw(id);
  }

  /**
   * `handle`: given a cancellable call's id (see kCancellableCall). `transfer`: ArrayBuffers the
   * call moves (structured clone). `prepare(params)`: params to send instead when these do not
   * cross packed (pool.render's views, lib/render.js); plain data that packs is sent as it is,
   * walked once. `context`: the diagnostics_channel context of an observed call, which learns
   * the thread that ran it, its queue wait and its run time (lib/calls.js).
   */
  #submit(method, params, timeout, signal, onProgress, extraFlags = 0, handle = undefined, transfer = undefined, prepare = undefined, context = undefined) {
    let sent;
    let flags;
    let tape;
    let text;
    let handles;
    const functions = (extraFlags & contract.callFlags.functions) !== 0;
    try {
      let tooMany = null;
      try {
        // A task-file pool's params go to JavaScript: the walk looks for objects met twice too.
        [sent, flags, tape, text, handles] = wireParams(params, functions, this.#workers !== null);
        if (prepare !== undefined && tape === undefined) {
          const prepared = prepare(params);
          if (prepared !== params) [sent, flags, tape, text, handles] = wireParams(prepared, functions);
        }
      } catch (e) {
        if (!lastTooMany()) throw e;
        tooMany = e; // structured clone carries them (an object reached many times once)
        [sent, flags, tape, text] = [params, 0, undefined, undefined];
      }
      // Params that are not plain data (or hold undefined, which JSON makes null, or an object
      // twice, which it copies, or more values than plain params may hold), for a method
      // served by JavaScript, cross as structured clone does (lib/clone.js); so do the params
      // of a call that moves ArrayBuffers. Those holding shared memory go on value by value
      // (shared views travel by reference there) when the rest is plain data; beside values
      // only structured clone carries (a Date, a Map…), a copy made now, as postMessage would
      // copy them, is posted to the serving thread, sharing the memory (contract CALL_POSTED).
      const clone = tooMany !== null || transfer !== undefined || lastRefused();
      // (pool.render's calls, extraFlags, are the native renderer's: never cloned.)
      if (clone && !functions && this.#servedByJs(method)) {
        const crossing = clonedParams(params, transfer, 'params', tooMany === null);
        if (crossing !== null) {
          if (tape !== undefined) released();
          [flags, sent, tape, text] = [crossing[0], crossing[1], undefined, undefined];
        }
      } else if (tooMany !== null) throw tooMany;
    } catch (e) {
      if (tape !== undefined) released();
      return Promise.reject(e);
    }
    if (signal !== undefined) flags |= contract.callFlags.cancellable;
    if (onProgress !== undefined) flags |= contract.callFlags.progress;
    if (context !== undefined) flags |= contract.callFlags.timed;
    flags |= extraFlags;
    // The call's span when one is active where it is made; its context crosses to a method
    // served in JavaScript (lib/trace-context.js).
    const span = startCallSpan(method);
    const trace = span?.text;
    if (trace !== undefined) flags |= contract.callFlags.traced;
    let call;
    try {
      call = start(
        this,
        (id) => {
          if (handle !== undefined) handle.id = id;
          // Packed params' handles are the walk's; the native conversion's otherwise.
          this.#handles = this.#call(id, method, sent, timeout, flags, tape, text, trace) ?? handles;
        },
        signal,
        this.#cancel,
        onProgress,
        context,
      );
    } finally {
      // start() ran the native call, which copied the tape.
      if (tape !== undefined) released();
    }
    return span === null ? call : endCallSpan(span, call);
  }

  #cancel = (id) => this.#native.cancel(id);

  /**
   * One of this handle's calls is about to be handed to the native side: every call, whatever
   * its entry point (lib/calls.js's start and startMany call this), is admitted here.
   */
  [kStarted]() {
    this.#inflight++;
    if (this.#workers !== null) this.#workers.admit();
  }

  /** One of this handle's calls settled. Waiters and listeners hear of it from a nextTick. */
  [kSettled]() {
    if (--this.#inflight === 0 && !this.#notifying) {
      this.#notifying = true;
      process.nextTick(this.#notifyDrained);
    }
  }

  /** A failed call's error, as its caller gets it (a task-file pool explains its own; lib/calls.js). */
  [kExplain](error) {
    return this.#workers === null ? error : this.#workers.explain(error);
  }

  #notifyDrained = () => {
    this.#notifying = false;
    if (this.#inflight !== 0) return; // new calls came first: the next drain will tell
    const waiters = this.#drainWaiters;
    this.#drainWaiters = [];
    for (const w of waiters) w();
    this.emit('drain');
  };
}

/** Array.isArray, except that a revoked Proxy (on which it throws) counts as one param, which
 *  the params' conversion then refuses with its own error. */
function isArray(v) {
  try {
    return Array.isArray(v);
  } catch {
    return false;
  }
}

/** A task file's worker_thread: a handle on the pool `id` it serves (lib/task-worker.js). */
function attach(id) {
  return around(Object.freeze({}), native.NativePool.attach(channel, id));
}

module.exports = { Pool, attach, handleCancellable, kWorkerExits, kCancellableCall, kCancel, kWithdraw, kTerminate, kWorkers, kWorkerHooks };
