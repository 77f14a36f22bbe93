'use strict';
// corepool's Mutex and Semaphore as they were before spin-then-wait (commit 8a2163a): their
// lock/unlock and acquire/release paths copied unchanged, so that bench/locks.js measures the
// change against them ("before" in its figures). Constructors skip the argument checks.
const path = require('node:path');
const lib = path.join(__dirname, '..', '..', 'lib');
const { native } = require(path.join(lib, 'native.js'));
const { checkTimeout, deadline, waitSlice } = require(path.join(lib, 'shm', 'wait.js'));

/** Atomics.load polls before sleeping: a lock is usually held for well under a microsecond. */
const SPIN = 64;
const UNLOCKED = 0;
const LOCKED = 1;

class MutexBefore {
  #array;
  #index;

  constructor(int32Array, index = 0) {
    this.#array = int32Array;
    this.#index = index;
  }

  tryLock() {
    return Atomics.compareExchange(this.#array, this.#index, UNLOCKED, LOCKED) === UNLOCKED;
  }

  lock(timeoutMs) {
    checkTimeout('Mutex.lock', timeoutMs);
    if (this.tryLock()) return true;
    const until = deadline(timeoutMs);
    for (;;) {
      for (let i = 0; i < SPIN; i++) {
        if (Atomics.load(this.#array, this.#index) === UNLOCKED && this.tryLock()) return true;
      }
      if (!waitSlice(this.#array, this.#index, LOCKED, until)) return this.tryLock();
      if (this.tryLock()) return true;
    }
  }

  unlock() {
    if (Atomics.compareExchange(this.#array, this.#index, LOCKED, UNLOCKED) !== LOCKED) {
      throw new Error('Mutex.unlock(): the mutex is not locked');
    }
    Atomics.notify(this.#array, this.#index, 1);
  }
}

class SemaphoreBefore {
  #array;
  #index;
  #tryAcquire;
  #release;

  constructor(int32Array, index = 0) {
    [this.#tryAcquire, this.#release] = native.shmSemaphore(int32Array, index);
    this.#array = int32Array;
    this.#index = index;
  }

  tryAcquire() {
    return this.#tryAcquire();
  }

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

  release() {
    this.#release();
    Atomics.notify(this.#array, this.#index, 1);
  }
}

module.exports = { MutexBefore, SemaphoreBefore };
