'use strict';

const { native } = require('../native.js');
const { invalidParams, fromNative, describe } = require('../errors.js');
const { checkTimeout, deadline, waitSlice, waitSliceAsync, checkWord } = require('./wait.js');

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

module.exports = { Semaphore };
