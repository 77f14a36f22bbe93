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
// is posted on the port as `[callId, value]` before the call is completed with code
// `resultPosted` and the worker's thread id (src/bindings/contract.rs). So the message is in
// that port's queue before the call settles here, and `take` reads it synchronously
// (`receiveMessageOnPort`): no event, no wait, no order to guess. A message whose call settled
// otherwise meanwhile (cancelled, timed out) is never taken: it is dropped once its call is
// known to be over (`purge`).

const { MessageChannel, receiveMessageOnPort } = require('node:worker_threads');

/** This thread's ends of the workers' ports, by the worker's thread id. */
const boxes = new Map();
/** Results read off a port ahead of their call's settlement: call id → value. */
const early = new Map();
/** `early` is purged of settled calls' results when it holds this many. */
let purgeAt = 64;

/**
 * A new port pair: `here` stays on this thread (keepBox), `there` goes to a worker (in its
 * `transferList`). null where the runtime has no synchronous read of a port (the results then
 * go as bytes).
 */
function openBox() {
  if (typeof receiveMessageOnPort !== 'function' || typeof MessageChannel !== 'function') return null;
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
  readAll(box, undefined);
  box.close();
  purge(tracked);
}

/** Reads `box`'s messages into `early` until the one of call `call`; returns whether it came. */
function readAll(box, call) {
  for (;;) {
    const m = receiveMessageOnPort(box);
    if (m === undefined) return false;
    const message = m.message;
    // Only corepool's workers post here, as `[callId, value]`.
    if (!Array.isArray(message) || message.length !== 2 || typeof message[0] !== 'number') continue;
    early.set(message[0], message[1]);
    if (message[0] === call) return true;
  }
}

/**
 * The result worker `thread` posted for call `call`, which settled with code `resultPosted`.
 * Throws when it is not there (a serving thread's bug, not the caller's). `tracked(id)`: as in
 * closeBox.
 */
function take(call, thread, tracked) {
  // The port first, even when `early` has the call's id: a call id comes back after 2^26
  // calls (lib/calls.js), and `early` may still hold a result that an earlier call of the
  // same id never took; this call's own message, still in the port, replaces it there.
  const box = boxes.get(thread);
  const found = box !== undefined && readAll(box, call);
  if (!found && !early.has(call)) throw new Error(`the result posted for this call is not on the port of thread ${thread}`);
  const value = early.get(call);
  early.delete(call);
  if (early.size >= purgeAt) purge(tracked);
  return value;
}

/** Drops the results of calls that settled otherwise (they will never be taken). */
function purge(tracked) {
  for (const id of early.keys()) if (!tracked(id)) early.delete(id);
  purgeAt = Math.max(64, 2 * early.size);
}

module.exports = { openBox, keepBox, closeBox, take };
