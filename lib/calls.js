'use strict';
// The calls in flight of this environment (the main thread or a worker_thread) and its
// completion channel: a call is tracked from the moment the native side can settle it until it
// settles, exactly once, through `settle`. This module owns the call table.

const { native, contract } = require('./native.js');
const { markAsUntransferable } = require('node:worker_threads');
const { RpcError, CODES, errorText } = require('./errors.js');
const { deserialize, DataCloneError } = require('./clone.js');
const posted = require('./posted.js');
require('./views.js'); // registers this environment's publisher of views

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
const SWEEP_EVERY = 2 ** 20; // calls between two reads of every results port (lib/posted.js)
const calls = []; // slot → Call | undefined
const freeSlots = [];
let sequence = 0;

/** What a call's owner (a Pool handle) is told: a call started, a call settled. */
const kStarted = Symbol('started');
const kSettled = Symbol('settled');
/** What a call's owner may define: (RpcError) => the error its call rejects with. */
const kExplain = Symbol('explain');
/** What a call's owner may define: true when its results may hold shared memory, shared as
 *  `postMessage` shares it (corepool/piscina's, as Piscina's); otherwise such a result is refused. */
const kSharesMemory = Symbol('sharesMemory');

class Call {
  constructor(resolve, reject, owner) {
    this.resolve = resolve;
    this.reject = reject;
    this.owner = owner;
    this.signal = null;
    this.onAbort = null;
    this.id = 0;
    this.onProgress = null;
    this.progress = NO_PROGRESS; // the latest report not yet given to onProgress
  }
}

const NO_PROGRESS = Symbol('no progress');
const RAN = contract.ran;

/** Puts `call` in flight and returns its id. */
function track(call) {
  const slot = freeSlots.length > 0 ? freeSlots.pop() : calls.length;
  if (slot >= SLOTS) throw new RangeError(`corepool: more than ${SLOTS} calls in flight on one thread`);
  sequence = sequence === SEQUENCES - 1 ? 0 : sequence + 1;
  call.id = slot + SLOTS * sequence;
  calls[slot] = call;
  // Results posted for calls settled otherwise are dropped long before an id comes back.
  if (sequence % SWEEP_EVERY === 0) posted.sweep(isTracked);
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
 * Starts a call of `owner`: `send(id)` hands it to the native side, which from then on settles
 * it exactly once through the channel (and keeps the call's shared memory alive until then).
 * Nothing is tracked before it can settle: if `send` throws all the same, the call is untracked
 * and rejects here. `cancel(id)` runs when `signal` aborts, also when it aborted while the call
 * was being sent (a getter in the params may abort it). `onProgress(value)` gets the call's
 * progress reports, if any (see `progressed`). `context`: the diagnostics_channel context of an
 * observed call (sent with `callFlags.timed`), which learns how the call ran (see `ran`).
 */
function start(owner, send, signal, cancel, onProgress, context) {
  return new Promise((resolve, reject) => {
    const call = new Call(resolve, reject, owner);
    if (onProgress !== undefined) call.onProgress = onProgress;
    if (context !== undefined) call.context = context;
    const id = track(call);
    owner[kStarted]();
    try {
      if (signal !== undefined) {
        call.signal = signal;
        call.onAbort = () => cancel(id);
        signal.addEventListener('abort', call.onAbort, { once: true });
      }
      send(id);
      if (signal !== undefined && signal.aborted) cancel(id);
    } catch (e) {
      if (tracked(id) === call) finish(call);
      reject(new RpcError(CODES.InternalError, `corepool: the call could not be started: ${errorText(e)}`));
    }
  });
}

/**
 * Starts calls of `owner` given as objects of the shape of a Call (`resolve(value)` and
 * `reject(error)` may be methods): tracks each, then `send(ids)` hands them to the native side
 * in one crossing (a Float64Array of their ids), which settles each through the channel. If
 * `send` throws, each rejects.
 */
function startMany(owner, many, send) {
  const ids = new Float64Array(many.length);
  for (let i = 0; i < many.length; i++) {
    ids[i] = track(many[i]);
    owner[kStarted]();
  }
  try {
    send(ids);
  } catch (e) {
    const error = new RpcError(CODES.InternalError, `corepool: the calls could not be started: ${errorText(e)}`);
    for (const call of many) {
      if (tracked(call.id) !== call) continue;
      finish(call);
      call.reject(error);
    }
  }
  return ids;
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
 * The channel's callback (src/bindings/channel/settle.rs documents the flat batch). Each call settles
 * in isolation, and no user code runs here: promise reactions run later, and owners tell their
 * listeners from a process.nextTick, so an exception of theirs reaches the process the usual
 * way instead of cutting this loop short.
 */
function settle(...batch) {
  // The shared Buffer the last small Buffer result was cut from (see resultSlice below).
  let slab;
  if (batch.length === 0) {
    // Settlements had their share of this turn of the event loop: the rest come after timers
    // and I/O had theirs (src/bindings/channel/mod.rs, "Fairness to the event loop").
    setImmediate(resume);
    return;
  }
  for (let i = 0; i < batch.length; i += 4) {
    const call = tracked(batch[i]);
    if (call === undefined) continue;
    const code = batch[i + 1];
    if (code === contract.progress) {
      progressed(call, batch[i + 2]);
      continue;
    }
    if (code === RAN) {
      ran(call, batch[i + 2]);
      continue;
    }
    finish(call);
    if (code === 0) call.resolve(batch[i + 2]);
    else if (code === contract.resultAsJson) {
      let value;
      try {
        value = JSON.parse(batch[i + 2]);
      } catch (e) {
        call.reject(new RpcError(CODES.InternalError, `corepool: the result could not be read: ${errorText(e)}`));
        continue;
      }
      call.resolve(value);
    } else if (code === contract.resultCloned) {
      // A structured-clone message from a JavaScript handler: its parts (lib/clone.js).
      let value;
      try {
        value = deserialize(batch[i + 2]);
      } catch (e) {
        call.reject(new RpcError(CODES.InternalError, `corepool: the result could not be read: ${errorText(e)}`));
        continue;
      }
      call.resolve(value);
    } else if (code === contract.resultPosted) {
      // A structured-clone result its worker posted on this thread's port (lib/posted.js).
      let value;
      try {
        value = posted.take(batch[i], batch[i + 2], isTracked, call.owner[kSharesMemory] === true);
      } catch (e) {
        call.reject(e instanceof DataCloneError ? e : new RpcError(CODES.InternalError, `corepool: the result could not be read: ${errorText(e)}`));
        continue;
      }
      call.resolve(value);
    } else if (code === contract.resultSlice) {
      // The memory is shared with other calls' results: transferring it to another thread would
      // empty theirs. As with Node's own Buffer pool, postMessage copies it instead.
      if (batch[i + 2] !== slab) {
        slab = batch[i + 2];
        markAsUntransferable(slab.buffer);
      }
      const place = batch[i + 3];
      const start = Math.floor(place / contract.sliceSpan);
      call.resolve(slab.subarray(start, start + (place % contract.sliceSpan)));
    } else call.reject(failure(call.owner, code, batch[i + 2], batch[i + 3]));
  }
}

/** The error a failed call of `owner` rejects with: an RpcError, which the owner may explain
 *  (a task-file pool knows more about its own failures: lib/workers.js). */
function failure(owner, code, message, data) {
  // A handler's result that structured clone cannot carry (lib/serve.js refused it).
  if (code === CODES.InvalidParams && data?.name === 'DataCloneError') return new DataCloneError(message, data.path);
  const error = new RpcError(code, message, data);
  const explain = owner[kExplain];
  if (explain === undefined) return error;
  try {
    return explain.call(owner, error);
  } catch {
    return error;
  }
}

/**
 * How an observed call ran, before its settlement: `[thread, waitMs, runMs]` goes on its
 * diagnostics_channel context (lib/channels.js), read when asyncStart is published.
 */
function ran(call, times) {
  const context = call.context;
  if (context === undefined) return;
  context.thread = times[0];
  context.waitMs = times[1];
  context.runMs = times[2];
}

/**
 * A progress report of a call in flight: the listener gets it from a microtask (queued before
 * the call's own settlement, which follows reports in the batch, so a listener never hears of
 * progress after the caller saw the result). Reports that come faster than microtasks run are
 * merged: the listener gets the latest. A listener that throws does not change the call's
 * outcome; its exception is reported as uncaught, as an EventEmitter listener's would be.
 */
function progressed(call, value) {
  if (call.onProgress === null) return;
  const scheduled = call.progress !== NO_PROGRESS;
  call.progress = value;
  if (!scheduled) queueMicrotask(() => tellProgress(call));
}

function tellProgress(call) {
  const value = call.progress;
  call.progress = NO_PROGRESS;
  try {
    call.onProgress(value);
  } catch (e) {
    process.nextTick(() => {
      throw e;
    });
  }
}

/** This environment's completion channel. */
const channel = new native.Channel(settle);
const resume = () => channel.resume(settle);

const isTracked = (id) => tracked(id) !== undefined;

/**
 * A port for a worker to post its results to this environment's calls on (lib/posted.js):
 * `{ here, there, origin }`, `there` to be handed to the worker with `origin`, the number it
 * tells its server (`postTo`), and `here` kept (keepResults) once the worker has a thread id;
 * null where the runtime cannot.
 */
function openResults() {
  const box = posted.openBox();
  return box === null ? null : { ...box, origin: channel.originId };
}

/** Worker `thread` posts on the other end of `results.here` (from openResults). */
function keepResults(thread, results) {
  posted.keepBox(thread, results.here);
}

/** Worker `thread` has exited: what it posted is kept for its calls, and its port closes. */
function closeResults(thread) {
  posted.closeBox(thread, isTracked);
}

module.exports = { start, startMany, kStarted, kSettled, kExplain, kSharesMemory, channel, openResults, keepResults, closeResults };
