'use strict';
// The owner-checked mutex (src/shm/owned_mutex.rs states the protocol: 0 free, id, id | WAITERS).
// The owner-word functions here also serve ReentrantMutex, whose first word is such a word.

const { contract } = require('../native.js');
const { checkTimeout, deadline, waitSlice, waitSliceAsync, checkWord, spinOption, spinPast, pause, NATIVE_HOLDER_SLICE_MS } = require('./wait.js');
const { currentAgent, countHold, refuseUnlock, alreadyHeld, ID_MASK, NATIVE_AGENT } = require('./agent.js');
const { LOCKING, lockAddress, mutexView } = require('./lock-all.js');
const { withLock, withLockAsync } = require('./critical-section.js');

const WAITERS = contract.locks.waiters;

/** The holder's agent id in the owner word `array[index]`, or null when free (a snapshot). */
function ownerOf(array, index) {
  return Atomics.load(array, index) & ID_MASK || null;
}

/** Takes the free word for `me` (`0 → me`); false if held by another agent, throws if by `me`. */
function tryTake(what, array, index, me) {
  const seen = Atomics.compareExchange(array, index, 0, me);
  if (seen === 0) return true;
  if ((seen & ID_MASK) === me) throw alreadyHeld(what);
  return false;
}

/** The slice to sleep while `word` is held: short when its holder is native (it cannot notify). */
function sliceFor(word) {
  return (word & NATIVE_AGENT) !== 0 ? NATIVE_HOLDER_SLICE_MS : undefined;
}

/**
 * One step of waiting for the word: takes it if free (true), or flags WAITERS on the hold and
 * returns the word to sleep on (a number). `taken`: the value to take it with.
 */
function takeOrFlag(array, index, taken) {
  for (;;) {
    const seen = Atomics.load(array, index);
    if (seen === 0) {
      if (Atomics.compareExchange(array, index, 0, taken) === 0) return true;
      continue;
    }
    if ((seen & WAITERS) !== 0) return seen;
    if (Atomics.compareExchange(array, index, seen, seen | WAITERS) === seen) return seen | WAITERS;
  }
}

/** Takes the word for `me`: polls `spin` times, then sleeps until notified or a slice has passed, and again, until `timeoutMs`. Blocks. */
function take(what, array, index, me, timeoutMs, spin) {
  checkTimeout(what, timeoutMs);
  if (tryTake(what, array, index, me)) return true;
  const until = deadline(timeoutMs);
  let taken = me;
  for (;;) {
    for (let round = 0; round < spin && !spinPast(round, until); round++) {
      if (pause !== undefined) pause(round);
      if (Atomics.load(array, index) === 0 && Atomics.compareExchange(array, index, 0, taken) === 0) return true;
    }
    const word = takeOrFlag(array, index, taken);
    if (word === true) return true;
    if (!waitSlice(array, index, word, until, sliceFor(word))) return takeOrFlag(array, index, taken) === true;
    // Having slept, take it flagged: other sleepers may remain ("Futexes Are Tricky", mutex 3).
    taken = me | WAITERS;
  }
}

/** `take` without blocking the event loop (no spinning: the thread has other work). */
async function takeAsync(what, array, index, me, timeoutMs) {
  checkTimeout(what, timeoutMs);
  if (tryTake(what, array, index, me)) return true;
  const until = deadline(timeoutMs);
  let taken = me;
  for (;;) {
    const word = takeOrFlag(array, index, taken);
    if (word === true) return true;
    if (!(await waitSliceAsync(array, index, word, until, sliceFor(word)))) return takeOrFlag(array, index, taken) === true;
    taken = me | WAITERS;
  }
}

/** Releases the word held by `me`, waking one sleeper if any; throws (writing nothing) if `me` is not the holder. */
function release(what, array, index, me) {
  const refusal = refuseUnlock(what, Atomics.load(array, index), me);
  if (refusal !== null) throw refusal;
  if ((Atomics.exchange(array, index, 0) & WAITERS) !== 0) Atomics.notify(array, index, 1);
}

/**
 * A mutex that records its holder: `unlock()` by anyone else throws, and the holder asking
 * again gets an error instead of waiting on itself. Not the book's 0/1 protocol.
 */
class OwnedMutex {
  #array;
  #index;
  #spin;
  #address;

  constructor(int32Array, index = 0, options) {
    checkWord('OwnedMutex', int32Array, index);
    this.#spin = spinOption('OwnedMutex', options);
    this.#address = lockAddress('OwnedMutex', int32Array, index, contract.locks.ownedWords);
    this.#array = int32Array;
    this.#index = index;
  }

  tryLock() {
    const took = tryTake('OwnedMutex.tryLock', this.#array, this.#index, currentAgent());
    if (took) countHold(1);
    return took;
  }

  lock(timeoutMs) {
    const took = take('OwnedMutex.lock', this.#array, this.#index, currentAgent(), timeoutMs, this.#spin);
    if (took) countHold(1);
    return took;
  }

  async lockAsync(timeoutMs) {
    const took = await takeAsync('OwnedMutex.lockAsync', this.#array, this.#index, currentAgent(), timeoutMs);
    if (took) countHold(1);
    return took;
  }

  unlock() {
    release('OwnedMutex.unlock', this.#array, this.#index, currentAgent());
    countHold(-1);
  }

  withLock(fn, timeoutMs) {
    return withLock('OwnedMutex.withLock', this, fn, timeoutMs);
  }

  /** Runs `fn` as an agent of its own (lib/shm/agent.js) holding the lock. */
  withLockAsync(fn, timeoutMs) {
    return withLockAsync('OwnedMutex.withLockAsync', this, fn, timeoutMs, { agent: true });
  }

  /** The holder's agent id, or null when free (a snapshot). */
  get owner() {
    return ownerOf(this.#array, this.#index);
  }

  /** True when the calling agent holds it. */
  get heldByMe() {
    return ownerOf(this.#array, this.#index) === currentAgent();
  }

  get locked() {
    return Atomics.load(this.#array, this.#index) !== 0;
  }

  [LOCKING]() {
    return mutexView(this, this.#address, contract.locks.ownedWords);
  }
}

module.exports = { OwnedMutex, ownerOf, tryTake, take, takeAsync, release };
