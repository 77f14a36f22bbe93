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
// here (`openBox`), and is told this environment's origin number. The native side then hands
// it, with each call this environment made, the call's id (src/bindings/serve.rs); a result
// that must travel as structured clone is posted on the port as `[callId, value]` before the
// call is completed with code `resultPosted` (src/bindings/contract.rs). So the message is in
// this port's queue before the call settles here, and `take` reads it synchronously
// (`receiveMessageOnPort`): no event, no wait, no order to guess. A message whose call settled
// otherwise meanwhile (cancelled, timed out) is never taken: it is dropped once its call is
// known to be over (`purge`).

const { MessageChannel, receiveMessageOnPort } = require('node:worker_threads');

/** This thread's ends of the workers' ports. */
const boxes = new Set();
/** Results read off a port ahead of their call's settlement: call id → value. */
const early = new Map();
/** `early` is purged of settled calls' results when it holds this many. */
let purgeAt = 64;

/**
 * A new port pair: this thread keeps one end, the returned end goes to a worker (in its
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
  boxes.add(port1);
  return { here: port1, there: port2 };
}

/**
 * The worker at the other end of `box` has exited: what it posted is read now (its results'
 * settlements may still be on their way), and the port is closed. `tracked(id)`: whether call
 * `id` of this environment is still waiting for its outcome.
 */
function closeBox(box, tracked) {
  if (!boxes.delete(box)) return;
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
 * The result posted for call `call`, which settled with code `resultPosted`. Throws when no
 * port has it (a serving thread's bug, not the caller's). `tracked(id)`: as in closeBox.
 */
function take(call, tracked) {
  // The ports first, even when `early` has the call's id: a call id comes back after 2^26
  // calls (lib/calls.js), and `early` may still hold a result that an earlier call of the
  // same id never took; this call's own message, still in a port, replaces it there.
  let found = false;
  for (const box of boxes) {
    if (readAll(box, call)) {
      found = true;
      break;
    }
  }
  if (!found && !early.has(call)) throw new Error('the result posted for this call is not on any port of this thread');
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

module.exports = { openBox, closeBox, take };
