'use strict';
// Waiting on a shared Int32 word, for the shared-memory toolkit: Atomics.wait in the blocking
// methods (for worker_threads; on the main thread they block the event loop) and
// Atomics.waitAsync in the …Async twins (never block). Every release is followed by
// Atomics.notify, because native code can neither wake nor join JavaScript's wait lists
// (src/shm/mutex.rs). Waits are cut into slices of WAIT_SLICE_MS after which the word is looked
// at again, so a release by code that does not notify (JavaScript that follows the book's ring
// buffer, native code) is still noticed.

const { performance } = require('node:perf_hooks');
const { types } = require('node:util'); // realm-proof type checks, unlike instanceof
const { invalidParams, describe } = require('../errors.js');

const WAIT_SLICE_MS = 10;
/** Longer than any wait slice, and within a Node timer's range (2^31 − 1 ms). */
const KEEP_ALIVE_MS = 2 ** 31 - 1;

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
    // Held until the wait has resolved, however late V8's timeout task runs: a timer that
    // expired first would let a loaded process exit before the wait comes back.
    const alive = until === Infinity ? null : setTimeout(noop, KEEP_ALIVE_MS);
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

module.exports = { checkTimeout, deadline, waitSlice, waitSliceAsync, checkWord };
