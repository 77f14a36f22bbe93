'use strict';
// The book's Mutex (Multithreaded JavaScript, "Mutex" in the chapter on advanced shared memory),
// written from its protocol: one Int32 word, 0 unlocked, 1 locked.
//   acquire: compareExchange(0 → 1); on failure Atomics.wait(word, 1) and try again;
//   release: compareExchange(1 → 0) (throw if it was not locked), then Atomics.notify(word, 1);
//   exec(fn): acquire, run fn, release.
// The book retries by calling acquire() recursively; a loop does the same without growing the
// stack under heavy contention. Used by the benchmarks as the peer and by the tests as the
// "plain JavaScript following the book" side.

const UNLOCKED = 0;
const LOCKED = 1;

class BookMutex {
  constructor(shared, index = 0) {
    this.shared = shared;
    this.index = index;
  }

  acquire() {
    for (;;) {
      if (Atomics.compareExchange(this.shared, this.index, UNLOCKED, LOCKED) === UNLOCKED) return;
      Atomics.wait(this.shared, this.index, LOCKED);
    }
  }

  release() {
    if (Atomics.compareExchange(this.shared, this.index, LOCKED, UNLOCKED) !== LOCKED) {
      throw new Error('was not acquired');
    }
    Atomics.notify(this.shared, this.index, 1);
  }

  exec(fn) {
    this.acquire();
    try {
      return fn();
    } finally {
      this.release();
    }
  }
}

module.exports = { BookMutex };
