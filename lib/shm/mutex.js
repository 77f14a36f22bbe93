'use strict';

const { contract } = require('../native.js');
const { checkTimeout, deadline, waitSlice, waitSliceAsync, checkWord, spinOption, spinPast, pause } = require('./wait.js');
const { lockError } = require('./agent.js');
const { LOCKING, lockAddress, mutexView } = require('./lock-all.js');
const { withLock, withLockAsync } = require('./critical-section.js');

/** The book's lock word: 0 unlocked, 1 locked (the ring buffer's lock word too), from src/shm/mutex.rs. */
const { unlocked: UNLOCKED, locked: LOCKED } = contract.mutex;

/**
 * The book's mutex on one Int32 word: 0 unlocked, 1 locked (src/shm/mutex.rs states the
 * protocol). The compare-exchanges run inline in JavaScript rather than through a native call:
 * bench/mutex.js measures both, and inline is about three times faster uncontended. It interoperates
 * with JavaScript following the book and with native holders on the same word.
 */
class Mutex {
  #array;
  #index;
  #spin;
  #address = null;

  /** `options.spin`: polls of a taken word before `lock()` sleeps (default in lib/shm/wait.js). */
  constructor(int32Array, index = 0, options) {
    checkWord('Mutex', int32Array, index);
    this.#spin = spinOption('Mutex', options);
    this.#array = int32Array;
    this.#index = index;
  }

  /** Takes the lock if it is free, without waiting. */
  tryLock() {
    return Atomics.compareExchange(this.#array, this.#index, UNLOCKED, LOCKED) === UNLOCKED;
  }

  /**
   * Takes the lock, waiting at most `timeoutMs` (default: no limit); false on timeout. Blocks:
   * polls the word `spin` times (the holder is usually about to release it), then sleeps in
   * `Atomics.wait` until notified or a slice has passed.
   */
  lock(timeoutMs) {
    checkTimeout('Mutex.lock', timeoutMs);
    const array = this.#array;
    const index = this.#index;
    if (Atomics.compareExchange(array, index, UNLOCKED, LOCKED) === UNLOCKED) return true;
    const until = deadline(timeoutMs);
    for (;;) {
      // Woken, the lock may already be someone else's again, for about as long as a critical
      // section: spin again before sleeping again.
      for (let round = 0; round < this.#spin && !spinPast(round, until); round++) {
        if (pause !== undefined) pause(round);
        if (Atomics.load(array, index) === UNLOCKED && Atomics.compareExchange(array, index, UNLOCKED, LOCKED) === UNLOCKED) return true;
      }
      // Sleep on the value seen, not on LOCKED: a word that holds something else (another
      // lock kind's word, by mistake) would end every wait at once and spin at full speed.
      const seen = Atomics.load(array, index);
      if (seen !== UNLOCKED && !waitSlice(array, index, seen, until)) return this.tryLock();
      if (this.tryLock()) return true;
    }
  }

  /** `lock` without blocking the event loop (and without spinning): resolves true when locked, false on timeout. */
  async lockAsync(timeoutMs) {
    checkTimeout('Mutex.lockAsync', timeoutMs);
    if (this.tryLock()) return true;
    const until = deadline(timeoutMs);
    for (;;) {
      // As in lock(): on LOCKED, a word holding anything else would resolve every wait at once
      // and loop in microtasks, starving the event loop.
      const seen = Atomics.load(this.#array, this.#index);
      if (seen !== UNLOCKED && !(await waitSliceAsync(this.#array, this.#index, seen, until))) return this.tryLock();
      if (this.tryLock()) return true;
    }
  }

  /** Releases the lock and wakes one waiter. Throws if the mutex is not locked. */
  unlock() {
    if (Atomics.compareExchange(this.#array, this.#index, LOCKED, UNLOCKED) !== LOCKED) {
      throw lockError('ERR_LOCK_NOT_LOCKED', 'Mutex.unlock(): the mutex is not locked');
    }
    Atomics.notify(this.#array, this.#index, 1);
  }

  /** The book's `exec`: runs `fn()` (synchronous) under the lock; throws RpcError Timeout if the lock stays taken. */
  withLock(fn, timeoutMs) {
    return withLock('Mutex.withLock', this, fn, timeoutMs);
  }

  /** `withLock` for the main thread: awaits the lock without blocking, then awaits `fn()`. */
  async withLockAsync(fn, timeoutMs) {
    // Not an agent: the book's mutex records no holder. `async`: a bad fn rejects, as it always has.
    return withLockAsync('Mutex.withLockAsync', this, fn, timeoutMs, { agent: false });
  }

  get locked() {
    return Atomics.load(this.#array, this.#index) === LOCKED;
  }

  [LOCKING]() {
    this.#address ??= lockAddress('Mutex', this.#array, this.#index, 1);
    return mutexView(this, this.#address, 1);
  }
}

module.exports = { Mutex };
