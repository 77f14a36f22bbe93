'use strict';

const { contract } = require('../native.js');
const { invalidParams, describe } = require('../errors.js');
const { checkTimeout, deadline, waitSlice, waitSliceAsync, checkWord, spinOption, spinPast, pause } = require('./wait.js');
const { lockError } = require('./agent.js');
const { LOCKING, lockAddress } = require('./lock-all.js');

const MAX_PERMITS = contract.locks.maxCount;

/**
 * A counting semaphore on one Int32 word holding the free permits (src/shm/semaphore.rs states
 * the protocol). Its compare-exchanges run inline, as the Mutex's do: a native call per
 * operation would cost more than the operation (bench/locks.js). `permits`, when given, sets
 * the count: pass it once, where the semaphore is set up.
 */
class Semaphore {
  #array;
  #index;
  #spin;
  #address = null;

  /** `options.spin`: polls of an empty count before `acquire()` sleeps (default in lib/shm/wait.js). */
  constructor(int32Array, index = 0, permits, options) {
    checkWord('Semaphore', int32Array, index);
    if (permits !== undefined && !(Number.isInteger(permits) && permits >= 0 && permits <= MAX_PERMITS)) {
      throw invalidParams(`Semaphore: permits must be a whole number from 0 to ${MAX_PERMITS}, got ${describe(permits)}`);
    }
    this.#spin = spinOption('Semaphore', options);
    this.#array = int32Array;
    this.#index = index;
    if (permits !== undefined) Atomics.store(int32Array, index, permits);
  }

  /** Takes a permit if one is free, without waiting. */
  tryAcquire() {
    const array = this.#array;
    const index = this.#index;
    for (let n = Atomics.load(array, index); n > 0; ) {
      const seen = Atomics.compareExchange(array, index, n, n - 1);
      if (seen === n) return true;
      n = seen;
    }
    return false;
  }

  /** Takes a permit, waiting at most `timeoutMs` (default: no limit); false on timeout. Blocks: polls `spin` times, then sleeps. */
  acquire(timeoutMs) {
    checkTimeout('Semaphore.acquire', timeoutMs);
    if (this.tryAcquire()) return true;
    const until = deadline(timeoutMs);
    for (;;) {
      for (let round = 0; round < this.#spin && !spinPast(round, until); round++) {
        if (pause !== undefined) pause(round);
        if (Atomics.load(this.#array, this.#index) > 0 && this.tryAcquire()) return true;
      }
      const seen = Atomics.load(this.#array, this.#index);
      if (seen <= 0 && !waitSlice(this.#array, this.#index, seen, until)) return this.tryAcquire();
      if (this.tryAcquire()) return true;
    }
  }

  /** `acquire` without blocking the event loop (and without spinning). */
  async acquireAsync(timeoutMs) {
    checkTimeout('Semaphore.acquireAsync', timeoutMs);
    if (this.tryAcquire()) return true;
    const until = deadline(timeoutMs);
    for (;;) {
      const seen = Atomics.load(this.#array, this.#index);
      if (seen <= 0 && !(await waitSliceAsync(this.#array, this.#index, seen, until))) return this.tryAcquire();
      if (this.tryAcquire()) return true;
    }
  }

  /** Gives a permit back and wakes one waiter. Throws when the count is already 2147483647. */
  release() {
    const array = this.#array;
    const index = this.#index;
    for (let n = Atomics.load(array, index); ; ) {
      if (n === MAX_PERMITS) {
        throw lockError('ERR_LOCK_COUNT_OVERFLOW', `Semaphore.release(): the semaphore already holds the most permits an Int32 can count (${MAX_PERMITS})`);
      }
      const seen = Atomics.compareExchange(array, index, n, n + 1);
      if (seen === n) break;
      n = seen;
    }
    Atomics.notify(array, index, 1);
  }

  /** Free permits now (a snapshot). */
  get available() {
    return Atomics.load(this.#array, this.#index);
  }

  [LOCKING]() {
    this.#address ??= lockAddress('Semaphore', this.#array, this.#index, 1);
    return { address: this.#address, words: 1, lock: (t) => this.acquire(t), lockAsync: (t) => this.acquireAsync(t), unlock: () => this.release() };
  }
}

module.exports = { Semaphore };
