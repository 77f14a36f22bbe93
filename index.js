'use strict';
// corepool's JavaScript API: a thin layer over the native addon. It validates options, keeps
// each call's Promise (and the buffers it was given) until the native side settles it, and
// turns error codes into RpcError. Scheduling and the JSON-RPC protocol live in Rust.

const { EventEmitter } = require('node:events');
const { threadId, BroadcastChannel, receiveMessageOnPort } = require('node:worker_threads');
const os = require('node:os');
const path = require('node:path');
const { platformTriple } = require('./scripts/platform.js');

function loadNative() {
  const triple = platformTriple();
  const local = path.join(__dirname, `corepool.${triple}.node`);
  const tried = [];
  for (const candidate of [local, `corepool-${triple}`]) {
    try {
      return require(candidate);
    } catch (e) {
      if (e.code !== 'MODULE_NOT_FOUND' && !/cannot open shared object|no such file/i.test(e.message)) throw e;
      tried.push(candidate === local ? path.basename(local) : candidate);
    }
  }
  throw new Error(
    `corepool: no native binary for ${triple} (looked for ${tried.join(' and ')}).\n` +
      'Build it from source (needs Rust, https://rustup.rs):\n' +
      '  npm install-scripts approve corepool && npm rebuild corepool\n' +
      '(with npm 11 or older: npm rebuild corepool)',
  );
}

const native = loadNative();

// ---------------------------------------------------------------------------------------------
// Errors: one table, defined in Rust (src/rpc/error.rs).

const codeList = native.errorCodes();
const CODES = Object.freeze(Object.fromEntries(codeList.map((c) => [c.name, c.code])));
const NAMES = new Map(codeList.map((c) => [c.code, c.name]));

class RpcError extends Error {
  constructor(code, message, data) {
    super(message);
    this.name = 'RpcError';
    this.code = code;
    this.type = NAMES.get(code) ?? 'Unknown';
    if (data !== undefined) this.data = data;
  }

  toJSON() {
    const out = { code: this.code, message: this.message };
    if (this.data !== undefined) out.data = this.data;
    return out;
  }
}
RpcError.codes = CODES;

// ---------------------------------------------------------------------------------------------
// This environment's completion channel: one per main thread / worker_thread.

const pending = new Map(); // call id → Call
let lastId = 0;
const kSettled = Symbol('settled');

class Call {
  constructor(resolve, reject, owner, keep) {
    this.resolve = resolve;
    this.reject = reject;
    this.owner = owner;
    // The params stay referenced until the call settles: that keeps SharedArrayBuffers alive
    // while native threads use them.
    this.keep = keep;
    this.signal = null;
    this.onAbort = null;
  }
}

function settle(batch, resends) {
  if (resends !== undefined) resendViews(resends);
  for (let i = 0; i < batch.length; i += 4) {
    const id = batch[i];
    const call = pending.get(id);
    if (call === undefined) continue;
    pending.delete(id);
    if (call.signal !== null) call.signal.removeEventListener('abort', call.onAbort);
    const code = batch[i + 1];
    if (code === 0) call.resolve(batch[i + 2]);
    else call.reject(new RpcError(code, batch[i + 2], batch[i + 3]));
    call.owner[kSettled]();
  }
}

const channel = new native.Channel(settle);

// ---------------------------------------------------------------------------------------------
// SharedArrayBuffer views for JS-served calls (see src/bindings/serve.rs). A serving thread needs
// typed arrays of its own over the caller's memory; the caller's typed arrays are posted to it on
// one process-wide BroadcastChannel (posting shares the memory, it copies nothing), addressed by
// the serving thread's threadId and the job's token. Only environments that serve or send views
// open the channel.

const VIEWS_CHANNEL = 'corepool:views';
let viewsChannel = null;
const receivedViews = new Map(); // token → typed arrays, sent before the job arrives
const awaitingViews = new Map(); // token → { server, method, timeout }: jobs asking for a resend

function openViewsChannel() {
  if (viewsChannel === null) {
    viewsChannel = new BroadcastChannel(VIEWS_CHANNEL);
    viewsChannel.onmessage = (event) => onViews(event.data);
    viewsChannel.unref();
  }
  return viewsChannel;
}

function onViews(message) {
  if (message === null || typeof message !== 'object' || message.to !== threadId) return;
  takeViews(message.token, message.views, message.resent === true);
}

function takeViews(token, views, resent) {
  const waiting = awaitingViews.get(token);
  if (waiting !== undefined) {
    awaitingViews.delete(token);
    waiting.server[kResume](token, waiting, views);
  } else if (!resent) {
    // Sent just before the job was queued: the job follows (or a `forgotten` notice does).
    receivedViews.set(token, views);
  }
}

/** Pulls the messages already posted to this environment (they may not have been dispatched). */
function drainViewsChannel() {
  if (viewsChannel === null) return;
  let m;
  while ((m = receiveMessageOnPort(viewsChannel)) !== undefined) onViews(m.message);
}

/** Called by the native side just before it queues a job with views on serving thread `to`. */
function publishViews(to, token, views, resent = false) {
  try {
    if (to === threadId) takeViews(token, views, resent);
    else openViewsChannel().postMessage({ to, token, views, resent });
  } catch {
    // The serving thread asks again (resend) when it finds no views.
  }
}
native.setPublisher(publishViews);

/** The typed arrays over SharedArrayBuffers inside a call's params (what FromJs turns into views). */
function collectViews(value, out = [], depth = 0) {
  if (value === null || typeof value !== 'object' || depth > 512) return out;
  if (ArrayBuffer.isView(value)) {
    if (!(value instanceof DataView) && value.buffer instanceof SharedArrayBuffer) out.push(value);
  } else if (Array.isArray(value)) {
    for (const item of value) collectViews(item, out, depth + 1);
  } else {
    for (const key of Object.keys(value)) collectViews(value[key], out, depth + 1);
  }
  return out;
}

/** A serving thread asks for a call's views again: `[call, to, token, ...]`. */
function resendViews(requests) {
  for (let i = 0; i < requests.length; i += 3) {
    const call = pending.get(requests[i]);
    if (call !== undefined) publishViews(requests[i + 1], requests[i + 2], collectViews(call.keep), true);
  }
}

// ---------------------------------------------------------------------------------------------
// Options.

const STRATEGIES = ['roundrobin', 'random', 'leastbusy'];
const DEFAULTS = Object.freeze({ threads: 0, strategy: 'leastbusy', maxQueue: Infinity, onFull: 'reject', timeout: 0 });
const OPTION_NAMES = new Set(Object.keys(DEFAULTS));

function cores() {
  return typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length;
}

/** Resolves the `threads` option: 0 → cores, n < 0 → max(cores + n, 1), n > 0 → n. */
function resolveThreads(n) {
  if (typeof n !== 'number' || !Number.isInteger(n)) {
    throw new TypeError(`corepool: options.threads must be an integer, got ${describe(n)}`);
  }
  if (n > 1024) throw new RangeError(`corepool: options.threads must be at most 1024, got ${n}`);
  if (n === 0) return cores();
  if (n < 0) return Math.max(cores() + n, 1);
  return n;
}

function validateOptions(options) {
  if (options === undefined) options = {};
  if (options === null || typeof options !== 'object') {
    throw new TypeError(`corepool: options must be an object, got ${describe(options)}`);
  }
  for (const key of Object.keys(options)) {
    if (!OPTION_NAMES.has(key)) {
      throw new TypeError(`corepool: unknown option '${key}' (expected ${[...OPTION_NAMES].join(', ')})`);
    }
  }
  const o = { ...DEFAULTS, ...options };
  const threads = resolveThreads(o.threads);
  if (!STRATEGIES.includes(o.strategy)) {
    throw new TypeError(`corepool: options.strategy must be 'roundrobin', 'random' or 'leastbusy', got ${describe(o.strategy)}`);
  }
  let maxQueue = o.maxQueue;
  if (maxQueue === 'auto') maxQueue = threads * threads;
  else if (maxQueue !== Infinity && !(Number.isInteger(maxQueue) && maxQueue >= 0)) {
    throw new RangeError(`corepool: options.maxQueue must be a whole number ≥ 0, Infinity or 'auto', got ${describe(o.maxQueue)}`);
  }
  if (o.onFull !== 'reject' && o.onFull !== 'wait') {
    throw new TypeError(`corepool: options.onFull must be 'reject' or 'wait', got ${describe(o.onFull)}`);
  }
  if (typeof o.timeout !== 'number' || !(o.timeout >= 0) || o.timeout === Infinity) {
    throw new RangeError(`corepool: options.timeout must be a finite number of ms ≥ 0 (0 = none), got ${describe(o.timeout)}`);
  }
  return Object.freeze({ threads, strategy: o.strategy, maxQueue, onFull: o.onFull, timeout: o.timeout });
}

function describe(v) {
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'bigint') return `${v}n`;
  if (v === null || typeof v !== 'object') return String(v);
  return Array.isArray(v) ? 'an array' : 'an object';
}

function rejected(code, message) {
  return Promise.reject(new RpcError(code, message));
}

// ---------------------------------------------------------------------------------------------
// Pool.

let sharedPool = null;

class Pool extends EventEmitter {
  #native;
  #inflight = 0;
  #closed = false;
  #closing = null;
  #drainWaiters = [];

  /**
   * @param {object} [options] threads, strategy, maxQueue, onFull, timeout (see README)
   */
  constructor(options, nativePool) {
    super();
    if (nativePool !== undefined) {
      // Pool.shared(): options were validated there.
      this.options = options;
      this.#native = nativePool;
      return;
    }
    this.options = validateOptions(options);
    const o = this.options;
    this.#native = new native.NativePool(channel, o.threads, o.strategy, o.maxQueue, o.onFull === 'wait', o.timeout);
  }

  /** A handle on the one native pool of this process (shared by every worker_thread). */
  static shared(options) {
    const explicit = options !== undefined;
    if (sharedPool !== null && !explicit) return sharedPool;
    const o = validateOptions(options);
    const handle = native.NativePool.shared(channel, o.threads, o.strategy, o.maxQueue, o.onFull === 'wait', o.timeout, explicit);
    if (sharedPool !== null) return sharedPool;
    const actual = Object.freeze({ ...o, threads: handle.threads });
    sharedPool = new Pool(actual, handle);
    return sharedPool;
  }

  get threads() {
    return this.#native.threads;
  }

  /** `exec(method, ...params)`: the book's RpcWorkerPool.exec. */
  exec(method, ...params) {
    return this.#submit(method, params, undefined, undefined, false);
  }

  /** `call(method, params, { signal, timeout })`. */
  call(method, params, options) {
    if (params === undefined) params = [];
    else if (!Array.isArray(params)) params = [params];
    let timeout;
    let signal;
    if (options !== undefined) {
      if (options === null || typeof options !== 'object') {
        return rejected(CODES.InvalidRequest, `call options must be an object, got ${describe(options)}`);
      }
      ({ timeout, signal } = options);
      if (timeout !== undefined && (typeof timeout !== 'number' || !(timeout >= 0) || timeout === Infinity)) {
        return rejected(CODES.InvalidRequest, `options.timeout must be a finite number of ms ≥ 0 (0 = none), got ${describe(timeout)}`);
      }
      if (signal !== undefined && signal !== null && !(signal instanceof AbortSignal)) {
        return rejected(CODES.InvalidRequest, `options.signal must be an AbortSignal, got ${describe(signal)}`);
      }
      if (signal?.aborted) {
        return rejected(CODES.Aborted, 'The call was aborted before it started');
      }
    }
    return this.#submit(method, params, timeout, signal ?? undefined, false);
  }

  /** Runs `method(...params)` once on every thread; resolves with the results in thread order. */
  broadcast(method, ...params) {
    return this.#submit(method, params, undefined, undefined, true);
  }

  /** A JSON-RPC 2.0 request object or batch → response object(s); never rejects. */
  request(request) {
    if (this.#closed) return Promise.resolve(closedAnswer(request));
    return this.#start((id) => this.#native.request(id, request), request);
  }

  /** JSON-RPC 2.0 text → response text ('' when there is nothing to answer); never rejects. */
  handle(text) {
    if (this.#closed) return Promise.resolve(JSON.stringify(closedAnswer(null)));
    return this.#start((id) => this.#native.handle(id, text), undefined);
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
    openViewsChannel(); // before registering: views sent to this thread must find the channel open
    return new Server(this.#native, handlers, names, concurrency);
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
    this.#closing = this.drained().then(() => this.#native.shutdown());
    return this.#closing;
  }

  /** Rejects queued calls (PoolClosed), stops running ones cooperatively, then stops. */
  destroy() {
    this.#closed = true;
    if (this.#native.isShared) {
      // The shared threads serve the whole process; this handle just stops and lets its calls finish.
      return this.close();
    }
    this.#native.destroy();
    if (!this.#closing) this.#closing = this.drained();
    return this.#closing;
  }

  [Symbol.asyncDispose]() {
    return this.close();
  }

  #submit(method, params, timeout, signal, broadcast) {
    if (this.#closed) return rejected(CODES.PoolClosed, 'The pool is closed');
    return new Promise((resolve, reject) => {
      const id = ++lastId;
      const call = new Call(resolve, reject, this, params);
      pending.set(id, call);
      this.#inflight++;
      if (broadcast) {
        this.#native.broadcast(id, method, params, timeout);
        return;
      }
      if (signal !== undefined) {
        call.signal = signal;
        call.onAbort = () => this.#native.cancel(id);
        signal.addEventListener('abort', call.onAbort, { once: true });
      }
      this.#native.call(id, method, params, timeout, signal !== undefined);
    });
  }

  #start(send, keep) {
    return new Promise((resolve, reject) => {
      const id = ++lastId;
      pending.set(id, new Call(resolve, reject, this, keep));
      this.#inflight++;
      send(id);
    });
  }

  [kSettled]() {
    if (--this.#inflight === 0) {
      const waiters = this.#drainWaiters;
      this.#drainWaiters = [];
      for (const w of waiters) w();
      if (this.listenerCount('drain') > 0) this.emit('drain');
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Serving methods implemented in JavaScript.

const kResume = Symbol('resume');
const kFinish = Symbol('finish');
let orphanTimer = null;

/** Jobs waiting for resent views whose caller has exited never get them: drop them. */
function watchOrphans() {
  if (orphanTimer !== null) return;
  orphanTimer = setInterval(() => {
    const byServer = new Map();
    for (const [token, w] of awaitingViews) {
      if (!byServer.has(w.server)) byServer.set(w.server, []);
      byServer.get(w.server).push(token);
    }
    for (const [server, tokens] of byServer) server[kFinish](server.orphans(tokens));
    if (awaitingViews.size === 0) {
      clearInterval(orphanTimer);
      orphanTimer = null;
    }
  }, 100);
  orphanTimer.unref();
}

function abortError(message, name) {
  const e = new Error(message);
  e.name = name;
  return e;
}

/** The last argument of every handler call: `{ signal }` (made on first use). */
class CallContext {
  #controller = null;
  #reason = undefined;
  get signal() {
    if (this.#controller === null) {
      this.#controller = new AbortController();
      if (this.#reason !== undefined) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }
  abort(reason) {
    if (this.#reason !== undefined) return;
    this.#reason = reason;
    if (this.#controller !== null) this.#controller.abort(reason);
  }
}

class Running {
  constructor(context) {
    this.context = context;
    this.timer = null;
  }
}

/** What `serve()` returns: this thread's registration as a server of some methods. */
class Server {
  #native;
  #handlers;
  #table;
  #running = new Map(); // token → Running
  #closing = null;
  #onIdle = null;
  #draining = false; // inside #drain: a handler slot freed now is refilled by its loop
  #more = false;

  constructor(nativePool, handlers, names, concurrency) {
    this.#handlers = handlers;
    this.#table = new Map(names.map((n) => [n, handlers[n]]));
    try {
      this.#native = nativePool.serve(names, threadId, concurrency, (jobs, stops, forgotten) =>
        this.#drain(jobs, stops, forgotten),
      );
    } catch (e) {
      throw new TypeError(e.message);
    }
    this.methods = Object.freeze([...names]);
    this.concurrency = concurrency;
  }

  get id() {
    return this.#native.id;
  }

  /** Stops taking new calls; resolves once the calls it already has are finished. */
  close() {
    if (this.#closing !== null) return this.#closing;
    this.#native.close();
    this.#closing = new Promise((resolve) => {
      this.#onIdle = resolve;
    });
    this.#checkIdle();
    return this.#closing;
  }

  /** Keeps this thread alive while it serves (the default). */
  ref() {
    if (this.#onIdle !== null || this.#closing === null) this.#native.ref();
    return this;
  }

  /** Lets this thread exit while serving when nothing else keeps it alive. */
  unref() {
    this.#native.unref();
    return this;
  }

  [Symbol.asyncDispose]() {
    return this.close();
  }

  orphans(tokens) {
    return this.#native.orphaned(tokens);
  }

  /** Runs a batch, then takes more for as long as handlers finish within the loop (sync ones). */
  #drain(jobs, stops, forgotten) {
    this.#draining = true;
    try {
      for (;;) {
        this.#more = false;
        this.#onJobs(jobs, stops, forgotten);
        if (!this.#more) break;
        [jobs, stops, forgotten] = this.#native.take();
      }
    } finally {
      this.#draining = false;
    }
    this.#checkIdle();
  }

  /** A handler slot was freed; `more`: jobs wait for it. */
  #freed(more) {
    if (!more) return;
    if (this.#draining) this.#more = true;
    else this.#drain(...this.#native.take());
  }

  #onJobs(jobs, stops, forgotten) {
    for (const token of forgotten) receivedViews.delete(token);
    for (const token of stops) {
      const run = this.#running.get(token);
      if (run !== undefined) run.context.abort(abortError('The call was aborted', 'AbortError'));
      else if (awaitingViews.has(token)) {
        awaitingViews.delete(token);
        this.#freed(this.#native.complete(token, null)); // settled already; frees its slot
      }
    }
    for (let i = 0; i < jobs.length; i += 4) {
      const token = jobs[i];
      const method = jobs[i + 1];
      let params = jobs[i + 2];
      const timeout = jobs[i + 3];
      if (params === undefined) {
        params = this.#viewParams(token, method, timeout);
        if (params === null) continue;
      }
      this.#run(token, method, params, timeout);
    }
  }

  /** The params of a job with views, or null while waiting for them to be resent. */
  #viewParams(token, method, timeout) {
    let views = receivedViews.get(token);
    if (views === undefined) {
      drainViewsChannel();
      views = receivedViews.get(token);
    }
    if (views !== undefined) {
      receivedViews.delete(token);
      const params = this.#native.params(token, views);
      if (params !== null) return params;
    }
    if (!this.#native.resend(token)) {
      this.#freed(this.#native.complete(token, null)); // its caller is gone: nobody listens
      return null;
    }
    awaitingViews.set(token, { server: this, method, timeout });
    watchOrphans();
    return null;
  }

  [kResume](token, waiting, views) {
    const params = this.#native.params(token, views);
    if (params === null) this.#freed(this.#native.complete(token, null));
    else this.#run(token, waiting.method, params, waiting.timeout);
    this.#checkIdle();
  }

  [kFinish](tokens) {
    for (const token of tokens) {
      awaitingViews.delete(token);
      this.#freed(this.#native.complete(token, null));
    }
    this.#checkIdle();
  }

  #run(token, method, params, timeout) {
    const context = new CallContext();
    const run = new Running(context);
    this.#running.set(token, run);
    if (timeout > 0) {
      run.timer = setTimeout(() => {
        run.timer = null;
        this.#native.stop(token);
        context.abort(abortError('The call ran longer than its timeout', 'TimeoutError'));
      }, timeout);
      run.timer.unref();
    }
    params.push(context);
    let result;
    try {
      result = this.#table.get(method).apply(this.#handlers, params);
    } catch (e) {
      this.#finish(token, false, e);
      return;
    }
    if (result !== null && typeof result === 'object' && typeof result.then === 'function') {
      result.then(
        (v) => this.#finish(token, true, v),
        (e) => this.#finish(token, false, e),
      );
    } else {
      this.#finish(token, true, result);
    }
  }

  #finish(token, ok, value) {
    const run = this.#running.get(token);
    if (run === undefined) return;
    this.#running.delete(token);
    if (run.timer !== null) clearTimeout(run.timer);
    let more;
    if (ok) more = this.#native.complete(token, value);
    else {
      const [message, data] = errorParts(value);
      more = this.#native.fail(token, message, data);
    }
    this.#freed(more);
    if (this.#onIdle !== null && !this.#draining) this.#checkIdle();
  }

  #checkIdle() {
    if (this.#onIdle === null || this.#native.busy !== 0) return;
    const resolve = this.#onIdle;
    this.#onIdle = null;
    this.#native.depart();
    this.#native.unref();
    resolve();
  }
}

/** A thrown value → CommandFailed message and data (`name` and own enumerable fields). */
function errorParts(e) {
  if (e !== null && (typeof e === 'object' || typeof e === 'function')) {
    const data = { name: typeof e.name === 'string' ? e.name : 'Error' };
    for (const key of Object.keys(e)) if (key !== 'name') data[key] = e[key];
    const message = typeof e.message === 'string' ? e.message : String(e);
    return [message, data];
  }
  return [String(e), { value: e }];
}

function closedAnswer(request) {
  const id = request !== null && typeof request === 'object' && !Array.isArray(request) && 'id' in request ? request.id : null;
  return { jsonrpc: '2.0', error: { code: CODES.PoolClosed, message: 'The pool is closed' }, id };
}

/** Threads for a pool whose tasks wait `waitMs` for every `computeMs` of work: cores·(1 + wait/compute). */
function poolSize({ cores: c = cores(), waitMs = 0, computeMs = 1 } = {}) {
  for (const [name, v] of [['cores', c], ['waitMs', waitMs], ['computeMs', computeMs]]) {
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) {
      throw new RangeError(`poolSize: ${name} must be a finite number ≥ 0, got ${describe(v)}`);
    }
  }
  if (computeMs === 0) throw new RangeError('poolSize: computeMs must be > 0');
  return Math.max(1, Math.round(c * (1 + waitMs / computeMs)));
}

module.exports = { Pool, RpcError, poolSize };
