'use strict';
// The reentrant mutex (src/shm/reentrant_mutex.rs states the protocol): an owner word, as
// OwnedMutex's, and the count after it, touched only by the holder.

const { contract } = require('../native.js');
const { checkWord, spinOption } = require('./wait.js');
const { currentAgent, countHold, refuseUnlock, lockError } = require('./agent.js');
const { LOCKING, lockAddress, mutexView } = require('./lock-all.js');
const { withLock, withLockAsync } = require('./critical-section.js');
const { ownerOf, tryTake, take, takeAsync, release } = require('./owned-mutex.js');

const { reentrantWords: WORDS, reentrantCount: COUNT, maxCount: MAX_COUNT } = contract.locks;

/**
 * A mutex its holder may take again: each `lock()` by the holder adds one to a count in shared
 * memory, each `unlock()` takes one off, and the lock is free again at zero.
 */
class ReentrantMutex {
  #array;
  #index;
  #count;
  #spin;
  #address;

  constructor(int32Array, index = 0, options) {
    checkWord('ReentrantMutex', int32Array, index);
    this.#spin = spinOption('ReentrantMutex', options);
    this.#address = lockAddress('ReentrantMutex', int32Array, index, WORDS);
    this.#array = int32Array;
    this.#index = index;
    this.#count = index + COUNT;
  }

  /** Counts one more hold if `me` holds it already (true); false if it does not. */
  #reenter(what, me) {
    if (ownerOf(this.#array, this.#index) !== me) return false;
    const count = Atomics.load(this.#array, this.#count);
    if (count === MAX_COUNT) throw lockError('ERR_LOCK_COUNT_OVERFLOW', `${what}: the lock is already held ${MAX_COUNT} times`);
    Atomics.store(this.#array, this.#count, count + 1);
    countHold(1);
    return true;
  }

  #took(took) {
    if (took) {
      Atomics.store(this.#array, this.#count, 1);
      countHold(1);
    }
    return took;
  }

  tryLock() {
    const me = currentAgent();
    return this.#reenter('ReentrantMutex.tryLock', me) || this.#took(tryTake('ReentrantMutex.tryLock', this.#array, this.#index, me));
  }

  lock(timeoutMs) {
    const me = currentAgent();
    return this.#reenter('ReentrantMutex.lock', me) || this.#took(take('ReentrantMutex.lock', this.#array, this.#index, me, timeoutMs, this.#spin));
  }

  async lockAsync(timeoutMs) {
    const me = currentAgent();
    return this.#reenter('ReentrantMutex.lockAsync', me) || this.#took(await takeAsync('ReentrantMutex.lockAsync', this.#array, this.#index, me, timeoutMs));
  }

  /** Gives back one hold; the last one frees the lock. Throws unless the caller holds it. */
  unlock() {
    const me = currentAgent();
    const refusal = refuseUnlock('ReentrantMutex.unlock', Atomics.load(this.#array, this.#index), me);
    if (refusal !== null) throw refusal;
    const count = Atomics.load(this.#array, this.#count);
    if (count > 1) {
      Atomics.store(this.#array, this.#count, count - 1);
    } else {
      // The last hold, or a count some other code overwrote (an OwnedMutex taking these words,
      // say): release, as the native side does, rather than keep a lock nobody can give back.
      Atomics.store(this.#array, this.#count, 0);
      release('ReentrantMutex.unlock', this.#array, this.#index, me);
    }
    countHold(-1);
  }

  withLock(fn, timeoutMs) {
    return withLock('ReentrantMutex.withLock', this, fn, timeoutMs);
  }

  /** Runs `fn` holding the lock, as an agent of its own unless already inside one (then nested calls re-enter). */
  withLockAsync(fn, timeoutMs) {
    return withLockAsync('ReentrantMutex.withLockAsync', this, fn, timeoutMs, { agent: true });
  }

  get owner() {
    return ownerOf(this.#array, this.#index);
  }

  get heldByMe() {
    return ownerOf(this.#array, this.#index) === currentAgent();
  }

  /** How many times the holder holds it (0 when free; exact for the holder). */
  get count() {
    return Atomics.load(this.#array, this.#count);
  }

  get locked() {
    return Atomics.load(this.#array, this.#index) !== 0;
  }

  [LOCKING]() {
    return mutexView(this, this.#address, WORDS);
  }
}

module.exports = { ReentrantMutex };
