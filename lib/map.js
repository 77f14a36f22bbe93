'use strict';
// Pool#map(method, inputs, options): one call of `method` per input, results in input order,
// with as few crossings into native code as possible:
// - a native command's inputs go in chunks, each chunk one native job that runs the command
//   once per input (src/pool/each.rs): one crossing, one job and one settlement per chunk;
// - a JavaScript-served method's inputs go one call each, many calls per crossing
//   (NativePool#callMany), each settling on its own.
// No Promise is made per input. At most `concurrency` inputs are in flight; the next chunk
// goes out as earlier ones settle.
//
// The settle loop never runs user code (lib/calls.js): outcomes are recorded there, and
// onProgress, the next chunk and the map's own promise follow from a microtask.

const { RpcError, CODES, rejected, describe, errorText } = require('./errors.js');
const { performance } = require('node:perf_hooks');
const { startMany, kStarted, kSettled } = require('./calls.js');
const { clonedParams, needsClone, DataCloneError } = require('./clone.js');
const { callOptions } = require('./call-options.js');
const { startCallSpan, endCallSpan } = require('./trace-context.js');

/** Inputs sent in one crossing at most. */
const CHUNK = 1024;
/**
 * A native chunk runs its inputs one after the other on one thread, so its size adapts to how
 * long they take: it starts at one input, and each chunk that settles sets the next size so
 * that a chunk takes about CHUNK_MS (at most 4 times the last size, at most CHUNK). Tiny
 * inputs soon go a thousand to a chunk; long ones stay one to a chunk, run in parallel, and
 * their first error is known as soon as it happens.
 */
const CHUNK_MS = 2;
/** Native chunks in flight per thread: one running, one queued behind it. */
const CHUNKS_PER_THREAD = 2;
/** Inputs in flight at most, by default. */
const CONCURRENCY = 8192;

/** One input's call (a served method's), tracked as a call of the pool. */
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

/** A chunk of inputs run natively as one call: it settles with `{ results, errors }`. */
class Chunk {
  constructor(run, index, size) {
    this.run = run;
    this.index = index; // of its first input
    this.size = size;
    this.owner = run.owner;
    this.signal = null;
    this.onAbort = null;
    this.id = 0;
  }

  resolve(value) {
    this.run.chunkSettled(this, value);
  }

  reject(error) {
    this.run.chunkFailed(this, error);
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
  #inflight = new Set(); // Items and Chunks
  #inflightInputs = 0;
  #chunkSize;
  #chunksInFlight;
  #cancellable;
  #retry = []; // chunks that failed as a whole, to send again input by input
  #again = []; // { from, n } (a native chunk) or { indexes } (calls): the pool had no room
  #cap; // inputs in flight at most: `concurrency`, lowered while the pool's queue is full
  #chunkCap;
  #settledItems = []; // index, ok, value: waiting for the microtask that reports them
  #flushing = false;
  #over = false;
  #resolve;
  #reject;
  #onAbort = null;
  // Once the first inputs are sent the map is an accepted call: the pool takes the rest after
  // close() too (as it runs every call accepted before it), not after destroy().
  #accepted = false;
  /** The trace context every call of a served method carries: the map's span's (lib/trace-context.js), or undefined. */
  #trace;
  /** `method` is served in JavaScript (not a native command): its inputs may cross as structured clone. */
  #served;
  /** What is sent for each input, where some input does not cross as it is (else null: the inputs). */
  #wire = null;
  /** How each input crosses (0: as it is; else the contract's call flag, lib/clone.js clonedParams), once some input does not; else null. */
  #kinds = null;

  constructor(owner, nativePool, method, inputs, o, trace) {
    this.#trace = trace;
    this.owner = owner;
    this.#native = nativePool;
    this.#method = method;
    this.#inputs = inputs;
    this.#settleAll = o.settle === 'all';
    this.#onProgress = o.onProgress;
    this.#signal = o.signal;
    this.#timeout = o.timeout;
    this.#concurrency = o.concurrency;
    this.#cap = o.concurrency;
    this.#results = new Array(inputs.length);
    // A native command's inputs go in chunks (0: one call each).
    this.#chunkSize = nativePool.runsNatively(method) ? 1 : 0;
    this.#served = this.#chunkSize === 0;
    this.#chunksInFlight = CHUNKS_PER_THREAD * Math.max(nativePool.threads, 1);
    this.#chunkCap = this.#chunksInFlight;
    // Calls are cancellable (a native control kept per call) only when something may cancel
    // them before they end: a signal, or a first error that ends the map.
    this.#cancellable = o.signal !== undefined || !this.#settleAll;
    this.promise = new Promise((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    // The map is in flight from here to its end, as a call is: between one input settling and
    // the next being sent it has none of its calls in flight, and drained(), 'drain' and
    // close() must not take that for the end.
    owner[kStarted]();
    if (this.#signal !== undefined) {
      this.#onAbort = () => this.#fail(new RpcError(CODES.Aborted, 'The map was aborted'));
      this.#signal.addEventListener('abort', this.#onAbort, { once: true });
    }
    if (inputs.length === 0) this.#end();
    else this.#send();
    this.#accepted = true;
  }

  /** Sends what the pool had no room for, then the next chunks, while there is room. */
  #send() {
    while (!this.#over && this.#again.length > 0 && this.#inflightInputs < this.#cap) {
      const again = this.#again[0];
      if (again.indexes === undefined && this.#inflight.size >= this.#chunkCap) return;
      this.#again.shift();
      if (again.indexes === undefined) this.#sendChunk(again.from, again.n, false);
      else this.#sendItems(0, again.indexes.length, again.indexes);
    }
    while (!this.#over && this.#next < this.#inputs.length && this.#inflightInputs < this.#cap) {
      const from = this.#next;
      const room = Math.min(this.#cap - this.#inflightInputs, this.#inputs.length - from);
      if (this.#chunkSize > 0) {
        if (this.#inflight.size >= this.#chunkCap) return;
        const n = Math.min(room, this.#chunkSize);
        this.#sendChunk(from, n, true);
      } else {
        const n = Math.min(room, CHUNK);
        this.#sendItems(from, n);
      }
    }
  }

  /**
   * The pool's queue had no room for these inputs (QueueFull, `onFull: 'reject'`): while other
   * inputs of this map are in flight, they are sent again when those make room, and the map
   * keeps no more in flight than the pool took. With none in flight, the queue is full of
   * other callers' work, and QueueFull is their outcome. True if they will be sent again.
   */
  #noRoom(again) {
    if (this.#inflightInputs === 0) return false;
    this.#cap = Math.max(1, this.#inflightInputs);
    this.#chunkCap = Math.max(1, this.#inflight.size);
    this.#again.push(again);
    return true;
  }

  /** An input settled (or a chunk): one more may be in flight, up to `concurrency`. */
  #roomGrows() {
    if (this.#cap < this.#concurrency) this.#cap++;
    if (this.#chunkCap < this.#chunksInFlight) this.#chunkCap++;
  }

  #sendChunk(from, n, fresh) {
    const chunk = new Chunk(this, from, n);
    chunk.sent = performance.now();
    if (fresh) this.#next += n;
    this.#inflightInputs += n;
    this.#inflight.add(chunk);
    startMany(this.owner, [chunk], (ids) => this.#native.callChunk(ids[0], this.#method, this.#inputs, from, n, this.#timeout, this.#cancellable, this.#accepted));
  }

  /** One call per input (a served method's, or a chunk's inputs again one by one). */
  #sendItems(from, n, indexes) {
    if (indexes === undefined && this.#served) {
      // Each input made ready to cross first: one that cannot is its own failure, and the
      // inputs around it go as usual.
      const failures = [];
      for (let i = from; i < from + n; i++) {
        const e = this.#prepare(i);
        if (e !== undefined) failures.push([i, e]);
      }
      if (failures.length > 0) {
        this.#next += n;
        let start = from;
        for (const [i] of failures) {
          if (i > start) this.#sendRange(start, i - start, undefined);
          start = i + 1;
        }
        if (start < from + n) this.#sendRange(start, from + n - start, undefined);
        for (const [i, e] of failures) {
          if (this.#over) return;
          this.#record(i, false, e);
        }
        return;
      }
    }
    if (indexes === undefined) this.#next += n;
    this.#sendRange(from, n, indexes);
  }

  /** Sends inputs `from..from + n` (or those of `indexes`), one call each. */
  #sendRange(from, n, indexes) {
    const items = new Array(n);
    for (let i = 0; i < n; i++) items[i] = new Item(this, indexes === undefined ? from + i : indexes[i]);
    this.#inflightInputs += n;
    for (const item of items) this.#inflight.add(item);
    const wire = this.#wire ?? this.#inputs;
    const kinds = this.#kinds ?? undefined;
    if (indexes === undefined) {
      startMany(this.owner, items, (ids) => this.#native.callMany(ids, this.#method, wire, from, this.#timeout, this.#cancellable, this.#accepted, this.#trace, kinds));
    } else {
      // Inputs taken out of order (a chunk that failed as a whole, or again once the pool had
      // room): one crossing each.
      for (const item of items) {
        startMany(this.owner, [item], (ids) => this.#native.callMany(ids, this.#method, wire, item.index, this.#timeout, this.#cancellable, this.#accepted, this.#trace, kinds));
      }
    }
  }

  /**
   * Input `i` of a JavaScript-served method made ready to cross as a call's params do
   * (lib/pool.js): plain data as it is (shared views by reference); anything else as
   * structured clone, or, holding shared memory, as a copy posted with it shared. Returns the
   * error the input fails with if it cannot cross (a DataCloneError naming the place, what a
   * getter threw), else undefined.
   */
  #prepare(i) {
    const v = this.#inputs[i];
    // (A function or a symbol goes the clone's way too, to be refused in its words.)
    if (v === null || (v !== undefined && typeof v !== 'object' && typeof v !== 'function' && typeof v !== 'symbol')) return undefined;
    let kind;
    let wire;
    try {
      if (v !== undefined && typeof v === 'object' && !needsClone(v)) return undefined;
      [kind, wire] = clonedParams([v], undefined, 'item', false);
    } catch (e) {
      // The place as the item's own (the params array around it is this code's).
      if (e instanceof DataCloneError && e.message.startsWith('item[0]')) return new DataCloneError(`item${e.message.slice(7)}`, e.data?.path?.replace(/^item\[0\]/, 'item'));
      return e;
    }
    if (this.#kinds === null) {
      this.#kinds = new Uint32Array(this.#inputs.length);
      this.#wire = this.#inputs.slice();
    }
    this.#kinds[i] = kind;
    this.#wire[i] = wire;
    return undefined;
  }

  /** A chunk's calls all ran: `{ results, errors: [[index, code, message, data?], …] }`. */
  chunkSettled(chunk, outcome) {
    this.#inflight.delete(chunk);
    this.#inflightInputs -= chunk.size;
    if (this.#over) return;
    this.#roomGrows();
    const ms = Math.max(performance.now() - chunk.sent, 0.001);
    this.#chunkSize = Math.max(1, Math.min(CHUNK, chunk.size * 4, Math.round((chunk.size * CHUNK_MS) / ms)));
    const { results, errors } = outcome;
    const failed = new Map(errors.map(([i, code, message, data]) => [i, new RpcError(code, message, data)]));
    for (let i = 0; i < chunk.size; i++) {
      const error = failed.get(i);
      if (error === undefined) this.#record(chunk.index + i, true, results[i]);
      else this.#record(chunk.index + i, false, error);
      if (this.#over) return;
    }
  }

  /** A chunk failed as a whole. An input that cannot cross fails its whole chunk: its inputs
   *  are sent again one call each, so that each gets its own outcome. */
  chunkFailed(chunk, error) {
    this.#inflight.delete(chunk);
    this.#inflightInputs -= chunk.size;
    if (this.#over) return;
    if (error.code === CODES.InvalidParams && chunk.size > 1) {
      this.#retry.push(chunk);
      this.#schedule();
      return;
    }
    if (error.code === CODES.QueueFull && this.#noRoom({ from: chunk.index, n: chunk.size })) return;
    for (let i = 0; i < chunk.size && !this.#over; i++) this.#record(chunk.index + i, false, error);
  }

  /** An input's call settled (from the settle loop: records it, reports later). */
  settled(item, ok, value) {
    this.#inflight.delete(item);
    this.#inflightInputs--;
    if (this.#over) return;
    if (!ok && value.code === CODES.QueueFull && this.#noRoom({ indexes: [item.index] })) return;
    // What was sent for it goes (its bytes or copy), unless it is to be sent again (above).
    if (this.#wire !== null) this.#wire[item.index] = undefined;
    this.#roomGrows();
    this.#record(item.index, ok, value);
  }

  #record(index, ok, value) {
    if (this.#settleAll) this.#results[index] = ok ? { status: 'fulfilled', value } : { status: 'rejected', reason: value };
    else if (ok) this.#results[index] = value;
    else {
      this.#fail(value);
      return;
    }
    this.#done++;
    this.#settledItems.push(index, ok, value);
    this.#schedule();
  }

  #schedule() {
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
        const index = settled[i];
        const info = { index, input: this.#inputs[index] };
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
    for (const chunk of this.#retry.splice(0)) {
      this.#sendItems(chunk.index, chunk.size, Array.from({ length: chunk.size }, (_, i) => chunk.index + i));
    }
    if (this.#done === this.#inputs.length) this.#end();
    else this.#send();
  };

  #end() {
    this.#over = true;
    this.#unlisten();
    this.#resolve(this.#results);
    this.owner[kSettled]();
  }

  /** The map rejects with `error`; its calls still in flight are cancelled. */
  #fail(error) {
    if (this.#over) return;
    this.#over = true;
    this.#unlisten();
    if (this.#inflight.size > 0) {
      try {
        this.#native.cancelMany(Float64Array.from(this.#inflight, (call) => call.id));
      } catch {
        // They run to the end instead; their outcomes are ignored.
      }
    }
    this.#reject(error);
    this.owner[kSettled]();
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
    if (!Array.isArray(inputs) && (inputs === null || typeof inputs !== 'object' || typeof inputs[Symbol.iterator] !== 'function')) {
      return rejected(CODES.InvalidRequest, `map inputs must be an array or an iterable, got ${describe(inputs)}`);
    }
    // Read once, here: the map never looks at the caller's array again, so one that shrinks
    // or grows meanwhile (or an iterable, consumed once) changes nothing of it.
    list = readInputs(inputs);
    o = mapOptions(options);
    if (o.signal?.aborted) return rejected(CODES.Aborted, 'The map was aborted before it started');
  } catch (e) {
    return Promise.reject(e instanceof RpcError ? e : new RpcError(CODES.InvalidRequest, `map: ${errorText(e)}`));
  }
  // One CLIENT span for the whole map when a span is active: each call of a method served in
  // JavaScript carries its context (native chunks do not read it).
  const span = startCallSpan(method);
  return span === null ? new MapRun(owner, nativePool, method, list, o, undefined).promise : endCallSpan(span, new MapRun(owner, nativePool, method, list, o, span.text).promise);
}

/** A copy of the inputs (an array's elements, an iterable's values); InvalidRequest if reading them throws. */
function readInputs(inputs) {
  try {
    return Array.from(inputs);
  } catch (e) {
    throw new RpcError(CODES.InvalidRequest, `map inputs could not be read: ${errorText(e)}`);
  }
}

/** The map's options (read by lib/call-options.js), with their defaults. */
function mapOptions(options) {
  const given = callOptions('map', options);
  const o = { settle: 'reject', onProgress: given.onProgress, signal: given.signal, timeout: given.timeout, concurrency: CONCURRENCY };
  if (given.settle !== undefined) o.settle = given.settle;
  if (given.concurrency !== undefined) o.concurrency = given.concurrency;
  if (o.settle !== 'reject' && o.settle !== 'all') throw new RpcError(CODES.InvalidRequest, `map options.settle must be 'reject' or 'all', got ${describe(o.settle)}`);
  if (o.concurrency !== Infinity && !(Number.isInteger(o.concurrency) && o.concurrency >= 1)) {
    throw new RpcError(CODES.InvalidRequest, `map options.concurrency must be a whole number ≥ 1 or Infinity, got ${describe(o.concurrency)}`);
  }
  return o;
}

module.exports = { map };
