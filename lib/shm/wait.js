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
const { invalidParams, describe, errorText } = require('../errors.js');
const { after } = require('../timer.js');

const WAIT_SLICE_MS = 10;
/** The slice while the holder is a native thread, which cannot notify (src/shm/agent.rs). */
const NATIVE_HOLDER_SLICE_MS = 1;
/** Longer than any wait slice. */
const KEEP_ALIVE_MS = 2 ** 31 - 1;
/**
 * Polls of a taken lock word before a blocking lock sleeps, unless the lock's `spin` option
 * says otherwise: a lock is usually held for well under a microsecond, and a poll costs a few
 * nanoseconds, so spinning this long beats sleeping and being woken (tens of microseconds)
 * when the holder is running, and wastes little when it is not. 64 is what the Mutex polled
 * before the option existed; bench/locks.js found no count between 16 and 400 reliably better.
 */
const DEFAULT_SPIN = 64;
const MAX_SPIN = 1_000_000;
/** Polls between two looks at the clock while spinning (a look costs about as much as 10 polls). */
const SPIN_CLOCK_EVERY = 256;

/**
 * True when spin round `round` should stop because `until` has passed: a spin of up to
 * MAX_SPIN polls (20 times that behind a native FairMutex holder) takes milliseconds to
 * seconds, far past a short timeout.
 */
function spinPast(round, until) {
  return round % SPIN_CLOCK_EVERY === SPIN_CLOCK_EVERY - 1 && performance.now() >= until;
}

/** `Atomics.pause` where the runtime has it (Node 24+): tells the core it is a spin-wait. */
const pause = typeof Atomics.pause === 'function' ? Atomics.pause : undefined;

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
function waitSlice(array, index, value, until, sliceMs = WAIT_SLICE_MS) {
  const left = until - performance.now();
  if (left <= 0) return false;
  Atomics.wait(array, index, value, Math.min(left, sliceMs));
  return true;
}

/**
 * The same without blocking: resolves after the wake, the slice, or at once. A wait with a
 * deadline keeps the event loop alive meanwhile, as a timer would (Atomics.waitAsync alone does
 * not, so a process with nothing else to do would exit before the timeout); a wait without one
 * does not, as a pending promise does not.
 */
async function waitSliceAsync(array, index, value, until, sliceMs = WAIT_SLICE_MS) {
  const left = until - performance.now();
  if (left <= 0) return false;
  const slice = Math.min(left, sliceMs);
  const r = Atomics.waitAsync(array, index, value, slice);
  if (r.async) {
    // Held until the wait has resolved, however late V8's timeout task runs: a timer that
    // expired first would let a loaded process exit before the wait comes back.
    const alive = until === Infinity ? null : after(KEEP_ALIVE_MS, noop);
    await r.value;
    alive?.clear();
  }
  return true;
}

function noop() {}

// The built-in getters of every typed array, called directly: a subclass (or an own property)
// can redefine `buffer`, `length` and `constructor`, to lie or to throw.
const typedArrayPrototype = Object.getPrototypeOf(Int32Array.prototype);
const builtIn = (key) => Object.getOwnPropertyDescriptor(typedArrayPrototype, key).get;
const bufferOf = builtIn('buffer');
const lengthOf = builtIn('length');
const typedArrayName = builtIn(Symbol.toStringTag); // undefined for anything but a typed array

function checkWord(what, array, index) {
  if (!types.isInt32Array(array)) {
    const kind = ArrayBuffer.isView(array) ? (typedArrayName.call(array) ?? 'DataView') : describe(array);
    throw invalidParams(`${what}: expected an Int32Array over a SharedArrayBuffer, got ${kind}`);
  }
  if (!types.isSharedArrayBuffer(bufferOf.call(array))) {
    throw invalidParams(`${what}: the array must be a view over a SharedArrayBuffer, not an ArrayBuffer`);
  }
  const length = lengthOf.call(array);
  if (!Number.isInteger(index) || index < 0 || index >= length) {
    throw invalidParams(`${what}: index ${describe(index)} is out of range for an Int32Array of length ${length}`);
  }
}

/** The `spin` option of a lock's `options` (polls before sleeping), checked. */
function spinOption(what, options) {
  if (options === undefined) return DEFAULT_SPIN;
  if (options === null || typeof options !== 'object') {
    throw invalidParams(`${what}: options must be an object, got ${describe(options)}`);
  }
  let spin;
  try {
    spin = options.spin ?? DEFAULT_SPIN;
  } catch (e) {
    throw invalidParams(`${what}: reading options.spin threw: ${errorText(e)}`);
  }
  if (!(Number.isInteger(spin) && spin >= 0 && spin <= MAX_SPIN)) {
    throw invalidParams(`${what}: options.spin must be a whole number from 0 to ${MAX_SPIN}, got ${describe(spin)}`);
  }
  return spin;
}

module.exports = {
  checkTimeout,
  deadline,
  waitSlice,
  waitSliceAsync,
  checkWord,
  spinOption,
  spinPast,
  pause,
  NATIVE_HOLDER_SLICE_MS,
};
