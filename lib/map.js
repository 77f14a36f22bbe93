'use strict';
// Pool#map(method, inputs, options): one call of `method` per input, results in input order.
// Inputs cross in chunks, many calls per crossing into native code (NativePool#callMany), and
// each call settles through the channel like any other; no Promise is made per input. At most
// `concurrency` calls are in flight; the next chunk goes out as earlier ones settle.
//
// The settle loop never runs user code (lib/calls.js): an input's outcome is recorded there,
// and onProgress, the next chunk and the map's own promise follow from a microtask.

const { RpcError, CODES, rejected, describe, errorText } = require('./errors.js');
const { startMany } = require('./calls.js');

/** Calls sent in one crossing at most. */
const CHUNK = 512;
/** Calls in flight at most, by default. */
const CONCURRENCY = 4096;
const OPTION_NAMES = new Set(['settle', 'onProgress', 'signal', 'timeout', 'concurrency']);

/** One input's call, tracked as a call of the pool (lib/calls.js settles it). */
class Item {
  constructor(run, index) {
    this.run = run;
    this.index = index;
    this.owner = run.owner;
    this.signal = null;
    this.onAbort = null;
    this.id = 0;
  }

  resolve(value) {
    this.run.settled(this, true, value);
  }

  reject(error) {
    this.run.settled(this, false, error);
  }
}

class MapRun {
  #native;
  #method;
  #inputs;
  #settleAll;
  #onProgress;
  #signal;
  #timeout;
  #concurrency;
  #results;
  #next = 0;
  #done = 0;
  #inflight = new Map(); // id → Item
  #settledItems = []; // waiting for the microtask that reports them
  #flushing = false;
  #over = false;
  #resolve;
  #reject;
  #onAbort = null;

  constructor(owner, nativePool, method, inputs, o) {
    this.owner = owner;
    this.#native = nativePool;
    this.#method = method;
    this.#inputs = inputs;
    this.#settleAll = o.settle === 'all';
    this.#onProgress = o.onProgress;
    this.#signal = o.signal;
    this.#timeout = o.timeout;
    this.#concurrency = o.concurrency;
    this.#results = new Array(inputs.length);
    this.promise = new Promise((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    if (this.#signal !== undefined) {
      this.#onAbort = () => this.#fail(new RpcError(CODES.Aborted, 'The map was aborted'));
      this.#signal.addEventListener('abort', this.#onAbort, { once: true });
    }
    if (inputs.length === 0) this.#end();
    else this.#send();
  }

  /** Sends the next chunks while there is room. */
  #send() {
    while (!this.#over && this.#next < this.#inputs.length && this.#inflight.size < this.#concurrency) {
      const from = this.#next;
      const n = Math.min(CHUNK, this.#concurrency - this.#inflight.size, this.#inputs.length - from);
      const items = new Array(n);
      for (let i = 0; i < n; i++) items[i] = new Item(this, from + i);
      this.#next += n;
      for (const item of items) this.#inflight.set(item, true);
      startMany(this.owner, items, (ids) => this.#native.callMany(ids, this.#method, this.#inputs, from, this.#timeout, true));
    }
  }

  /** An input's call settled (from the settle loop: records it, reports later). */
  settled(item, ok, value) {
    this.#inflight.delete(item);
    if (this.#over) return;
    if (this.#settleAll) this.#results[item.index] = ok ? { status: 'fulfilled', value } : { status: 'rejected', reason: value };
    else if (ok) this.#results[item.index] = value;
    else {
      this.#fail(value);
      return;
    }
    this.#done++;
    this.#settledItems.push(item, ok, value);
    if (!this.#flushing) {
      this.#flushing = true;
      queueMicrotask(this.#flush);
    }
  }

  #flush = () => {
    this.#flushing = false;
    const settled = this.#settledItems;
    this.#settledItems = [];
    if (this.#onProgress !== undefined) {
      const total = this.#inputs.length;
      let done = this.#done - settled.length / 3;
      for (let i = 0; i < settled.length && !this.#over; i += 3) {
        const item = settled[i];
        const info = { index: item.index, input: this.#inputs[item.index] };
        if (settled[i + 1]) info.value = settled[i + 2];
        else info.error = settled[i + 2];
        try {
          this.#onProgress(++done, total, info);
        } catch (e) {
          this.#fail(e); // the map rejects with what its callback threw
        }
      }
    }
    if (this.#over) return;
    if (this.#done === this.#inputs.length) this.#end();
    else this.#send();
  };

  #end() {
    this.#over = true;
    this.#unlisten();
    this.#resolve(this.#results);
  }

  /** The map rejects with `error`; its calls still in flight are cancelled. */
  #fail(error) {
    if (this.#over) return;
    this.#over = true;
    this.#unlisten();
    if (this.#inflight.size > 0) {
      try {
        this.#native.cancelMany(Float64Array.from(this.#inflight.keys(), (item) => item.id));
      } catch {
        // They run to the end instead; their outcomes are ignored.
      }
    }
    this.#reject(error);
  }

  #unlisten() {
    if (this.#onAbort === null) return;
    try {
      this.#signal.removeEventListener('abort', this.#onAbort);
    } catch {
      // A signal whose removeEventListener throws keeps a listener that finds the map over.
    }
  }
}

/** Pool#map: validates, then runs a MapRun. */
function map(owner, nativePool, method, inputs, options) {
  if (typeof method !== 'string') return rejected(CODES.InvalidRequest, `method must be a string, got ${describe(method)}`);
  let list;
  let o;
  try {
    list = Array.isArray(inputs) ? inputs : Array.from(inputs);
    o = mapOptions(options);
  } catch (e) {
    return Promise.reject(e instanceof RpcError ? e : new RpcError(CODES.InvalidRequest, `map: ${errorText(e)}`));
  }
  if (o.signal?.aborted) return rejected(CODES.Aborted, 'The map was aborted before it started');
  return new MapRun(owner, nativePool, method, list, o).promise;
}

function mapOptions(options) {
  const o = { settle: 'reject', onProgress: undefined, signal: undefined, timeout: undefined, concurrency: CONCURRENCY };
  if (options === undefined) return o;
  if (options === null || typeof options !== 'object') throw new RpcError(CODES.InvalidRequest, `map options must be an object, got ${describe(options)}`);
  for (const key of Object.keys(options)) {
    if (!OPTION_NAMES.has(key)) throw new RpcError(CODES.InvalidRequest, `unknown map option '${key}' (expected ${[...OPTION_NAMES].join(', ')})`);
  }
  Object.assign(o, Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)));
  if (o.settle !== 'reject' && o.settle !== 'all') throw new RpcError(CODES.InvalidRequest, `map options.settle must be 'reject' or 'all', got ${describe(o.settle)}`);
  if (o.onProgress !== undefined && typeof o.onProgress !== 'function') {
    throw new RpcError(CODES.InvalidRequest, `map options.onProgress must be a function, got ${describe(o.onProgress)}`);
  }
  if (o.signal !== undefined && o.signal !== null && !(o.signal instanceof AbortSignal)) {
    throw new RpcError(CODES.InvalidRequest, `map options.signal must be an AbortSignal, got ${describe(o.signal)}`);
  }
  if (o.signal === null) o.signal = undefined;
  if (o.concurrency !== Infinity && !(Number.isInteger(o.concurrency) && o.concurrency >= 1)) {
    throw new RpcError(CODES.InvalidRequest, `map options.concurrency must be a whole number ≥ 1 or Infinity, got ${describe(o.concurrency)}`);
  }
  return o;
}

module.exports = { map };
