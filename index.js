'use strict';
// corepool's JavaScript API: a thin layer over the native addon. It validates options, keeps
// each call's Promise (and the buffers it was given) until the native side settles it, and
// turns error codes into RpcError. Scheduling and the JSON-RPC protocol live in Rust.

const { EventEmitter } = require('node:events');
const { threadId, BroadcastChannel, receiveMessageOnPort } = require('node:worker_threads');
const os = require('node:os');
const path = require('node:path');
const { performance } = require('node:perf_hooks'); // the global is a getter on every use
const { types } = require('node:util'); // realm-proof type checks, unlike instanceof
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

// Calls in flight, by slot. A call's id is `slot + SLOTS * n`, with `n` counting calls: unique
// among the calls in flight, and a late or repeated settlement for a finished call (whose slot
// may hold a newer call by then) is told apart by the id stored in the Call.
//
// Why not a Map keyed by id: ids only grow, so V8 rehashes a small Map every few inserts, and a
// table it replaces keeps its entries. Once such a table has been promoted to the old
// generation, everything its entries reach (the Call, its promise, the caller's awaiting async
// function and its request objects) survives every scavenge until the next full GC. Under HTTP
// load that made each scavenge copy and promote ~250 KB and pause the event loop 1–2 ms instead
// of 0.3. This array only grows, to the most calls ever in flight at once, and its slots are
// reused last-freed first.
const SLOTS = 2 ** 26; // at most this many calls in flight per thread (~20 GB of Calls)
const SEQUENCES = 2 ** 26; // ids stay below 2^52, exact as numbers and as u64
const calls = []; // slot → Call | undefined
const freeSlots = [];
let sequence = 0;
const RESULT_AS_JSON = 1; // settle code: the result is JSON text (big plain data, see channel.rs)
const kSettled = Symbol('settled');
const kStarted = Symbol('started');

class Call {
  constructor(resolve, reject, owner) {
    this.resolve = resolve;
    this.reject = reject;
    this.owner = owner;
    // The typed arrays over SharedArrayBuffers the call was given (as the native side met them
    // in its params), or undefined: referenced until the call settles, which keeps their memory
    // alive while native threads use it, whatever the caller does with its params meanwhile.
    this.keep = undefined;
    this.signal = null;
    this.onAbort = null;
    this.id = 0;
  }
}

/** Puts `call` in flight and returns its id. */
function track(call) {
  const slot = freeSlots.length > 0 ? freeSlots.pop() : calls.length;
  if (slot >= SLOTS) throw new RangeError(`corepool: more than ${SLOTS} calls in flight on one thread`);
  sequence = sequence === SEQUENCES - 1 ? 0 : sequence + 1;
  call.id = slot + SLOTS * sequence;
  calls[slot] = call;
  return call.id;
}

/** The call in flight with this id, or undefined. */
function tracked(id) {
  const call = calls[id % SLOTS];
  return call !== undefined && call.id === id ? call : undefined;
}

function untrack(call) {
  const slot = call.id % SLOTS;
  calls[slot] = undefined;
  freeSlots.push(slot);
}

/**
 * Starts a call: `send(id)` hands it to the native side, which from then on settles it exactly
 * once through the channel and returns the views it must keep. Nothing is tracked before it can
 * settle: if `send` throws all the same, the call is untracked and rejects here.
 */
function start(owner, send, signal, cancel) {
  return new Promise((resolve, reject) => {
    const call = new Call(resolve, reject, owner);
    const id = track(call);
    owner[kStarted]();
    try {
      if (signal !== undefined) {
        call.signal = signal;
        call.onAbort = () => cancel(id);
        signal.addEventListener('abort', call.onAbort, { once: true });
      }
      call.keep = send(id);
    } catch (e) {
      if (tracked(id) === call) finish(call);
      reject(new RpcError(CODES.InternalError, `corepool: the call could not be started: ${errorText(e)}`));
    }
  });
}

/** Takes a settled call out of flight. */
function finish(call) {
  untrack(call);
  if (call.signal !== null) {
    try {
      call.signal.removeEventListener('abort', call.onAbort);
    } catch {
      // A signal whose removeEventListener throws keeps a listener that finds no call.
    }
  }
  call.owner[kSettled]();
}

/**
 * The channel's callback (src/bindings/channel.rs documents the flat batch). Each call settles
 * in isolation, and no user code runs here: promise reactions run later, 'drain' listeners and
 * drained() waiters from a process.nextTick (see Pool#[kSettled]), so an exception of theirs
 * reaches the process the usual way instead of cutting this loop short.
 */
function settle(batch, resends) {
  if (resends !== undefined) resendViews(resends);
  for (let i = 0; i < batch.length; i += 4) {
    const call = tracked(batch[i]);
    if (call === undefined) continue;
    finish(call);
    const code = batch[i + 1];
    if (code === 0) call.resolve(batch[i + 2]);
    else if (code === RESULT_AS_JSON) {
      let value;
      try {
        value = JSON.parse(batch[i + 2]);
      } catch (e) {
        call.reject(new RpcError(CODES.InternalError, `corepool: the result could not be read: ${errorText(e)}`));
        continue;
      }
      call.resolve(value);
    } else call.reject(new RpcError(code, batch[i + 2], batch[i + 3]));
  }
}

/** A thrown value's message, read without letting a hostile getter throw again. */
function errorText(e) {
  try {
    if (e !== null && typeof e === 'object' && typeof e.message === 'string') return e.message;
    return String(e);
  } catch {
    return 'an exception that cannot be described';
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

/** A serving thread asks for a call's views again: `[call, to, token, ...]`. */
function resendViews(requests) {
  for (let i = 0; i < requests.length; i += 3) {
    const call = tracked(requests[i]);
    if (call !== undefined) publishViews(requests[i + 1], requests[i + 2], call.keep ?? [], true);
  }
}

// ---------------------------------------------------------------------------------------------
// Options.

const STRATEGIES = ['roundrobin', 'random', 'leastbusy'];
const DEFAULTS = Object.freeze({ threads: 0, strategy: 'leastbusy', maxQueue: Infinity, onFull: 'reject', timeout: 0, niceIncrement: 0 });
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
  if (typeof o.timeout !== 'number' || !(o.timeout >= 0)) {
    throw new RangeError(`corepool: options.timeout must be a number of ms ≥ 0 (0 or Infinity: none), got ${describe(o.timeout)}`);
  }
  if (!Number.isInteger(o.niceIncrement) || o.niceIncrement < 0 || o.niceIncrement > 19) {
    throw new RangeError(`corepool: options.niceIncrement must be an integer from 0 to 19, got ${describe(o.niceIncrement)}`);
  }
  return Object.freeze({ threads, strategy: o.strategy, maxQueue, onFull: o.onFull, timeout: o.timeout, niceIncrement: o.niceIncrement });
}

/** Resolved options as the native pool takes them (src/bindings/pool.rs, PoolOptions). */
function nativeOptions(o) {
  return {
    threads: o.threads,
    strategy: o.strategy,
    maxQueue: o.maxQueue,
    wait: o.onFull === 'wait',
    timeoutMs: o.timeout,
    niceIncrement: o.niceIncrement,
  };
}

function describe(v) {
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'bigint') return `${v}n`;
  if (v === null || typeof v !== 'object') return String(v);
  return Array.isArray(v) ? 'an array' : 'an object';
}

// Params made of at least this many plain JSON values travel as JSON text: JSON.stringify here
// and a parse on the worker thread cost the caller's thread far less than converting value by
// value through Node-API (a 200-row table: ~0.3 ms instead of ~2 ms). Anything that is not
// plain JSON takes the value-by-value path, which also produces the precise errors.
const JSON_MIN_VALUES = 32;
const CALL_CANCELLABLE = 1;
const CALL_JSON_PARAMS = 2;

/** Arrays longer than this never travel as JSON text (walking them here would take seconds). */
const JSON_MAX_ELEMENTS = 2 ** 26;

/**
 * Counts the values in `v` if JSON text carries it unchanged, else returns -1 (then the
 * value-by-value path converts it, or refuses it with the precise error). A value with a
 * `toJSON` method is not carried unchanged: JSON would send what the method returns.
 */
function plainJsonSize(v, depth) {
  switch (typeof v) {
    case 'string': // JSON.stringify escapes lone surrogates; the native parse makes them U+FFFD
    case 'boolean':
    case 'undefined':
      return 1;
    case 'number':
      // JSON has no NaN, Infinity or -0.
      return Number.isFinite(v) && (v !== 0 || 1 / v > 0) ? 1 : -1;
    case 'object': {
      if (v === null) return 1;
      if (depth > 64 || typeof v.toJSON === 'function') return -1;
      let n = 1;
      if (Array.isArray(v)) {
        if (!(v.length <= JSON_MAX_ELEMENTS)) return -1;
        for (let i = 0; i < v.length; i++) {
          const c = plainJsonSize(v[i], depth + 1);
          if (c < 0) return -1;
          n += c;
        }
        return n;
      }
      const proto = Object.getPrototypeOf(v);
      if (proto !== Object.prototype && proto !== null) return -1;
      for (const k in v) {
        const item = v[k];
        // JSON drops a key whose value is undefined; the value-by-value path keeps it (as null).
        if (item === undefined) return -1;
        const c = plainJsonSize(item, depth + 1);
        if (c < 0) return -1;
        n += c;
      }
      return n;
    }
    default:
      return -1;
  }
}

/**
 * What to hand the native call for `params`: the array itself, or its JSON text with
 * CALL_JSON_PARAMS (big plain data). Throws an RpcError InvalidParams when the text cannot be
 * made (a getter that returns a BigInt on its second read, text longer than a string can be).
 */
function wireParams(params) {
  let size;
  try {
    size = params.length > 0 ? plainJsonSize(params, 0) : 0;
  } catch {
    size = -1; // a getter or a trap threw: the native conversion names it precisely
  }
  if (size < JSON_MIN_VALUES) return [params, 0];
  try {
    return [JSON.stringify(params), CALL_JSON_PARAMS];
  } catch (e) {
    throw new RpcError(CODES.InvalidParams, `params cannot be sent: JSON.stringify threw ${errorText(e)}`);
  }
}

function rejected(code, message) {
  return Promise.reject(new RpcError(code, message));
}

// ---------------------------------------------------------------------------------------------
// Pool.

let sharedPool = null;

class Pool extends EventEmitter {
  #native;
  #call;
  #inflight = 0;
  #closed = false;
  #closing = null;
  #drainWaiters = [];
  #notifying = false;

  /**
   * @param {object} [options] threads, strategy, maxQueue, onFull, timeout (see README)
   */
  constructor(options, nativePool) {
    super();
    if (nativePool !== undefined) {
      // Pool.shared(): options were validated there.
      this.options = options;
      this.#native = nativePool;
      this.#call = nativePool.caller();
      return;
    }
    this.options = validateOptions(options);
    const o = this.options;
    this.#native = new native.NativePool(channel, nativeOptions(o));
    this.#call = this.#native.caller();
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
      throw new TypeError(e.message);
    }
    if (sharedPool !== null && !sharedPool.#closed) return sharedPool;
    const actual = Object.freeze({ ...o, threads: handle.threads });
    sharedPool = new Pool(actual, handle);
    return sharedPool;
  }

  get threads() {
    return this.#native.threads;
  }

  /** `exec(method, ...params)`: the book's RpcWorkerPool.exec. */
  exec(method, ...params) {
    return this.#submit(method, params, undefined, undefined);
  }

  /** `call(method, params, { signal, timeout })`. */
  call(method, params, options) {
    let timeout;
    let signal;
    try {
      if (params === undefined) params = [];
      else if (!Array.isArray(params)) params = [params];
      if (options !== undefined) {
        if (options === null || typeof options !== 'object') {
          return rejected(CODES.InvalidRequest, `call options must be an object, got ${describe(options)}`);
        }
        ({ timeout, signal } = options);
        if (signal !== undefined && signal !== null && !(signal instanceof AbortSignal)) {
          return rejected(CODES.InvalidRequest, `options.signal must be an AbortSignal, got ${describe(signal)}`);
        }
        if (signal?.aborted) {
          return rejected(CODES.Aborted, 'The call was aborted before it started');
        }
      }
    } catch (e) {
      return rejected(CODES.InvalidRequest, `call options could not be read: ${errorText(e)}`);
    }
    return this.#submit(method, params, timeout, signal ?? undefined);
  }

  /** `render(template, data?, partials?)`: Mustache on a native thread, output as mustache.js 4.2.0's. */
  render(...params) {
    return this.exec('render', ...params);
  }

  /** Runs `method(...params)` once on every thread; resolves with the results in thread order. */
  broadcast(method, ...params) {
    return start(this, (id) => this.#native.broadcast(id, method, params, undefined));
  }

  /** A JSON-RPC 2.0 request object or batch → response object(s); never rejects. */
  request(request) {
    return start(this, (id) => this.#native.request(id, request));
  }

  /** JSON-RPC 2.0 text → response text ('' when there is nothing to answer); never rejects. */
  handle(text) {
    return start(this, (id) => this.#native.handle(id, text));
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

  #submit(method, params, timeout, signal) {
    let sent;
    let flags;
    try {
      [sent, flags] = wireParams(params);
    } catch (e) {
      return Promise.reject(e);
    }
    if (signal !== undefined) flags |= CALL_CANCELLABLE;
    return start(this, (id) => this.#call(id, method, sent, timeout, flags), signal, this.#cancel);
  }

  #cancel = (id) => this.#native.cancel(id);

  [kStarted]() {
    this.#inflight++;
  }

  /** One of this handle's calls settled. Waiters and listeners hear of it from a nextTick. */
  [kSettled]() {
    if (--this.#inflight === 0 && !this.#notifying) {
      this.#notifying = true;
      process.nextTick(this.#notifyDrained);
    }
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

// ---------------------------------------------------------------------------------------------
// Serving methods implemented in JavaScript.

const kResume = Symbol('resume');
const kFinish = Symbol('finish');

// NativeServer#rest(): what a serving thread does after a drain cycle (or the next batch).
const REST_IDLE = 0;
// How long a serving thread runs drain cycles (and polls for calls), all its servers together,
// before its event loop gets a turn.
const REST_BUDGET_MS = 1;
let stretch = 0; // performance.now() when this thread's current run of drain cycles began

/** Starts a run of drain cycles unless one is going on; it ends at the event loop's next turn. */
function startStretch() {
  if (stretch !== 0) return;
  stretch = performance.now();
  setImmediate(endStretch);
}

function endStretch() {
  stretch = 0;
}

function budgetLeft() {
  return performance.now() - stretch < REST_BUDGET_MS;
}

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
  #resumePending = false; // a #resume is scheduled

  constructor(nativePool, handlers, names, concurrency) {
    this.#handlers = handlers;
    this.#table = new Map(names.map((n) => [n, handlers[n]]));
    try {
      this.#native = nativePool.serve(names, threadId, concurrency, (batch) => this.#drain(batch));
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

  /**
   * Drain cycles: runs `batch` (the wake-up's, or null: take one), then takes more for as long
   * as there is some. Every cycle ends with rest(), which on a worker_thread first polls
   * briefly for the next call while no handler is running; calls placed during a cycle wake
   * nobody. Once this thread has spent REST_BUDGET_MS in cycles without its event loop getting
   * a turn, the next cycle waits for a setImmediate (and calls still wake nobody).
   */
  #drain(batch) {
    startStretch();
    this.#draining = true;
    let owed = true; // a cycle is owed until rest() says idle (also if something throws)
    try {
      if (batch === null) batch = this.#native.take();
      for (;;) {
        this.#onJobs(batch);
        const r = this.#native.rest(budgetLeft()); // REST_IDLE, 2 (later) or the next batch
        if (typeof r === 'number') {
          if (r === REST_IDLE) owed = false;
          break;
        }
        batch = r;
      }
    } finally {
      this.#draining = false;
      if (owed) this.#later();
    }
    this.#checkIdle();
  }

  /** Runs a drain cycle once the event loop has had a turn (one at a time). */
  #later() {
    if (this.#resumePending) return;
    this.#resumePending = true;
    setImmediate(this.#resume);
  }

  #resume = () => {
    this.#resumePending = false;
    this.#drain(null);
  };

  /**
   * A handler slot was freed; `more`: jobs wait for it. A draining loop takes them itself;
   * otherwise (an async handler settled) a cycle runs now, or after the event loop's turn once
   * the budget is spent.
   */
  #freed(more) {
    if (!more || this.#draining) return;
    startStretch();
    if (this.#resumePending || !budgetLeft()) this.#later();
    else this.#drain(null);
  }

  /**
   * A batch is one flat array: the numbers of stop notices and forgotten tokens, those tokens,
   * then four entries per job: token, method, params, timeout (ms; 0: none).
   */
  #onJobs(batch) {
    const nStops = batch[0];
    const jobsFrom = 2 + nStops + batch[1];
    for (let i = 2 + nStops; i < jobsFrom; i++) receivedViews.delete(batch[i]);
    for (let i = 2; i < 2 + nStops; i++) {
      const token = batch[i];
      const run = this.#running.get(token);
      if (run !== undefined) run.context.abort(abortError('The call was aborted', 'AbortError'));
      else if (awaitingViews.has(token)) {
        awaitingViews.delete(token);
        this.#freed(this.#native.complete(token, null)); // settled already; frees its slot
      }
    }
    for (let i = jobsFrom; i < batch.length; i += 4) {
      const token = batch[i];
      const method = batch[i + 1];
      let params = batch[i + 2];
      const timeout = batch[i + 3];
      if (typeof params === 'string') {
        try {
          params = JSON.parse(params);
        } catch (e) {
          this.#freed(this.#native.lost(token, `corepool: the params could not be read: ${errorText(e)}`));
          continue;
        }
      } else if (params === undefined) {
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
    if (params === null) {
      // The caller sent every view its call holds, so this cannot happen; never answer null.
      this.#freed(this.#native.lost(token, "corepool: the serving thread could not reach the call's shared memory"));
    } else this.#run(token, waiting.method, params, waiting.timeout);
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
      run.timer = setLongTimeout(() => {
        run.timer = null;
        this.#native.stop(token);
        context.abort(abortError('The call ran longer than its timeout', 'TimeoutError'));
      }, timeout);
    }
    params.push(context);
    let result;
    try {
      result = this.#table.get(method).apply(this.#handlers, params);
      // Reading `then` runs user code (a getter, a Proxy trap): inside the try.
      if (result === null || (typeof result !== 'object' && typeof result !== 'function') || typeof result.then !== 'function') {
        this.#finish(token, true, result);
        return;
      }
    } catch (e) {
      this.#finish(token, false, e);
      return;
    }
    // Adopted by a promise of our own: a thenable whose `then` throws or misbehaves settles
    // it once, as a rejection, and nothing is left unhandled.
    new Promise((resolve) => resolve(result)).then(
      (v) => this.#finish(token, true, v),
      (e) => this.#finish(token, false, e),
    );
  }

  /** Hands a handler's outcome to the native side. Never throws: it runs in promise reactions. */
  #finish(token, ok, value) {
    const run = this.#running.get(token);
    if (run === undefined) return;
    this.#running.delete(token);
    if (run.timer !== null) run.timer.clear();
    let more = false;
    try {
      if (ok) more = this.#native.complete(token, value);
      else {
        const [message, data] = errorParts(value);
        more = this.#native.fail(token, message, data);
      }
    } catch (e) {
      // Not expected (the native side turns bad values into errors): settle it all the same.
      try {
        more = this.#native.fail(token, `corepool: the handler's outcome could not be read: ${errorText(e)}`, {});
      } catch {
        // The environment is going away: its departure settles the call (ServerGone).
      }
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

/**
 * A thrown value → CommandFailed message and data (`name` and own enumerable fields). Total: a
 * getter or Proxy trap that throws while it is read leaves that part out; keys are defined, so a
 * `__proto__` field stays a field.
 */
function errorParts(e) {
  if (e === null || (typeof e !== 'object' && typeof e !== 'function')) {
    return [safely(() => String(e), 'a value that cannot be described'), safely(() => ({ value: e }), {})];
  }
  const name = safely(() => (typeof e.name === 'string' ? e.name : 'Error'), 'Error');
  const message = safely(() => (typeof e.message === 'string' ? e.message : String(e)), 'an exception that cannot be described');
  const data = { name };
  for (const key of safely(() => Object.keys(e), [])) {
    if (key === 'name') continue;
    safely(() => Object.defineProperty(data, key, { value: e[key], enumerable: true, writable: true, configurable: true }));
  }
  return [message, data];
}

/** `f()`, or `fallback` when it throws. */
function safely(f, fallback) {
  try {
    return f();
  } catch {
    return fallback;
  }
}

/** Node's timers hold at most 2^31 − 1 ms (longer ones fire after 1 ms): re-arms until `ms` passed. */
const LONGEST_TIMER = 2 ** 31 - 1;

/** An unref'd timer of any length; `clear()` cancels it. */
function setLongTimeout(fn, ms) {
  const until = performance.now() + ms;
  const handle = {
    timer: null,
    clear() {
      clearTimeout(handle.timer);
    },
  };
  const arm = () => {
    const left = until - performance.now();
    handle.timer = left > LONGEST_TIMER ? setTimeout(arm, LONGEST_TIMER) : setTimeout(fn, Math.max(left, 0));
    handle.timer.unref();
  };
  arm();
  return handle;
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

// ---------------------------------------------------------------------------------------------
// Shared-memory toolkit: Mutex, Semaphore, RingBuffer (protocols in src/shm/), AsyncLock.
//
// Waiting happens here: Atomics.wait in the blocking methods (for worker_threads; on the main
// thread they block the event loop) and Atomics.waitAsync in the *Async twins (never block).
// Every release is followed by Atomics.notify, because native code can neither wake nor join
// JavaScript's wait lists (src/shm/mutex.rs). Waits are cut into slices of WAIT_SLICE_MS after
// which the word is looked at again, so a release by code that does not notify (JavaScript that
// follows the book's ring buffer, native code) is still noticed.

const WAIT_SLICE_MS = 10;
/** Atomics.load polls before sleeping: a lock is usually held for well under a microsecond. */
const SPIN = 64;
const UNLOCKED = 0;
const LOCKED = 1;

function invalidParams(message) {
  return new RpcError(CODES.InvalidParams, message);
}

/** Errors thrown by the native shm functions carry an error-table name (or napi's InvalidArg). */
function fromNative(e) {
  if (e !== null && typeof e === 'object' && typeof e.code === 'string') {
    if (e.code === 'InvalidArg') return invalidParams(e.message);
    if (Object.hasOwn(CODES, e.code)) return new RpcError(CODES[e.code], e.message);
  }
  return e;
}

function checkTimeout(what, timeoutMs) {
  if (timeoutMs !== undefined && !(typeof timeoutMs === 'number' && timeoutMs >= 0)) {
    throw invalidParams(`${what}: timeoutMs must be a number ≥ 0 or Infinity, got ${describe(timeoutMs)}`);
  }
}

/** `performance.now()` deadline for `timeoutMs` (undefined or Infinity: none). */
function deadline(timeoutMs) {
  return timeoutMs === undefined || timeoutMs === Infinity ? Infinity : performance.now() + timeoutMs;
}

/** Sleeps while `array[index] === value`, at most one slice and never past `until`; false if `until` has passed. */
function waitSlice(array, index, value, until) {
  const left = until - performance.now();
  if (left <= 0) return false;
  Atomics.wait(array, index, value, Math.min(left, WAIT_SLICE_MS));
  return true;
}

/**
 * The same without blocking: resolves after the wake, the slice, or at once. A wait with a
 * deadline keeps the event loop alive meanwhile, as a timer would (Atomics.waitAsync alone does
 * not, so a process with nothing else to do would exit before the timeout); a wait without one
 * does not, as a pending promise does not.
 */
async function waitSliceAsync(array, index, value, until) {
  const left = until - performance.now();
  if (left <= 0) return false;
  const slice = Math.min(left, WAIT_SLICE_MS);
  const r = Atomics.waitAsync(array, index, value, slice);
  if (r.async) {
    const alive = until === Infinity ? null : setTimeout(noop, slice + 1);
    await r.value;
    if (alive !== null) clearTimeout(alive);
  }
  return true;
}

function noop() {}

function checkWord(what, array, index) {
  const kind = ArrayBuffer.isView(array) ? array.constructor.name : describe(array);
  if (!types.isInt32Array(array)) {
    throw invalidParams(`${what}: expected an Int32Array over a SharedArrayBuffer, got ${kind}`);
  }
  if (!types.isSharedArrayBuffer(array.buffer)) {
    throw invalidParams(`${what}: the array must be a view over a SharedArrayBuffer, not an ArrayBuffer`);
  }
  if (!Number.isInteger(index) || index < 0 || index >= array.length) {
    throw invalidParams(`${what}: index ${describe(index)} is out of range for an Int32Array of length ${array.length}`);
  }
}

/**
 * The book's mutex on one Int32 word: 0 unlocked, 1 locked (src/shm/mutex.rs states the
 * protocol). The compare-exchanges run inline in JavaScript rather than through a native call:
 * bench/mutex.js measures both, and inline is about three times faster uncontended. It interoperates
 * with JavaScript following the book and with native holders on the same word.
 */
class Mutex {
  #array;
  #index;

  constructor(int32Array, index = 0) {
    checkWord('Mutex', int32Array, index);
    this.#array = int32Array;
    this.#index = index;
  }

  /** Takes the lock if it is free, without waiting. */
  tryLock() {
    return Atomics.compareExchange(this.#array, this.#index, UNLOCKED, LOCKED) === UNLOCKED;
  }

  /** Takes the lock, waiting at most `timeoutMs` (default: no limit); false on timeout. Blocks. */
  lock(timeoutMs) {
    checkTimeout('Mutex.lock', timeoutMs);
    if (this.tryLock()) return true;
    const until = deadline(timeoutMs);
    for (;;) {
      for (let i = 0; i < SPIN; i++) {
        if (Atomics.load(this.#array, this.#index) === UNLOCKED && this.tryLock()) return true;
      }
      if (!waitSlice(this.#array, this.#index, LOCKED, until)) return this.tryLock();
      if (this.tryLock()) return true;
    }
  }

  /** `lock` without blocking the event loop: resolves true when locked, false on timeout. */
  async lockAsync(timeoutMs) {
    checkTimeout('Mutex.lockAsync', timeoutMs);
    if (this.tryLock()) return true;
    const until = deadline(timeoutMs);
    for (;;) {
      if (!(await waitSliceAsync(this.#array, this.#index, LOCKED, until))) return this.tryLock();
      if (this.tryLock()) return true;
    }
  }

  /** Releases the lock and wakes one waiter. Throws if the mutex is not locked. */
  unlock() {
    if (Atomics.compareExchange(this.#array, this.#index, LOCKED, UNLOCKED) !== LOCKED) {
      throw new Error('Mutex.unlock(): the mutex is not locked');
    }
    Atomics.notify(this.#array, this.#index, 1);
  }

  /** The book's `exec`: runs `fn()` (synchronous) under the lock; throws RpcError Timeout if the lock stays taken. */
  withLock(fn, timeoutMs) {
    if (typeof fn !== 'function') throw invalidParams(`Mutex.withLock: fn must be a function, got ${describe(fn)}`);
    if (!this.lock(timeoutMs)) throw new RpcError(CODES.Timeout, `Mutex.withLock: the lock stayed taken for ${timeoutMs} ms`);
    try {
      return fn();
    } finally {
      this.unlock();
    }
  }

  /** `withLock` for the main thread: awaits the lock without blocking, then awaits `fn()`. */
  async withLockAsync(fn, timeoutMs) {
    if (typeof fn !== 'function') throw invalidParams(`Mutex.withLockAsync: fn must be a function, got ${describe(fn)}`);
    if (!(await this.lockAsync(timeoutMs))) {
      throw new RpcError(CODES.Timeout, `Mutex.withLockAsync: the lock stayed taken for ${timeoutMs} ms`);
    }
    try {
      return await fn();
    } finally {
      this.unlock();
    }
  }

  get locked() {
    return Atomics.load(this.#array, this.#index) === LOCKED;
  }
}

/**
 * A counting semaphore on one Int32 word holding the free permits (src/shm/semaphore.rs).
 * `permits`, when given, sets the count: pass it once, where the semaphore is set up.
 */
class Semaphore {
  #array;
  #index;
  #tryAcquire;
  #release;

  constructor(int32Array, index = 0, permits) {
    checkWord('Semaphore', int32Array, index);
    if (permits !== undefined && !(Number.isInteger(permits) && permits >= 0 && permits <= 0x7fffffff)) {
      throw invalidParams(`Semaphore: permits must be a whole number from 0 to 2147483647, got ${describe(permits)}`);
    }
    try {
      [this.#tryAcquire, this.#release] = native.shmSemaphore(int32Array, index);
    } catch (e) {
      throw fromNative(e);
    }
    this.#array = int32Array;
    this.#index = index;
    if (permits !== undefined) Atomics.store(int32Array, index, permits);
  }

  tryAcquire() {
    return this.#tryAcquire();
  }

  /** Takes a permit, waiting at most `timeoutMs` (default: no limit); false on timeout. Blocks. */
  acquire(timeoutMs) {
    checkTimeout('Semaphore.acquire', timeoutMs);
    if (this.#tryAcquire()) return true;
    const until = deadline(timeoutMs);
    for (;;) {
      const seen = Atomics.load(this.#array, this.#index);
      if (seen <= 0 && !waitSlice(this.#array, this.#index, seen, until)) return this.#tryAcquire();
      if (this.#tryAcquire()) return true;
    }
  }

  /** `acquire` without blocking the event loop. */
  async acquireAsync(timeoutMs) {
    checkTimeout('Semaphore.acquireAsync', timeoutMs);
    if (this.#tryAcquire()) return true;
    const until = deadline(timeoutMs);
    for (;;) {
      const seen = Atomics.load(this.#array, this.#index);
      if (seen <= 0 && !(await waitSliceAsync(this.#array, this.#index, seen, until))) return this.#tryAcquire();
      if (this.#tryAcquire()) return true;
    }
  }

  /** Gives a permit back and wakes one waiter. */
  release() {
    this.#release();
    Atomics.notify(this.#array, this.#index, 1);
  }

  /** Free permits now (a snapshot). */
  get available() {
    return Atomics.load(this.#array, this.#index);
  }
}

const RING_HEADER = 16;
const RING_LOCK = 0;
const RING_LENGTH = 3;
const RING_MAX_CAPACITY = 2 ** 30 - 1;
/** Arrays up to this size are copied through one long-lived array per RingBuffer, so the native
 *  side always sees the same off-heap memory (a fresh small typed array lives on the V8 heap and
 *  would have to be moved off it at every native call). */
const RING_STAGING = 16384;
/** Atomics.load polls of the length word before sleeping on it: the other side is often
 *  running on another core and about to move bytes. */
const RING_SPIN = 1000;

function checkBytes(what, data) {
  if (!types.isUint8Array(data)) {
    throw invalidParams(`${what} must be a Uint8Array, got ${ArrayBuffer.isView(data) ? data.constructor.name : describe(data)}`);
  }
}

function lockTimeout(what, timeoutMs) {
  return new RpcError(CODES.Timeout, `${what}: the ring buffer's lock stayed taken for ${timeoutMs} ms`);
}

function checkCount(what, n) {
  if (!(Number.isSafeInteger(n) && n >= 0)) throw invalidParams(`${what} must be a whole number ≥ 0, got ${describe(n)}`);
}

/**
 * The book's SharedRingBuffer (src/shm/ring.rs): a byte FIFO in a SharedArrayBuffer laid out
 * as lock word, head, tail, length, then data from byte 16. Bytes move natively under the
 * lock; a reader that finds it empty or a writer that finds it full sleeps on the length word,
 * and the operation that takes the ring out of that state wakes it.
 */
class RingBuffer {
  #buffer;
  #meta;
  #capacity;
  #write;
  #readInto;
  #staging;

  /** @param sharedOrCapacity a SharedArrayBuffer (laid out as above) or a capacity in bytes. */
  constructor(sharedOrCapacity) {
    let sab = sharedOrCapacity;
    if (typeof sab === 'number') {
      if (!(Number.isInteger(sab) && sab >= 1 && sab <= RING_MAX_CAPACITY)) {
        throw invalidParams(`RingBuffer: capacity must be a whole number from 1 to ${RING_MAX_CAPACITY}, got ${describe(sab)}`);
      }
      sab = new SharedArrayBuffer(RING_HEADER + sab);
    } else if (!types.isSharedArrayBuffer(sab)) {
      throw invalidParams(`RingBuffer: expected a SharedArrayBuffer or a capacity in bytes, got ${describe(sab)}`);
    } else if (sab.growable) {
      // The layout keeps no capacity: it is the buffer's size, which must not change under it.
      throw invalidParams('RingBuffer: a growable SharedArrayBuffer cannot hold a ring buffer (its capacity would change); pass a fixed-length one');
    }
    try {
      [this.#write, this.#readInto] = native.shmRing(new Uint8Array(sab));
    } catch (e) {
      throw fromNative(e);
    }
    this.#buffer = sab;
    this.#meta = new Int32Array(sab, 0, 4);
    this.#capacity = sab.byteLength - RING_HEADER;
    // Over 64 bytes, so V8 allocates it off-heap from the start.
    this.#staging = new Uint8Array(Math.max(128, Math.min(this.#capacity, RING_STAGING)));
  }

  /** The SharedArrayBuffer: post it to a worker and wrap it there with `new RingBuffer(buffer)`. */
  get buffer() {
    return this.#buffer;
  }

  get capacity() {
    return this.#capacity;
  }

  /** Bytes stored now (a snapshot). */
  get length() {
    return Atomics.load(this.#meta, RING_LENGTH) >>> 0;
  }

  /** One native attempt on the first `limit` bytes of `array`: bytes moved, or -1 when the lock stayed taken. */
  #call(isWrite, array, limit) {
    let r;
    try {
      r = isWrite ? this.#write(array, limit) : this.#readInto(array, limit);
    } catch (e) {
      throw fromNative(e);
    }
    if (r < 0) return -1;
    // The lock was taken and released natively: wake a lock waiter, as the mutex protocol says;
    // wake the length word's sleepers only when the ring left the state they sleep in.
    Atomics.notify(this.#meta, RING_LOCK, 1);
    if (r & 1) Atomics.notify(this.#meta, RING_LENGTH);
    return r >>> 1;
  }

  /** One attempt to move `bytes` (source or target): bytes moved (0: full / empty), or -1 when the lock stayed taken. */
  #move(isWrite, bytes) {
    const n = bytes.length;
    const length = Atomics.load(this.#meta, RING_LENGTH) >>> 0;
    if (n === 0 || (isWrite ? length >= this.#capacity : length === 0)) return 0;
    const staging = this.#staging;
    if (n > staging.length) return this.#call(isWrite, bytes, n);
    if (isWrite) {
      staging.set(bytes);
      return this.#call(true, staging, n);
    }
    const got = this.#call(false, staging, n);
    if (got > 0) bytes.set(staging.subarray(0, got));
    return got;
  }

  /** The value the length word holds while the other side must act (full for writes, empty for reads). */
  #stuckAt(isWrite) {
    return isWrite ? this.#capacity | 0 : 0;
  }

  /** Polls the length word briefly; true as soon as it leaves `stuck`. */
  #spinWhile(stuck) {
    for (let i = 0; i < RING_SPIN; i++) {
      if (Atomics.load(this.#meta, RING_LENGTH) !== stuck) return true;
    }
    return false;
  }

  /** Moves all of `bytes`, or as much as fits before `until`; returns the count. Blocks. */
  #moveAll(isWrite, bytes, until) {
    let done = 0;
    while (done < bytes.length) {
      const n = this.#move(isWrite, done === 0 ? bytes : bytes.subarray(done));
      if (n > 0) {
        done += n;
      } else if (n < 0) {
        if (!waitSlice(this.#meta, RING_LOCK, LOCKED, until)) break;
      } else if (!this.#spinWhile(this.#stuckAt(isWrite)) && !waitSlice(this.#meta, RING_LENGTH, this.#stuckAt(isWrite), until)) {
        break;
      }
    }
    return done;
  }

  async #moveAllAsync(isWrite, bytes, until) {
    let done = 0;
    while (done < bytes.length) {
      const n = this.#move(isWrite, done === 0 ? bytes : bytes.subarray(done));
      if (n > 0) {
        done += n;
      } else if (n < 0) {
        if (!(await waitSliceAsync(this.#meta, RING_LOCK, LOCKED, until))) break;
      } else if (!(await waitSliceAsync(this.#meta, RING_LENGTH, this.#stuckAt(isWrite), until))) {
        break;
      }
    }
    return done;
  }

  /** Runs `attempt` until it got the lock (n ≥ 0), sleeping on the lock word meanwhile;
   *  RpcError Timeout when the lock stays taken for `timeoutMs`. Blocks. */
  #retry(what, timeoutMs, attempt) {
    let until;
    for (;;) {
      const n = attempt();
      if (n >= 0) return n;
      until ??= deadline(timeoutMs);
      if (!waitSlice(this.#meta, RING_LOCK, LOCKED, until)) throw lockTimeout(what, timeoutMs);
    }
  }

  async #retryAsync(what, timeoutMs, attempt) {
    let until;
    for (;;) {
      const n = attempt();
      if (n >= 0) return n;
      until ??= deadline(timeoutMs);
      if (!(await waitSliceAsync(this.#meta, RING_LOCK, LOCKED, until))) throw lockTimeout(what, timeoutMs);
    }
  }

  /** `read(n)`'s one attempt: into the staging array when it fits, then copied out exactly. */
  #readAttempt(want, out) {
    if (out !== null) return () => this.#move(false, out);
    return () => this.#call(false, this.#staging, want);
  }

  #readResult(want, out, got) {
    if (out === null) return this.#staging.slice(0, got);
    return got === want ? out : out.slice(0, got);
  }

  /** Writes what fits of `data` (the book's write): returns the bytes written, 0 when full.
   *  Waits only for the lock: RpcError Timeout if it stays taken for `timeoutMs`. */
  write(data, timeoutMs) {
    checkBytes('RingBuffer.write: data', data);
    checkTimeout('RingBuffer.write', timeoutMs);
    return this.#retry('RingBuffer.write', timeoutMs, () => this.#move(true, data));
  }

  /** Reads up to `n` bytes (the book's read): a new Uint8Array of what was there, empty when
   *  empty. Waits only for the lock, as `write` does. */
  read(n, timeoutMs) {
    checkCount('RingBuffer.read: n', n);
    checkTimeout('RingBuffer.read', timeoutMs);
    const want = Math.min(n, this.length);
    if (want === 0) return new Uint8Array(0);
    const out = want > this.#staging.length ? new Uint8Array(want) : null;
    return this.#readResult(want, out, this.#retry('RingBuffer.read', timeoutMs, this.#readAttempt(want, out)));
  }

  /** Reads up to `target.length` bytes into `target`; returns the count (0 when empty). */
  readInto(target, timeoutMs) {
    checkBytes('RingBuffer.readInto: target', target);
    checkTimeout('RingBuffer.readInto', timeoutMs);
    return this.#retry('RingBuffer.readInto', timeoutMs, () => this.#move(false, target));
  }

  /** `write` without blocking the event loop. */
  async writeAsync(data, timeoutMs) {
    checkBytes('RingBuffer.writeAsync: data', data);
    checkTimeout('RingBuffer.writeAsync', timeoutMs);
    return this.#retryAsync('RingBuffer.writeAsync', timeoutMs, () => this.#move(true, data));
  }

  /** `read` without blocking the event loop. */
  async readAsync(n, timeoutMs) {
    checkCount('RingBuffer.readAsync: n', n);
    checkTimeout('RingBuffer.readAsync', timeoutMs);
    const want = Math.min(n, this.length);
    if (want === 0) return new Uint8Array(0);
    const out = want > this.#staging.length ? new Uint8Array(want) : null;
    return this.#readResult(want, out, await this.#retryAsync('RingBuffer.readAsync', timeoutMs, this.#readAttempt(want, out)));
  }

  /** `readInto` without blocking the event loop. */
  async readIntoAsync(target, timeoutMs) {
    checkBytes('RingBuffer.readIntoAsync: target', target);
    checkTimeout('RingBuffer.readIntoAsync', timeoutMs);
    return this.#retryAsync('RingBuffer.readIntoAsync', timeoutMs, () => this.#move(false, target));
  }

  /** Writes all of `data`, waiting for room at most `timeoutMs`; returns the bytes written (fewer only on timeout). Blocks. */
  writeAll(data, timeoutMs) {
    checkBytes('RingBuffer.writeAll: data', data);
    checkTimeout('RingBuffer.writeAll', timeoutMs);
    return this.#moveAll(true, data, deadline(timeoutMs));
  }

  /** Reads exactly `n` bytes, waiting for data at most `timeoutMs`; fewer only on timeout. Blocks. */
  readExactly(n, timeoutMs) {
    checkCount('RingBuffer.readExactly: n', n);
    checkTimeout('RingBuffer.readExactly', timeoutMs);
    const out = new Uint8Array(n);
    const got = this.#moveAll(false, out, deadline(timeoutMs));
    return got === n ? out : out.slice(0, got);
  }

  /** `writeAll` without blocking the event loop. */
  async writeAllAsync(data, timeoutMs) {
    checkBytes('RingBuffer.writeAllAsync: data', data);
    checkTimeout('RingBuffer.writeAllAsync', timeoutMs);
    return this.#moveAllAsync(true, data, deadline(timeoutMs));
  }

  /** `readExactly` without blocking the event loop. */
  async readExactlyAsync(n, timeoutMs) {
    checkCount('RingBuffer.readExactlyAsync: n', n);
    checkTimeout('RingBuffer.readExactlyAsync', timeoutMs);
    const out = new Uint8Array(n);
    const got = await this.#moveAllAsync(false, out, deadline(timeoutMs));
    return got === n ? out : out.slice(0, got);
  }
}

/**
 * A FIFO lock for async code within one JavaScript thread: holders run one at a time, in the
 * order they asked. No shared memory; use Mutex across threads.
 */
class AsyncLock {
  #tail = Promise.resolve();
  #waiting = 0;

  /** Resolves, in call order, with a `release()` function; call it exactly once. */
  acquire() {
    let open;
    const released = new Promise((resolve) => {
      open = resolve;
    });
    const previous = this.#tail;
    this.#tail = released;
    this.#waiting++;
    let done = false;
    const release = () => {
      if (done) throw new Error('AsyncLock: release() called twice');
      done = true;
      this.#waiting--;
      open();
    };
    return previous.then(() => release);
  }

  /** Runs `fn()` under the lock and releases it however `fn` ends; resolves or rejects as `fn` does. */
  async runExclusive(fn) {
    if (typeof fn !== 'function') throw invalidParams(`AsyncLock.runExclusive: fn must be a function, got ${describe(fn)}`);
    const release = await this.acquire();
    try {
      return await fn();
    } finally {
      release();
    }
  }

  /** True while someone holds the lock or waits for it. */
  get locked() {
    return this.#waiting > 0;
  }
}

module.exports = { Pool, RpcError, poolSize, Mutex, Semaphore, RingBuffer, AsyncLock };
