'use strict';
// corepool's JavaScript API: a thin layer over the native addon. It validates options, keeps
// each call's Promise (and the buffers it was given) until the native side settles it, and
// turns error codes into RpcError. Scheduling and the JSON-RPC protocol live in Rust.

const { EventEmitter } = require('node:events');
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
const RESULT_AS_JSON = 1; // settle code: the result is JSON text (big plain data, see channel.rs)
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

function settle(batch) {
  for (let i = 0; i < batch.length; i += 4) {
    const id = batch[i];
    const call = pending.get(id);
    if (call === undefined) continue;
    pending.delete(id);
    if (call.signal !== null) call.signal.removeEventListener('abort', call.onAbort);
    const code = batch[i + 1];
    if (code === 0) call.resolve(batch[i + 2]);
    else if (code === RESULT_AS_JSON) call.resolve(JSON.parse(batch[i + 2]));
    else call.reject(new RpcError(code, batch[i + 2], batch[i + 3]));
    call.owner[kSettled]();
  }
}

const channel = new native.Channel(settle);

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

// Params made of at least this many plain JSON values travel as JSON text: JSON.stringify here
// and a parse on the worker thread cost the caller's thread far less than converting value by
// value through Node-API (a 200-row table: ~0.3 ms instead of ~2 ms). Anything that is not
// plain JSON takes the value-by-value path, which also produces the precise errors.
const JSON_MIN_VALUES = 32;
const CALL_CANCELLABLE = 1;
const CALL_JSON_PARAMS = 2;

/** Counts the values in `v` if JSON text carries it unchanged, else returns -1. */
function plainJsonSize(v, depth) {
  switch (typeof v) {
    case 'string':
      return v.isWellFormed() ? 1 : -1; // lone surrogates are not JSON-safe
    case 'boolean':
    case 'undefined':
      return 1;
    case 'number':
      // JSON has no NaN, Infinity or -0.
      return Number.isFinite(v) && (v !== 0 || 1 / v > 0) ? 1 : -1;
    case 'object': {
      if (v === null) return 1;
      if (depth > 64) return -1;
      let n = 1;
      if (Array.isArray(v)) {
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
        const c = plainJsonSize(v[k], depth + 1);
        if (c < 0) return -1;
        n += c;
      }
      return n;
    }
    default:
      return -1;
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
    this.#native = new native.NativePool(channel, o.threads, o.strategy, o.maxQueue, o.onFull === 'wait', o.timeout);
    this.#call = this.#native.caller();
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
      let flags = signal !== undefined ? CALL_CANCELLABLE : 0;
      let sent = params;
      if (params.length > 0 && plainJsonSize(params, 0) >= JSON_MIN_VALUES) {
        sent = JSON.stringify(params);
        flags |= CALL_JSON_PARAMS;
      }
      this.#call(id, method, sent, timeout, flags);
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
