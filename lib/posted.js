'use strict';
// Results that a pool's JavaScript workers post on this thread's message ports instead of
// sending them as structured-clone bytes through the native side.
//
// Why: a value read back with `v8.Deserializer` (or written with `v8.Serializer`) stays
// reachable until that object is garbage collected, which takes a collection of its own, so
// every object of the value survives at least one young-generation collection (copied
// there): a Map of 1,000 entries costs about 45 µs more of garbage collection per read than
// the same value read from a message port, whose (C++) deserializer is gone once the message
// is read. A port also spares the native side the bytes. The params still go as bytes: a call
// is placed on a worker by the native scheduler, after the caller has let go of it.
//
// How: each worker of a task-file pool gets a port of a MessageChannel whose other end stays
// here (`openBox`, then `keepBox` under the worker's thread id), and is told this
// environment's origin number. The native side then hands it, with each call this environment
// made, the call's id (src/bindings/serve.rs); a result that must travel as structured clone
// is posted on the port, then the call's id (two messages: a value that cannot be read here,
// nested too deep for this thread's stack, say, fails its own call only), and the call is
// completed with code `resultPosted` and the worker's thread id (src/bindings/contract.rs).
// So the messages are in that port's queue before the call settles here, and `take` reads
// them synchronously (`receiveMessageOnPort`): no event, no wait, no order to guess. (A port
// read to its end, by a sweep or for a call whose result was read ahead, may meet a worker
// between its two messages: the value waits in `halves` for its id.) A worker
// posts only while the call still waits (`NativeServer.live`); a result whose call was settled
// otherwise meanwhile (timed out, aborted) is dropped when it is read, and every port is read
// out every 2^20 calls (`sweep`), so none lies there until a call id comes back (2^26 calls).
// Shared memory, which postMessage shares, is refused here (`holdsShared`): the caller never
// sees it; except by a pool whose results share it as Piscina's do (corepool/piscina).

const { MessageChannel, receiveMessageOnPort } = require('node:worker_threads');
const { DataCloneError, holdsShared, SERIALIZER, SHARED_RESULT } = require('./clone.js');

/** This thread's ends of the workers' ports, by the worker's thread id. */
const boxes = new Map();
/** Results read off a port ahead of their call's settlement: call id → value (or Unread). */
const early = new Map();
/**
 * By port: a value read while its worker was between its two messages (the value posted, the
 * call's id not yet): it is paired with the next message read there, the id.
 */
const halves = new Map();

/** A posted result that could not be read here: its call rejects with `error`. */
class Unread {
  constructor(error) {
    this.error = error;
  }
}

/** `early` is purged of settled calls' results when it holds this many. */
let purgeAt = 64;

/**
 * A new port pair: `here` stays on this thread (keepBox), `there` goes to a worker (in its
 * `transferList`). null where the runtime has no synchronous read of a port (the results then
 * go as bytes).
 */
function openBox() {
  // (Without v8.Serializer, Bun: results go as v8.serialize's bytes, which keep a Buffer a
  // Buffer where postMessage makes it a Uint8Array.)
  if (!SERIALIZER || typeof receiveMessageOnPort !== 'function' || typeof MessageChannel !== 'function') return null;
  let channel;
  try {
    channel = new MessageChannel();
  } catch {
    return null;
  }
  const { port1, port2 } = channel;
  // Read synchronously only: never started, never keeping the process alive.
  port1.unref?.();
  return { here: port1, there: port2 };
}

/** `here`, a port from openBox, is where worker `thread` posts its results. */
function keepBox(thread, here) {
  boxes.set(thread, here);
}

/**
 * Worker `thread` has exited: what it posted is read now (its results' settlements may still be
 * on their way), and its port is closed. `tracked(id)`: whether call `id` of this environment
 * is still waiting for its outcome.
 */
function closeBox(thread, tracked) {
  const box = boxes.get(thread);
  if (box === undefined) return;
  boxes.delete(thread);
  try {
    readAll(box, undefined, tracked);
  } finally {
    halves.delete(box); // its worker died between its two messages: that call fails otherwise
    box.close();
    purge(tracked);
  }
}

/** Reads every port out, dropping the results of calls no longer waiting (every 2^20 calls). */
function sweep(tracked) {
  for (const box of boxes.values()) readAll(box, undefined, tracked);
  purge(tracked);
}

/**
 * Reads `box`'s results into `early` until the one of call `call`; returns whether it came.
 * Results of calls no longer waiting (`tracked`) are dropped. Never throws: a value that
 * cannot be read is kept as an Unread for its own call.
 */
function readAll(box, call, tracked) {
  for (;;) {
    let value;
    if (halves.has(box)) {
      value = halves.get(box);
      halves.delete(box);
    } else {
      try {
        const m = receiveMessageOnPort(box);
        if (m === undefined) return false;
        value = m.message;
      } catch (e) {
        // (The message is gone from the queue: its call's id comes next.)
        value = new Unread(e);
      }
    }
    let next;
    try {
      next = receiveMessageOnPort(box);
    } catch {
      return false;
    }
    if (next === undefined) {
      // Its worker is between its two messages (this port is read to its end while workers
      // post): the value waits here for its id.
      halves.set(box, value);
      return false;
    }
    const id = next.message;
    // Only corepool's workers post here, each result then its call's id.
    if (typeof id !== 'number') return false;
    if (id !== call && !tracked(id)) continue;
    early.set(id, value);
    if (id === call) return true;
  }
}

/**
 * The result worker `thread` posted for call `call`, which settled with code `resultPosted`.
 * Throws what reading it threw, a DataCloneError for shared memory (unless `shares`: the
 * caller's pool shares it, as `postMessage` does), or an Error when it is not there (a serving
 * thread's bug, not the caller's). `tracked(id)`: whether call `id` of this environment still
 * waits for its outcome.
 */
function take(call, thread, tracked, shares = false) {
  // The port first, even when `early` has the call's id: a result for an earlier call of the
  // same id (it comes back after 2^26 calls, lib/calls.js) could only be in `early` if it was
  // read while that call waited; this call's own result, still in the port, replaces it.
  const box = boxes.get(thread);
  const found = box !== undefined && readAll(box, call, tracked);
  if (!found && !early.has(call)) throw new Error(`the result posted for this call is not on the port of thread ${thread}`);
  const value = early.get(call);
  early.delete(call);
  if (early.size >= purgeAt) purge(tracked);
  if (value instanceof Unread) throw value.error;
  if (!shares && value !== null && typeof value === 'object' && holdsShared(value)) throw new DataCloneError(SHARED_RESULT);
  return value;
}

/** Drops the results of calls that settled otherwise (they will never be taken). */
function purge(tracked) {
  for (const id of early.keys()) if (!tracked(id)) early.delete(id);
  purgeAt = Math.max(64, 2 * early.size);
}

/** How many ports are open and results read ahead, for tests and diagnostics. */
function stats() {
  return { ports: boxes.size, early: early.size, halves: halves.size };
}

module.exports = { openBox, keepBox, closeBox, sweep, take, stats };
